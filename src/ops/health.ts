/**
 * Liveness and readiness. Alive means the process answers; ready means it can do its job: the
 * database answers, every embedded migration is applied, and the device listeners are up (and
 * not shutting down). A load balancer sends traffic on ready, a supervisor restarts on not alive.
 */
import type { Database } from 'bun:sqlite'
import { migrationsApplied } from '../../db/client'

/** What the server tells the readiness check; mutable, owned by server.ts. */
export interface ServerStatus {
  /** the device listeners are bound */
  listening: boolean
  /** a shutdown has begun: take no new work */
  stopping: boolean
}

export type CheckResult = 'ok' | 'failing'

export interface Readiness {
  ready: boolean
  checks: { database: CheckResult; migrations: CheckResult; listeners: CheckResult }
}

export function readiness(sqlite: Database, status: ServerStatus): Readiness {
  let database: CheckResult = 'failing'
  try {
    sqlite.query('SELECT 1').get()
    database = 'ok'
  } catch {
    // closed, or the file is gone: not ready
  }
  const migrations: CheckResult = database === 'ok' && migrationsApplied(sqlite) ? 'ok' : 'failing'
  const listeners: CheckResult = status.listening && !status.stopping ? 'ok' : 'failing'
  return { ready: database === 'ok' && migrations === 'ok' && listeners === 'ok', checks: { database, migrations, listeners } }
}
