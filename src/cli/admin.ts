/**
 * The operator's commands for running a fleet from the server's machine: `account`, `user`,
 * `key`, `device` and `init`. Each names things by name or id (cli/resolve.ts), prints what it
 * did, records the change in the audit log with actor `cli`, and exits 2 with a message naming
 * the bad argument.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'
import type { DatabaseHandle } from '../../db/client'
import { createAccount } from '../admin/accounts'
import { CLI_ACTOR } from '../admin/audit'
import { asc, eq } from 'drizzle-orm'
import { devices as devicesTable } from '../../db/schema'
import { createDeviceAdmin } from '../devices/admin-service'
import { ArgumentError, list, resolveAccount, resolveGroup, resolveModel } from './resolve'

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

export interface AdminCommandContext {
  /** opens the database, runs `work`, closes it */
  withDatabase<T>(work: (database: DatabaseHandle) => T): T
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

export const adminCommands = {
  async account(args: string[], context: AdminCommandContext): Promise<number> {
    const [, rest] = subcommand(args, ['create'], 'account create --name NAME')
    const { values, positionals } = parseOptions(rest, { name: { type: 'string' } }, ['name'])
    if (positionals.length) throw new ArgumentError(`unexpected argument ${positionals[0]}`)
    const account = context.withDatabase(({ db }) => createAccount(db, { name: values.name! }, CLI_ACTOR, context.now()))
    context.print(`created account ${account.name} (${account.id})`)
    return 0
  },

  async device(args: string[], context: AdminCommandContext): Promise<number> {
    const [name, rest] = subcommand(args, ['add', 'list'], 'device add --account A --model M (--imei I | --serial S) [--alias X] [--groups G,G] | device list [--account A]')
    if (name === 'list') {
      const { values } = parseOptions(rest, { account: { type: 'string' } })
      const rows = context.withDatabase(({ db }) => {
        const account = values.account === undefined ? undefined : resolveAccount(db, values.account)
        const query = db
          .select({ id: devicesTable.id, alias: devicesTable.alias, imei: devicesTable.imei, serial: devicesTable.serial, state: devicesTable.state })
          .from(devicesTable)
        return (account ? query.where(eq(devicesTable.accountId, account.id)) : query).orderBy(asc(devicesTable.alias), asc(devicesTable.id)).all()
      })
      for (const row of rows) context.print([row.id, row.alias, row.imei || '-', row.serial || '-', row.state].join('\t'))
      return 0
    }
    const { values, positionals } = parseOptions(
      rest,
      { account: { type: 'string' }, model: { type: 'string' }, imei: { type: 'string' }, serial: { type: 'string' }, alias: { type: 'string' }, groups: { type: 'string' } },
      ['account', 'model'],
    )
    if (positionals.length) throw new ArgumentError(`unexpected argument ${positionals[0]}`)
    if (values.imei === undefined && values.serial === undefined) throw new ArgumentError('--imei or --serial is required: it is how the device is recognised when it reports')
    const device = context.withDatabase(({ db }) => {
      const account = resolveAccount(db, values.account!)
      const model = resolveModel(db, values.model!)
      const groups = list(values.groups).map((group) => resolveGroup(db, account.id, group).id)
      const admin = createDeviceAdmin({ db, clock: { now: context.now } })
      const alias = values.alias ?? values.imei ?? values.serial!
      return admin.createDevice({ alias, model: model.id, groups, imei: values.imei, serial: values.serial }, account.id, CLI_ACTOR)
    })
    context.print(`added device ${device.alias} (${device.id}) to account ${device.account}`)
    return 0
  },
}
