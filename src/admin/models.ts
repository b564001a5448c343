/**
 * Device models and their commands. A model belongs to an account or to the whole server:
 *
 * - made through the API, it is the admin's account's (`account_id`): only that account's devices
 *   may use it (devices/admin-service.ts, the import), only its admins see it (another account's
 *   admin gets 404, as for anything of another account) and change it;
 * - server-wide (`account_id` null: the built-in catalogue, commands/catalogue.ts; imported
 *   models; the operator's, `tracker model add`): every user reads it, and only the operator
 *   changes it, from the command line (or an import): over the API it is 403.
 *
 * So no account can change what another account's devices are sent. A change to a model (made,
 * changed, deleted; by the API, the CLI, an import or a new version's built-in catalogue) is in the
 * audit log of every account whose devices use it, of the account it belongs to, and of the
 * acting admin's (written by store/models.ts in the change's unit of work). A model still used by
 * a device cannot be deleted (Conflict).
 *
 * Plain functions over the models store (store/models.ts): a change and its audit rows are one
 * unit of work there; this decides who may make it.
 */
import type { Clock } from '../clock'
import { patternProblems } from '../commands/patterns'
import { Conflict, Forbidden, Invalid, NotFound, type FieldError } from '../errors'
import { PROTOCOLS } from '../ingest/protocols'
import { type CommandTaken, type ModelAudit, type ModelStore, type StoredModel } from '../store/models'
import { CLI_ACTOR } from '../store/audit'
import type { CreateModelInput, ModelBody, ModelInputCommand, UpdateModelInput } from './models-model'

export interface ModelAdminDeps {
  models: ModelStore
  clock: Clock
}

export interface Page {
  limit: number
  offset: number
}

/** Who acts on models: an account's admin (the API), or the operator (the command line, actor `cli`). */
export type ModelActor = { kind: 'admin'; accountId: string; userId: string; requestId: string | null } | { kind: 'operator' }

/** the built-in models (each protocol's, commands/catalogue.ts keeps them up to date) */
const BUILTIN_IDS: ReadonlySet<string> = new Set(PROTOCOLS.map((protocol) => protocol.model.id))

/** Repeated command ids, a blank name, bad field patterns, a `required` not true or false: what the schema cannot say. */
function checkInput(input: { name?: string; commands?: ModelInputCommand[] }): void {
  const errors: FieldError[] = []
  if (input.name !== undefined && input.name.trim() === '') errors.push({ path: '/name', message: 'must not be blank' })
  const seen = new Map<string, number>()
  input.commands?.forEach((command, i) => {
    if (command.id === undefined) return
    const first = seen.get(command.id.toLowerCase())
    if (first !== undefined) errors.push({ path: `/commands/${i}/id`, message: `repeats /commands/${first}/id; each command id may appear once` })
    else seen.set(command.id.toLowerCase(), i)
  })
  if (input.commands) errors.push(...patternProblems(input.commands, '/commands'))
  input.commands?.forEach((command, i) => {
    const fields = (command.widget as { fields?: unknown }).fields
    if (!Array.isArray(fields)) return
    fields.forEach((field, j) => {
      const required = (field as { required?: unknown } | null)?.required
      // commands/sending.ts reads true (never empty) or false (may be left out, then not sent)
      if (required !== undefined && typeof required !== 'boolean') errors.push({ path: `/commands/${i}/widget/fields/${j}/required`, message: 'must be true or false' })
    })
  })
  if (errors.length > 0) throw new Invalid(errors.map((e) => `${e.path} ${e.message}`).join('; '), errors)
}

const isTaken = (result: object): result is CommandTaken => 'taken' in result

/** a command id of another model, given in the list: Conflict naming its place */
function takenConflict(taken: CommandTaken): Conflict {
  return new Conflict(`commands/${taken.index}/id: ${taken.taken} is a command of another model`)
}

export function createModelAdmin({ models, clock }: ModelAdminDeps) {
  const auditOf = (actor: ModelActor): ModelAudit =>
    actor.kind === 'admin' ? { actor: actor.userId, requestId: actor.requestId, accounts: [actor.accountId] } : { actor: CLI_ACTOR, requestId: null, accounts: [] }

  /** The model the actor reaches: an admin another account's model is 404 (never revealed), as an unknown one */
  function reachable(row: StoredModel | null, id: string, actor: ModelActor): StoredModel {
    if (!row || (actor.kind === 'admin' && row.accountId !== null && row.accountId !== actor.accountId)) throw new NotFound(`No model ${id}`)
    return row
  }

  /**
   * The model the actor may change: a server-wide one is the operator's (403 for an admin); a
   * built-in one nobody's. Decided inside the store's unit of work, on the row it changes.
   */
  const changeable = (id: string, actor: ModelActor) => (row: StoredModel) => {
    reachable(row, id, actor)
    if (actor.kind === 'admin' && row.accountId === null) {
      throw new Forbidden(
        `Model ${row.id} is server-wide (the built-in catalogue, an import or the operator's): it is read-only over the API and changed by the ` +
          'operator, with `tracker model update|delete` on the server or an import. Make a model of your own account with POST /models.',
      )
    }
    // brought up to date at every start: a change by hand would not last
    if (BUILTIN_IDS.has(row.id)) {
      throw new Conflict(`Model ${row.id} is built in: the server brings it up to date at every start. Make a model of your own (model add) to change its commands`)
    }
  }

  return {
    /** Models by name then id: an account's (its own and the server-wide ones), or every model (null: the operator). */
    listModels(accountId: string | null, page: Page): Promise<ModelBody[]> {
      return models.list(accountId, page)
    },

    /** One model; another account's is 404 for `accountId` (null: the operator sees every model). */
    async getModel(id: string, accountId: string | null): Promise<ModelBody> {
      const actor: ModelActor = accountId === null ? { kind: 'operator' } : { kind: 'admin', accountId, userId: '', requestId: null }
      const row = reachable(await models.find(id.toLowerCase()), id, actor)
      const body = await models.body(row.id)
      if (!body) throw new NotFound(`No model ${id}`)
      return body
    },

    /** A new model: an admin's belongs to their account; the operator's to `accountId`, or to the server (null). */
    async createModel(input: CreateModelInput, actor: ModelActor, operatorAccountId: string | null = null): Promise<ModelBody> {
      checkInput(input)
      const now = clock.now()
      const accountId = actor.kind === 'admin' ? actor.accountId : operatorAccountId
      const model = { id: crypto.randomUUID(), name: input.name.trim(), protocol: input.protocol ?? null, accountId }
      const created = await models.create(model, input.commands ?? [], auditOf(actor), now)
      if (isTaken(created)) throw takenConflict(created)
      return created
    },

    /** Changes the fields given; `commands` replaces the list (see store/models.ts writeModelCommandsInTransaction). */
    async updateModel(id: string, input: UpdateModelInput, actor: ModelActor): Promise<ModelBody> {
      checkInput(input)
      const now = clock.now()
      const change = { name: input.name?.trim(), protocol: input.protocol, commands: input.commands }
      const updated = await models.update(id.toLowerCase(), change, auditOf(actor), now, changeable(id, actor))
      if (updated === null) throw new NotFound(`No model ${id}`)
      if (isTaken(updated)) throw takenConflict(updated)
      return updated
    },

    /** Deletes the model and its commands; Conflict while any device on the server uses it. */
    async deleteModel(id: string, actor: ModelActor): Promise<void> {
      const now = clock.now()
      const outcome = await models.delete(id.toLowerCase(), auditOf(actor), now, changeable(id, actor))
      if (outcome === 'missing') throw new NotFound(`No model ${id}`)
      if (outcome === 'used') throw new Conflict(`Model ${id.toLowerCase()} is still used by a device; give its devices another model or delete them first`)
    },
  }
}

export type ModelAdmin = ReturnType<typeof createModelAdmin>
