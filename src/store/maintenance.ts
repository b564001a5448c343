/**
 * The database's upkeep, as operations see it (src/ops): whether it answers, whether every
 * migration is applied, how big its files are, a consistent copy, and folding the write-ahead
 * log back. Each of these is the engine's own business, so each says what it is on PostgreSQL.
 */
import { Database } from 'bun:sqlite'
import { sql } from 'drizzle-orm'
import { statSync } from 'node:fs'
import { type DatabaseHandle, migrationsApplied } from '../../db/client'
import { settled } from './busy'

export interface DatabaseFileSizes {
  /** bytes of the database file (an in-memory database: its pages) */
  database: number
  /** bytes of its write-ahead log */
  wal: number
}

export interface MaintenanceStore {
  /**
   * The database file's path, for the disk check (statfs of its directory); null in memory.
   * PostgreSQL: null (the server's disk is its own business).
   */
  readonly file: string | null
  /** Whether a trivial query answers (`SELECT 1`, the same on PostgreSQL). */
  answers(): Promise<boolean>
  /** Whether every embedded migration is applied (drizzle's journal table; the same on PostgreSQL). */
  migrationsApplied(): Promise<boolean>
  /** Sizes of the files on disk (PostgreSQL: pg_database_size(), and no WAL of its own to count: 0). */
  fileSizes(): Promise<DatabaseFileSizes>
  /** A consistent, compact copy into a new file at `path` (VACUUM INTO; PostgreSQL: pg_dump). */
  copyTo(path: string): Promise<void>
  /** Folds what it can of the WAL into the database, never waiting (wal_checkpoint(PASSIVE); PostgreSQL: nothing, CHECKPOINT is the server's). */
  checkpoint(): Promise<void>
  /**
   * Folds the whole WAL and empties it, without waiting for a reader in the way (then it rejects
   * and nothing happened). wal_checkpoint(TRUNCATE) with busy_timeout 0; PostgreSQL: nothing.
   */
  truncateLog(): Promise<void>
}

export function createMaintenanceStore(database: DatabaseHandle): MaintenanceStore {
  const { sqlite, db } = database
  const file = sqlite.filename && sqlite.filename !== ':memory:' ? sqlite.filename : null
  return {
    file,
    answers: () =>
      settled(() => {
        try {
          db.all(sql`SELECT 1`)
          return true
        } catch {
          // closed, or the file is gone
          return false
        }
      }),
    migrationsApplied: () => settled(() => migrationsApplied(sqlite)),
    fileSizes: () =>
      settled(() => {
        if (file === null) {
          const [pages] = db.all<{ n: number }>(sql`SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()`)
          return { database: pages?.n ?? 0, wal: 0 }
        }
        return { database: fileSize(file), wal: fileSize(`${file}-wal`) }
      }),
    copyTo: (path) => settled(() => void db.run(sql`VACUUM INTO ${path}`)),
    checkpoint: () => settled(() => void db.run(sql`PRAGMA wal_checkpoint(PASSIVE)`)),
    truncateLog: () =>
      settled(() => {
        const [{ timeout }] = db.all<{ timeout: number }>(sql`PRAGMA busy_timeout`) as [{ timeout: number }]
        try {
          db.run(sql.raw('PRAGMA busy_timeout = 0'))
          db.run(sql`PRAGMA wal_checkpoint(TRUNCATE)`)
        } finally {
          db.run(sql.raw(`PRAGMA busy_timeout = ${Number(timeout)}`))
        }
      }),
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

/**
 * `PRAGMA integrity_check` of a database file (a backup's copy), opened read-only apart from any
 * server: 'ok' or the problems found. PostgreSQL: pg_restore --list of the dump (or amcheck).
 */
export function integrityOfFile(path: string): Promise<string> {
  return settled(() => {
    const copy = new Database(path, { readonly: true })
    try {
      return copy.query<{ integrity_check: string }, []>('PRAGMA integrity_check').all().map((r) => r.integrity_check).join('; ')
    } finally {
      copy.close()
    }
  })
}
