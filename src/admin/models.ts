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
 * acting admin's (recordModelChange). A model still used by a device cannot be deleted (Conflict).
 *
 * Plain synchronous functions; the API runs them through store/busy.ts.
 */
import { and, asc, eq, inArray, isNull, ne, notInArray, or } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { commands, devices, models } from '../../db/schema'
import type { Clock } from '../clock'
import { patternProblems } from '../commands/patterns'
import { Conflict, Forbidden, Invalid, NotFound, type FieldError } from '../errors'
import { PROTOCOLS } from '../ingest/protocols'
import { type AuditAction, CLI_ACTOR, createAuditLog } from './audit'
import type { CreateModelInput, ModelBody, ModelInputCommand, UpdateModelInput } from './models-model'

export interface ModelAdminDeps {
  db: Db
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

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]
type Conn = Db | Tx

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

/** The accounts whose devices use the model. */
export function accountsUsingModel(db: Conn, modelId: string): string[] {
  return db
    .selectDistinct({ accountId: devices.accountId })
    .from(devices)
    .where(eq(devices.modelId, modelId))
    .all()
    .map((row) => row.accountId)
}

/**
 * Records a change to a model in the audit log of each account of `accounts` (each once): call it
 * inside the change's transaction with every account concerned (those whose devices use the
 * model, before and after; its own; the acting admin's). A server-wide model no device uses
 * concerns no account: it is in no log (the command line prints what it did).
 */
export function recordModelChange(
  db: Conn,
  change: { modelId: string; action: AuditAction; actor: string; requestId?: string | null; accounts: Iterable<string | null> },
  atMs: number,
): void {
  const log = createAuditLog(db as Db)
  for (const accountId of new Set(change.accounts)) {
    if (accountId === null) continue
    log.record({ accountId, actor: change.actor, action: change.action, objectType: 'model', objectId: change.modelId, requestId: change.requestId ?? null }, atMs)
  }
}

/** The model as the API shows it, commands in order. */
export function modelBody(db: Conn, row: typeof models.$inferSelect): ModelBody {
  const list = db
    .select({ id: commands.id, name: commands.name, widget: commands.widget, send: commands.send })
    .from(commands)
    .where(eq(commands.modelId, row.id))
    .orderBy(asc(commands.ordinal), asc(commands.id))
    .all()
  return {
    id: row.id,
    name: row.name,
    protocol: row.protocol,
    commands: list.map((c) => ({ id: c.id, name: c.name, widget: JSON.parse(c.widget), ...(c.send === null ? {} : { send: JSON.parse(c.send) }) })),
    account: row.accountId,
  }
}

/** Models an account reaches: server-wide ones and its own. */
const visibleTo = (accountId: string) => or(isNull(models.accountId), eq(models.accountId, accountId))

/**
 * Writes the model's commands as given, in order: an id of one of its commands keeps it, a new
 * id (or none: the server chooses) adds one, an id of another model's command is a Conflict;
 * its commands not named are removed.
 */
export function writeModelCommands(tx: Conn, modelId: string, list: readonly ModelInputCommand[]): void {
  const given = list.map((c) => ({ ...c, id: c.id?.toLowerCase() ?? crypto.randomUUID() }))
  const ids = given.map((c) => c.id)
  if (ids.length > 0) {
    const taken = tx
      .select({ id: commands.id })
      .from(commands)
      .where(and(inArray(commands.id, ids), ne(commands.modelId, modelId)))
      .limit(1)
      .get()
    if (taken) throw new Conflict(`commands/${ids.indexOf(taken.id)}/id: ${taken.id} is a command of another model`)
  }
  tx.delete(commands)
    .where(ids.length > 0 ? and(eq(commands.modelId, modelId), notInArray(commands.id, ids)) : eq(commands.modelId, modelId))
    .run()
  given.forEach((c, ordinal) => {
    // a command given without `send` no longer has one: the list replaces what was there
    const values = { name: c.name ?? '', widget: JSON.stringify(c.widget), ordinal, send: c.send ? JSON.stringify(c.send) : null }
    tx.insert(commands)
      .values({ id: c.id, modelId, ...values })
      .onConflictDoUpdate({ target: commands.id, set: values })
      .run()
  })
}

export function createModelAdmin({ db, clock }: ModelAdminDeps) {
  const auditActor = (actor: ModelActor) => (actor.kind === 'admin' ? actor.userId : CLI_ACTOR)
  const requestIdOf = (actor: ModelActor) => (actor.kind === 'admin' ? actor.requestId : null)

  /** The model the actor reaches: an admin another account's model is 404 (never revealed), as an unknown one */
  function reachable(tx: Conn, id: string, actor: ModelActor) {
    const row = tx.select().from(models).where(eq(models.id, id.toLowerCase())).get()
    if (!row || (actor.kind === 'admin' && row.accountId !== null && row.accountId !== actor.accountId)) throw new NotFound(`No model ${id}`)
    return row
  }

  /** The model the actor may change: a server-wide one is the operator's (403 for an admin); a built-in one nobody's. */
  function changeable(tx: Conn, id: string, actor: ModelActor) {
    const row = reachable(tx, id, actor)
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
    return row
  }

  return {
    /** Models by name then id: an account's (its own and the server-wide ones), or every model (null: the operator). */
    listModels(accountId: string | null, page: Page): ModelBody[] {
      const query = db.select().from(models)
      const rows = (accountId === null ? query : query.where(visibleTo(accountId)))
        .orderBy(asc(models.name), asc(models.id))
        .limit(page.limit)
        .offset(page.offset)
        .all()
      return rows.map((row) => modelBody(db, row))
    },

    /** One model; another account's is 404 for `accountId` (null: the operator sees every model). */
    getModel(id: string, accountId: string | null): ModelBody {
      return modelBody(db, reachable(db, id, accountId === null ? { kind: 'operator' } : { kind: 'admin', accountId, userId: '', requestId: null }))
    },

    /** A new model: an admin's belongs to their account; the operator's to `accountId`, or to the server (null). */
    createModel(input: CreateModelInput, actor: ModelActor, operatorAccountId: string | null = null): ModelBody {
      checkInput(input)
      const now = clock.now()
      const id = crypto.randomUUID()
      const accountId = actor.kind === 'admin' ? actor.accountId : operatorAccountId
      return db.transaction(
        (tx) => {
          const row = tx
            .insert(models)
            .values({ id, name: input.name.trim(), protocol: input.protocol ?? null, accountId })
            .returning()
            .get()
          writeModelCommands(tx, id, input.commands ?? [])
          recordModelChange(tx, { modelId: id, action: 'create', actor: auditActor(actor), requestId: requestIdOf(actor), accounts: [accountId] }, now)
          return modelBody(tx, row)
        },
        { behavior: 'immediate' },
      )
    },

    /** Changes the fields given; `commands` replaces the list (see writeModelCommands). */
    updateModel(id: string, input: UpdateModelInput, actor: ModelActor): ModelBody {
      checkInput(input)
      const now = clock.now()
      return db.transaction(
        (tx) => {
          const row = changeable(tx, id, actor)
          const updated = tx
            .update(models)
            .set({ name: input.name === undefined ? row.name : input.name.trim(), protocol: input.protocol === undefined ? row.protocol : input.protocol })
            .where(eq(models.id, row.id))
            .returning()
            .get()!
          if (input.commands !== undefined) writeModelCommands(tx, row.id, input.commands)
          const accounts = [...accountsUsingModel(tx, row.id), row.accountId, actor.kind === 'admin' ? actor.accountId : null]
          recordModelChange(tx, { modelId: row.id, action: 'update', actor: auditActor(actor), requestId: requestIdOf(actor), accounts }, now)
          return modelBody(tx, updated)
        },
        { behavior: 'immediate' },
      )
    },

    /** Deletes the model and its commands; Conflict while any device on the server uses it. */
    deleteModel(id: string, actor: ModelActor): void {
      const now = clock.now()
      db.transaction(
        (tx) => {
          const row = changeable(tx, id, actor)
          const used = tx.select({ key: devices.key }).from(devices).where(eq(devices.modelId, row.id)).limit(1).get()
          if (used) throw new Conflict(`Model ${row.id} is still used by a device; give its devices another model or delete them first`)
          tx.delete(commands).where(eq(commands.modelId, row.id)).run()
          tx.delete(models).where(eq(models.id, row.id)).run()
          const accounts = [row.accountId, actor.kind === 'admin' ? actor.accountId : null]
          recordModelChange(tx, { modelId: row.id, action: 'delete', actor: auditActor(actor), requestId: requestIdOf(actor), accounts }, now)
        },
        { behavior: 'immediate' },
      )
    },
  }
}

export type ModelAdmin = ReturnType<typeof createModelAdmin>
