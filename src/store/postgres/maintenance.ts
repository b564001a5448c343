/**
 * store/maintenance.ts's upkeep on PostgreSQL: whether the server answers and every embedded
 * migration is applied (/ready), the database's size (/metrics). The file-level operations are the
 * server's own business there: no file path to watch, no write-ahead log of ours to fold
 * (PostgreSQL checkpoints by itself), and a copy is `pg_dump`'s: `copyTo` rejects, naming it.
 */
import { sql } from 'drizzle-orm'
import { type PostgresHandle, postgresMigrationsApplied } from '../../../db/postgres/client'
import type { MaintenanceStore } from '../maintenance'

/** Why `backup` does not copy a PostgreSQL database: one line an operator can act on. */
export const POSTGRES_BACKUP_REFUSAL =
  'backup copies a SQLite file; a PostgreSQL database is copied with pg_dump (e.g. pg_dump --format=custom --file=tracker.dump "$DATABASE_URL")'

export class BackupNotOnPostgres extends Error {
  constructor() {
    super(POSTGRES_BACKUP_REFUSAL)
    this.name = 'BackupNotOnPostgres'
  }
}

export interface PostgresMaintenanceOptions {
  /**
   * How long `answers()` and `migrationsApplied()` wait (default 2,000 ms): a server that takes
   * connections but never answers would otherwise hold /ready for the driver's whole connect
   * timeout; past it, the database does not answer.
   */
  answerTimeoutMs?: number
}

/** `work`'s answer, or `fallback` once `ms` have passed (the work goes on; its late answer is dropped). */
async function within<T>(work: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms)
  })
  try {
    return await Promise.race([work.catch(() => fallback), late])
  } finally {
    clearTimeout(timer)
  }
}

export function createPostgresMaintenanceStore(database: Pick<PostgresHandle, 'db' | 'sql'>, options: PostgresMaintenanceOptions = {}): MaintenanceStore {
  const { db } = database
  const answerTimeoutMs = options.answerTimeoutMs ?? 2000
  return {
    file: null,
    // unreachable, refused, too slow, or the pool closed: false
    answers: () => within(db.execute(sql`SELECT 1`).then(() => true), answerTimeoutMs, false),
    migrationsApplied: () => within(postgresMigrationsApplied(database.sql), answerTimeoutMs, false),
    async fileSizes() {
      // the whole database (tables, indexes, TOAST, every positions partition); its WAL is the server's, shared by every database
      const [row] = await db.execute<{ n: number }>(sql`SELECT pg_database_size(current_database())::bigint AS n`)
      return { database: Number(row?.n ?? 0), wal: 0 }
    },
    async copyTo() {
      throw new BackupNotOnPostgres()
    },
    // PostgreSQL folds its WAL itself (checkpoints are the server's): nothing to do
    async checkpoint() {},
    async truncateLog() {},
  }
}

/** Bytes of one table with its indexes and TOAST, partitions included (positions is partitioned): for /metrics, per table. */
export async function postgresTableBytes(database: Pick<PostgresHandle, 'db'>, table: string): Promise<number> {
  const [row] = await database.db.execute<{ n: number | null }>(sql`
    SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS n
    FROM pg_class c
    WHERE c.oid = to_regclass(${table}) OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass(${table}))`)
  return Number(row?.n ?? 0)
}
