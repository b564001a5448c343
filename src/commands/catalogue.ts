/**
 * The built-in catalogue: one server-wide model per protocol, with the protocol's standard
 * commands, so that an account needs no model of its own. Each protocol declares its model in its
 * own folder (protocols/<name>/model.ts, on its descriptor), with fixed ids; this is the one place
 * that writes them: at every start and `tracker migrate` (src/database.ts opens the database that
 * way), each is created, or brought back to its declaration when it differs (a new version's
 * commands, a change by hand). Nothing else records them: no migration, no dataset.
 *
 * A built-in model that changes is in the audit log (actor `cli`: the operator runs the new
 * version) of every account whose devices use it. Nobody changes one by hand: the API refuses
 * server-wide models (403), the command line and the import built-in ones.
 */
import type { Db } from '../../db/client'
import type { PgDb } from '../../db/postgres/client'
import { CLI_ACTOR } from '../store/audit'
import type { ModelBody } from '../admin/models-model'
import { PROTOCOLS } from '../ingest/protocols'
import { ensureModelsInDatabase } from '../store/models'
import { ensureModelsOnPostgres } from '../store/postgres/models'

/** Each protocol's built-in model, as GET /models shows it. */
export const BUILTIN_MODELS: readonly ModelBody[] = PROTOCOLS.map((protocol) => ({
  id: protocol.model.id,
  name: protocol.model.name,
  protocol: protocol.name,
  // a copy: the declaration is compared with what is stored, never handed out to be changed
  commands: structuredClone(protocol.model.commands) as ModelBody['commands'],
  account: null,
}))

export const BUILTIN_MODEL_IDS: ReadonlySet<string> = new Set(BUILTIN_MODELS.map((model) => model.id))
/** the ids of the built-in models' commands: no other model may take one */
export const BUILTIN_COMMAND_IDS: ReadonlySet<string> = new Set(BUILTIN_MODELS.flatMap((model) => model.commands.map((command) => command.id)))

/** The built-in model of a protocol (by its name), or undefined for an unknown one. */
export function builtinModelOf(protocol: string): ModelBody | undefined {
  return BUILTIN_MODELS.find((model) => model.protocol === protocol)
}

/**
 * Creates the built-in models that are missing and restores those that differ; what it did. Called
 * while the database is opened (src/database.ts, db/client's afterMigrate hands it the Drizzle
 * database): the unit of work is the models store's, synchronous as the opening is.
 */
export function ensureBuiltinModels(db: Db, nowMs: number): { created: string[]; updated: string[] } {
  return ensureModelsInDatabase(db, BUILTIN_MODELS, CLI_ACTOR, nowMs)
}

/**
 * The same on PostgreSQL, for openPostgres's afterMigrate (which hands it the Drizzle database):
 * `openPostgres(url, { afterMigrate: (db) => ensureBuiltinModelsOnPostgres(db, now).then(() => {}) })`.
 * Nodes starting together bring them up to date once (an advisory lock; the others find them as declared).
 */
export function ensureBuiltinModelsOnPostgres(db: PgDb, nowMs: number): Promise<{ created: string[]; updated: string[] }> {
  return ensureModelsOnPostgres(db, BUILTIN_MODELS, CLI_ACTOR, nowMs)
}
