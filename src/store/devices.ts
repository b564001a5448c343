/**
 * The owner of the devices table's reads and ingest's writes to it: the statements behind the one
 * access function (src/devices/access.ts), behind ingest's identification (src/ingest/identify.ts),
 * the device row's updates made in ingest's group commit (src/store/ingest.ts), and the few
 * reads of the unknown-identifier list.
 *
 * The access reads and the identification reads are synchronous, as the callers that decide with
 * them are: the access function answers inside other owners' units of work (the alert outbox
 * within ingest's group commit reads whom a user reaches) and the identification runs for every
 * report before it is queued, behind its own cache. Both keep their caches and version checks in
 * their modules, so a read here is a cache miss or a version check. A PostgreSQL adapter needs
 * those two callers to await (their callers then too): the one part of the devices area not yet
 * asynchronous.
 *
 * SQLite-only: `json_each` (PostgreSQL: `jsonb_array_elements_text`); `CROSS JOIN` fixing the
 * join's loop order (PostgreSQL plans it itself: a plain JOIN). The access_version rows are kept
 * by triggers (db/migrations; PostgreSQL: the same triggers in PL/pgSQL).
 */
import type { Database } from 'bun:sqlite'
import { and, asc, count, desc, eq, inArray, isNull, or, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { type Connectable, connectionOf, type DatabaseHandle } from '../../db/client'
import * as schema from '../../db/schema'
import { accessVersion, accounts, devices, models } from '../../db/schema'

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

/** The columns of DeviceRow; `connected` read as the stored integer (the schema's boolean mode is not wanted here). */
const ROW = {
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
  connected: sql<number>`${devices.connected}`.mapWith(Number),
  connected_at: devices.connectedAt,
  disconnected_at: devices.disconnectedAt,
  created_at: devices.createdAt,
  updated_at: devices.updatedAt,
}

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

const listed = sql`${devices.state} <> 'unlink'`

/**
 * The reads behind the one access function, synchronous (see above), on `connection` (inside
 * whatever transaction it has open). Statements are Drizzle's prepared builders.
 */
export function createDeviceAccessReads(connection: Connectable) {
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
  const inGroups = sql`EXISTS (SELECT 1 FROM device_groups g WHERE g.device_key = ${devices.key} AND g.group_id IN (SELECT value FROM json_each(${placeholder('groups')})))`
  const page = (where: ReturnType<typeof sql>) =>
    db.select(ROW).from(devices).where(where).orderBy(asc(devices.alias), asc(devices.id)).limit(placeholder('limit')).offset(placeholder('offset')).prepare()
  const list = byScope((scope) => page(sql`${listed} AND ${scope}`))
  const listInGroups = byScope((scope) => page(sql`${listed} AND ${scope} AND ${inGroups}`))
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

export type DeviceAccessReads = ReturnType<typeof createDeviceAccessReads>

/**
 * The reads behind ingest's identification, synchronous (see above): the identity version
 * (access_version row 2, moved by triggers when a device is added, re-identified or (un)linked)
 * and the device an identifier names.
 */
export function createDeviceIdentityReads(database: Pick<DatabaseHandle, 'sqlite'>) {
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
    identityVersion(): number {
      return identityVersion.get()?.version ?? 0
    },
    /** The device `identifier` (an IMEI or a serial) names, or null. */
    find(identifier: string): IdentifiedDevice | null {
      return findDevice.get({ identifier }) ?? null
    },
  }
}

export type DeviceIdentityReads = ReturnType<typeof createDeviceIdentityReads>

/**
 * Ingest's writes to the device row, inside the group commit's transaction (the connection's
 * open one). `markSeen` runs for every device of every batch: it is raw SQL bound positionally,
 * as the positions insert is (src/store/positions.ts measures the builder's named-value mapping
 * on this path).
 */
export function deviceWritesInTransaction(connection: Database) {
  const db = drizzle(connection, { schema })
  // ?5 is the state the newest fix implies, NULL when this batch moved nothing
  const markSeen = connection.query<unknown, [number, number, number | null, number | null, string | null]>(
    `UPDATE devices SET
       connected_at = CASE WHEN connected = 0 OR connected_at IS NULL THEN ?2 ELSE connected_at END,
       connected = 1,
       updated_at = ?2,
       latitude = coalesce(?3, latitude),
       longitude = coalesce(?4, longitude),
       state = CASE WHEN ?5 IS NULL OR state IN ('suspended', 'unlink', 'stolen') THEN state ELSE ?5 END
     WHERE key = ?1`,
  )
  const at = placeholder('at')
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
      markSeen.run(deviceKey, at, latitude, longitude, state)
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
const IDENTIFIER_CHUNK = 400

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
