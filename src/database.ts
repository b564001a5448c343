/**
 * The database as the product opens it, on either engine:
 *
 * - DATABASE_URL unset: SQLite at DATABASE_PATH (db/client's openDatabase: created, migrated);
 * - DATABASE_URL postgres://…: PostgreSQL 15 or newer (db/postgres/client's openPostgres: a pool of
 *   DATABASE_POOL_SIZE, migrated under an advisory lock so that nodes starting together migrate once).
 *
 * Right after the migrations the built-in models are brought up to date (commands/catalogue.ts), so
 * that the server, `migrate`, an import and every other command find the catalogue as this version
 * declares it. A database opened without migrating (a backup) is left as it is. What cannot be
 * opened on PostgreSQL is a DatabaseUnavailable: one line naming the host and the reason.
 */
import { ALONE_BUSY_TIMEOUT_MS, type DatabaseHandle, openDatabase, type OpenOptions, SERVER_BUSY_TIMEOUT_MS } from '../db/client'
import { openPostgres, type PostgresHandle } from '../db/postgres/client'
import { type Clock, systemClock } from './clock'
import { ensureBuiltinModels, ensureBuiltinModelsOnPostgres } from './commands/catalogue'
import type { Config } from './config'
import { createSqliteStores, type Stores } from './store'
import { createPostgresStores } from './store/postgres'

export function openProductDatabase(path: string, options: Omit<OpenOptions, 'afterMigrate'> & { nowMs?: number } = {}): DatabaseHandle {
  return openDatabase(path, { ...options, afterMigrate: (db) => ensureBuiltinModels(db, options.nowMs ?? Date.now()) })
}

/** The product's database, whichever engine: its stores, and the engine's own handle. */
export interface ProductDatabase {
  engine: 'sqlite' | 'postgres'
  stores: Stores
  /** SQLite's handle (file-level work: backup, the checkpoint at stop); null on PostgreSQL */
  sqlite: DatabaseHandle | null
  /** PostgreSQL's handle (LISTEN/NOTIFY, advisory locks); null on SQLite */
  postgres: PostgresHandle | null
  /** where it is, for messages: the file, or host:port/database (never a password) */
  where: string
  close(): Promise<void>
}

export interface ProductOpenOptions {
  /**
   * 'server': SQLite waits briefly for another process's lock (its writes wait in the stores);
   * PostgreSQL's ingest announces its batches to the other nodes under NODE_NAME. 'command': a
   * process alone, which may wait the long way.
   */
  purpose: 'server' | 'command'
  /** false: open as it is (a backup); default true */
  migrate?: boolean
  clock?: Clock
}

export async function openProduct(config: Config, { purpose, migrate = true, clock = systemClock }: ProductOpenOptions): Promise<ProductDatabase> {
  const nowMs = clock.now()
  if (config.databaseUrl !== null) {
    const postgres = await openPostgres(config.databaseUrl, {
      poolSize: config.databasePoolSize,
      migrate,
      afterMigrate: async (db) => void (await ensureBuiltinModelsOnPostgres(db, nowMs)),
    })
    const stores = createPostgresStores(postgres, { clock, node: purpose === 'server' ? config.nodeName : undefined })
    return { engine: 'postgres', stores, sqlite: null, postgres, where: postgres.where, close: () => postgres.close() }
  }
  const sqlite = openProductDatabase(config.databasePath, {
    synchronous: config.synchronous,
    busyTimeoutMs: purpose === 'server' ? SERVER_BUSY_TIMEOUT_MS : ALONE_BUSY_TIMEOUT_MS,
    migrate,
    nowMs,
  })
  const stores = createSqliteStores(sqlite, { clock, alone: purpose === 'command' })
  return { engine: 'sqlite', stores, sqlite, postgres: null, where: config.databasePath, close: async () => sqlite.close() }
}
