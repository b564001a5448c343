/**
 * Importing a dataset (docs/import-format.md): validate the whole document, check every
 * reference against the file and the database, then write it in one transaction. A bad
 * document changes nothing and names every bad field (up to MAX_PROBLEMS) with its path.
 *
 * UUIDs are case-insensitive: every id and reference is stored in lower case, as the API looks
 * a path id up (migration 0004 lower-cased those of older imports).
 *
 * Nothing crosses accounts: a user's and a device's groups must be of their own account, a
 * group cannot move to another account, a device's model must be server-wide or of the device's
 * account, and a user or device that `--upsert` moves to another account leaves its old
 * account's groups (and a device its old account's share links) in the same transaction.
 *
 * Models: an imported model is server-wide (the import format gives a model no account); one that
 * `--upsert` rewrites keeps the account it belongs to. The built-in models' ids (and their
 * commands') are the server's own (commands/catalogue.ts): a file may not take them. A stored
 * model that `--upsert` changes is in the audit log (actor `cli`) of every account whose devices
 * use it, before or after the import, and of the account it belongs to; what the import creates
 * (models, like accounts, users and devices) is not audited: no device used it before.
 */
import type { Database, SQLQueryBindings } from 'bun:sqlite'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { eq } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import * as schema from '../../db/schema'
import { CLI_ACTOR } from '../admin/audit'
import { accountsUsingModel, modelBody, recordModelChange } from '../admin/models'
import { BUILTIN_COMMAND_IDS, BUILTIN_MODEL_IDS } from '../commands/catalogue'
import { patternProblems } from '../commands/patterns'
import { identifierProblems } from '../devices/identifiers'
import { hashKey } from '../keys/service'
import { endLinksBeyondCreatorsReach } from '../share/creators'
import { removeFromOtherAccountsLinks } from '../share/service'
import { createEventStore, encodeEvent } from '../store/events'
import { createPositionStore, encodePosition } from '../store/positions'
import { isPlausiblePosition } from '../track/validate'
import { type Dataset, DatasetSchema, plainMessage } from './model'
import { registerFormats } from '../formats'

registerFormats()
const checker = TypeCompiler.Compile(DatasetSchema)

/** A document this bad is told about its first problems only; fixing them shows the next. */
export const MAX_PROBLEMS = 20

export interface DatasetProblem {
  /** JSON Pointer of the field, '' for the document itself */
  path: string
  message: string
}

/** A rejected document: every problem found (up to MAX_PROBLEMS), one a line in `message`. */
export class DatasetError extends Error {
  readonly problems: DatasetProblem[]
  /** the first problem's path and message */
  readonly path: string
  readonly reason: string

  constructor(path: string, reason: string)
  constructor(problems: DatasetProblem[], more: boolean)
  constructor(pathOrProblems: string | DatasetProblem[], reasonOrMore: string | boolean) {
    const problems = typeof pathOrProblems === 'string' ? [{ path: pathOrProblems, message: reasonOrMore as string }] : pathOrProblems
    const line = (p: DatasetProblem) => `${p.path || '/'}: ${p.message}`
    super(
      problems.length === 1 && reasonOrMore !== true
        ? line(problems[0])
        : `${reasonOrMore === true ? `the first ${problems.length}` : problems.length} problems in the dataset (nothing was imported):\n` +
            problems.map((p) => `  ${line(p)}`).join('\n'),
    )
    this.problems = problems
    this.path = problems[0].path
    this.reason = problems[0].message
  }
}

/** Collects problems; throws once MAX_PROBLEMS are found and one more turns up, or at `check()`. */
class Problems {
  private readonly list: DatasetProblem[] = []
  add(path: string, message: string): void {
    if (this.list.length === MAX_PROBLEMS) throw new DatasetError(this.list, true)
    this.list.push({ path, message })
  }
  check(): void {
    if (this.list.length > 0) throw new DatasetError(this.list, false)
  }
}

export interface ImportOptions {
  upsert?: boolean
  now?: number
  /** called now and then while positions are written: (done, total) */
  onProgress?: (done: number, total: number) => void
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

export function parseDataset(document: unknown): Dataset {
  if (checker.Check(document)) return lowerCaseIds(document)
  const problems = new Problems()
  const seen = new Set<string>()
  // a missing field is reported twice (required, then of the wrong type): once is enough
  for (const error of checker.Errors(document)) {
    if (seen.has(error.path)) continue
    seen.add(error.path)
    problems.add(error.path, plainMessage(error))
  }
  problems.check()
  throw new Error('the dataset schema rejected a document without naming an error')
}

const lower = (id: string) => id.toLowerCase()
const lowerAll = (list: string[] | undefined) => list?.map(lower)

/** The document with every id and reference in lower case (a new object: the caller's is left as it is). */
function lowerCaseIds(data: Dataset): Dataset {
  // positions are many and usually lower case already: copy only those that change
  const withDevice = <T extends { device: string }>(item: T): T => (item.device === lower(item.device) ? item : { ...item, device: lower(item.device) })
  return {
    ...data,
    accounts: data.accounts?.map((a) => ({ ...a, id: lower(a.id) })),
    groups: data.groups?.map((g) => ({ ...g, id: lower(g.id), account: lower(g.account) })),
    users: data.users?.map((u) => ({ ...u, id: lower(u.id), account: lower(u.account), groups: lowerAll(u.groups) })),
    models: data.models?.map((m) => ({ ...m, id: lower(m.id), commands: m.commands?.map((c) => ({ ...c, id: lower(c.id) })) })),
    devices: data.devices?.map((d) => ({ ...d, id: lower(d.id), account: lower(d.account), model: d.model === undefined ? undefined : lower(d.model), groups: lowerAll(d.groups) })),
    positions: data.positions?.map(withDevice),
    events: data.events?.map(withDevice),
  }
}

/** Validates `document` and writes it; throws DatasetError (nothing written) when anything is off. */
export function importDataset(sqlite: Database, document: unknown, options: ImportOptions = {}): ImportSummary {
  const data = parseDataset(document)
  const now = options.now ?? Date.now()
  const upsert = options.upsert ?? false
  checkReferences(sqlite, data, upsert)

  const write = sqlite.transaction(() => writeDataset(sqlite, data, { upsert, now, onProgress: options.onProgress }))
  return write()
}

const isoMs = (value: string | null | undefined): number | null => (value == null ? null : Date.parse(value))

function checkReferences(sqlite: Database, data: Dataset, upsert: boolean): void {
  const problems = new Problems()
  const exists = (table: string) => {
    const stmt = sqlite.query<{ one: number }, [string]>(`SELECT 1 AS one FROM ${table} WHERE id = ?`)
    return (id: string) => stmt.get(id) !== null
  }
  const accountInDb = exists('accounts')
  const db = drizzle(sqlite, { schema })
  /** the account a stored model belongs to: null server-wide, undefined when there is no such model */
  const storedModelAccount = (id: string) =>
    db.select({ accountId: schema.models.accountId }).from(schema.models).where(eq(schema.models.id, id)).get()?.accountId
  const deviceInDb = exists('devices')
  const groupInDb = sqlite.query<{ account_id: string }, [string]>('SELECT account_id FROM groups WHERE id = ?')

  // Ids: unique within the file, and new to the database unless upserting.
  const tables: [keyof Dataset, string][] = [['accounts', 'accounts'], ['groups', 'groups'], ['users', 'users'], ['models', 'models'], ['devices', 'devices']]
  const fileIds = new Map<string, Set<string>>()
  for (const [key, table] of tables) {
    const seen = new Set<string>()
    const inDb = exists(table)
    ;(data[key] as { id: string }[] | undefined)?.forEach((item, i) => {
      if (seen.has(item.id)) problems.add(`/${key}/${i}/id`, `duplicate id ${item.id} in the file`)
      else if (!upsert && inDb(item.id)) problems.add(`/${key}/${i}/id`, `${item.id} already exists (use --upsert to update)`)
      seen.add(item.id)
    })
    fileIds.set(key, seen)
  }
  const commandIds = new Set<string>()
  const commandInDb = exists('commands')
  data.models?.forEach((model, m) => {
    if (BUILTIN_MODEL_IDS.has(model.id)) problems.add(`/models/${m}/id`, `${model.id} is a built-in model's id: the server keeps that model up to date itself`)
    model.commands?.forEach((command, c) => {
      const path = `/models/${m}/commands/${c}/id`
      if (BUILTIN_COMMAND_IDS.has(command.id)) problems.add(path, `${command.id} is a command of a built-in model`)
      else if (commandIds.has(command.id)) problems.add(path, `duplicate id ${command.id} in the file`)
      else if (!upsert && commandInDb(command.id)) problems.add(path, `${command.id} already exists (use --upsert to update)`)
      commandIds.add(command.id)
    })
    for (const problem of patternProblems(model.commands ?? [], `/models/${m}/commands`)) problems.add(problem.path, problem.message)
  })

  const hasAccount = (id: string) => fileIds.get('accounts')!.has(id) || accountInDb(id)
  const groupAccount = new Map<string, string>()
  data.groups?.forEach((group, i) => {
    if (!hasAccount(group.account)) problems.add(`/groups/${i}/account`, `no account ${group.account}`)
    // its members would be left in a group of another account
    const stored = groupInDb.get(group.id)?.account_id
    if (stored !== undefined && stored !== group.account) {
      problems.add(`/groups/${i}/account`, `group ${group.id} belongs to account ${stored}; a group cannot move to another account`)
    }
    groupAccount.set(group.id, group.account)
  })
  const accountOfGroup = (id: string) => groupAccount.get(id) ?? groupInDb.get(id)?.account_id
  const checkGroups = (groups: string[] | undefined, account: string, path: string) =>
    groups?.forEach((group, g) => {
      const owner = accountOfGroup(group)
      if (owner === undefined) return problems.add(`${path}/${g}`, `no group ${group}`)
      if (owner !== account) problems.add(`${path}/${g}`, `group ${group} belongs to another account`)
      groupAccount.set(group, owner)
    })

  const keys = new Set<string>()
  const keyInDb = sqlite.query<{ one: number }, [string]>('SELECT 1 AS one FROM api_keys WHERE hash = ?')
  // sign-in names are unique across the server, whatever their case (an empty name signs nobody in)
  const namesInFile = new Map<string, string>()
  const nameInDb = sqlite.query<{ id: string }, [string]>("SELECT id FROM users WHERE lower(name) = ? AND name <> ''")
  data.users?.forEach((user, i) => {
    const name = (user.name ?? '').toLowerCase()
    if (name !== '') {
      const other = namesInFile.get(name) ?? nameInDb.get(name)?.id
      if (other !== undefined && other !== user.id) problems.add(`/users/${i}/name`, `is already the name of user ${other}; names are unique, whatever their case`)
      namesInFile.set(name, user.id)
    }
    // groups are checked against a known account only: one wrong account is one problem
    if (!hasAccount(user.account)) problems.add(`/users/${i}/account`, `no account ${user.account}`)
    else checkGroups(user.groups, user.account, `/users/${i}/groups`)
    user.api_keys?.forEach((key, k) => {
      if (keys.has(key) || (!upsert && keyInDb.get(hashKey(key)))) problems.add(`/users/${i}/api_keys/${k}`, 'duplicate API key')
      keys.add(key)
    })
  })
  // a model of the file is server-wide, unless --upsert rewrites a stored one: that keeps its account
  const modelAccount = (id: string) => {
    const stored = storedModelAccount(id)
    return stored === undefined && fileIds.get('models')!.has(id) ? null : stored
  }
  data.devices?.forEach((device, i) => {
    // the identifiers' shapes: the API's and the command line's rule, in the same words
    for (const problem of identifierProblems(device)) problems.add(`/devices/${i}${problem.path}`, problem.message)
    // without a model: its first report gives it the built-in model of its protocol
    const owner = device.model === undefined ? null : modelAccount(device.model)
    if (owner === undefined) problems.add(`/devices/${i}/model`, `no model ${device.model}`)
    else if (owner !== null && owner !== device.account) {
      problems.add(`/devices/${i}/model`, `model ${device.model} belongs to another account: a device may use a server-wide model or one of its own account's`)
    }
    if (!hasAccount(device.account)) problems.add(`/devices/${i}/account`, `no account ${device.account}`)
    else checkGroups(device.groups, device.account, `/devices/${i}/groups`)
  })
  const hasDevice = (id: string) => fileIds.get('devices')!.has(id) || deviceInDb(id)
  data.positions?.forEach((position, i) => {
    if (!hasDevice(position.device)) problems.add(`/positions/${i}/device`, `no device ${position.device}`)
  })
  data.events?.forEach((event, i) => {
    if (!hasDevice(event.device)) problems.add(`/events/${i}/device`, `no device ${event.device}`)
  })
  problems.check()
}

function writeDataset(
  sqlite: Database,
  data: Dataset,
  { upsert, now, onProgress }: { upsert: boolean; now: number; onProgress?: (done: number, total: number) => void },
): ImportSummary {
  // Without --upsert every id was checked to be new, so a conflict cannot happen there.
  const onConflict = (columns: string[]) =>
    upsert ? `ON CONFLICT(id) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(', ')}` : ''

  const insertAccount = sqlite.query(`INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?) ${onConflict(['name'])}`)
  const insertGroup = sqlite.query(`INSERT INTO groups (id, account_id, name) VALUES (?, ?, ?) ${onConflict(['account_id', 'name'])}`)
  const insertUser = sqlite.query(`INSERT INTO users (id, account_id, name, created_at) VALUES (?, ?, ?, ?) ${onConflict(['account_id', 'name'])}`)
  const clearUserGroups = sqlite.query('DELETE FROM user_groups WHERE user_id = ?')
  // A user or device moved to another account keeps none of the old account's groups.
  const storedUserAccount = sqlite.query<{ account_id: string }, [string]>('SELECT account_id FROM users WHERE id = ?')
  const leaveOtherAccountsGroupsUser = sqlite.query<unknown, [string, string]>(
    'DELETE FROM user_groups WHERE user_id = ? AND group_id IN (SELECT id FROM groups WHERE account_id <> ?)',
  )
  const insertUserGroup = sqlite.query('INSERT OR IGNORE INTO user_groups (user_id, group_id) VALUES (?, ?)')
  const insertKey = sqlite.query('INSERT OR IGNORE INTO api_keys (user_id, hash, public_id, created_at) VALUES (?, ?, ?, ?)')
  // a role left out keeps the stored one on --upsert (a new user is a member)
  const setRole = sqlite.query<unknown, [string, string]>('UPDATE users SET role = ? WHERE id = ?')
  const insertModel = sqlite.query(`INSERT INTO models (id, name, protocol) VALUES (?, ?, ?) ${onConflict(['name', 'protocol'])}`)
  const insertCommand = sqlite.query(
    `INSERT INTO commands (id, model_id, name, widget, ordinal, send) VALUES (?, ?, ?, ?, ?, ?) ${onConflict(['model_id', 'name', 'widget', 'ordinal', 'send'])}`,
  )
  const deviceColumns = ['account_id', 'model_id', 'alias', 'properties', 'serial', 'imei', 'iccid', 'state', 'latitude', 'longitude', 'connected', 'connected_at', 'disconnected_at', 'created_at', 'updated_at']
  // An upsert that gives no created_at keeps the stored one (the last parameter says whether it was given).
  const createdGiven = `?${deviceColumns.length + 2}`
  const insertDevice = sqlite.query<{ key: number }, SQLQueryBindings[]>(
    `INSERT INTO devices (id, ${deviceColumns.join(', ')}) VALUES (?1, ${deviceColumns.map((_, i) => `?${i + 2}`).join(', ')})
     ${onConflict(deviceColumns.filter((c) => c !== 'created_at')).replace('model_id = excluded.model_id', 'model_id = coalesce(excluded.model_id, model_id)')}${upsert ? `, created_at = CASE WHEN ${createdGiven} THEN excluded.created_at ELSE created_at END` : ''} RETURNING key`,
  )
  const clearDeviceGroups = sqlite.query('DELETE FROM device_groups WHERE device_key = ?')
  const storedDeviceAccount = sqlite.query<{ account_id: string }, [string]>('SELECT account_id FROM devices WHERE id = ?')
  const leaveOtherAccountsGroupsDevice = sqlite.query<unknown, [number, string]>(
    'DELETE FROM device_groups WHERE device_key = ? AND group_id IN (SELECT id FROM groups WHERE account_id <> ?)',
  )
  const insertDeviceGroup = sqlite.query('INSERT OR IGNORE INTO device_groups (group_id, device_key) VALUES (?, ?)')
  const deviceKey = sqlite.query<{ key: number }, [string]>('SELECT key FROM devices WHERE id = ?')
  // positions and events are written through their stores (the one encoding); --upsert replaces what it names
  const positionStore = createPositionStore(sqlite)
  const eventStore = createEventStore(sqlite)
  const writePosition = upsert ? positionStore.upsert : positionStore.insert
  const writeEvent = upsert ? eventStore.upsert : eventStore.insert
  const locate = sqlite.query<unknown, [number, number, number]>('UPDATE devices SET latitude = ?, longitude = ? WHERE key = ?')
  const locateFromNewest = (key: number) => {
    const newest = positionStore.newestValid(key)
    if (newest) locate.run(newest.latitude, newest.longitude, key)
  }

  // the stored models the file rewrites (--upsert), as they were: one that changes is audited
  const db = drizzle(sqlite, { schema })
  const modelsBefore = (data.models ?? []).flatMap((m) => {
    const row = db.select().from(schema.models).where(eq(schema.models.id, m.id)).get()
    return row ? [{ id: m.id, body: modelBody(db, row), users: accountsUsingModel(db, m.id) }] : []
  })

  const summary: ImportSummary = { accounts: 0, groups: 0, users: 0, apiKeys: 0, models: 0, commands: 0, devices: 0, positions: 0, events: 0 }
  for (const a of data.accounts ?? []) summary.accounts += insertAccount.run(a.id, a.name ?? '', now).changes
  for (const g of data.groups ?? []) summary.groups += insertGroup.run(g.id, g.account, g.name ?? '').changes
  for (const u of data.users ?? []) {
    const movedFrom = upsert ? storedUserAccount.get(u.id)?.account_id : undefined
    summary.users += insertUser.run(u.id, u.account, u.name ?? '', now).changes
    if (u.groups) {
      clearUserGroups.run(u.id)
      for (const g of u.groups) insertUserGroup.run(u.id, g)
    }
    if (movedFrom !== undefined && movedFrom !== u.account) leaveOtherAccountsGroupsUser.run(u.id, u.account)
    if (u.role !== undefined) setRole.run(u.role, u.id)
    for (const key of u.api_keys ?? []) summary.apiKeys += insertKey.run(u.id, hashKey(key), crypto.randomUUID(), now).changes
  }
  for (const m of data.models ?? []) {
    summary.models += insertModel.run(m.id, m.name ?? '', m.protocol ?? null).changes
    m.commands?.forEach((c, ordinal) => {
      summary.commands += insertCommand.run(c.id, m.id, c.name ?? '', JSON.stringify(c.widget), ordinal, c.send ? JSON.stringify(c.send) : null).changes
    })
  }

  const keys = new Map<string, number>()
  const locateAfterPositions: number[] = []
  for (const d of data.devices ?? []) {
    const location = d.location ?? null
    const movedFrom = upsert ? storedDeviceAccount.get(d.id)?.account_id : undefined
    const values: SQLQueryBindings[] = [
      d.account, d.model ?? null, d.alias ?? '', JSON.stringify(d.properties ?? {}), d.serial ?? '', d.imei ?? '', d.iccid ?? '',
      d.state ?? 'new', location?.[0] ?? null, location?.[1] ?? null, d.connected ? 1 : 0,
      isoMs(d.connected_at), isoMs(d.disconnected_at), isoMs(d.created_at) ?? now, isoMs(d.updated_at) ?? now,
    ]
    const key = insertDevice.get(d.id, ...values, ...(upsert ? [d.created_at !== undefined ? 1 : 0] : []))!.key
    keys.set(d.id, key)
    summary.devices++
    if (d.groups) {
      clearDeviceGroups.run(key)
      for (const g of d.groups) insertDeviceGroup.run(g, key)
    }
    if (movedFrom !== undefined && movedFrom !== d.account) {
      leaveOtherAccountsGroupsDevice.run(key, d.account)
      removeFromOtherAccountsLinks(sqlite, key, d.account, now)
    }
    if (d.location === undefined) locateAfterPositions.push(key)
  }
  for (const before of modelsBefore) {
    const row = db.select().from(schema.models).where(eq(schema.models.id, before.id)).get()!
    if (Bun.deepEquals(modelBody(db, row), before.body)) continue
    const accounts = [...before.users, ...accountsUsingModel(db, before.id), row.accountId]
    recordModelChange(db, { modelId: before.id, action: 'update', actor: CLI_ACTOR, accounts }, now)
  }

  // once every user's and device's groups, roles and accounts are as the document says (never
  // between a group cleared and the same group given back): share links keep only what their
  // creators reach (share/creators.ts). Only --upsert can take reach away.
  if (upsert) endLinksBeyondCreatorsReach(sqlite, null, now)
  const keyOf = (id: string) => {
    let key = keys.get(id)
    if (key === undefined) {
      key = deviceKey.get(id)!.key
      keys.set(id, key)
    }
    return key
  }

  const positions = data.positions ?? []
  const step = Math.max(1, Math.floor(positions.length / 50))
  positions.forEach((p, i) => {
    // an imported fix is valid unless it is the 0/0 placeholder
    const row = encodePosition(p, isPlausiblePosition(p.latitude, p.longitude))
    if (writePosition(keyOf(p.device), row)) summary.positions++
    if (onProgress && i % step === 0) onProgress(i, positions.length)
  })
  onProgress?.(positions.length, positions.length)

  // the n-th event of a (device, second, code) in the file is its seq n - 1 (db/schema.ts): a file
  // may hold several of one code in one second (a device reconnecting), and importing it again
  // lands each on its own row, nothing twice
  const seqs = new Map<string, number>()
  for (const e of data.events ?? []) {
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
    if (writeEvent(key, row, seq)) summary.events++
  }
  if (positions.length > 0) for (const key of locateAfterPositions) locateFromNewest(key)
  return summary
}
