/**
 * The operator's commands for running a fleet from the server's machine: `account`, `user`,
 * `key`, `device`, `model` (cli/models.ts) and `init`. Each names things by name or id (cli/resolve.ts), prints what it
 * did, records the change in the audit log with actor `cli`, and exits 2 with a message naming
 * the bad argument.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'
import type { DatabaseHandle } from '../../db/client'
import { createAccount } from '../admin/accounts'
import { CLI_ACTOR } from '../store/audit'
import { createDeviceAdmin } from '../devices/admin-service'
import type { Stores } from '../store'
import { adminDeps, operator } from '../admin/actor'
import { createKey, keyOwner, listKeys, revokeKey } from '../admin/keys'
import { createUser, hashPassword, listUsers, type PeopleDeps, setPassword } from '../admin/users'
import { createPeopleStore, type PeopleStore } from '../store/people'
import { setupFirstAccount } from '../session/setup'
import type { OperatorNameStore } from '../store/operator-names'
import { modelCommand } from './models'
import { ArgumentError, list, resolveAccount, resolveGroup, resolveModel, resolveUser } from './resolve'

export { ArgumentError }

type Options = NonNullable<ParseArgsConfig['options']>

/** node:util's parseArgs, strict: an unknown option or a missing value is an ArgumentError naming it */
export function parseOptions<O extends Options>(args: string[], options: O, required: (keyof O & string)[] = []) {
  let parsed
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: true })
  } catch (error) {
    throw new ArgumentError((error as Error).message.replace(/\. To specify.*$/s, ''))
  }
  const values = parsed.values as Record<string, unknown>
  for (const name of required) {
    if (values[name] === undefined || values[name] === '') throw new ArgumentError(`--${name} is required`)
  }
  return parsed as { values: { [K in keyof O]?: O[K]['type'] extends 'boolean' ? boolean : string }; positionals: string[] }
}

/** What a command works with while the database is open. */
export interface CommandStores {
  /** names to rows, and the lists the commands print */
  names: OperatorNameStore
  /** every store, made for a process alone on the database (either engine) */
  stores: Stores
  /** SQLite's handle, for `init`'s wait out of another process's lock; null on PostgreSQL */
  sqlite: DatabaseHandle | null
}

export interface AdminCommandContext {
  /** opens the database, runs `work` (awaited), closes it */
  withDatabase<T>(work: (stores: CommandStores) => T | Promise<T>): Promise<T>
  now(): number
  print(line: string): void
  /** what the operator typed on standard input (passwords), read once */
  readStdin(): Promise<string>
}

function subcommand(args: string[], known: string[], usage: string): [string, string[]] {
  const [name, ...rest] = args
  if (name === undefined || !known.includes(name)) throw new ArgumentError(name === undefined ? `missing subcommand: ${usage}` : `unknown subcommand ${name}: ${usage}`)
  return [name, rest]
}

/** a password typed or piped on standard input: its one trailing line break is not part of it */
async function passwordFrom(context: AdminCommandContext): Promise<string> {
  const text = await context.readStdin()
  return text.replace(/\r?\n$/, '')
}

const ROLES = ['admin', 'member'] as const

/** "--groups G,G": each group of the account, by name or id, in order */
async function groupIds(names: OperatorNameStore, accountId: string, given: string | undefined): Promise<string[]> {
  const ids: string[] = []
  for (const group of list(given)) ids.push((await resolveGroup(names, accountId, group)).id)
  return ids
}

/**
 * The people store of a command: alone on the database, a write waits for another process's lock
 * in SQLite's busy timeout, as every command's does (`retry`: also after it, up to the 5 s deadline,
 * as `init` always has, sharing the setup page's unit of work).
 */
function peopleOf(opened: CommandStores, clock: { now(): number }, retry = false): PeopleStore {
  return retry && opened.sqlite ? createPeopleStore(opened.sqlite, { clock, retryWhileBusy: true }) : opened.stores.people
}

const peopleDeps = (opened: CommandStores, clock: { now(): number }): PeopleDeps => ({ people: peopleOf(opened, clock), clock })

export const adminCommands = {
  model: modelCommand,

  async account(args: string[], context: AdminCommandContext): Promise<number> {
    const [, rest] = subcommand(args, ['create'], 'account create --name NAME')
    const { values, positionals } = parseOptions(rest, { name: { type: 'string' } }, ['name'])
    if (positionals.length) throw new ArgumentError(`unexpected argument ${positionals[0]}`)
    const account = await context.withDatabase((opened) => createAccount(peopleOf(opened, { now: context.now }), { name: values.name! }, CLI_ACTOR, context.now()))
    context.print(`created account ${account.name} (${account.id})`)
    return 0
  },

  async device(args: string[], context: AdminCommandContext): Promise<number> {
    const [name, rest] = subcommand(args, ['add', 'list'], 'device add --account A [--model M] (--imei I | --serial S) [--alias X] [--groups G,G] | device list [--account A]')
    if (name === 'list') {
      const { values } = parseOptions(rest, { account: { type: 'string' } })
      const rows = await context.withDatabase(async ({ names }) => {
        const account = values.account === undefined ? undefined : await resolveAccount(names, values.account)
        return names.deviceList(account ? account.id : null)
      })
      for (const row of rows) context.print([row.id, row.alias, row.imei || '-', row.serial || '-', row.state].join('\t'))
      return 0
    }
    const { values, positionals } = parseOptions(
      rest,
      { account: { type: 'string' }, model: { type: 'string' }, imei: { type: 'string' }, serial: { type: 'string' }, alias: { type: 'string' }, groups: { type: 'string' } },
      ['account'],
    )
    if (positionals.length) throw new ArgumentError(`unexpected argument ${positionals[0]}`)
    if (values.imei === undefined && values.serial === undefined) throw new ArgumentError('--imei or --serial is required: it is how the device is recognised when it reports')
    const device = await context.withDatabase(async ({ names, stores }) => {
      const account = await resolveAccount(names, values.account!)
      // without --model: the built-in model of the protocol it first reports on
      const model = values.model === undefined ? undefined : await resolveModel(names, values.model, '--model', account.id)
      const groups = await groupIds(names, account.id, values.groups)
      const admin = createDeviceAdmin({ store: stores.deviceAdmin, clock: { now: context.now } })
      const alias = values.alias ?? values.imei ?? values.serial!
      return admin.createDevice({ alias, model: model?.id, groups, imei: values.imei, serial: values.serial }, account.id, CLI_ACTOR)
    })
    context.print(`added device ${device.alias} (${device.id}) to account ${device.account}`)
    return 0
  },

  async user(args: string[], context: AdminCommandContext): Promise<number> {
    const usage = 'user create --account A --name N [--role admin|member] [--groups G,G] [--password-stdin] | user passwd N | user list [--account A]'
    const [name, rest] = subcommand(args, ['create', 'passwd', 'list'], usage)
    const clock = { now: context.now }
    if (name === 'list') {
      const { values } = parseOptions(rest, { account: { type: 'string' } })
      const rows = await context.withDatabase(async (opened) => {
        const { names } = opened
        const deps = peopleDeps(opened, clock)
        const ids = values.account === undefined ? await names.accountsWithUsers() : [(await resolveAccount(names, values.account)).id]
        const accountNames = await names.accountNames()
        const rows = []
        for (const accountId of ids) {
          const users = await listUsers(deps, operator(accountId), { limit: 100_000, offset: 0 })
          rows.push(...users.map((user) => ({ ...user, accountId, accountName: accountNames.get(accountId) ?? '' })))
        }
        return rows
      })
      // the account's id stays the fourth column (scripts read it); its name follows, for people
      for (const user of rows) context.print([user.id, user.name, user.role, user.accountId, user.accountName].join('\t'))
      return 0
    }
    if (name === 'passwd') {
      const { positionals } = parseOptions(rest, {})
      if (positionals.length !== 1) throw new ArgumentError('user passwd N: name the user (the password comes from standard input)')
      // the name is checked before the password is read: a typo fails at once
      const user = await context.withDatabase(({ names }) => resolveUser(names, positionals[0]!, 'user'))
      const password = await hashPassword(await passwordFrom(context), 'password (standard input)')
      await context.withDatabase((opened) => setPassword(peopleDeps(opened, clock), operator(user.accountId), user.id, password))
      context.print(`password changed for ${user.name} (${user.id}); their sessions are ended`)
      return 0
    }
    const { values, positionals } = parseOptions(
      rest,
      { account: { type: 'string' }, name: { type: 'string' }, role: { type: 'string' }, groups: { type: 'string' }, 'password-stdin': { type: 'boolean' } },
      ['account', 'name'],
    )
    if (positionals.length) throw new ArgumentError(`unexpected argument ${positionals[0]}`)
    const role = values.role ?? 'member'
    if (!(ROLES as readonly string[]).includes(role)) throw new ArgumentError(`--role must be admin or member, got "${role}"`)
    const password = values['password-stdin'] ? await hashPassword(await passwordFrom(context), 'password (standard input)') : undefined
    const user = await context.withDatabase(async (opened) => {
      const { names } = opened
      const account = await resolveAccount(names, values.account!)
      const groups = await groupIds(names, account.id, values.groups)
      return createUser(peopleDeps(opened, clock), operator(account.id), { name: values.name!, role: role as (typeof ROLES)[number], groups, password })
    })
    context.print(`created ${user.role} ${user.name} (${user.id})${password ? '' : '; no password yet: `user passwd` sets one'}`)
    return 0
  },

  async key(args: string[], context: AdminCommandContext): Promise<number> {
    const [name, rest] = subcommand(args, ['create', 'list', 'revoke'], 'key create --user U [--name LABEL] | key list --user U | key revoke ID')
    const clock = { now: context.now }
    if (name === 'revoke') {
      const { positionals } = parseOptions(rest, {})
      if (positionals.length !== 1) throw new ArgumentError('key revoke ID: give the key\'s id (key list shows it)')
      const keyId = positionals[0]!
      await context.withDatabase(async ({ stores }) => {
        const deps = adminDeps(stores, clock)
        const owner = await keyOwner(deps.keys, keyId)
        if (owner === null) throw new ArgumentError(`no key with id "${keyId}"`)
        await revokeKey(deps, operator(owner.accountId), owner.userId, keyId)
      })
      context.print(`revoked key ${keyId}; it fails from the next request`)
      return 0
    }
    const { values, positionals } = parseOptions(rest, { user: { type: 'string' }, name: { type: 'string' } }, ['user'])
    if (positionals.length) throw new ArgumentError(`unexpected argument ${positionals[0]}`)
    if (name === 'list') {
      const keys = await context.withDatabase(async ({ names, stores }) => {
        const user = await resolveUser(names, values.user!)
        return listKeys(adminDeps(stores, clock), operator(user.accountId), user.id)
      })
      for (const key of keys) context.print([key.id, key.name || '-', key.created_at, key.last_used_at ?? 'never used', key.expires_at ?? 'no expiry'].join('\t'))
      return 0
    }
    const created = await context.withDatabase(async ({ names, stores }) => {
      const user = await resolveUser(names, values.user!)
      return createKey(adminDeps(stores, clock), operator(user.accountId), user.id, { name: values.name })
    })
    // the secret alone on standard output, so that KEY=$(tracker key create …) works
    context.print(created.key)
    return 0
  },

  /** the first run without a browser: the account and its first admin, as the setup page makes them */
  async init(args: string[], context: AdminCommandContext): Promise<number> {
    const { values, positionals } = parseOptions(args, { account: { type: 'string' }, admin: { type: 'string' }, 'password-file': { type: 'string' } }, ['account', 'admin'])
    if (positionals.length) throw new ArgumentError(`unexpected argument ${positionals[0]}`)
    let password: string
    if (values['password-file'] !== undefined) {
      const file = Bun.file(values['password-file'])
      if (!(await file.exists())) throw new ArgumentError(`--password-file: no file ${values['password-file']}`)
      password = (await file.text()).replace(/\r?\n$/, '')
    } else password = await passwordFrom(context)
    const admin = await context.withDatabase((opened) =>
      setupFirstAccount(peopleOf(opened, { now: context.now }, true), { account: values.account!, name: values.admin!, password }, { now: context.now }, { actor: CLI_ACTOR }),
    )
    context.print(`created account ${admin.account.name} (${admin.account.id}) and its admin ${admin.name} (${admin.id}); sign in at the console`)
    return 0
  },
}
