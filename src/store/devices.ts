/**
 * The owner of the devices table's reads and ingest's writes to it: the statements behind the one
 * access function (src/devices/access.ts), behind ingest's identification (src/ingest/identify.ts),
 * the device row's updates made in ingest's group commit (src/store/ingest.ts), and the few
 * reads of the unknown-identifier list.
 *
 * The access reads (`DeviceAccessReads`) and the identification reads (`DeviceIdentityReads`)
 * answer with promises, as every store's reads do (this SQLite adapter's are settled at once). Both
 * callers keep their caches and version checks in their modules, so a read here is a cache miss
 * or a version check. The access reads are also given synchronously, for a caller inside another
 * owner's unit of work (`deviceAccessReadsInTransaction`): whom a user reaches, which the alert
 * outbox asks within ingest's group commit.
 *
 * SQLite-only: `json_each` (PostgreSQL: `jsonb_array_elements_text`); `CROSS JOIN` fixing the
 * join's loop order (PostgreSQL plans it itself: a plain JOIN). The access_version rows are kept
 * by triggers (db/migrations; PostgreSQL: the same triggers in PL/pgSQL).
 */
import type { Database } from 'bun:sqlite'
import { and, count, desc, eq, inArray, isNull, ne, or, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { type Connectable, connectionOf, type DatabaseHandle, type Db } from '../../db/client'
import * as schema from '../../db/schema'
import { accessVersion, accounts, deviceGroups, devices, groups, models, shareLinkDevices, shareLinks } from '../../db/schema'
import { Conflict, NotFound } from '../errors'
import { recordAuditInTransaction } from './audit'
import { settled } from './busy'
import { createEventStore } from './events'
import { createPositionStore } from './positions'
import { groupsOfAccountInTransaction } from './people'
import { endLinksBeyondCreatorsReachInTransaction } from './shareLinks'
import { storeWriter } from './busy'
import type { Clock } from '../clock'

/** A device's row as the access function answers it (the stored column names). */
export interface DeviceRow {
  key: number
  id: string
  account_id: string
  model_id: string | null
  alias: string
  properties: string
  serial: string
  imei: string
  iccid: string
  state: string
  latitude: number | null
  longitude: number | null
  connected: number
  connected_at: number | null
  disconnected_at: number | null
  created_at: number
  updated_at: number
}

/** What a list of many devices' records names them by. */
export interface DeviceBrief {
  key: number
  id: string
  alias: string
}

/** Whose devices a read is scoped to: a member's (user id), an admin's account (account id), a share link's (link id). */
export type DeviceScope = 'user' | 'share' | 'admin'

/** A page of a list, optionally only devices in at least one of `groups` (ids, lower case). */
export interface DevicePage {
  groups: string[] | null
  limit: number
  offset: number
}

/** The device behind an identifier, as ingest identifies it. */
export interface IdentifiedDevice {
  key: number
  id: string
  state: string
  /** 1 while the device has no model */
  modelless: number
}

const placeholder = sql.placeholder

/**
 * The scope's test, `$scope` the user id, account id or link id. The user's test is a correlated
 * EXISTS: with the devices_alias index SQLite walks devices in list order and stops after
 * `limit` (measured 207 µs for 99 of 1,000 devices, against 715 µs for building the reachable
 * set first and sorting it). CROSS JOIN fixes the loop order: the device's few groups, each
 * probed in the user's.
 */
const SCOPE: Record<DeviceScope, () => ReturnType<typeof sql>> = {
  user: () =>
    sql`EXISTS (SELECT 1 FROM device_groups dg CROSS JOIN user_groups ug ON ug.group_id = dg.group_id AND ug.user_id = ${placeholder('scope')}
                WHERE dg.device_key = ${devices.key})`,
  share: () => sql`${devices.key} IN (SELECT device_key FROM share_link_devices WHERE link_id = ${placeholder('scope')})`,
  admin: () => sql`${devices.accountId} = ${placeholder('scope')}`,
}
const SCOPES = Object.keys(SCOPE) as DeviceScope[]

/** The same tests over `devices d`, for the raw page statements (named parameter $scope). */
const RAW_SCOPE: Record<DeviceScope, string> = {
  user: `EXISTS (SELECT 1 FROM device_groups dg CROSS JOIN user_groups ug ON ug.group_id = dg.group_id AND ug.user_id = $scope
                 WHERE dg.device_key = d.key)`,
  share: `d.key IN (SELECT device_key FROM share_link_devices WHERE link_id = $scope)`,
  admin: `d.account_id = $scope`,
}
const PAGE_COLUMNS = `d.key, d.id, d.account_id, d.model_id, d.alias, d.properties, d.serial, d.imei, d.iccid, d.state,
  d.latitude, d.longitude, d.connected, d.connected_at, d.disconnected_at, d.created_at, d.updated_at`

const listed = sql`${devices.state} <> 'unlink'`

/** The reads behind the one access function (src/devices/access.ts). */
export interface DeviceAccessReads {
  /** The device with this id (lower case), with access_version row 1 as of the same read; null when none. */
  byId(id: string): Promise<(DeviceRow & { access_version: number }) | null>
  /** The keys of the devices that share a group with the user. */
  devicesOfUser(userId: string): Promise<number[]>
  /** access_version row 1: moves with any group membership change. */
  membershipVersion(): Promise<number>
  /** The keys of every device of the account. */
  devicesOfAccount(accountId: string): Promise<number[]>
  /** A page of the scope's devices, `unlink` excluded, ordered by alias then id. */
  list(scope: DeviceScope, value: string, filter: DevicePage): Promise<DeviceRow[]>
  /** Every device of the scope, `unlink` excluded, in no order. */
  brief(scope: DeviceScope, value: string): Promise<DeviceBrief[]>
  /** Of these ids (lower case), those of the scope's devices, with their keys. */
  keysOf(scope: DeviceScope, value: string, ids: readonly string[]): Promise<{ id: string; key: number }[]>
  /** A number that moves whenever any list's result may have changed (rows 1–3 only grow). */
  listVersion(): Promise<number>
}

/**
 * The same reads answering at once, inside the caller's open unit of work (on SQLite a
 * synchronous transaction): what the alert outbox asks within ingest's group commit.
 */
export type DeviceAccessReadsInTransaction = { [K in keyof DeviceAccessReads]: (...args: Parameters<DeviceAccessReads[K]>) => Awaited<ReturnType<DeviceAccessReads[K]>> }

/** The access reads over `database`: each answers with a settled promise (one statement, run at once). */
export function createDeviceAccessReads(database: Pick<DatabaseHandle, 'sqlite'>): DeviceAccessReads {
  const reads = accessStatements(database.sqlite)
  // settled promises (a busy database a rejection, never a throw), without an async frame
  return {
    byId: (id) => settled(() => reads.byId(id)),
    devicesOfUser: (userId) => settled(() => reads.devicesOfUser(userId)),
    membershipVersion: () => settled(() => reads.membershipVersion()),
    devicesOfAccount: (accountId) => settled(() => reads.devicesOfAccount(accountId)),
    list: (scope, value, filter) => settled(() => reads.list(scope, value, filter)),
    brief: (scope, value) => settled(() => reads.brief(scope, value)),
    keysOf: (scope, value, ids) => settled(() => reads.keysOf(scope, value, ids)),
    listVersion: () => settled(() => reads.listVersion()),
  }
}

/** The access reads on `tx`, synchronous: they join the transaction it has open. */
export function deviceAccessReadsInTransaction(tx: Connectable): DeviceAccessReadsInTransaction {
  return accessStatements(tx)
}

/**
 * The access statements on `connection` (inside whatever transaction it has open), answering at
 * once. Statements are Drizzle's prepared builders, but for the two raw ones below.
 */
function accessStatements(connection: Connectable): DeviceAccessReadsInTransaction {
  const db = drizzle(connectionOf(connection), { schema })
  const byScope = <T>(build: (scope: ReturnType<typeof sql>) => T): Record<DeviceScope, T> => {
    const statements = {} as Record<DeviceScope, T>
    for (const scope of SCOPES) statements[scope] = build(SCOPE[scope]())
    return statements
  }

  // One device by id, with the access version read in the same statement (same snapshot). Raw,
  // bound positionally: it is GET /devices/{id}'s read (and every device route's), and Drizzle's
  // prepared builder (17 columns mapped by name) measured 5.0–8.1 µs a read against 2.1–3.2 µs
  // raw (200,000 reads of one device, bun:sqlite in memory, the four rounds of one run).
  const byId = connectionOf(connection).query<DeviceRow & { access_version: number }, [string]>(
    `SELECT key, id, account_id, model_id, alias, properties, serial, imei, iccid, state, latitude, longitude, connected,
       connected_at, disconnected_at, created_at, updated_at, (SELECT version FROM access_version WHERE id = 1) AS access_version
     FROM devices WHERE id = ?`,
  )
  const devicesOfUser = db
    .selectDistinct({ key: schema.deviceGroups.deviceKey })
    .from(schema.userGroups)
    .innerJoin(schema.deviceGroups, eq(schema.deviceGroups.groupId, schema.userGroups.groupId))
    .where(eq(schema.userGroups.userId, placeholder('user')))
    .prepare()
  const membershipVersion = db.select({ version: accessVersion.version }).from(accessVersion).where(eq(accessVersion.id, 1)).prepare()
  const devicesOfAccount = db.select({ key: devices.key }).from(devices).where(eq(devices.accountId, placeholder('account'))).prepare()
  // A page of a list (GET /devices, every request of the console's fleet view): raw, as byId is.
  // Drizzle's prepared builder measured 340–373 µs a page of 99 devices against 227–238 µs raw
  // (bun:sqlite in memory, 3,000 pages a round, four rounds of one run): the same SQL, named
  // parameters, rows as the statement answers them.
  const connectionForPages = connectionOf(connection)
  const page = (scope: DeviceScope, groupFilter: string) =>
    connectionForPages.query<DeviceRow, [Record<string, string | number>]>(
      `SELECT ${PAGE_COLUMNS} FROM devices d WHERE d.state <> 'unlink' AND ${RAW_SCOPE[scope]} ${groupFilter} ORDER BY d.alias, d.id LIMIT $limit OFFSET $offset`,
    )
  const list = {} as Record<DeviceScope, ReturnType<typeof page>>
  const listInGroups = {} as Record<DeviceScope, ReturnType<typeof page>>
  for (const scope of SCOPES) {
    list[scope] = page(scope, '')
    listInGroups[scope] = page(scope, `AND EXISTS (SELECT 1 FROM device_groups g WHERE g.device_key = d.key AND g.group_id IN (SELECT value FROM json_each($groups)))`)
  }
  const brief = byScope((scope) => db.select({ key: devices.key, id: devices.id, alias: devices.alias }).from(devices).where(sql`${listed} AND ${scope}`).prepare())
  const many = byScope((scope) =>
    db
      .select({ id: devices.id, key: devices.key })
      .from(devices)
      .where(sql`${devices.id} IN (SELECT value FROM json_each(${placeholder('ids')})) AND ${scope}`)
      .prepare(),
  )
  // Row 1 moves with group memberships, row 2 with devices added, removed or (un)linked, row 3
  // with devices leaving share links: together, whatever can change the result of `list`.
  const listVersion = db
    .select({ version: sql<number>`sum(${accessVersion.version})`.mapWith(Number) })
    .from(accessVersion)
    .where(inArray(accessVersion.id, [1, 2, 3]))
    .prepare()

  return {
    /** The device with this id (lower case), with access_version row 1 as of the same read; null when none. */
    byId(id: string): (DeviceRow & { access_version: number }) | null {
      return byId.get(id)
    },
    /** The keys of the devices that share a group with the user. */
    devicesOfUser(userId: string): number[] {
      return devicesOfUser.all({ user: userId }).map((r) => r.key)
    },
    /** access_version row 1: moves with any group membership change. */
    membershipVersion(): number {
      return membershipVersion.get()?.version ?? 0
    },
    /** The keys of every device of the account. */
    devicesOfAccount(accountId: string): number[] {
      return devicesOfAccount.all({ account: accountId }).map((r) => r.key)
    },
    /** A page of the scope's devices, `unlink` excluded, ordered by alias then id. */
    list(scope: DeviceScope, value: string, filter: DevicePage): DeviceRow[] {
      const params = { scope: value, limit: filter.limit, offset: filter.offset }
      if (!filter.groups) return list[scope].all(params)
      return listInGroups[scope].all({ ...params, groups: JSON.stringify(filter.groups) })
    },
    /** Every device of the scope, `unlink` excluded, in no order. */
    brief(scope: DeviceScope, value: string): DeviceBrief[] {
      return brief[scope].all({ scope: value })
    },
    /** Of these ids (lower case), those of the scope's devices, with their keys. */
    keysOf(scope: DeviceScope, value: string, ids: readonly string[]): { id: string; key: number }[] {
      return many[scope].all({ scope: value, ids: JSON.stringify(ids) })
    },
    /** A number that moves whenever any list's result may have changed (rows 1–3 only grow). */
    listVersion(): number {
      return listVersion.get()?.version ?? 0
    },
  }
}


/**
 * The reads behind ingest's identification (src/ingest/identify.ts): the identity version
 * (access_version row 2, moved by triggers when a device is added, re-identified or (un)linked)
 * and the device an identifier names.
 */
export interface DeviceIdentityReads {
  identityVersion(): Promise<number>
  /** The device `identifier` (an IMEI or a serial) names, or null. */
  find(identifier: string): Promise<IdentifiedDevice | null>
}

/** The identification reads over `database`, answering settled promises. */
export function createDeviceIdentityReads(database: Pick<DatabaseHandle, 'sqlite'>): DeviceIdentityReads {
  const db = drizzle(database.sqlite, { schema })
  const identityVersion = db.select({ version: accessVersion.version }).from(accessVersion).where(eq(accessVersion.id, 2)).prepare()
  const identifier = placeholder('identifier')
  // An unlinked device loses to a live one with the same identifier (a re-provisioned tracker);
  // then an IMEI match beats a serial match; then the newest device.
  const findDevice = db
    .select({ key: devices.key, id: devices.id, state: devices.state, modelless: sql<number>`${devices.modelId} IS NULL`.mapWith(Number) })
    .from(devices)
    .where(or(eq(devices.imei, identifier), eq(devices.serial, identifier)))
    .orderBy(sql`${devices.state} = 'unlink'`, desc(sql`${devices.imei} = ${identifier}`), desc(devices.key))
    .limit(1)
    .prepare()
  return {
    identityVersion: () => settled(() => identityVersion.get()?.version ?? 0),
    find: (identifier) => settled(() => findDevice.get({ identifier }) ?? null),
  }
}

/**
 * Ingest's writes to the device row, inside the group commit's transaction (the connection's
 * open one). All Drizzle prepared builders: `markSeen` runs once a device a batch, and the
 * builder measured 2.9–3.1 µs a call against 2.5–2.7 µs for the same raw statement (100,000
 * calls, four rounds), under 0.1 µs a fix in batches of hundreds of fixes.
 */
export function deviceWritesInTransaction(connection: Database) {
  const db = drizzle(connection, { schema })
  const at = placeholder('at')
  const state = placeholder('state')
  // `state` is the one the newest fix implies, NULL when this batch moved nothing; an administrative state stays
  const markSeen = db
    .update(devices)
    .set({
      connectedAt: sql`CASE WHEN ${devices.connected} = 0 OR ${devices.connectedAt} IS NULL THEN ${at} ELSE ${devices.connectedAt} END`,
      connected: true,
      updatedAt: sql`${at}`,
      latitude: sql`coalesce(${placeholder('latitude')}, ${devices.latitude})`,
      longitude: sql`coalesce(${placeholder('longitude')}, ${devices.longitude})`,
      state: sql`CASE WHEN ${state} IS NULL OR ${devices.state} IN ('suspended', 'unlink', 'stolen') THEN ${devices.state} ELSE ${state} END`,
    })
    .where(eq(devices.key, placeholder('device')))
    .prepare()
  const markDisconnected = db
    .update(devices)
    .set({
      connected: false,
      disconnectedAt: sql`${at}`,
      updatedAt: sql`${at}`,
      state: sql`CASE WHEN ${devices.state} IN ('moving', 'stopped') THEN 'off' ELSE ${devices.state} END`,
    })
    .where(and(eq(devices.key, placeholder('device')), eq(devices.connected, true)))
    .prepare()
  // only while it has none; the model must exist (a database opened without the catalogue keeps null)
  const giveModel = db
    .update(devices)
    .set({ modelId: sql`${placeholder('model')}` })
    .where(
      and(
        eq(devices.key, placeholder('device')),
        isNull(devices.modelId),
        sql`EXISTS (SELECT 1 FROM ${models} WHERE ${models.id} = ${placeholder('model')})`,
      ),
    )
    .prepare()
  return {
    /** A report came at `at` (Unix ms): connected; the newest fix's place and state when given (an administrative state stays). */
    markSeen(deviceKey: number, at: number, latitude: number | null, longitude: number | null, state: string | null): void {
      markSeen.run({ device: deviceKey, at, latitude, longitude, state })
    },
    /** The device went quiet or its last session closed at `at` (Unix ms); moving/stopped become off. */
    markDisconnected(deviceKey: number, at: number): void {
      markDisconnected.run({ device: deviceKey, at })
    },
    /** A device still without a model gets `modelId`, if that model exists. */
    giveBuiltinModel(deviceKey: number, modelId: string): void {
      giveModel.run({ device: deviceKey, model: modelId })
    },
  }
}

/** The reads of the unknown-identifier list (src/devices/unknown.ts): promises, as a store answers. */
export interface UnknownIdentifierStore {
  /** how many accounts the server holds */
  accountCount(): Promise<number>
  /** which of these identifiers some device (any account, unlinked too) has as its IMEI or serial */
  knownIdentifiers(identifiers: readonly string[]): Promise<Set<string>>
}

/** SQLite binds at most a few hundred parameters comfortably in one IN list: asked in chunks. */
export const IDENTIFIER_CHUNK = 400

export function createUnknownIdentifierStore(database: Pick<DatabaseHandle, 'db'>): UnknownIdentifierStore {
  const { db } = database
  const accountCount = db.select({ n: count() }).from(accounts).prepare()
  return {
    async accountCount() {
      return accountCount.get()?.n ?? 0
    },
    async knownIdentifiers(identifiers) {
      const known = new Set<string>()
      for (let at = 0; at < identifiers.length; at += IDENTIFIER_CHUNK) {
        const chunk = identifiers.slice(at, at + IDENTIFIER_CHUNK)
        for (const row of db.select({ imei: devices.imei, serial: devices.serial }).from(devices).where(or(inArray(devices.imei, chunk), inArray(devices.serial, chunk))).all()) {
          known.add(row.imei)
          known.add(row.serial)
        }
      }
      return known
    },
  }
}

// ---------------------------------------------------------------------------------------------
// an account's devices administered: each change one unit of work with its audit entry
// ---------------------------------------------------------------------------------------------

/** A Drizzle transaction over the database, as other owners' in-transaction writers take it. */
export type DeviceTransaction = Parameters<Parameters<Db['transaction']>[0]>[0]

/** Who made a change, for its audit entry. */
export interface DeviceChangeActor {
  accountId: string
  /** a user id, or the command line's actor */
  actor: string
  requestId: string | null
  /** when, Unix ms */
  atMs: number
}

/** A device as stored, with its groups. */
export type StoredDevice = typeof devices.$inferSelect & { groups: string[] }

/** A new device's fields; `model` is the id asked for (checked: server-wide or the account's). */
export interface NewDevice {
  id: string
  model: string | null
  alias: string
  properties: string
  imei: string
  serial: string
  iccid: string
  state: string
}

/** The fields a change sets (absent: kept); `groups` replaces them when given. */
export interface DeviceChange {
  model?: string
  alias?: string
  properties?: string
  imei?: string
  serial?: string
  iccid?: string
  state?: string
  groups?: readonly string[]
}

/** What deleting a device removed besides it. */
export interface RemovedDevice {
  id: string
  positions: number
  events: number
  /** share links that lost the device */
  links: number
  /** of which revoked, left with no device */
  revokedLinks: number
}

/** An identifier a change gives a device, with the field it came from (for the Conflict's path). */
export interface DeviceIdentifier {
  path: '/imei' | '/serial'
  value: string
}

/** A new device's identifiers, to be checked against every other device. */
export function newIdentifiers(device: Pick<NewDevice, 'imei' | 'serial'>): DeviceIdentifier[] {
  return [
    { path: '/imei', value: device.imei },
    { path: '/serial', value: device.serial },
  ]
}

/** The identifiers a change gives anew (one kept as it is is not checked: an import may have left duplicates). */
export function renamedIdentifiers(row: { imei: string; serial: string }, imei: string, serial: string): DeviceIdentifier[] {
  return [...(imei !== row.imei ? [{ path: '/imei' as const, value: imei }] : []), ...(serial !== row.serial ? [{ path: '/serial' as const, value: serial }] : [])]
}

/** The distinct values to look for; an empty value is "none": it is no identifier, so it neither collides nor is named. */
export function identifierValues(identifiers: readonly DeviceIdentifier[]): string[] {
  return [...new Set(identifiers.filter((i) => i.value !== '').map((i) => i.value))]
}

/** The Conflict for the first of `identifiers` that `holder` (another device) answers to. */
export function identifierConflict(identifiers: readonly DeviceIdentifier[], holder: { imei: string; serial: string }): Conflict {
  const used = new Set([holder.imei, holder.serial])
  const taken = identifiers.find((i) => i.value !== '' && used.has(i.value))!
  // which device holds it is not said: it may be another account's
  const message = `${taken.value} is already the IMEI or serial of another device on this server`
  return new Conflict(`${taken.path.slice(1)}: ${message}`, [{ path: taken.path, message }])
}

/** A new device's row (either engine's insert). */
export function newDeviceValues(device: NewDevice, modelId: string | null, by: Pick<DeviceChangeActor, 'accountId' | 'atMs'>) {
  return {
    id: device.id,
    accountId: by.accountId,
    modelId,
    alias: device.alias,
    properties: device.properties,
    imei: device.imei,
    serial: device.serial,
    iccid: device.iccid,
    state: device.state,
    createdAt: by.atMs,
    updatedAt: by.atMs,
  }
}

/** What a change sets on the stored row (absent fields kept; either engine's update). */
export function changedDeviceValues(row: Omit<NewDevice, 'id' | 'model'>, change: DeviceChange, modelId: string | null, atMs: number) {
  return {
    modelId,
    alias: change.alias ?? row.alias,
    properties: change.properties ?? row.properties,
    imei: change.imei ?? row.imei,
    serial: change.serial ?? row.serial,
    iccid: change.iccid ?? row.iccid,
    state: change.state ?? row.state,
    updatedAt: atMs,
  }
}

/** Administering devices: each change one unit of work with its audit row (the store below). */
export interface DeviceAdminStore {
  /** Adds the device to `by.accountId` with its groups (ids, lower case, each once); NotFound for a model or group it may not use, Conflict for a used identifier. */
  create(device: NewDevice, groupIds: readonly string[], by: DeviceChangeActor): Promise<StoredDevice>
  /** Changes the account's device (NotFound when not the account's); `check` sees the identifiers it would keep, before any write. */
  update(id: string, change: DeviceChange, by: DeviceChangeActor, check: (kept: { imei: string; serial: string }) => void): Promise<StoredDevice>
  /** Deletes the account's device with its positions, events and share-link rows (a link left with none revoked). */
  remove(id: string, by: DeviceChangeActor): Promise<RemovedDevice>
}

export interface DeviceAdminStoreOptions {
  /** the write deadline's clock */
  clock?: Clock
  /** false: a process alone on the database (the command line) writes at once, within SQLite's own busy timeout */
  retryWhileBusy?: boolean
}

/**
 * Each change is one IMMEDIATE transaction: the checks against the database (model, groups,
 * identifiers already used) and the writes see the same state, whichever process writes
 * meanwhile, and the audit entry is written with the change or not at all. Another process's
 * write lock is waited for asynchronously (store/busy.ts).
 *
 * Identifiers: ingestion finds a device by `imei = x OR serial = x`, so an IMEI and a serial
 * share one namespace: an identifier any other device has (any account, unlinked or not) is a
 * Conflict. The share-link rows a deletion removes are written here until the share links' store
 * offers its in-transaction writer for it.
 */
export function createDeviceAdminStore(database: { db: Db }, options: DeviceAdminStoreOptions = {}): DeviceAdminStore {
  const { db } = database
  const write = storeWriter(connectionOf(db), { clock: options.clock, retry: options.retryWhileBusy })
  const positionStore = createPositionStore(connectionOf(db))
  const eventStore = createEventStore(db)

  /** a model the account's devices may use: server-wide, or the account's own (another account's is 404, as an unknown one) */
  function requireModel(tx: DeviceTransaction, id: string, accountId: string): string {
    const found = tx
      .select({ id: models.id })
      .from(models)
      .where(and(eq(models.id, id.toLowerCase()), or(isNull(models.accountId), eq(models.accountId, accountId))))
      .get()
    if (!found) throw new NotFound(`model: no model ${id} that your account's devices may use`)
    return found.id
  }

  /** the groups (ids, lower case, each once), all of the account's (else 404: another account's group is not revealed) */
  function requireGroups(tx: DeviceTransaction, wanted: readonly string[], accountId: string): readonly string[] {
    if (wanted.length === 0) return []
    const found = groupsOfAccountInTransaction(tx, accountId, wanted)
    const missing = wanted.filter((id) => !found.has(id))
    if (missing.length > 0) throw new NotFound(`groups: no group ${missing.slice(0, 5).join(', ')} in your account`)
    return wanted
  }

  /** Conflict when another device (any account) already answers to one of these identifiers. */
  function requireUnused(tx: DeviceTransaction, identifiers: DeviceIdentifier[], exceptKey: number | null): void {
    const values = identifierValues(identifiers)
    if (values.length === 0) return
    const clash = or(inArray(devices.imei, values), inArray(devices.serial, values))
    const rows = tx
      .select({ imei: devices.imei, serial: devices.serial })
      .from(devices)
      .where(exceptKey === null ? clash : and(clash, ne(devices.key, exceptKey)))
      .limit(1)
      .all()
    if (rows.length > 0) throw identifierConflict(identifiers, rows[0]!)
  }

  function storedDevice(tx: DeviceTransaction, id: string, accountId: string) {
    return tx.select().from(devices).where(and(eq(devices.id, id.toLowerCase()), eq(devices.accountId, accountId))).get()
  }

  function withGroups(tx: DeviceTransaction, row: typeof devices.$inferSelect): StoredDevice {
    const ids = tx.select({ id: deviceGroups.groupId }).from(deviceGroups).where(eq(deviceGroups.deviceKey, row.key)).all()
    return { ...row, groups: ids.map((g) => g.id) }
  }

  const audit = (tx: DeviceTransaction, by: DeviceChangeActor, action: 'create' | 'update' | 'delete', objectId: string) =>
    recordAuditInTransaction(tx, { accountId: by.accountId, actor: by.actor, action, objectType: 'device', objectId, requestId: by.requestId }, by.atMs)

  return {
    /** Adds the device to `by.accountId` with its groups (ids, lower case, each once); NotFound for a model or group it may not use, Conflict for a used identifier. */
    create(device, groupIds, by) {
      return write(() => db.transaction(
        (tx) => {
          const model = device.model === null ? null : requireModel(tx, device.model, by.accountId)
          const wanted = requireGroups(tx, groupIds, by.accountId)
          requireUnused(tx, newIdentifiers(device), null)
          const row = tx
            .insert(devices)
            .values(newDeviceValues(device, model, by))
            .returning()
            .get()
          if (wanted.length > 0) tx.insert(deviceGroups).values(wanted.map((groupId) => ({ groupId, deviceKey: row.key }))).run()
          audit(tx, by, 'create', device.id)
          return withGroups(tx, row)
        },
        { behavior: 'immediate' },
      ))
    },

    /**
     * Changes the account's device: NotFound when it is not the account's. `check` sees the
     * identifiers the device would keep (and may refuse them) before anything is written; a new
     * IMEI or serial is checked against every other device, one kept as it is is not (an import
     * may have left duplicates).
     */
    update(id, change, by, check) {
      return write(() => db.transaction(
        (tx) => {
          const row = storedDevice(tx, id, by.accountId)
          if (!row) throw new NotFound(`No device ${id}`)
          const imei = change.imei ?? row.imei
          const serial = change.serial ?? row.serial
          check({ imei, serial })
          const model = change.model === undefined ? row.modelId : requireModel(tx, change.model, by.accountId)
          const wanted = change.groups === undefined ? null : requireGroups(tx, change.groups, by.accountId)
          requireUnused(tx, renamedIdentifiers(row, imei, serial), row.key)
          const updated = tx
            .update(devices)
            .set(changedDeviceValues(row, change, model, by.atMs))
            .where(eq(devices.key, row.key))
            .returning()
            .get()!
          if (wanted !== null) {
            tx.delete(deviceGroups).where(eq(deviceGroups.deviceKey, row.key)).run()
            if (wanted.length > 0) tx.insert(deviceGroups).values(wanted.map((groupId) => ({ groupId, deviceKey: row.key }))).run()
            endLinksBeyondCreatorsReachInTransaction(tx, by.accountId, by.atMs)
          }
          audit(tx, by, 'update', row.id)
          return withGroups(tx, updated)
        },
        { behavior: 'immediate' },
      ))
    },

    /**
     * Deletes the account's device with its positions and events; it leaves its groups and share
     * links, and a link left with no device is revoked (deleting the share-link rows moves the
     * version the share token cache follows, migration 0003). NotFound when not the account's.
     */
    remove(id, by) {
      return write(() => db.transaction(
        (tx) => {
          const row = storedDevice(tx, id, by.accountId)
          if (!row) throw new NotFound(`No device ${id}`)
          // the big tables' own deletes: on the same connection, inside this transaction
          const removedPositions = positionStore.deleteAll(row.key)
          const removedEvents = eventStore.deleteAll(row.key)
          const links = tx
            .delete(shareLinkDevices)
            .where(eq(shareLinkDevices.deviceKey, row.key))
            .returning({ linkId: shareLinkDevices.linkId })
            .all()
            .map((l) => l.linkId)
          let revokedLinks = 0
          for (const linkId of links) {
            const left = tx.select({ linkId: shareLinkDevices.linkId }).from(shareLinkDevices).where(eq(shareLinkDevices.linkId, linkId)).limit(1).all()
            if (left.length > 0) continue
            revokedLinks += tx
              .update(shareLinks)
              .set({ revoked: true, updatedAt: by.atMs })
              .where(and(eq(shareLinks.id, linkId), eq(shareLinks.revoked, false)))
              .returning({ id: shareLinks.id })
              .all().length
          }
          tx.delete(deviceGroups).where(eq(deviceGroups.deviceKey, row.key)).run()
          tx.delete(devices).where(eq(devices.key, row.key)).run()
          audit(tx, by, 'delete', row.id)
          return { id: row.id, positions: removedPositions, events: removedEvents, links: links.length, revokedLinks }
        },
        { behavior: 'immediate' },
      ))
    },
  }
}

