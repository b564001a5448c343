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

export function createPostgresMaintenanceStore(database: Pick<PostgresHandle, 'db' | 'sql'>): MaintenanceStore {
  const { db } = database
  return {
    file: null,
    async answers() {
      try {
        await db.execute(sql`SELECT 1`)
        return true
      } catch {
        // unreachable, refused, or the pool closed
        return false
      }
    },
    migrationsApplied: () => postgresMigrationsApplied(database.sql),
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
