/**
 * The audit log: every administration change, by whom, what, on which object, when. Its owner is
 * src/store/audit.ts (the in-transaction writer, `recordAuditInTransaction`, and the read of
 * GET /audit); this re-exports it under the names the callers not yet moved to a store use
 * (`createAuditLog(tx).record(...)` inside their own transactions).
 */
export {
  type AuditAction,
  type AuditEntry,
  type AuditLog,
  type AuditObject,
  type AuditQuery,
  type AuditRecord,
  CLI_ACTOR,
  createAuditLog,
} from '../store/audit'
