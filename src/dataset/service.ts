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
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { BUILTIN_COMMAND_IDS, BUILTIN_MODEL_IDS } from '../commands/catalogue'
import { patternProblems } from '../commands/patterns'
import { identifierProblems } from '../devices/identifiers'
import { hashKey } from '../keys/service'
import type { DatasetStore, ImportedTable, ImportRows, ImportSummary, StoredRows } from '../store/dataset'
import { type Dataset, DatasetSchema, plainMessage } from './model'
import { registerFormats } from '../formats'

export type { ImportSummary }

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

/**
 * Validates `document` and writes it in one unit of work (store/dataset.ts); rejects with
 * DatasetError (nothing written) when anything is off.
 */
export function importDataset(store: DatasetStore, document: unknown, options: ImportOptions = {}): Promise<ImportSummary> {
  try {
    const data = parseDataset(document)
    const upsert = options.upsert ?? false
    const rows: ImportRows = { ...data, users: data.users?.map(({ api_keys, ...user }) => ({ ...user, apiKeyHashes: api_keys?.map(hashKey) })) }
    return store.importRows(rows, { upsert, now: options.now ?? Date.now(), onProgress: options.onProgress, check: (stored) => checkReferences(stored, data, upsert) })
  } catch (error) {
    return Promise.reject(error)
  }
}

function checkReferences(stored: StoredRows, data: Dataset, upsert: boolean): void {
  const problems = new Problems()
  const exists = (table: ImportedTable) => (id: string) => stored.has(table, id)
  const accountInDb = exists('accounts')
  const storedModelAccount = (id: string) => stored.modelAccount(id)
  const deviceInDb = exists('devices')

  // Ids: unique within the file, and new to the database unless upserting.
  const tables: [keyof Dataset, ImportedTable][] = [['accounts', 'accounts'], ['groups', 'groups'], ['users', 'users'], ['models', 'models'], ['devices', 'devices']]
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
    const storedAccount = stored.groupAccount(group.id)
    if (storedAccount !== undefined && storedAccount !== group.account) {
      problems.add(`/groups/${i}/account`, `group ${group.id} belongs to account ${storedAccount}; a group cannot move to another account`)
    }
    groupAccount.set(group.id, group.account)
  })
  const accountOfGroup = (id: string) => groupAccount.get(id) ?? stored.groupAccount(id)
  const checkGroups = (groups: string[] | undefined, account: string, path: string) =>
    groups?.forEach((group, g) => {
      const owner = accountOfGroup(group)
      if (owner === undefined) return problems.add(`${path}/${g}`, `no group ${group}`)
      if (owner !== account) problems.add(`${path}/${g}`, `group ${group} belongs to another account`)
      groupAccount.set(group, owner)
    })

  const keys = new Set<string>()
  // sign-in names are unique across the server, whatever their case (an empty name signs nobody in)
  const namesInFile = new Map<string, string>()
  data.users?.forEach((user, i) => {
    const name = (user.name ?? '').toLowerCase()
    if (name !== '') {
      const other = namesInFile.get(name) ?? stored.userNamed(name)
      if (other !== undefined && other !== user.id) problems.add(`/users/${i}/name`, `is already the name of user ${other}; names are unique, whatever their case`)
      namesInFile.set(name, user.id)
    }
    // groups are checked against a known account only: one wrong account is one problem
    if (!hasAccount(user.account)) problems.add(`/users/${i}/account`, `no account ${user.account}`)
    else checkGroups(user.groups, user.account, `/users/${i}/groups`)
    user.api_keys?.forEach((key, k) => {
      if (keys.has(key) || (!upsert && stored.keyHashStored(hashKey(key)))) problems.add(`/users/${i}/api_keys/${k}`, 'duplicate API key')
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
