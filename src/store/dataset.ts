/**
 * The import's unit of work (docs/import-format.md): one call checks a dataset against what is
 * stored and writes it, every table it names, in one transaction. The decisions (what is a
 * problem, in which words) are the dataset service's: it hands a check that reads the stored
 * rows through `StoredRows` and throws to refuse; nothing is written then.
 *
 * Positions and events go through their owners' writers (store/positions.ts, store/events.ts:
 * the one encoding); the model audit and the share links' reach by the models' and share links'
 * stores' in-transaction writers.
 *
 * SQLite-only: `ON CONFLICT … DO UPDATE`/`DO NOTHING` here are PostgreSQL's too; a PostgreSQL
 * adapter answers `StoredRows` from the document's ids loaded first (one `= ANY($1)` read a
 * table), the check staying synchronous.
 */
import type { Changes } from 'bun:sqlite'
import { and, type Column, eq, inArray, ne, sql, type SQL, type Table } from 'drizzle-orm'
import type { SQLiteColumn, SQLiteTable } from 'drizzle-orm/sqlite-core'
import type { DatabaseHandle } from '../../db/client'
import { accounts, apiKeys, commands, deviceGroups, devices, groups, models, userGroups, users } from '../../db/schema'
import { CLI_ACTOR } from './audit'
import { accountsUsingModelInTransaction as accountsUsingModel, modelBodyInTransaction as modelBody, recordModelChangeInTransaction as recordModelChange } from './models'
import { endLinksBeyondCreatorsReachInTransaction as endLinksBeyondCreatorsReach, removeFromOtherAccountsLinksInTransaction as removeFromOtherAccountsLinks } from './shareLinks'
import { isPlausiblePosition } from '../track/validate'
import { createEventStore, type EncodedEvent, encodeEvent } from './events'
import { createPositionStore, type EncodedPosition, encodePosition } from './positions'
import { settled } from './busy'

/** What a dataset holds, as the import writes it (ids in lower case, API keys as their hashes). */
export interface ImportRows {
  accounts?: { id: string; name?: string }[]
  groups?: { id: string; account: string; name?: string }[]
  users?: { id: string; account: string; name?: string; role?: 'admin' | 'member'; groups?: string[]; apiKeyHashes?: string[] }[]
  models?: { id: string; name?: string; protocol?: string; commands?: { id: string; name?: string; widget: object; send?: object }[] }[]
  devices?: {
    id: string
    account: string
    model?: string
    groups?: string[]
    alias?: string
    properties?: Record<string, unknown>
    serial?: string
    imei?: string
    iccid?: string
    state?: string
    location?: [number, number] | null
    connected?: boolean
    connected_at?: string | null
    disconnected_at?: string | null
    created_at?: string
    updated_at?: string
  }[]
  positions?: {
    device: string
    timestamp: number
    latitude: number
    longitude: number
    speed?: number | null
    course?: number | null
    altitude?: number | null
    satellites?: number | null
  }[]
  events?: {
    device: string
    alarm_code: string
    context?: Record<string, unknown>
    speed?: number | null
    satellite?: number | null
    coordinates?: [number, number] | null
    mcc?: number | null
    mnc?: number | null
    dbm?: number | null
    timestamp: number
  }[]
}

export type ImportedTable = 'accounts' | 'groups' | 'users' | 'models' | 'devices' | 'commands'

/** What the check may ask of the stored rows. */
export interface StoredRows {
  has(table: ImportedTable, id: string): boolean
  /** the account of a stored group, undefined when there is none */
  groupAccount(id: string): string | undefined
  /** the account a stored model belongs to: null server-wide, undefined when there is no such model */
  modelAccount(id: string): string | null | undefined
  keyHashStored(hash: string): boolean
  /** the user whose sign-in name is this one (lower case), undefined when none */
  userNamed(lowerName: string): string | undefined
}

export interface ImportSummary {
  accounts: number
  groups: number
  users: number
  apiKeys: number
  models: number
  commands: number
  devices: number
  positions: number
  events: number
}

export interface ImportWrite {
  /** replace what the rows name (ids already stored are updated) */
  upsert: boolean
  /** Unix ms: created_at of what has none, and the time of the audit rows */
  now: number
  /** called now and then while positions are written: (done, total) */
  onProgress?: (done: number, total: number) => void
  /** throws to refuse the rows (nothing is written); runs before the transaction, as reads */
  check(stored: StoredRows): void
}

export interface DatasetStore {
  /** Checks `rows` (`write.check`) and writes them in one transaction; what each table received. */
  importRows(rows: ImportRows, write: ImportWrite): Promise<ImportSummary>
}

const isoMs = (value: string | null | undefined): number | null => (value == null ? null : Date.parse(value))

type ImportedDeviceRows = NonNullable<ImportRows['devices']>[number]

/** A device of the rows as its columns (both engines; `connected` a flag each engine stores its way). */
export function importedDevice(d: ImportedDeviceRows, now: number) {
  const location = d.location ?? null
  return {
    id: d.id,
    accountId: d.account,
    modelId: d.model ?? null,
    alias: d.alias ?? '',
    properties: JSON.stringify(d.properties ?? {}),
    serial: d.serial ?? '',
    imei: d.imei ?? '',
    iccid: d.iccid ?? '',
    state: d.state ?? 'new',
    latitude: location?.[0] ?? null,
    longitude: location?.[1] ?? null,
    connected: d.connected === true,
    connectedAt: isoMs(d.connected_at),
    disconnectedAt: isoMs(d.disconnected_at),
    createdAt: isoMs(d.created_at) ?? now,
    updatedAt: isoMs(d.updated_at) ?? now,
  }
}

/** A position of the rows as it is stored: an imported fix is valid unless it is the 0/0 placeholder. */
export function importedPosition(p: NonNullable<ImportRows['positions']>[number]): EncodedPosition {
  return encodePosition(p, isPlausiblePosition(p.latitude, p.longitude))
}

/**
 * The events of the rows as stored, each with its device's key and its seq: the n-th event of a
 * (device, second, code) in the rows is its seq n - 1 (db/schema.ts): a file may hold several of
 * one code in one second (a device reconnecting), and importing it again lands each on its own
 * row, nothing twice.
 */
export function* importedEvents(list: NonNullable<ImportRows['events']>, keyOf: (deviceId: string) => number): Generator<{ key: number; row: EncodedEvent; seq: number }> {
  const seqs = new Map<string, number>()
  for (const e of list) {
    const [latitude, longitude] = e.coordinates ?? [null, null]
    const event = {
      timestamp: e.timestamp, alarmCode: e.alarm_code, context: e.context, speed: e.speed ?? null, satellites: e.satellite ?? null,
      latitude, longitude, mcc: e.mcc ?? null, mnc: e.mnc ?? null, dbm: e.dbm ?? null,
    }
    const key = keyOf(e.device)
    const row = encodeEvent(event, latitude !== null && longitude !== null && isPlausiblePosition(latitude, longitude))
    const occurrence = `${key} ${row.ts} ${row.alarm_code}`
    const seq = seqs.get(occurrence) ?? 0
    seqs.set(occurrence, seq + 1)
    yield { key, row, seq }
  }
}

/** An upsert's SET: each column (by its schema key) takes the value the conflicting insert carried (either engine's table). */
export function fromExcluded<T extends Table>(table: T, ...keys: (keyof T['_']['columns'] & string)[]): Record<string, SQL> {
  const columns = table as unknown as Record<string, Column>
  return Object.fromEntries(keys.map((key) => [key, sql.raw(`excluded."${columns[key]!.name}"`)]))
}

const changed = (result: unknown): number => (result as Changes).changes

export function createDatasetStore(database: DatabaseHandle): DatasetStore {
  const { sqlite, db } = database
  const placeholder = sql.placeholder

  function storedRows(): StoredRows {
    const idOf: Record<ImportedTable, SQLiteColumn> = {
      accounts: accounts.id,
      groups: groups.id,
      users: users.id,
      models: models.id,
      devices: devices.id,
      commands: commands.id,
    }
    const tables: Record<ImportedTable, SQLiteTable> = { accounts, groups, users, models, devices, commands }
    const exists = Object.fromEntries(
      (Object.keys(tables) as ImportedTable[]).map((table) => [table, db.select({ id: idOf[table] }).from(tables[table]).where(eq(idOf[table], placeholder('id'))).prepare()]),
    ) as unknown as Record<ImportedTable, { get(values: { id: string }): { id: string } | undefined }>
    const groupAccount = db.select({ accountId: groups.accountId }).from(groups).where(eq(groups.id, placeholder('id'))).prepare()
    const modelAccount = db.select({ accountId: models.accountId }).from(models).where(eq(models.id, placeholder('id'))).prepare()
    const keyStored = db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.hash, placeholder('hash'))).prepare()
    // sign-in names are unique whatever their case; an empty name signs nobody in
    const userNamed = db
      .select({ id: users.id })
      .from(users)
      .where(and(sql`lower(${users.name}) = ${placeholder('name')}`, ne(users.name, '')))
      .prepare()
    return {
      has: (table, id) => exists[table].get({ id }) !== undefined,
      groupAccount: (id) => groupAccount.get({ id })?.accountId,
      modelAccount: (id) => modelAccount.get({ id })?.accountId,
      keyHashStored: (hash) => keyStored.get({ hash }) !== undefined,
      userNamed: (name) => userNamed.get({ name })?.id,
    }
  }

  function write(data: ImportRows, { upsert, now, onProgress }: ImportWrite): ImportSummary {
    // Without upsert every id was checked to be new, so a conflict cannot happen there.
    const insertAccount = db.insert(accounts).values({ id: placeholder('id'), name: placeholder('name'), createdAt: placeholder('now') })
    const insertGroup = db.insert(groups).values({ id: placeholder('id'), accountId: placeholder('account'), name: placeholder('name') })
    const insertUser = db.insert(users).values({ id: placeholder('id'), accountId: placeholder('account'), name: placeholder('name'), createdAt: placeholder('now') })
    const insertModel = db.insert(models).values({ id: placeholder('id'), name: placeholder('name'), protocol: placeholder('protocol') })
    const insertCommand = db.insert(commands).values({
      id: placeholder('id'),
      modelId: placeholder('model'),
      name: placeholder('name'),
      widget: placeholder('widget'),
      ordinal: placeholder('ordinal'),
      send: placeholder('send'),
    })
    const deviceValues = {
      id: placeholder('id'),
      accountId: placeholder('account_id'),
      modelId: placeholder('model_id'),
      alias: placeholder('alias'),
      properties: placeholder('properties'),
      serial: placeholder('serial'),
      imei: placeholder('imei'),
      iccid: placeholder('iccid'),
      state: placeholder('state'),
      latitude: placeholder('latitude'),
      longitude: placeholder('longitude'),
      connected: placeholder('connected'),
      connectedAt: placeholder('connected_at'),
      disconnectedAt: placeholder('disconnected_at'),
      createdAt: placeholder('created_at'),
      updatedAt: placeholder('updated_at'),
    }
    const insertDevice = db.insert(devices).values(deviceValues)
    const statements = upsert
      ? {
          account: insertAccount.onConflictDoUpdate({ target: accounts.id, set: fromExcluded(accounts, 'name') }).prepare(),
          group: insertGroup.onConflictDoUpdate({ target: groups.id, set: fromExcluded(groups, 'accountId', 'name') }).prepare(),
          user: insertUser.onConflictDoUpdate({ target: users.id, set: fromExcluded(users, 'accountId', 'name') }).prepare(),
          model: insertModel.onConflictDoUpdate({ target: models.id, set: fromExcluded(models, 'name', 'protocol') }).prepare(),
          command: insertCommand.onConflictDoUpdate({ target: commands.id, set: fromExcluded(commands, 'modelId', 'name', 'widget', 'ordinal', 'send') }).prepare(),
          device: insertDevice
            .onConflictDoUpdate({
              target: devices.id,
              set: {
                ...fromExcluded(devices, 'accountId', 'alias', 'properties', 'serial', 'imei', 'iccid', 'state', 'latitude', 'longitude', 'connected', 'connectedAt', 'disconnectedAt', 'updatedAt'),
                // a device named without a model keeps its own; one given without created_at keeps the stored one
                modelId: sql`coalesce(excluded.model_id, ${devices.modelId})`,
                createdAt: sql`CASE WHEN ${placeholder('created_given')} THEN excluded.created_at ELSE ${devices.createdAt} END`,
              },
            })
            .returning({ key: devices.key })
            .prepare(),
        }
      : {
          account: insertAccount.prepare(),
          group: insertGroup.prepare(),
          user: insertUser.prepare(),
          model: insertModel.prepare(),
          command: insertCommand.prepare(),
          device: insertDevice.returning({ key: devices.key }).prepare(),
        }
    const clearUserGroups = db.delete(userGroups).where(eq(userGroups.userId, placeholder('user'))).prepare()
    const insertUserGroup = db.insert(userGroups).values({ userId: placeholder('user'), groupId: placeholder('group') }).onConflictDoNothing().prepare()
    // A user or device moved to another account keeps none of the old account's groups.
    const otherAccountsGroups = db.select({ id: groups.id }).from(groups).where(ne(groups.accountId, placeholder('account')))
    const storedUserAccount = db.select({ accountId: users.accountId }).from(users).where(eq(users.id, placeholder('id'))).prepare()
    const leaveOtherAccountsGroupsUser = db
      .delete(userGroups)
      .where(and(eq(userGroups.userId, placeholder('user')), inArray(userGroups.groupId, otherAccountsGroups)))
      .prepare()
    const insertKey = db
      .insert(apiKeys)
      .values({ userId: placeholder('user'), hash: placeholder('hash'), publicId: placeholder('public_id'), createdAt: placeholder('now') })
      .onConflictDoNothing()
      .prepare()
    const setRole = db.update(users).set({ role: sql`${placeholder('role')}` }).where(eq(users.id, placeholder('id'))).prepare()
    const clearDeviceGroups = db.delete(deviceGroups).where(eq(deviceGroups.deviceKey, placeholder('device'))).prepare()
    const storedDeviceAccount = db.select({ accountId: devices.accountId }).from(devices).where(eq(devices.id, placeholder('id'))).prepare()
    const leaveOtherAccountsGroupsDevice = db
      .delete(deviceGroups)
      .where(and(eq(deviceGroups.deviceKey, placeholder('device')), inArray(deviceGroups.groupId, otherAccountsGroups)))
      .prepare()
    const insertDeviceGroup = db.insert(deviceGroups).values({ groupId: placeholder('group'), deviceKey: placeholder('device') }).onConflictDoNothing().prepare()
    const deviceKey = db.select({ key: devices.key }).from(devices).where(eq(devices.id, placeholder('id'))).prepare()
    // positions and events are written through their stores (the one encoding); upsert replaces what it names
    const positionStore = createPositionStore(sqlite)
    const eventStore = createEventStore(sqlite)
    const writePosition = upsert ? positionStore.upsert : positionStore.insert
    const writeEvent = upsert ? eventStore.upsert : eventStore.insert
    const locate = db
      .update(devices)
      .set({ latitude: sql`${placeholder('latitude')}`, longitude: sql`${placeholder('longitude')}` })
      .where(eq(devices.key, placeholder('key')))
      .prepare()
    const locateFromNewest = (key: number) => {
      const newest = positionStore.newestValid(key)
      if (newest) locate.run({ latitude: newest.latitude, longitude: newest.longitude, key })
    }

    // the stored models the rows rewrite (upsert), as they were: one that changes is audited
    const modelsBefore = (data.models ?? []).flatMap((m) => {
      const row = db.select().from(models).where(eq(models.id, m.id)).get()
      return row ? [{ id: m.id, body: modelBody(db, row), users: accountsUsingModel(db, m.id) }] : []
    })

    const summary: ImportSummary = { accounts: 0, groups: 0, users: 0, apiKeys: 0, models: 0, commands: 0, devices: 0, positions: 0, events: 0 }
    for (const a of data.accounts ?? []) summary.accounts += changed(statements.account.run({ id: a.id, name: a.name ?? '', now }))
    for (const g of data.groups ?? []) summary.groups += changed(statements.group.run({ id: g.id, account: g.account, name: g.name ?? '' }))
    for (const u of data.users ?? []) {
      const movedFrom = upsert ? storedUserAccount.get({ id: u.id })?.accountId : undefined
      summary.users += changed(statements.user.run({ id: u.id, account: u.account, name: u.name ?? '', now }))
      if (u.groups) {
        clearUserGroups.run({ user: u.id })
        for (const g of u.groups) insertUserGroup.run({ user: u.id, group: g })
      }
      if (movedFrom !== undefined && movedFrom !== u.account) leaveOtherAccountsGroupsUser.run({ user: u.id, account: u.account })
      if (u.role !== undefined) setRole.run({ role: u.role, id: u.id })
      for (const hash of u.apiKeyHashes ?? []) summary.apiKeys += changed(insertKey.run({ user: u.id, hash, public_id: crypto.randomUUID(), now }))
    }
    for (const m of data.models ?? []) {
      summary.models += changed(statements.model.run({ id: m.id, name: m.name ?? '', protocol: m.protocol ?? null }))
      m.commands?.forEach((c, ordinal) => {
        summary.commands += changed(
          statements.command.run({ id: c.id, model: m.id, name: c.name ?? '', widget: JSON.stringify(c.widget), ordinal, send: c.send ? JSON.stringify(c.send) : null }),
        )
      })
    }

    const keys = new Map<string, number>()
    const locateAfterPositions: number[] = []
    for (const d of data.devices ?? []) {
      const movedFrom = upsert ? storedDeviceAccount.get({ id: d.id })?.accountId : undefined
      const row = importedDevice(d, now)
      const values = {
        id: row.id,
        account_id: row.accountId,
        model_id: row.modelId,
        alias: row.alias,
        properties: row.properties,
        serial: row.serial,
        imei: row.imei,
        iccid: row.iccid,
        state: row.state,
        latitude: row.latitude,
        longitude: row.longitude,
        connected: row.connected ? 1 : 0,
        connected_at: row.connectedAt,
        disconnected_at: row.disconnectedAt,
        created_at: row.createdAt,
        updated_at: row.updatedAt,
        ...(upsert ? { created_given: d.created_at !== undefined ? 1 : 0 } : {}),
      }
      const key = statements.device.get(values)!.key
      keys.set(d.id, key)
      summary.devices++
      if (d.groups) {
        clearDeviceGroups.run({ device: key })
        for (const g of d.groups) insertDeviceGroup.run({ group: g, device: key })
      }
      if (movedFrom !== undefined && movedFrom !== d.account) {
        leaveOtherAccountsGroupsDevice.run({ device: key, account: d.account })
        removeFromOtherAccountsLinks(sqlite, key, d.account, now)
      }
      if (d.location === undefined) locateAfterPositions.push(key)
    }
    for (const before of modelsBefore) {
      const row = db.select().from(models).where(eq(models.id, before.id)).get()!
      if (Bun.deepEquals(modelBody(db, row), before.body)) continue
      const accountIds = [...before.users, ...accountsUsingModel(db, before.id), row.accountId]
      recordModelChange(db, { modelId: before.id, action: 'update', actor: CLI_ACTOR, accounts: accountIds }, now)
    }

    // once every user's and device's groups, roles and accounts are as the rows say (never
    // between a group cleared and the same group given back): share links keep only what their
    // creators reach (store/shareLinks.ts). Only an upsert can take reach away.
    if (upsert) endLinksBeyondCreatorsReach(sqlite, null, now)
    const keyOf = (id: string) => {
      let key = keys.get(id)
      if (key === undefined) {
        key = deviceKey.get({ id })!.key
        keys.set(id, key)
      }
      return key
    }

    const positions = data.positions ?? []
    const step = Math.max(1, Math.floor(positions.length / 50))
    positions.forEach((p, i) => {
      if (writePosition(keyOf(p.device), importedPosition(p))) summary.positions++
      if (onProgress && i % step === 0) onProgress(i, positions.length)
    })
    onProgress?.(positions.length, positions.length)

    for (const { key, row, seq } of importedEvents(data.events ?? [], keyOf)) if (writeEvent(key, row, seq)) summary.events++
    if (positions.length > 0) for (const key of locateAfterPositions) locateFromNewest(key)
    return summary
  }

  return {
    importRows(rows, options) {
      return settled(() => {
        options.check(storedRows())
        // one unit of work: every table or none (bun:sqlite's transaction, deferred as before)
        return sqlite.transaction(() => write(rows, options))()
      })
    },
  }
}
