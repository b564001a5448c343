/**
 * The owner of geofences and alert_states: the geofences API's reads and its units of work (a
 * geofence made, changed or deleted with its audit row), what the rules' geofence cache reads, and
 * the rules' state of each device, read and written inside ingest's unit of work.
 *
 * Three faces, for three callers:
 * - `GeofenceStore` (promises): the API's service (alerts/service.ts). Each change is one unit of
 *   work, retried while another process holds the write lock (store/busy.ts).
 * - `GeofenceCacheReads` (synchronous): the rules' cache (alerts/cache.ts), which is built inside
 *   ingest's transaction when a device of an account first reports: it reads on the connection
 *   whose transaction is open.
 * - `RuleStateStore` (synchronous): the rules' hook (alerts/rules.ts), which runs in ingest's group
 *   commit (the pipeline's unit of work): each call joins the transaction open on the connection,
 *   so a device's state commits or rolls back with the fixes and events that moved it.
 */
import { and, asc, count, eq, sql } from 'drizzle-orm'
import type { DatabaseHandle, Db } from '../../db/client'
import { accessVersion, deviceGroups, geofences } from '../../db/schema'
import { type AuditEntry, recordAuditInTransaction } from './audit'
import { type Clock, systemClock } from '../clock'
import { retryWhileBusy } from './busy'
import { groupsRefusedInTransaction } from './people'

/** a geofence as stored */
export type GeofenceRow = typeof geofences.$inferSelect

/** Who makes a change, for its audit row. */
export interface GeofenceAudit {
  actor: string
  requestId: string | null
}

/** A geofence to create: its row (area and groups as their JSON text), and the group ids to check. */
export interface NewGeofence {
  row: GeofenceRow
  /** ids as stored (lower case, each once); each must be a group of the account */
  groupIds: readonly string[]
  /** the account holds this many at most */
  maxPerAccount: number
}

/** The fields a change sets (absent: kept); `groupIds` replaces the list and must name groups of the account. */
export interface GeofenceChange {
  name?: string
  /** the area as its JSON text */
  area?: string
  groupIds?: readonly string[]
  speedLimit?: number | null
}

/** Why a unit of work wrote nothing: the account is full (`held` geofences), or some groups are not the account's (`groupsFound`: those that are). */
export type GeofenceRefused = { held: number } | { groupsFound: ReadonlySet<string> }

export interface GeofenceStore {
  /** the account's geofences, by name then id, one page */
  list(accountId: string, page: { limit: number; offset: number }): Promise<GeofenceRow[]>
  /** the account's geofence (id in any case), or null */
  find(accountId: string, id: string): Promise<GeofenceRow | null>
  /** how many geofences the account holds */
  count(accountId: string): Promise<number>
  /** Counts, checks the groups and writes the geofence with its audit row, in one unit of work. */
  create(geofence: NewGeofence, audit: GeofenceAudit): Promise<{ created: GeofenceRow } | GeofenceRefused>
  /**
   * Changes the account's geofence with its audit row (updated_at moves on by a millisecond at
   * least: the rules' cache tells a changed area by it); an empty change writes nothing
   * (`changed: false`). null: no such geofence.
   */
  update(accountId: string, id: string, change: GeofenceChange, atMs: number, audit: GeofenceAudit): Promise<{ row: GeofenceRow; changed: boolean } | GeofenceRefused | null>
  /** Deletes the account's geofence with its audit row; false when there is none. */
  remove(accountId: string, id: string, atMs: number, audit: GeofenceAudit): Promise<boolean>
}

/** the access_version row that migration 0008's triggers bump on every geofence change */
export const GEOFENCES_VERSION_ROW = 5
/** the access_version row that migration 0011's trigger bumps when a device's account or properties change */
export const DEVICES_RULES_VERSION_ROW = 7

export interface GeofenceStoreOptions {
  /** where the write deadline is read (busy retries) */
  clock?: Clock
}

/** A geofence's audit row (both engines' stores). */
export const geofenceAuditEntry = (accountId: string, audit: GeofenceAudit, action: 'create' | 'update' | 'delete', id: string): AuditEntry => ({
  accountId,
  actor: audit.actor,
  action,
  objectType: 'geofence',
  objectId: id,
  requestId: audit.requestId,
})

/** The columns a change sets (absent: kept); empty when it sets none. */
export const geofenceChangeFields = (change: GeofenceChange): Partial<GeofenceRow> => ({
  ...(change.name === undefined ? {} : { name: change.name }),
  ...(change.area === undefined ? {} : { area: change.area }),
  ...(change.groupIds === undefined ? {} : { groups: JSON.stringify(change.groupIds) }),
  ...(change.speedLimit === undefined ? {} : { speedLimit: change.speedLimit }),
})

export function createGeofenceStore(database: Pick<DatabaseHandle, 'db' | 'sqlite'>, { clock = systemClock }: GeofenceStoreOptions = {}): GeofenceStore {
  const { db, sqlite } = database
  const placeholder = sql.placeholder
  const write = <T>(work: () => T) => retryWhileBusy(sqlite, work, { clock })

  const findOne = db
    .select()
    .from(geofences)
    .where(and(eq(geofences.id, placeholder('id')), eq(geofences.accountId, placeholder('account'))))
    .prepare()
  const countOf = db.select({ n: count() }).from(geofences).where(eq(geofences.accountId, placeholder('account'))).prepare()
  const find = (accountId: string, id: string): GeofenceRow | null => findOne.get({ id: id.toLowerCase(), account: accountId }) ?? null
  const held = (accountId: string): number => countOf.get({ account: accountId })?.n ?? 0

  return {
    async list(accountId, page) {
      return db
        .select()
        .from(geofences)
        .where(eq(geofences.accountId, accountId))
        .orderBy(asc(geofences.name), asc(geofences.id))
        .limit(page.limit)
        .offset(page.offset)
        .all()
    },

    async find(accountId, id) {
      return find(accountId, id)
    },

    async count(accountId) {
      return held(accountId)
    },

    create({ row, groupIds, maxPerAccount }, audit) {
      return write(() =>
        db.transaction(
          (tx): { created: GeofenceRow } | GeofenceRefused => {
            // counted in the write transaction: two creations at once cannot both take the last place
            const n = held(row.accountId)
            if (n >= maxPerAccount) return { held: n }
            const refused = groupsRefusedInTransaction(tx, row.accountId, groupIds)
            if (refused) return refused
            const created = tx.insert(geofences).values(row).returning().get()
            recordAuditInTransaction(tx, geofenceAuditEntry(row.accountId, audit, 'create', row.id), row.createdAt)
            return { created }
          },
          { behavior: 'immediate' },
        ),
      )
    },

    update(accountId, id, change, atMs, audit) {
      return write(() =>
        db.transaction(
          (tx) => {
            const current = find(accountId, id)
            if (current === null) return null
            const refused = groupsRefusedInTransaction(tx, accountId, change.groupIds)
            if (refused) return refused
            const fields = geofenceChangeFields(change)
            if (Object.keys(fields).length === 0) return { row: current, changed: false }
            const row = tx
              .update(geofences)
              .set({ ...fields, updatedAt: Math.max(atMs, current.updatedAt + 1) })
              .where(eq(geofences.id, current.id))
              .returning()
              .get()!
            recordAuditInTransaction(tx, geofenceAuditEntry(accountId, audit, 'update', current.id), atMs)
            return { row, changed: true }
          },
          { behavior: 'immediate' },
        ),
      )
    },

    remove(accountId, id, atMs, audit) {
      return write(() =>
        db.transaction(
          (tx) => {
            const current = find(accountId, id)
            if (current === null) return false
            tx.delete(geofences).where(eq(geofences.id, current.id)).run()
            recordAuditInTransaction(tx, geofenceAuditEntry(accountId, audit, 'delete', current.id), atMs)
            return true
          },
          { behavior: 'immediate' },
        ),
      )
    },
  }
}

/** A geofence as the rules' cache lists it: all but its area, and what tells whether the area changed. */
export interface GeofenceListed {
  id: string
  name: string
  /** JSON array of group ids */
  groups: string
  speedLimit: number | null
  updatedAt: number
  /** the area's length in bytes */
  areaLength: number
}

/**
 * What the rules' geofence cache reads. Synchronous: the cache is built inside ingest's
 * transaction (the rules' hook), and reads on the connection that holds it.
 */
export interface GeofenceCacheReads {
  /** access_version row 5: moves on every change to geofences, by any process */
  version(): number
  /** the account's geofences without their areas, by name then id */
  ofAccount(accountId: string): GeofenceListed[]
  /** a geofence's area (JSON text), or undefined when it is gone */
  areaOf(id: string): string | undefined
}

export function createGeofenceCacheReads(database: Pick<DatabaseHandle, 'db'>): GeofenceCacheReads {
  const { db } = database
  // migration 0008's triggers bump the row. PostgreSQL: the same row, bumped by the same triggers in PL/pgSQL
  const readVersion = db.select({ version: accessVersion.version }).from(accessVersion).where(eq(accessVersion.id, GEOFENCES_VERSION_ROW)).prepare()
  const readAccount = db
    .select({
      id: geofences.id,
      name: geofences.name,
      groups: geofences.groups,
      speedLimit: geofences.speedLimit,
      updatedAt: geofences.updatedAt,
      // its bytes, which SQLite knows without reading the text (length() would count its characters).
      // PostgreSQL: octet_length(area) too (it reads the value's header, not the text)
      areaLength: sql<number>`octet_length(${geofences.area})`,
    })
    .from(geofences)
    .where(eq(geofences.accountId, sql.placeholder('account')))
    .orderBy(geofences.name, geofences.id)
    .prepare()
  const readArea = db
    .select({ area: geofences.area })
    .from(geofences)
    .where(eq(geofences.id, sql.placeholder('id')))
    .prepare()
  return {
    version: () => readVersion.get()?.version ?? 0,
    ofAccount: (accountId) => readAccount.all({ account: accountId }),
    areaOf: (id) => readArea.get({ id })?.area,
  }
}

/** A device's rule state as alert_states holds it (`inside`: JSON array of geofence ids; booleans as 0/1). */
export interface StoredRuleState {
  last_fix_ts: number | null
  inside: string
  overspeed_since: number | null
  overspeed_reported_ts: number | null
  ignition: number | null
  ignition_ts: number | null
  online: number | null
}

/**
 * What the alert rules read and write, inside ingest's unit of work: synchronous (the rules' hook
 * runs in the group commit), each call on the connection whose transaction is open, so the state
 * commits or rolls back with the fixes and events that moved it.
 */
export interface RuleStateStore {
  /** whether a transaction is open on the connection (the rules refuse to run outside one) */
  inTransaction(): boolean
  /** access_version row 7: moves when a device's account or properties change, or a device is deleted */
  devicesVersion(): number
  /** the device's account and properties (JSON text), or null when there is no such device */
  device(deviceKey: number): { account_id: string; properties: string } | null
  /** the ids of the device's groups */
  groupsOf(deviceKey: number): string[]
  /** the device's state, or null when it has none yet */
  state(deviceKey: number): StoredRuleState | null
  /** writes the device's whole state */
  writeState(deviceKey: number, state: StoredRuleState, atMs: number): void
  /** moves only the newest fix's timestamp (the common case of a report on the road) */
  writeLastFix(deviceKey: number, lastFixTs: number | null, atMs: number): void
}

/**
 * Plain prepared statements bound positionally, not Drizzle's: these run for every report of every
 * device inside ingest's batch, and Drizzle's named-value mapping cost more than the queries
 * themselves (`npm run bench -- alerts`: 4–6 µs a 10-fix report through the pipeline with these).
 * Two reads of a device (its row, its state), not a LEFT JOIN: the join measured slower. The
 * devices and device_groups reads are their owners' tables, read here until src/store/devices.ts
 * offers them synchronously to the rules.
 */
export function createRuleStateStore(database: Pick<DatabaseHandle, 'db' | 'sqlite'>): RuleStateStore {
  const { db, sqlite } = database
  const readDevice = sqlite.query<{ account_id: string; properties: string }, [number]>('SELECT account_id, properties FROM devices WHERE key = ?')
  const readState = sqlite.query<StoredRuleState, [number]>(
    'SELECT last_fix_ts, inside, overspeed_since, overspeed_reported_ts, ignition, ignition_ts, online FROM alert_states WHERE device_key = ?',
  )
  const readGroups = db.select({ id: deviceGroups.groupId }).from(deviceGroups).where(eq(deviceGroups.deviceKey, sql.placeholder('device'))).prepare()
  // an upsert. PostgreSQL: the same INSERT … ON CONFLICT (device_key) DO UPDATE SET … = EXCLUDED.…
  const writeState = sqlite.query<unknown, [number, number | null, string, number | null, number | null, number | null, number | null, number | null, number]>(
    `INSERT INTO alert_states (device_key, last_fix_ts, inside, overspeed_since, overspeed_reported_ts, ignition, ignition_ts, online, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (device_key) DO UPDATE SET last_fix_ts = excluded.last_fix_ts, inside = excluded.inside,
       overspeed_since = excluded.overspeed_since, overspeed_reported_ts = excluded.overspeed_reported_ts,
       ignition = excluded.ignition, ignition_ts = excluded.ignition_ts, online = excluded.online, updated_at = excluded.updated_at`,
  )
  const writeLastFix = sqlite.query<unknown, [number | null, number, number]>('UPDATE alert_states SET last_fix_ts = ?, updated_at = ? WHERE device_key = ?')
  // PostgreSQL: the same row, which the trigger there (PL/pgSQL) bumps as migration 0011's does here
  const readDevicesVersion = sqlite.query<{ version: number }, []>(`SELECT version FROM access_version WHERE id = ${DEVICES_RULES_VERSION_ROW}`)

  return {
    // bun:sqlite's transactions are the connection's. PostgreSQL: the adapter holds the group commit's transaction and answers whether it is open
    inTransaction: () => sqlite.inTransaction,
    devicesVersion: () => readDevicesVersion.get()?.version ?? 0,
    device: (deviceKey) => readDevice.get(deviceKey),
    groupsOf: (deviceKey) => readGroups.all({ device: deviceKey }).map((r) => r.id),
    state: (deviceKey) => readState.get(deviceKey),
    writeState(deviceKey, s, atMs) {
      writeState.run(deviceKey, s.last_fix_ts, s.inside, s.overspeed_since, s.overspeed_reported_ts, s.ignition, s.ignition_ts, s.online, atMs)
    },
    writeLastFix(deviceKey, lastFixTs, atMs) {
      writeLastFix.run(lastFixTs, atMs, deviceKey)
    },
  }
}
