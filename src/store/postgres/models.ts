/**
 * Models and their commands on PostgreSQL: src/store/models.ts's store over the schema's
 * PostgreSQL twin, its in-transaction writers (same names, awaited), and the built-in catalogue
 * brought up to date after migrating (`ensureModelsOnPostgres`, called by openPostgres's
 * afterMigrate through commands/catalogue.ts's data).
 *
 * Names sort as SQLite's BINARY collation does (`COLLATE "C"`): a database created with another
 * collation (en_US.UTF-8 sorts "alpha" before "Beta") must still page the same list.
 */
import { and, asc, eq, inArray, isNull, ne, notInArray, or, sql } from 'drizzle-orm'
import type { PgConnectable, PgDb, PostgresHandle } from '../../../db/postgres/client'
import { commands, devices, models } from '../../../db/postgres/schema'
import type { ModelBody, ModelInputCommand } from '../../admin/models-model'
import type { AuditAction } from '../audit'
import { Conflict } from '../../errors'
import {
  type CommandTaken,
  commandRowsOf,
  type ModelAudit,
  modelBodyOf,
  type ModelStore,
  type StoredCommandColumns,
  type StoredModel,
  TakenRollback,
} from '../models'
import { recordAuditInTransaction } from './audit'
import { unitOfWork } from './unit'
import { byCodePoint } from './order'

/** text in byte order, as SQLite compares it */

const commandColumns = { id: commands.id, name: commands.name, widget: commands.widget, send: commands.send }

/** models.ts's writer of the same name: the accounts whose devices use the model, in the order SQLite answers (its devices_account index's). */
export async function accountsUsingModelInTransaction(tx: PgConnectable, modelId: string): Promise<string[]> {
  const rows = await tx
    .select({ accountId: devices.accountId })
    .from(devices)
    .where(eq(devices.modelId, modelId))
    .groupBy(devices.accountId)
    .orderBy(byCodePoint(devices.accountId))
  return rows.map((row) => row.accountId)
}

/** models.ts's writer of the same name: the change in the audit log of each account given (each once, in order). */
export async function recordModelChangeInTransaction(
  tx: PgConnectable,
  change: { modelId: string; action: AuditAction; actor: string; requestId?: string | null; accounts: Iterable<string | null> },
  atMs: number,
): Promise<void> {
  for (const accountId of new Set(change.accounts)) {
    if (accountId === null) continue
    await recordAuditInTransaction(tx, { accountId, actor: change.actor, action: change.action, objectType: 'model', objectId: change.modelId, requestId: change.requestId ?? null }, atMs)
  }
}

/** models.ts's reader of the same name: the model as the API shows it, commands in order. */
export async function modelBodyInTransaction(tx: PgConnectable, row: StoredModel): Promise<ModelBody> {
  const list = await tx.select(commandColumns).from(commands).where(eq(commands.modelId, row.id)).orderBy(asc(commands.ordinal), byCodePoint(commands.id))
  return modelBodyOf(row, list)
}

/** Several models as the API shows them, their commands read in one statement. */
export async function modelBodiesInTransaction(tx: PgConnectable, rows: readonly StoredModel[]): Promise<ModelBody[]> {
  if (rows.length === 0) return []
  const list = await tx
    .select({ ...commandColumns, modelId: commands.modelId })
    .from(commands)
    .where(inArray(commands.modelId, rows.map((row) => row.id)))
    .orderBy(asc(commands.ordinal), byCodePoint(commands.id))
  const byModel = new Map<string, StoredCommandColumns[]>()
  for (const command of list) {
    const own = byModel.get(command.modelId) ?? []
    own.push(command)
    byModel.set(command.modelId, own)
  }
  return rows.map((row) => modelBodyOf(row, byModel.get(row.id) ?? []))
}

/** models.ts's writer of the same name: the model's commands replaced by the list given; another model's command id is answered, nothing written. */
export async function writeModelCommandsInTransaction(tx: PgConnectable, modelId: string, list: readonly ModelInputCommand[]): Promise<CommandTaken | null> {
  const given = commandRowsOf(list)
  const ids = given.map((c) => c.id)
  if (ids.length > 0) {
    const [taken] = await tx
      .select({ id: commands.id })
      .from(commands)
      .where(and(inArray(commands.id, ids), ne(commands.modelId, modelId)))
      .limit(1)
    if (taken) return { taken: taken.id, index: ids.indexOf(taken.id) }
  }
  await tx.delete(commands).where(ids.length > 0 ? and(eq(commands.modelId, modelId), notInArray(commands.id, ids)) : eq(commands.modelId, modelId))
  for (const { id, values } of given) {
    await tx
      .insert(commands)
      .values({ id, modelId, ...values })
      .onConflictDoUpdate({ target: commands.id, set: values })
  }
  return null
}

/** models.ts's ensureModelsInDatabase: the declared models created or restored, with their audit rows. */
export async function ensureModelsOnPostgres(db: PgDb, declared: readonly ModelBody[], actor: string, nowMs: number): Promise<{ created: string[]; updated: string[] }> {
  const created: string[] = []
  const updated: string[] = []
  const differs = async (tx: PgConnectable, model: ModelBody): Promise<{ stored: StoredModel | undefined; differs: boolean }> => {
    const [stored] = await tx.select().from(models).where(eq(models.id, model.id))
    return { stored, differs: !stored || !Bun.deepEquals(await modelBodyInTransaction(tx, stored), model) }
  }
  // most starts find them as declared: reads only
  const stale: ModelBody[] = []
  for (const model of declared) if ((await differs(db, model)).differs) stale.push(model)
  if (stale.length === 0) return { created, updated }
  await db.transaction(async (tx) => {
    // nodes starting together: one brings them up to date, the others then find nothing to do
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${ENSURE_MODELS_LOCK})`)
    for (const model of stale) {
      const { stored, differs: stillDiffers } = await differs(tx, model)
      if (!stillDiffers) continue
      const values = { name: model.name, protocol: model.protocol, accountId: null }
      await tx
        .insert(models)
        .values({ id: model.id, ...values })
        .onConflictDoUpdate({ target: models.id, set: values })
      const taken = await writeModelCommandsInTransaction(tx, model.id, model.commands as ModelInputCommand[])
      if (taken) throw new Conflict(`commands/${taken.index}/id: ${taken.taken} is a command of another model`)
      const action = stored ? 'update' : 'create'
      await recordModelChangeInTransaction(tx, { modelId: model.id, action, actor, accounts: [...(await accountsUsingModelInTransaction(tx, model.id)), stored?.accountId ?? null] }, nowMs)
      ;(stored ? updated : created).push(model.id)
    }
  })
  return { created, updated }
}

/** held while the built-in models are brought up to date ("trk" 02) */
const ENSURE_MODELS_LOCK = 0x7472_6b02

/** Models and their commands over PostgreSQL. */
export function createPostgresModelStore(database: Pick<PostgresHandle, 'db' | 'versions'>): ModelStore {
  const { db } = database

  /** the audit rows of a change: accounts using the model, its own, then those given */
  const record = (tx: PgConnectable, modelId: string, action: AuditAction, audit: ModelAudit, own: string | null, atMs: number, using: readonly string[]) =>
    recordModelChangeInTransaction(tx, { modelId, action, actor: audit.actor, requestId: audit.requestId, accounts: [...using, own, ...audit.accounts] }, atMs)

  async function orTaken<T>(work: (tx: PgConnectable) => Promise<T>): Promise<T | CommandTaken> {
    try {
      return await unitOfWork(database, work)
    } catch (error) {
      if (error instanceof TakenRollback) return error.taken
      throw error
    }
  }

  const byId = async (tx: PgConnectable, id: string): Promise<StoredModel | null> => (await tx.select().from(models).where(eq(models.id, id)))[0] ?? null

  return {
    async list(accountId, page) {
      const query = db.select().from(models)
      const rows = await (accountId === null ? query : query.where(or(isNull(models.accountId), eq(models.accountId, accountId))))
        .orderBy(byCodePoint(models.name), byCodePoint(models.id))
        .limit(page.limit)
        .offset(page.offset)
      return modelBodiesInTransaction(db, rows)
    },

    find(id) {
      return byId(db, id)
    },

    async body(id) {
      const row = await byId(db, id)
      return row ? modelBodyInTransaction(db, row) : null
    },

    async commandsOf(modelId) {
      return db
        .select({ id: commands.id, name: commands.name, widget: commands.widget })
        .from(commands)
        .where(eq(commands.modelId, modelId))
        .orderBy(asc(commands.ordinal), byCodePoint(commands.id))
    },

    async sendable(modelId, commandId) {
      const [row] = await db
        .select({ id: commands.id, name: commands.name, widget: commands.widget, send: commands.send, protocol: models.protocol })
        .from(commands)
        .innerJoin(models, eq(models.id, commands.modelId))
        .where(and(eq(commands.id, commandId), eq(commands.modelId, modelId)))
      return row ?? null
    },

    create(model, list, audit, atMs) {
      return orTaken(async (tx) => {
        const [row] = await tx.insert(models).values(model).returning()
        const taken = await writeModelCommandsInTransaction(tx, row!.id, list)
        if (taken) throw new TakenRollback(taken)
        await record(tx, row!.id, 'create', audit, row!.accountId, atMs, [])
        return modelBodyInTransaction(tx, row!)
      })
    },

    update(id, change, audit, atMs, check) {
      return orTaken(async (tx) => {
        // FOR UPDATE: the row decided on is the one changed, whatever another node does meanwhile
        const [row] = await tx.select().from(models).where(eq(models.id, id)).for('update')
        if (!row) return null
        check?.(row)
        const [updated] = await tx
          .update(models)
          .set({ name: change.name ?? row.name, protocol: change.protocol === undefined ? row.protocol : change.protocol })
          .where(eq(models.id, row.id))
          .returning()
        if (change.commands !== undefined) {
          const taken = await writeModelCommandsInTransaction(tx, row.id, change.commands)
          if (taken) throw new TakenRollback(taken)
        }
        await record(tx, row.id, 'update', audit, row.accountId, atMs, await accountsUsingModelInTransaction(tx, row.id))
        return modelBodyInTransaction(tx, updated!)
      })
    },

    delete(id, audit, atMs, check) {
      return unitOfWork(database, async (tx) => {
        const [row] = await tx.select().from(models).where(eq(models.id, id)).for('update')
        if (!row) return 'missing' as const
        check?.(row)
        const [used] = await tx.select({ key: devices.key }).from(devices).where(eq(devices.modelId, row.id)).limit(1)
        if (used) return 'used' as const
        await tx.delete(commands).where(eq(commands.modelId, row.id))
        await tx.delete(models).where(eq(models.id, row.id))
        await record(tx, row.id, 'delete', audit, row.accountId, atMs, [])
        return 'deleted' as const
      })
    },
  }
}
