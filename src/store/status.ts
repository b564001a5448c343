/**
 * The owner of device_status: a device's latest attributes as its status and information packets
 * told them (battery, external power, signal, ignition, ICCID, …). Each report's attributes are
 * merged into what is kept, key by key (SQLite's json_patch: the newer value wins; a null removes
 * the key, as when a Teltonika iButton is taken off).
 */
import type { Database } from 'bun:sqlite'
import { eq, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import * as schema from '../../db/schema'
import { deviceStatus } from '../../db/schema'

export interface StoredStatus {
  attributes: Record<string, unknown>
  /** when the latest status was committed, Unix ms */
  updatedAt: number
}

/** The stored row as read (attributes a JSON object, as text). */
export function statusOf(row: { attributes: string; updatedAt: number }): StoredStatus {
  return { attributes: JSON.parse(row.attributes), updatedAt: row.updatedAt }
}

export function createStatusStore(sqlite: Database) {
  const db = drizzle(sqlite, { schema })
  const merge = db
    .insert(deviceStatus)
    .values({ deviceKey: sql.placeholder('device'), attributes: sql.placeholder('attributes'), updatedAt: sql.placeholder('at') })
    .onConflictDoUpdate({
      target: deviceStatus.deviceKey,
      // SQLite-only: json_patch, an RFC 7396 merge (PostgreSQL: the same merge as a small SQL function over jsonb)
      set: { attributes: sql`json_patch(${deviceStatus.attributes}, excluded.attributes)`, updatedAt: sql`excluded.updated_at` },
    })
    .prepare()
  const read = db
    .select({ attributes: deviceStatus.attributes, updatedAt: deviceStatus.updatedAt })
    .from(deviceStatus)
    .where(eq(deviceStatus.deviceKey, sql.placeholder('device')))
    .prepare()

  return {
    /** Merges `attributes` (a JSON object, as text) into the device's status, committed at `at` (Unix ms). */
    merge(deviceKey: number, attributes: string, at: number): void {
      merge.run({ device: deviceKey, attributes, at })
    },
    /** The device's latest status, or null when no packet has told any. */
    latest(deviceKey: number): StoredStatus | null {
      const row = read.get({ device: deviceKey })
      return row ? statusOf(row) : null
    },
  }
}

export type StatusStore = ReturnType<typeof createStatusStore>

/** What services read of device status: the store's boundary, answering promises (the SQLite adapter's are settled). */
export interface StatusReads {
  /** The device's latest status, or null when no packet has told any. */
  latest(deviceKey: number): Promise<StoredStatus | null>
}

export function createStatusReads(database: { sqlite: Database }): StatusReads {
  const store = createStatusStore(database.sqlite)
  return { latest: async (deviceKey) => store.latest(deviceKey) }
}
