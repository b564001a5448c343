/**
 * Device models and their commands: a catalogue for the whole server, as in the import format
 * (a model has no account; devices of every account may use it). Account admins read and manage
 * it; a change to a model reaches the devices of every account that use it. A model still used by
 * any device cannot be deleted (Conflict), and which devices use it is not said: they may be
 * another account's.
 *
 * Plain synchronous functions of (input, account id, actor, request id): the account id is the
 * one the audit entry is filed under (the actor's). The API runs them through store/busy.ts.
 */
import { and, asc, eq, inArray, ne, notInArray } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { commands, devices, models } from '../../db/schema'
import type { Clock } from '../clock'
import { Conflict, Invalid, NotFound, type FieldError } from '../errors'
import { createAuditLog } from './audit'
import type { CreateModelInput, ModelBody, ModelInputCommand, UpdateModelInput } from './models-model'

export interface ModelAdminDeps {
  db: Db
  clock: Clock
}

export interface Page {
  limit: number
  offset: number
}

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

/** Repeated command ids, and a blank name: what the schema cannot say. */
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
  if (errors.length > 0) throw new Invalid(errors.map((e) => `${e.path} ${e.message}`).join('; '), errors)
}

export function createModelAdmin({ db, clock }: ModelAdminDeps) {
  function body(tx: Db | Tx, row: typeof models.$inferSelect): ModelBody {
    const list = tx
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
    }
  }

  function requireModel(tx: Db | Tx, id: string) {
    const row = tx.select().from(models).where(eq(models.id, id.toLowerCase())).get()
    if (!row) throw new NotFound(`No model ${id}`)
    return row
  }

  /**
   * Writes the model's commands as given, in order: an id of one of its commands keeps it, a new
   * id (or none: the server chooses) adds one, an id of another model's command is a Conflict;
   * its commands not named are removed.
   */
  function writeCommands(tx: Tx, modelId: string, list: ModelInputCommand[]): void {
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

  return {
    /** the catalogue, by name then id */
    listModels(page: Page): ModelBody[] {
      const rows = db.select().from(models).orderBy(asc(models.name), asc(models.id)).limit(page.limit).offset(page.offset).all()
      return rows.map((row) => body(db, row))
    },

    getModel(id: string): ModelBody {
      return body(db, requireModel(db, id))
    },

    createModel(input: CreateModelInput, accountId: string, actor: string, requestId: string | null = null): ModelBody {
      checkInput(input)
      const now = clock.now()
      const id = crypto.randomUUID()
      return db.transaction(
        (tx) => {
          const row = tx
            .insert(models)
            .values({ id, name: input.name.trim(), protocol: input.protocol ?? null })
            .returning()
            .get()
          writeCommands(tx, id, input.commands ?? [])
          createAuditLog(tx).record({ accountId, actor, action: 'create', objectType: 'model', objectId: id, requestId }, now)
          return body(tx, row)
        },
        { behavior: 'immediate' },
      )
    },

    /** Changes the fields given; `commands` replaces the list (see writeCommands). */
    updateModel(id: string, input: UpdateModelInput, accountId: string, actor: string, requestId: string | null = null): ModelBody {
      checkInput(input)
      const now = clock.now()
      return db.transaction(
        (tx) => {
          const row = requireModel(tx, id)
          const updated = tx
            .update(models)
            .set({ name: input.name === undefined ? row.name : input.name.trim(), protocol: input.protocol === undefined ? row.protocol : input.protocol })
            .where(eq(models.id, row.id))
            .returning()
            .get()!
          if (input.commands !== undefined) writeCommands(tx, row.id, input.commands)
          createAuditLog(tx).record({ accountId, actor, action: 'update', objectType: 'model', objectId: row.id, requestId }, now)
          return body(tx, updated)
        },
        { behavior: 'immediate' },
      )
    },

    /** Deletes the model and its commands; Conflict while any device on the server uses it. */
    deleteModel(id: string, accountId: string, actor: string, requestId: string | null = null): void {
      const now = clock.now()
      db.transaction(
        (tx) => {
          const row = requireModel(tx, id)
          const used = tx.select({ key: devices.key }).from(devices).where(eq(devices.modelId, row.id)).limit(1).get()
          if (used) throw new Conflict(`Model ${row.id} is still used by a device; give its devices another model or delete them first`)
          tx.delete(commands).where(eq(commands.modelId, row.id)).run()
          tx.delete(models).where(eq(models.id, row.id)).run()
          createAuditLog(tx).record({ accountId, actor, action: 'delete', objectType: 'model', objectId: row.id, requestId }, now)
        },
        { behavior: 'immediate' },
      )
    },
  }
}

export type ModelAdmin = ReturnType<typeof createModelAdmin>
