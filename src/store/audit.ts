/**
 * The owner of audit_log: every administration change, by whom (a user id, or `cli` for the
 * operator's command line), what, on which object, when, and the request that did it. A row is
 * written in the unit of work that makes the change it records, by `recordAuditInTransaction`,
 * which the stores that make changes call inside their transactions (services never do); the
 * audit API reads through `createAuditStore`. Secrets (passwords, keys, session ids) never go in.
 */
import { and, desc, eq, sql } from 'drizzle-orm'
import type { DatabaseHandle, Db } from '../../db/client'
import { auditLog } from '../../db/schema'

/** what the command line is called in the log */
export const CLI_ACTOR = 'cli'

export type AuditAction = 'create' | 'update' | 'delete' | 'password' | 'setup'
export type AuditObject = 'account' | 'device' | 'group' | 'user' | 'key' | 'model' | 'session' | 'geofence' | 'notification' | 'email_alerts'

export interface AuditEntry {
  accountId: string
  /** a user id, or CLI_ACTOR */
  actor: string
  action: AuditAction
  objectType: AuditObject
  objectId: string
  requestId?: string | null
}

/** An entry as GET /audit shows it. */
export interface AuditRecord {
  id: number
  actor: string
  action: string
  object_type: string
  object_id: string
  at: string
  request_id: string | null
}

export interface AuditQuery {
  /** Unix milliseconds, inclusive */
  fromMs?: number
  toMs?: number
  limit: number
  offset: number
}

/** a Drizzle database or one of its transactions: where the in-transaction writer runs */
export type AuditConnection = Pick<Db, 'insert'>

/** Writes `entry` at `atMs`: call it inside the transaction that makes the change (adapters only). */
export function recordAuditInTransaction(tx: AuditConnection, entry: AuditEntry, atMs: number): void {
  tx.insert(auditLog)
    .values({ ...entry, requestId: entry.requestId ?? null, at: atMs })
    .run()
}

export interface AuditStore {
  /** the account's entries, newest first */
  list(accountId: string, query: AuditQuery): Promise<AuditRecord[]>
}

type AuditRow = typeof auditLog.$inferSelect

export const recordOf = (row: Pick<AuditRow, 'id' | 'actor' | 'action' | 'objectType' | 'objectId' | 'at' | 'requestId'>): AuditRecord => ({
  id: row.id,
  actor: row.actor,
  action: row.action,
  object_type: row.objectType,
  object_id: row.objectId,
  at: new Date(row.at).toISOString(),
  request_id: row.requestId,
})

/** the account's entries within the window, newest first (one statement: absent bounds are null) */
function listStatement(db: Pick<Db, 'select'>) {
  const from = sql.placeholder('fromMs')
  const to = sql.placeholder('toMs')
  return db
    .select()
    .from(auditLog)
    .where(
      and(
        eq(auditLog.accountId, sql.placeholder('accountId')),
        sql`(${from} IS NULL OR ${auditLog.at} >= ${from})`,
        sql`(${to} IS NULL OR ${auditLog.at} <= ${to})`,
      ),
    )
    .orderBy(desc(auditLog.at), desc(auditLog.id))
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'))
}

/** The audit store over SQLite: one prepared read. */
export function createAuditStore(database: Pick<DatabaseHandle, 'db'>): AuditStore {
  const list = listStatement(database.db).prepare()
  return {
    async list(accountId, query) {
      const rows = list.all({ accountId, fromMs: query.fromMs ?? null, toMs: query.toMs ?? null, limit: query.limit, offset: query.offset })
      return rows.map(recordOf)
    },
  }
}
