/**
 * The devices table on PostgreSQL: src/store/devices.ts's reads and administration over the
 * schema's PostgreSQL twin (the interfaces, row shapes and pure helpers are that module's).
 *
 * The access reads and the identification reads answer promises here (the SQLite ones are
 * synchronous until their callers await); where SQLite reads an access_version row in the same
 * statement, this node's counters are read first (`versions.current`, no query while nothing
 * changed): a change committed after that read moves the counter again, so a cache keyed by it
 * is never newer than its rows.
 *
 * Differences from SQLite, each on purpose: lists order by alias then id in byte order (`COLLATE
 * "C"`, SQLite's BINARY) whatever the database's collation; each change first takes one
 * transaction-scoped advisory lock, so that device changes run one at a time across nodes as
 * SQLite's IMMEDIATE transactions do (under READ COMMITTED two nodes could otherwise give one IMEI
 * to two devices, or two changes end the same share links in opposite orders), and locks the
 * device row it changes (`FOR UPDATE`: ingest's writes to the row wait, and are not overwritten
 * with what the change read).
 */
import { and, count, desc, eq, inArray, isNull, ne, or, type SQL, sql } from 'drizzle-orm'
import type { PgConnectable, PgTx, PostgresHandle } from '../../../db/postgres/client'
import { accounts, deviceGroups, devices, events, models, positions, shareLinkDevices, shareLinks, userGroups } from '../../../db/postgres/schema'
import type { AccessVersions } from '../../../db/postgres/versions'
import { NotFound } from '../../errors'
import {
  type DeviceAccessReads,
  type DeviceIdentityReads,
  type DeviceAdminStore,
  type DeviceChangeActor,
  type DeviceIdentifier,
  type DeviceRow,
  type DeviceScope,
  type StoredDevice,
  type UnknownIdentifierStore,
  changedDeviceValues,
  IDENTIFIER_CHUNK,
  identifierConflict,
  identifierValues,
  newDeviceValues,
  newIdentifiers,
  renamedIdentifiers,
} from '../devices'
import { recordAuditInTransaction } from './audit'
import { groupsOfAccountInTransaction } from './people'
import { endLinksBeyondCreatorsReachInTransaction } from './shareLinks'
import { unitOfWork } from './unit'
import { byCodePoint } from './order'

/** Where the reads run: the pool or a caller's transaction, and this node's access counters. */
export interface PostgresReadTarget {
  db: PgConnectable
  versions: AccessVersions
}

/** DeviceRow's columns by their stored names; `connected` as 0/1, as SQLite answers it. */
const ROW_COLUMNS = {
  key: devices.key,
  id: devices.id,
  account_id: devices.accountId,
  model_id: devices.modelId,
  alias: devices.alias,
  properties: devices.properties,
  serial: devices.serial,
  imei: devices.imei,
  iccid: devices.iccid,
  state: devices.state,
  latitude: devices.latitude,
  longitude: devices.longitude,
  connected: sql<number>`${devices.connected}::int`.mapWith(Number),
  connected_at: devices.connectedAt,
  disconnected_at: devices.disconnectedAt,
  created_at: devices.createdAt,
  updated_at: devices.updatedAt,
}

/** The scope's test (src/store/devices.ts's SCOPE), `value` the user id, account id or link id. */
function scopeTest(scope: DeviceScope, value: string): SQL {
  switch (scope) {
    case 'user':
      return sql`EXISTS (SELECT 1 FROM device_groups dg JOIN user_groups ug ON ug.group_id = dg.group_id AND ug.user_id = ${value}
                         WHERE dg.device_key = ${devices.key})`
    case 'share':
      return sql`${devices.key} IN (SELECT device_key FROM share_link_devices WHERE link_id = ${value})`
    case 'admin':
      return eq(devices.accountId, value)
  }
}

const listed = sql`${devices.state} <> 'unlink'`

/** The reads behind the one access function (src/store/devices.ts's createDeviceAccessReads), as promises. */
export function createPostgresDeviceAccessReads(database: PostgresReadTarget): DeviceAccessReads {
  const { db, versions } = database
  // every GET /devices/{id} runs it: prepared, so that PostgreSQL plans it once per connection and
  // postgres.js sends it in one round trip (unprepared, it waits for a Describe first)
  const deviceById = db.select(ROW_COLUMNS).from(devices).where(eq(devices.id, sql.placeholder('id'))).prepare('device_access_by_id')
  return {
    async byId(id) {
      // the counter first: a change committed after this read moves it again
      const version = await versions.current(1)
      const [row] = await deviceById.execute({ id })
      return row ? { ...row, access_version: version } : null
    },
    async devicesOfUser(userId) {
      const rows = await db
        .selectDistinct({ key: deviceGroups.deviceKey })
        .from(userGroups)
        .innerJoin(deviceGroups, eq(deviceGroups.groupId, userGroups.groupId))
        .where(eq(userGroups.userId, userId))
      return rows.map((r) => r.key)
    },
    membershipVersion: () => versions.current(1),
    async devicesOfAccount(accountId) {
      const rows = await db.select({ key: devices.key }).from(devices).where(eq(devices.accountId, accountId))
      return rows.map((r) => r.key)
    },
    async list(scope, value, filter): Promise<DeviceRow[]> {
      const inGroups =
        filter.groups === null
          ? undefined
          : sql`EXISTS (SELECT 1 FROM device_groups g WHERE g.device_key = ${devices.key} AND ${inArray(sql`g.group_id`, filter.groups)})`
      return db
        .select(ROW_COLUMNS)
        .from(devices)
        .where(and(listed, scopeTest(scope, value), inGroups))
        .orderBy(byCodePoint(devices.alias), byCodePoint(devices.id))
        .limit(filter.limit)
        .offset(filter.offset)
    },
    async brief(scope, value) {
      return db.select({ key: devices.key, id: devices.id, alias: devices.alias }).from(devices).where(and(listed, scopeTest(scope, value)))
    },
    async keysOf(scope, value, ids) {
      if (ids.length === 0) return []
      return db
        .select({ id: devices.id, key: devices.key })
        .from(devices)
        .where(and(inArray(devices.id, [...ids]), scopeTest(scope, value)))
    },
    async listVersion() {
      // rows 1–3, as src/store/devices.ts's listVersion (one read of the counters when stale)
      return (await versions.current(1)) + (await versions.current(2)) + (await versions.current(3))
    },
  }
}

/** The reads behind ingest's identification (src/store/devices.ts's createDeviceIdentityReads), as promises. */
export function createPostgresDeviceIdentityReads(database: PostgresReadTarget): DeviceIdentityReads {
  const { db, versions } = database
  return {
    identityVersion: () => versions.current(2),
    async find(identifier) {
      // the same order as SQLite's: a live device before an unlinked one, an IMEI match before a serial match, the newest
      const [row] = await db
        .select({ key: devices.key, id: devices.id, state: devices.state, modelless: sql<number>`(${devices.modelId} IS NULL)::int`.mapWith(Number) })
        .from(devices)
        .where(or(eq(devices.imei, identifier), eq(devices.serial, identifier)))
        .orderBy(sql`${devices.state} = 'unlink'`, desc(sql`${devices.imei} = ${identifier}`), desc(devices.key))
        .limit(1)
      return row ?? null
    },
  }
}

export function createPostgresUnknownIdentifierStore(database: Pick<PostgresHandle, 'db'>): UnknownIdentifierStore {
  const { db } = database
  return {
    async accountCount() {
      const [row] = await db.select({ n: count() }).from(accounts)
      return row?.n ?? 0
    },
    async knownIdentifiers(identifiers) {
      const known = new Set<string>()
      for (let at = 0; at < identifiers.length; at += IDENTIFIER_CHUNK) {
        const chunk = identifiers.slice(at, at + IDENTIFIER_CHUNK)
        const rows = await db.select({ imei: devices.imei, serial: devices.serial }).from(devices).where(or(inArray(devices.imei, chunk), inArray(devices.serial, chunk)))
        for (const row of rows) {
          known.add(row.imei)
          known.add(row.serial)
        }
      }
      return known
    },
  }
}

/** The lock every device change holds to the end of its unit of work. */
const DEVICE_CHANGES_LOCK = 0x7472_6b02 // "trk" 02

/** A unit of work that changes devices: one at a time across nodes (see above). */
function deviceChange<T>(database: Pick<PostgresHandle, 'db' | 'versions'>, work: (tx: PgTx) => Promise<T>): Promise<T> {
  return unitOfWork(database, async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${DEVICE_CHANGES_LOCK})`)
    return work(tx)
  })
}

/** Every position of the device, deleted inside the caller's unit of work; how many (the positions store's deleteAll). */
async function deletePositionsInTransaction(tx: PgConnectable, deviceKey: number): Promise<number> {
  return (await tx.delete(positions).where(eq(positions.device, deviceKey))).count
}

/** Every event of the device, deleted inside the caller's unit of work; how many (the events store's deleteAll). */
async function deleteEventsInTransaction(tx: PgConnectable, deviceKey: number): Promise<number> {
  return (await tx.delete(events).where(eq(events.device, deviceKey))).count
}

/** src/store/devices.ts's createDeviceAdminStore: each change one unit of work with its audit entry. */
export function createPostgresDeviceAdminStore(database: Pick<PostgresHandle, 'db' | 'versions'>): DeviceAdminStore {
  async function requireModel(tx: PgTx, id: string, accountId: string): Promise<string> {
    const [found] = await tx
      .select({ id: models.id })
      .from(models)
      .where(and(eq(models.id, id.toLowerCase()), or(isNull(models.accountId), eq(models.accountId, accountId))))
    if (!found) throw new NotFound(`model: no model ${id} that your account's devices may use`)
    return found.id
  }

  async function requireGroups(tx: PgTx, wanted: readonly string[], accountId: string): Promise<readonly string[]> {
    if (wanted.length === 0) return []
    const found = await groupsOfAccountInTransaction(tx, accountId, wanted)
    const missing = wanted.filter((id) => !found.has(id))
    if (missing.length > 0) throw new NotFound(`groups: no group ${missing.slice(0, 5).join(', ')} in your account`)
    return wanted
  }

  async function requireUnused(tx: PgTx, identifiers: DeviceIdentifier[], exceptKey: number | null): Promise<void> {
    const values = identifierValues(identifiers)
    if (values.length === 0) return
    const clash = or(inArray(devices.imei, values), inArray(devices.serial, values))
    const rows = await tx
      .select({ imei: devices.imei, serial: devices.serial })
      .from(devices)
      .where(exceptKey === null ? clash : and(clash, ne(devices.key, exceptKey)))
      .limit(1)
    if (rows.length > 0) throw identifierConflict(identifiers, rows[0]!)
  }

  /** the account's device, locked until the unit of work ends */
  async function storedDevice(tx: PgTx, id: string, accountId: string) {
    const [row] = await tx
      .select()
      .from(devices)
      .where(and(eq(devices.id, id.toLowerCase()), eq(devices.accountId, accountId)))
      .for('update')
    return row
  }

  /**
   * The row with its groups: those this unit of work just wrote, in the order written (SQLite
   * answers them in rowid order, the same); else as stored (PostgreSQL keeps no insertion order:
   * physical order, which is the same until the table's space is reused).
   */
  async function withGroups(tx: PgTx, row: typeof devices.$inferSelect, written: readonly string[] | null): Promise<StoredDevice> {
    if (written !== null) return { ...row, groups: [...written] }
    const ids = await tx.select({ id: deviceGroups.groupId }).from(deviceGroups).where(eq(deviceGroups.deviceKey, row.key))
    return { ...row, groups: ids.map((g) => g.id) }
  }

  const audit = (tx: PgTx, by: DeviceChangeActor, action: 'create' | 'update' | 'delete', objectId: string) =>
    recordAuditInTransaction(tx, { accountId: by.accountId, actor: by.actor, action, objectType: 'device', objectId, requestId: by.requestId }, by.atMs)

  return {
    create: (device, groupIds, by) =>
      deviceChange(database, async (tx) => {
        const model = device.model === null ? null : await requireModel(tx, device.model, by.accountId)
        const wanted = await requireGroups(tx, groupIds, by.accountId)
        await requireUnused(tx, newIdentifiers(device), null)
        const [row] = await tx.insert(devices).values(newDeviceValues(device, model, by)).returning()
        if (wanted.length > 0) await tx.insert(deviceGroups).values(wanted.map((groupId) => ({ groupId, deviceKey: row!.key })))
        await audit(tx, by, 'create', device.id)
        return withGroups(tx, row!, wanted)
      }),

    update: (id, change, by, check) =>
      deviceChange(database, async (tx) => {
        const row = await storedDevice(tx, id, by.accountId)
        if (!row) throw new NotFound(`No device ${id}`)
        const imei = change.imei ?? row.imei
        const serial = change.serial ?? row.serial
        check({ imei, serial })
        const model = change.model === undefined ? row.modelId : await requireModel(tx, change.model, by.accountId)
        const wanted = change.groups === undefined ? null : await requireGroups(tx, change.groups, by.accountId)
        await requireUnused(tx, renamedIdentifiers(row, imei, serial), row.key)
        const [updated] = await tx.update(devices).set(changedDeviceValues(row, change, model, by.atMs)).where(eq(devices.key, row.key)).returning()
        if (wanted !== null) {
          await tx.delete(deviceGroups).where(eq(deviceGroups.deviceKey, row.key))
          if (wanted.length > 0) await tx.insert(deviceGroups).values(wanted.map((groupId) => ({ groupId, deviceKey: row.key })))
          await endLinksBeyondCreatorsReachInTransaction(tx, by.accountId, by.atMs)
        }
        await audit(tx, by, 'update', row.id)
        return withGroups(tx, updated!, wanted)
      }),

    remove: (id, by) =>
      deviceChange(database, async (tx) => {
        const row = await storedDevice(tx, id, by.accountId)
        if (!row) throw new NotFound(`No device ${id}`)
        const removedPositions = await deletePositionsInTransaction(tx, row.key)
        const removedEvents = await deleteEventsInTransaction(tx, row.key)
        const links = (await tx.delete(shareLinkDevices).where(eq(shareLinkDevices.deviceKey, row.key)).returning({ linkId: shareLinkDevices.linkId })).map(
          (l) => l.linkId,
        )
        let revokedLinks = 0
        for (const linkId of links) {
          const left = await tx.select({ linkId: shareLinkDevices.linkId }).from(shareLinkDevices).where(eq(shareLinkDevices.linkId, linkId)).limit(1)
          if (left.length > 0) continue
          const revoked = await tx
            .update(shareLinks)
            .set({ revoked: true, updatedAt: by.atMs })
            .where(and(eq(shareLinks.id, linkId), eq(shareLinks.revoked, false)))
            .returning({ id: shareLinks.id })
          revokedLinks += revoked.length
        }
        await tx.delete(deviceGroups).where(eq(deviceGroups.deviceKey, row.key))
        await tx.delete(devices).where(eq(devices.key, row.key))
        await audit(tx, by, 'delete', row.id)
        return { id: row.id, positions: removedPositions, events: removedEvents, links: links.length, revokedLinks }
      }),
  }
}
