/**
 * Opening the database: one file, WAL, the pragmas every connection needs, and the migrations
 * applied in order. Everything that touches SQLite gets its handle from `openDatabase`.
 */
import { Database } from 'bun:sqlite'
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import type { MigrationMeta } from 'drizzle-orm/migrator'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import * as schema from './schema'
import { migrationFiles, migrationJournal } from './migrations'

export type Db = BunSQLiteDatabase<typeof schema>

/** A Drizzle database or transaction over bun:sqlite, or the connection itself. */
export type Connectable = Pick<Db, 'select' | 'insert'> | Database

/**
 * The bun:sqlite connection a Drizzle database or transaction runs on (its session's client), or
 * the connection itself: what prepared statements and store/busy.ts use, joining whatever
 * transaction that connection has open.
 */
export function connectionOf(db: Connectable): Database {
  if (db instanceof Database) return db
  const client = (db as unknown as { session?: { client?: Database } }).session?.client
  if (!client) throw new Error('not a Drizzle database or transaction over bun:sqlite')
  return client
}

export interface DatabaseHandle {
  /** the raw connection, for the few hot paths that use prepared statements directly */
  sqlite: Database
  db: Db
  close(): void
}

/**
 * The server's busy timeout: how long one statement waits for another process's lock (an
 * import, an `sqlite3` shell). bun:sqlite waits synchronously, holding up the whole event loop,
 * so the server's connection barely waits: its writes wait in src/store/busy.ts instead, asynchronously,
 * and its reads never meet the lock (WAL readers do not wait for a writer).
 */
export const SERVER_BUSY_TIMEOUT_MS = 10
/** The busy timeout of a process that does one thing alone (import, backup, key create, migrate), and of opening. */
export const ALONE_BUSY_TIMEOUT_MS = 5000

export interface OpenOptions {
  /** FULL also survives power loss; NORMAL survives a crash of the process. */
  synchronous?: 'NORMAL' | 'FULL'
  /**
   * How long a statement waits for another connection's lock, blocking this thread meanwhile
   * (default ALONE_BUSY_TIMEOUT_MS; the server passes SERVER_BUSY_TIMEOUT_MS). Opening and
   * migrating wait ALONE_BUSY_TIMEOUT_MS at least: nothing is served yet.
   */
  busyTimeoutMs?: number
  migrate?: boolean
  /**
   * Run right after the migrations (not when `migrate` is false), still with the opening's long
   * busy timeout: what the layers above keep in the database itself (the built-in models, see
   * src/database.ts).
   */
  afterMigrate?: (db: Db) => void
}

export function openDatabase(path: string, options: OpenOptions = {}): DatabaseHandle {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const sqlite = new Database(path, { create: true, strict: true })
  const busyTimeoutMs = options.busyTimeoutMs ?? ALONE_BUSY_TIMEOUT_MS
  // first, so that every statement after it (switching to WAL needs a lock too) waits for
  // another process's transaction instead of failing at once
  sqlite.run(`PRAGMA busy_timeout = ${Math.max(busyTimeoutMs, ALONE_BUSY_TIMEOUT_MS)}`)
  sqlite.run('PRAGMA journal_mode = WAL')
  sqlite.run(`PRAGMA synchronous = ${options.synchronous ?? 'NORMAL'}`)
  sqlite.run('PRAGMA foreign_keys = ON')
  sqlite.run('PRAGMA temp_store = MEMORY')
  const db = drizzle(sqlite, { schema })
  if (options.migrate !== false) {
    try {
      migrateWithoutCascades(sqlite, db)
      options.afterMigrate?.(db)
    } catch (error) {
      sqlite.close()
      throw error
    }
  }
  if (busyTimeoutMs < ALONE_BUSY_TIMEOUT_MS) sqlite.run(`PRAGMA busy_timeout = ${busyTimeoutMs}`)
  return { sqlite, db, close: () => sqlite.close() }
}

/** The migrations as drizzle's migrator expects them, built from the embedded texts. */
export function embeddedMigrations(): MigrationMeta[] {
  return migrationJournal.entries.map((entry) => {
    const text = migrationFiles[entry.tag]
    if (text === undefined) throw new Error(`migration ${entry.tag} is in the journal but not in db/migrations/index.ts`)
    return {
      sql: text.split('--> statement-breakpoint'),
      bps: entry.breakpoints,
      folderMillis: entry.when,
      hash: new Bun.CryptoHasher('sha256').update(text).digest('hex'),
    }
  })
}

/** Applies every migration newer than the newest applied one (drizzle compares timestamps). */
export function migrate(db: Db): void {
  // The same call drizzle's bun-sqlite migrator makes, minus reading a folder from disk.
  ;(db as unknown as { dialect: { migrate(m: MigrationMeta[], s: unknown, c: object): void }; session: unknown }).dialect.migrate(
    embeddedMigrations(),
    (db as unknown as { session: unknown }).session,
    {},
  )
}

/**
 * Runs the migrations with foreign keys off, as SQLite's way of rebuilding a table asks (0017
 * rebuilds devices: with them on, dropping the old table would delete every position through ON
 * DELETE CASCADE; a PRAGMA inside the migrations' one transaction does nothing), then checks every
 * reference once (only when a migration was pending) and turns them back on. A dangling reference
 * fails the opening.
 */
function migrateWithoutCascades(sqlite: Database, db: Db): void {
  // nothing to apply (every opening of a migrated file): no full check of the references
  if (migrationsApplied(sqlite)) return
  sqlite.run('PRAGMA foreign_keys = OFF')
  try {
    migrate(db)
    const dangling = sqlite.query('PRAGMA foreign_key_check').all() as { table: string; parent: string }[]
    if (dangling.length > 0) {
      const first = dangling[0]!
      throw new Error(`after migrating, ${dangling.length} row(s) of ${first.table} refer to a missing row of ${first.parent}`)
    }
  } finally {
    sqlite.run('PRAGMA foreign_keys = ON')
  }
}

/** Whether every embedded migration has been applied (for /ready). */
export function migrationsApplied(sqlite: Database): boolean {
  try {
    const row = sqlite.query('SELECT max(created_at) AS newest FROM __drizzle_migrations').get() as { newest: number | null }
    const newest = Math.max(...migrationJournal.entries.map((e) => e.when))
    return row.newest !== null && row.newest >= newest
  } catch {
    return false
  }
}
