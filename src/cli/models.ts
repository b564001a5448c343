/**
 * `tracker model …`: the operator's device models, from the server's machine. The operator is the
 * only one who changes a server-wide model (the API gives account admins 403 on those); a model
 * made here is server-wide unless `--account` gives it to an account. Built-in models (one per
 * protocol, commands/catalogue.ts) are listed but not changed: the server brings them up to date at
 * every start. Every change is in the audit log, actor `cli`, of each account whose devices use the
 * model (and of the account it belongs to).
 *
 *   model list [--account A]                  id, name, protocol, owner, commands
 *   model show M                              the model as a JSON document update --file takes
 *   model add --name N [--protocol P] [--commands FILE] [--account A]
 *   model update M --file FILE                FILE: { name?, protocol?, commands? } as PATCH /models/{id}
 *   model delete M
 *
 * FILE holds JSON: for add, the commands array of POST /models; for update, the body of
 * PATCH /models/{id} (what `model show` prints).
 */
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { TSchema } from '@sinclair/typebox'
import type { Stores } from '../store'
import { createModelAdmin, type ModelActor } from '../admin/models'
import { CreateModelBody, UpdateModelBody } from '../admin/models-model'
import { BUILTIN_MODEL_IDS } from '../commands/catalogue'
import { plainMessage } from '../dataset/model'
import { registerFormats } from '../formats'
import type { AdminCommandContext } from './admin'
import { parseOptions } from './admin'
import { ArgumentError, resolveAccount, resolveModel } from './resolve'

registerFormats()
const createBody = TypeCompiler.Compile(CreateModelBody)
const updateBody = TypeCompiler.Compile(UpdateModelBody)

const OPERATOR: ModelActor = { kind: 'operator' }
const USAGE =
  'model list [--account A] | model show M | model add --name N [--protocol P] [--commands FILE] [--account A] | model update M --file FILE | model delete M'

/** JSON from a file, or an ArgumentError naming the option */
async function readJson(path: string, option: string): Promise<unknown> {
  const file = Bun.file(path)
  if (!(await file.exists())) throw new ArgumentError(`${option}: no file ${path}`)
  try {
    return JSON.parse(await file.text())
  } catch (error) {
    throw new ArgumentError(`${option}: ${path} is not JSON: ${(error as Error).message}`)
  }
}

/** `value` checked against a compiled body schema: each problem named by its path, as the API's 400 would */
function checked<T>(schema: ReturnType<typeof TypeCompiler.Compile<TSchema>>, value: unknown, option: string): T {
  if (schema.Check(value)) return value as T
  const seen = new Set<string>()
  const problems: string[] = []
  for (const error of schema.Errors(value)) {
    if (seen.has(error.path)) continue
    seen.add(error.path)
    problems.push(`${error.path || '/'} ${plainMessage(error)}`)
    if (problems.length === 10) break
  }
  throw new ArgumentError(`${option}: ${problems.join('; ')}`)
}

function noPositionals(positionals: string[]): void {
  if (positionals.length) throw new ArgumentError(`unexpected argument ${positionals[0]}`)
}

function oneModel(positionals: string[], usage: string): string {
  if (positionals.length !== 1) throw new ArgumentError(`${usage}: name the model (its id or name; model list shows them)`)
  return positionals[0]!
}

export async function modelCommand(args: string[], context: AdminCommandContext): Promise<number> {
  const [name, ...rest] = args
  if (name === undefined || !['list', 'show', 'add', 'update', 'delete'].includes(name)) {
    throw new ArgumentError(name === undefined ? `missing subcommand: ${USAGE}` : `unknown subcommand ${name}: ${USAGE}`)
  }
  const clock = { now: context.now }
  // alone on the database: a write waits for another process's lock for the busy timeout, as every command does
  const modelAdmin = (stores: Stores) => createModelAdmin({ models: stores.models, clock })

  if (name === 'list') {
    const { values, positionals } = parseOptions(rest, { account: { type: 'string' } })
    noPositionals(positionals)
    const rows = await context.withDatabase(async ({ names: lookup, stores }) => {
      const account = values.account === undefined ? null : (await resolveAccount(lookup, values.account)).id
      const names = await lookup.accountNames()
      return (await modelAdmin(stores).listModels(account, { limit: 100_000, offset: 0 })).map((model) => ({ ...model, owner: model.account === null ? (BUILTIN_MODEL_IDS.has(model.id) ? 'built-in' : 'server-wide') : `account ${names.get(model.account) ?? model.account}` }))
    })
    for (const model of rows) context.print([model.id, model.name, model.protocol ?? '-', model.owner, `${model.commands.length} commands`].join('\t'))
    return 0
  }

  if (name === 'show') {
    const { positionals } = parseOptions(rest, {})
    const given = oneModel(positionals, 'model show M')
    const model = await context.withDatabase(async ({ names, stores }) => modelAdmin(stores).getModel((await resolveModel(names, given, 'model')).id, null))
    context.print(JSON.stringify({ name: model.name, protocol: model.protocol, commands: model.commands }, null, 2))
    return 0
  }

  if (name === 'add') {
    const { values, positionals } = parseOptions(
      rest,
      { name: { type: 'string' }, protocol: { type: 'string' }, commands: { type: 'string' }, account: { type: 'string' } },
      ['name'],
    )
    noPositionals(positionals)
    const commands = values.commands === undefined ? undefined : await readJson(values.commands, '--commands')
    const body = checked<typeof CreateModelBody.static>(
      createBody,
      { name: values.name, ...(values.protocol === undefined ? {} : { protocol: values.protocol }), ...(commands === undefined ? {} : { commands }) },
      values.commands === undefined ? '--name' : '--commands',
    )
    const model = await context.withDatabase(async ({ names, stores }) => {
      const account = values.account === undefined ? null : await resolveAccount(names, values.account)
      return { ...(await modelAdmin(stores).createModel(body, OPERATOR, account?.id ?? null)), owner: account ? `of account ${account.name}` : 'server-wide' }
    })
    context.print(`added model ${model.name} (${model.id}), ${model.owner}, with ${model.commands.length} commands`)
    return 0
  }

  if (name === 'update') {
    const { values, positionals } = parseOptions(rest, { file: { type: 'string' } }, ['file'])
    const given = oneModel(positionals, 'model update M --file FILE')
    const body = checked<typeof UpdateModelBody.static>(updateBody, await readJson(values.file!, '--file'), '--file')
    const model = await context.withDatabase(async ({ names, stores }) => modelAdmin(stores).updateModel((await resolveModel(names, given, 'model')).id, body, OPERATOR))
    context.print(`changed model ${model.name} (${model.id}); devices using it send its commands as they are now`)
    return 0
  }

  const { positionals } = parseOptions(rest, {})
  const given = oneModel(positionals, 'model delete M')
  const deleted = await context.withDatabase(async ({ names, stores }) => {
    const model = await resolveModel(names, given, 'model')
    await modelAdmin(stores).deleteModel(model.id, OPERATOR)
    return model
  })
  context.print(`deleted model ${deleted.name} (${deleted.id})`)
  return 0
}

