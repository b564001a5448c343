/**
 * The devices area's stores on either engine behind one asynchronous face, and plain seeding of
 * the tables they read (each engine's schema), for the store tests that run on both engines.
 */
import * as pg from '../../../db/postgres/schema'
import { ensurePartitions } from '../../../db/postgres/partitions'
import * as lite from '../../../db/schema'
import {
  createDeviceAccessReads,
  createDeviceAdminStore,
  createDeviceIdentityReads,
  createUnknownIdentifierStore,
  type DeviceAccessReads,
  type DeviceAdminStore,
  type DeviceIdentityReads,
  type UnknownIdentifierStore,
} from '../../../src/store/devices'
import { createOperatorNameStore, type OperatorNameStore } from '../../../src/store/operator-names'
import {
  createPostgresDeviceAccessReads,
  createPostgresDeviceAdminStore,
  createPostgresDeviceIdentityReads,
  createPostgresUnknownIdentifierStore,
} from '../../../src/store/postgres/devices'
import { createPostgresOperatorNameStore } from '../../../src/store/postgres/operator-names'
import { createPostgresStatusReads } from '../../../src/store/postgres/status'
import { createStatusReads, type StatusReads } from '../../../src/store/status'
import type { Opened } from './support'

/** The tables the tests seed and read, by name, in both schemas. */
const TABLES = {
  accounts: [lite.accounts, pg.accounts],
  users: [lite.users, pg.users],
  groups: [lite.groups, pg.groups],
  userGroups: [lite.userGroups, pg.userGroups],
  deviceGroups: [lite.deviceGroups, pg.deviceGroups],
  models: [lite.models, pg.models],
  devices: [lite.devices, pg.devices],
  shareLinks: [lite.shareLinks, pg.shareLinks],
  shareLinkDevices: [lite.shareLinkDevices, pg.shareLinkDevices],
  positions: [lite.positions, pg.positions],
  events: [lite.events, pg.events],
  deviceStatus: [lite.deviceStatus, pg.deviceStatus],
  auditLog: [lite.auditLog, pg.auditLog],
} as const
export type TableName = keyof typeof TABLES


export interface DevicesWorld {
  engine: 'sqlite' | 'postgres'
  admin: DeviceAdminStore
  access: DeviceAccessReads
  identity: DeviceIdentityReads
  unknown: UnknownIdentifierStore
  status: StatusReads
  names: OperatorNameStore
  /** plain inserts, in each engine's schema (Drizzle's field names) */
  insert(table: TableName, rows: Record<string, unknown>[]): Promise<void>
  /** every row of the table (Drizzle's field names) */
  rows(table: TableName): Promise<Record<string, unknown>[]>
  /** access_version row `id` as stored */
  storedVersion(id: number): Promise<number>
}

export function devicesWorld(opened: Opened): DevicesWorld {
  if (opened.engine === 'sqlite') {
    const { handle } = opened
    const db = handle.db as unknown as {
      insert(t: unknown): { values(v: unknown): { run(): void } }
      select(): { from(t: unknown): { all(): Record<string, unknown>[] } }
    }
    return {
      engine: 'sqlite',
      admin: createDeviceAdminStore({ db: handle.db }),
      access: createDeviceAccessReads(handle),
      identity: createDeviceIdentityReads(handle),
      unknown: createUnknownIdentifierStore(handle),
      status: createStatusReads(handle),
      names: createOperatorNameStore(handle),
      async insert(table, rows) {
        if (rows.length > 0) db.insert(TABLES[table][0]).values(rows).run()
      },
      async rows(table) {
        return db.select().from(TABLES[table][0]).all()
      },
      async storedVersion(id) {
        return (db.select().from(lite.accessVersion).all() as { id: number; version: number }[]).find((r) => r.id === id)!.version
      },
    }
  }
  const { handle } = opened
  const db = handle.db as unknown as {
    insert(t: unknown): { values(v: unknown): Promise<void> }
    select(): { from(t: unknown): Promise<Record<string, unknown>[]> }
  }
  return {
    engine: 'postgres',
    admin: createPostgresDeviceAdminStore(handle),
    access: createPostgresDeviceAccessReads(handle),
    identity: createPostgresDeviceIdentityReads(handle),
    unknown: createPostgresUnknownIdentifierStore(handle),
    status: createPostgresStatusReads(handle),
    names: createPostgresOperatorNameStore(handle),
    async insert(table, rows) {
      if (rows.length === 0) return
      if (table === 'positions') await ensurePartitions(handle.sql, rows.map((r) => r.ts as number))
      await db.insert(TABLES[table][1]).values(rows)
      // as a unit of work does: this node's next read of the counters sees the insert's triggers
      handle.versions.changed()
    },
    async rows(table) {
      return db.select().from(TABLES[table][1])
    },
    async storedVersion(id) {
      return ((await db.select().from(pg.accessVersion)) as { id: number; version: number }[]).find((r) => r.id === id)!.version
    },
  }
}
