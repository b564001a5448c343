/**
 * audit_log on PostgreSQL: the same store as src/store/audit.ts (its interface, its record shape),
 * over the schema's PostgreSQL twin. `recordAuditInTransaction` runs inside another store's unit
 * of work, on the transaction that store opened.
 */
import { and, desc, eq, gte, lte } from 'drizzle-orm'
import type { PgConnectable, PostgresHandle } from '../../../db/postgres/client'
import { auditLog } from '../../../db/postgres/schema'
import { type AuditEntry, type AuditStore, recordOf } from '../audit'

/** Writes `entry` at `atMs` inside the caller's transaction (adapters only). */
export async function recordAuditInTransaction(tx: PgConnectable, entry: AuditEntry, atMs: number): Promise<void> {
  await tx.insert(auditLog).values({ ...entry, requestId: entry.requestId ?? null, at: atMs })
}

export function createPostgresAuditStore(database: Pick<PostgresHandle, 'db'>): AuditStore {
  const { db } = database
  return {
    async list(accountId, query) {
      const rows = await db
        .select()
        .from(auditLog)
        .where(
          and(
            eq(auditLog.accountId, accountId),
            query.fromMs === undefined ? undefined : gte(auditLog.at, query.fromMs),
            query.toMs === undefined ? undefined : lte(auditLog.at, query.toMs),
          ),
        )
        .orderBy(desc(auditLog.at), desc(auditLog.id))
        .limit(query.limit)
        .offset(query.offset)
      return rows.map(recordOf)
    },
  }
}
