/**
 * The audit log: every administration change, by whom (a user id, or `cli` for the operator's
 * command line), what, on which object, when, and the request that did it. Written in the same
 * transaction as the change it records; secrets (passwords, keys, session ids) never go in.
 */
import { and, desc, eq, gte, lte } from 'drizzle-orm'
import type { Db } from '../../db/client'
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

export function createAuditLog(db: Db) {
  return {
    /** call inside the transaction that makes the change */
    record(entry: AuditEntry, atMs: number): void {
      db.insert(auditLog)
        .values({ ...entry, requestId: entry.requestId ?? null, at: atMs })
        .run()
    },

    /** the account's entries, newest first */
    list(accountId: string, query: AuditQuery): AuditRecord[] {
      const where = and(
        eq(auditLog.accountId, accountId),
        query.fromMs === undefined ? undefined : gte(auditLog.at, query.fromMs),
        query.toMs === undefined ? undefined : lte(auditLog.at, query.toMs),
      )
      const rows = db.select().from(auditLog).where(where).orderBy(desc(auditLog.at), desc(auditLog.id)).limit(query.limit).offset(query.offset).all()
      return rows.map((row) => ({
        id: row.id,
        actor: row.actor,
        action: row.action,
        object_type: row.objectType,
        object_id: row.objectId,
        at: new Date(row.at).toISOString(),
        request_id: row.requestId,
      }))
    },
  }
}

export type AuditLog = ReturnType<typeof createAuditLog>
