/**
 * The owner of `models` and `commands` (a model's commands): how a model is read as the API shows
 * it, and its units of work — a model made, changed or deleted with its commands and the audit
 * rows of every account concerned (written with the audit module's writer, in the same
 * transaction), and the built-in catalogue brought up to date at start.
 *
 * The decisions (who may change which model, what a change may hold) are the services'
 * (admin/models.ts, commands/catalogue.ts); this only reads and writes what it is told.
 *
 * SQLite-only SQL: `INSERT … ON CONFLICT (id) DO UPDATE` (the same in PostgreSQL).
 */
import { and, asc, eq, inArray, isNull, ne, notInArray, or, sql } from 'drizzle-orm'
import type { DatabaseHandle, Db } from '../../db/client'
import { commands, devices, models } from '../../db/schema'
import type { ModelBody, ModelInputCommand } from '../admin/models-model'
import { type AuditAction, recordAuditInTransaction } from './audit'
import { type Clock, systemClock } from '../clock'
import { Conflict } from '../errors'
import { storeWriter } from './busy'

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]
/** a Drizzle database or one of its transactions: where the in-transaction writers run */
export type ModelConnection = Db | Tx

/** A model's row, without its commands. */
export type StoredModel = typeof models.$inferSelect

/** A command of a model as the device's command list shows it: the widget as stored (JSON text). */
export interface StoredModelCommand {
  id: string
  name: string
  widget: string
}

/** A model's command with what sending it needs. */
export interface SendableCommand extends StoredModelCommand {
  /** the `send` object as JSON text; null: it cannot be sent */
  send: string | null
  /** the model's protocol label */
  protocol: string | null
}

/** Who the audit rows of a change name, and which accounts they go to besides those the store finds. */
export interface ModelAudit {
  actor: string
  requestId: string | null
  /**
   * Accounts concerned besides those whose devices use the model and the model's own (the store
   * adds those): the acting admin's.
   */
  accounts: readonly (string | null)[]
}

/** A command id given for the model is another model's command: nothing was written. */
export interface CommandTaken {
  taken: string
  /** its place in the list given */
  index: number
}

export interface ModelPage {
  limit: number
  offset: number
}

/**
 * The service's rule, run on the model's row inside the unit of work before anything is written
 * (the row it decides on is the one changed): it throws to refuse, and nothing is written.
 */
export type ModelCheck = (row: StoredModel) => void

export interface ModelStore {
  /** Models by name then id: those an account reaches (server-wide and its own), or every one (null). */
  list(accountId: string | null, page: ModelPage): Promise<ModelBody[]>
  /** One model's row, or null. */
  find(id: string): Promise<StoredModel | null>
  /** One model as the API shows it, or null. */
  body(id: string): Promise<ModelBody | null>
  /** A model's commands in order (the device's command list). */
  commandsOf(modelId: string): Promise<StoredModelCommand[]>
  /** One command of the model, with its `send` and the model's protocol, or null. */
  sendable(modelId: string, commandId: string): Promise<SendableCommand | null>
  /** Writes a new model with its commands and its audit rows (one unit of work). */
  create(model: StoredModel, list: readonly ModelInputCommand[], audit: ModelAudit, atMs: number): Promise<ModelBody | CommandTaken>
  /**
   * Changes the model's name and protocol (those given) and, when given, replaces its commands,
   * with its audit rows; null when there is no such model.
   */
  update(
    id: string,
    change: { name?: string; protocol?: string | null; commands?: readonly ModelInputCommand[] },
    audit: ModelAudit,
    atMs: number,
    check?: ModelCheck,
  ): Promise<ModelBody | CommandTaken | null>
  /** Deletes the model and its commands with its audit rows: `used` (nothing written) while a device uses it. */
  delete(id: string, audit: ModelAudit, atMs: number, check?: ModelCheck): Promise<'deleted' | 'used' | 'missing'>
}

/** The accounts whose devices use the model (in a unit of work of any store that changes it). */
export function accountsUsingModelInTransaction(tx: ModelConnection, modelId: string): string[] {
  return tx
    .selectDistinct({ accountId: devices.accountId })
    .from(devices)
    .where(eq(devices.modelId, modelId))
    .all()
    .map((row) => row.accountId)
}

/**
 * Records a change to a model in the audit log of each account of `accounts` (each once, in the
 * order given), inside the change's transaction. A server-wide model no device uses concerns no
 * account: it is in no log.
 */
export function recordModelChangeInTransaction(
  tx: ModelConnection,
  change: { modelId: string; action: AuditAction; actor: string; requestId?: string | null; accounts: Iterable<string | null> },
  atMs: number,
): void {
  for (const accountId of new Set(change.accounts)) {
    if (accountId === null) continue
    recordAuditInTransaction(tx as Db, { accountId, actor: change.actor, action: change.action, objectType: 'model', objectId: change.modelId, requestId: change.requestId ?? null }, atMs)
  }
}

/** A command's stored columns that the API shows. */
export type StoredCommandColumns = Pick<typeof commands.$inferSelect, 'id' | 'name' | 'widget' | 'send'>

/** A model's row and its commands (in order) as the API shows them (both engines' adapters). */
export function modelBodyOf(row: StoredModel, list: readonly StoredCommandColumns[]): ModelBody {
  return {
    id: row.id,
    name: row.name,
    protocol: row.protocol,
    commands: list.map((c) => ({ id: c.id, name: c.name, widget: JSON.parse(c.widget), ...(c.send === null ? {} : { send: JSON.parse(c.send) }) })),
    account: row.accountId,
  }
}

/** The model as the API shows it, commands in order. */
export function modelBodyInTransaction(tx: ModelConnection, row: StoredModel): ModelBody {
  const list = tx
    .select({ id: commands.id, name: commands.name, widget: commands.widget, send: commands.send })
    .from(commands)
    .where(eq(commands.modelId, row.id))
    .orderBy(asc(commands.ordinal), asc(commands.id))
    .all()
  return modelBodyOf(row, list)
}

/** A command list given for a model as the rows it is written as, in order (ids in lower case; none: a random one). */
export function commandRowsOf(list: readonly ModelInputCommand[]): { id: string; values: { name: string; widget: string; ordinal: number; send: string | null } }[] {
  return list.map((c, ordinal) => ({
    id: c.id?.toLowerCase() ?? crypto.randomUUID(),
    // a command given without `send` no longer has one: the list replaces what was there
    values: { name: c.name ?? '', widget: JSON.stringify(c.widget), ordinal, send: c.send ? JSON.stringify(c.send) : null },
  }))
}

/**
 * Writes the model's commands as given, in order: an id of one of its commands keeps it, a new id
 * (or none: a random one) adds one; its commands not named are removed. An id of another model's
 * command writes nothing and is answered (the caller's transaction must then roll back what it wrote).
 */
export function writeModelCommandsInTransaction(tx: ModelConnection, modelId: string, list: readonly ModelInputCommand[]): CommandTaken | null {
  const given = commandRowsOf(list)
  const ids = given.map((c) => c.id)
  if (ids.length > 0) {
    const taken = tx
      .select({ id: commands.id })
      .from(commands)
      .where(and(inArray(commands.id, ids), ne(commands.modelId, modelId)))
      .limit(1)
      .get()
    if (taken) return { taken: taken.id, index: ids.indexOf(taken.id) }
  }
  tx.delete(commands)
    .where(ids.length > 0 ? and(eq(commands.modelId, modelId), notInArray(commands.id, ids)) : eq(commands.modelId, modelId))
    .run()
  for (const { id, values } of given) {
    tx.insert(commands)
      .values({ id, modelId, ...values })
      .onConflictDoUpdate({ target: commands.id, set: values })
      .run()
  }
  return null
}

/** thrown inside a unit of work to roll it back when a command id is taken, caught by the store (both engines) */
export class TakenRollback extends Error {
  constructor(readonly taken: CommandTaken) {
    super('command id taken')
  }
}

/**
 * Brings the declared models (the built-in catalogue) into the database: each missing one created,
 * each that differs restored, with audit rows (`actor`) in every account whose devices use it. Runs
 * while the database is opened (db/client's afterMigrate), before anything is served: synchronous.
 */
export function ensureModelsInDatabase(db: Db, declared: readonly ModelBody[], actor: string, nowMs: number): { created: string[]; updated: string[] } {
  const created: string[] = []
  const updated: string[] = []
  // most starts find them as declared: a read, and no write lock
  const stale = declared.filter((model) => {
    const stored = db.select().from(models).where(eq(models.id, model.id)).get()
    return !stored || !Bun.deepEquals(modelBodyInTransaction(db, stored), model)
  })
  if (stale.length === 0) return { created, updated }
  db.transaction(
    (tx) => {
      for (const model of stale) {
        const stored = tx.select().from(models).where(eq(models.id, model.id)).get()
        if (stored && Bun.deepEquals(modelBodyInTransaction(tx, stored), model)) continue
        const values = { name: model.name, protocol: model.protocol, accountId: null }
        tx.insert(models)
          .values({ id: model.id, ...values })
          .onConflictDoUpdate({ target: models.id, set: values })
          .run()
        const taken = writeModelCommandsInTransaction(tx, model.id, model.commands as ModelInputCommand[])
        if (taken) throw new Conflict(`commands/${taken.index}/id: ${taken.taken} is a command of another model`)
        const action = stored ? 'update' : 'create'
        recordModelChangeInTransaction(tx, { modelId: model.id, action, actor, accounts: [...accountsUsingModelInTransaction(tx, model.id), stored?.accountId ?? null] }, nowMs)
        ;(stored ? updated : created).push(model.id)
      }
    },
    { behavior: 'immediate' },
  )
  return { created, updated }
}

export interface ModelStoreOptions {
  /** where the wait for another process's write lock reads its deadline (store/busy.ts) */
  clock?: Clock
  /**
   * false: a write waits for the lock only for the connection's busy timeout, blocking (a command
   * line process alone, as before); default true, the server's asynchronous retries
   */
  retryWhileBusy?: boolean
}

/** Models and their commands over SQLite. */
export function createModelStore(database: DatabaseHandle, options: ModelStoreOptions = {}): ModelStore {
  const { db, sqlite } = database
  const clock = options.clock ?? systemClock
  const write = storeWriter(sqlite, { clock, retry: options.retryWhileBusy })
  /** one unit of work, holding the write lock from its start (its reads decide its writes) */
  const unit = <T>(work: (tx: Tx) => T): Promise<T> => write(() => db.transaction(work, { behavior: 'immediate' }))

  const byId = db.select().from(models).where(eq(models.id, sql.placeholder('id'))).prepare()
  const commandsOf = db
    .select({ id: commands.id, name: commands.name, widget: commands.widget })
    .from(commands)
    .where(eq(commands.modelId, sql.placeholder('model')))
    .orderBy(asc(commands.ordinal), asc(commands.id))
    .prepare()
  const sendable = db
    .select({ id: commands.id, name: commands.name, widget: commands.widget, send: commands.send, protocol: models.protocol })
    .from(commands)
    .innerJoin(models, eq(models.id, commands.modelId))
    .where(and(eq(commands.id, sql.placeholder('command')), eq(commands.modelId, sql.placeholder('model'))))
    .prepare()

  /** the audit rows of a change: accounts using the model, its own, then those given */
  const record = (tx: Tx, modelId: string, action: AuditAction, audit: ModelAudit, own: string | null, atMs: number, using: readonly string[]) =>
    recordModelChangeInTransaction(tx, { modelId, action, actor: audit.actor, requestId: audit.requestId, accounts: [...using, own, ...audit.accounts] }, atMs)

  /** runs a unit of work that may find a command id taken: the rollback's answer instead of its result */
  async function orTaken<T>(work: (tx: Tx) => T): Promise<T | CommandTaken> {
    try {
      return await unit(work)
    } catch (error) {
      if (error instanceof TakenRollback) return error.taken
      throw error
    }
  }

  return {
    async list(accountId, page) {
      const query = db.select().from(models)
      const rows = (accountId === null ? query : query.where(or(isNull(models.accountId), eq(models.accountId, accountId))))
        .orderBy(asc(models.name), asc(models.id))
        .limit(page.limit)
        .offset(page.offset)
        .all()
      return rows.map((row) => modelBodyInTransaction(db, row))
    },

    async find(id) {
      return byId.get({ id }) ?? null
    },

    async body(id) {
      const row = byId.get({ id })
      return row ? modelBodyInTransaction(db, row) : null
    },

    async commandsOf(modelId) {
      return commandsOf.all({ model: modelId })
    },

    async sendable(modelId, commandId) {
      return sendable.get({ command: commandId, model: modelId }) ?? null
    },

    create(model, list, audit, atMs) {
      return orTaken((tx) => {
        const row = tx.insert(models).values(model).returning().get()
        const taken = writeModelCommandsInTransaction(tx, row.id, list)
        if (taken) throw new TakenRollback(taken)
        record(tx, row.id, 'create', audit, row.accountId, atMs, [])
        return modelBodyInTransaction(tx, row)
      })
    },

    update(id, change, audit, atMs, check) {
      return orTaken((tx) => {
        const row = tx.select().from(models).where(eq(models.id, id)).get()
        if (!row) return null
        check?.(row)
        const updated = tx
          .update(models)
          .set({ name: change.name ?? row.name, protocol: change.protocol === undefined ? row.protocol : change.protocol })
          .where(eq(models.id, row.id))
          .returning()
          .get()!
        if (change.commands !== undefined) {
          const taken = writeModelCommandsInTransaction(tx, row.id, change.commands)
          if (taken) throw new TakenRollback(taken)
        }
        record(tx, row.id, 'update', audit, row.accountId, atMs, accountsUsingModelInTransaction(tx, row.id))
        return modelBodyInTransaction(tx, updated)
      })
    },

    delete(id, audit, atMs, check) {
      return unit((tx) => {
        const row = tx.select().from(models).where(eq(models.id, id)).get()
        if (!row) return 'missing' as const
        check?.(row)
        const used = tx.select({ key: devices.key }).from(devices).where(eq(devices.modelId, row.id)).limit(1).get()
        if (used) return 'used' as const
        tx.delete(commands).where(eq(commands.modelId, row.id)).run()
        tx.delete(models).where(eq(models.id, row.id)).run()
        record(tx, row.id, 'delete', audit, row.accountId, atMs, [])
        return 'deleted' as const
      })
    },
  }
}
