/**
 * Liveness and readiness. Alive means the process answers; ready means it can do its job: the
 * database answers, every embedded migration is applied, the device listeners are up (and not
 * shutting down), and the database's file system has room to write. A load balancer sends
 * traffic on ready, a supervisor restarts on not alive.
 *
 * Room to write is probed (statfs of the database's directory, a few µs) rather than learnt from
 * a failed write: a full disk is then seen before the writes fail, whichever writer hits it
 * first (ingest, a share link, another process), and it clears by itself once space is freed.
 */
import { statfsSync } from 'node:fs'
import { dirname } from 'node:path'
import type { MaintenanceStore } from '../store/maintenance'

/** What the server tells the readiness check; mutable, owned by server.ts. */
export interface ServerStatus {
  /** the device listeners are bound */
  listening: boolean
  /** a shutdown has begun: take no new work */
  stopping: boolean
  /** each device protocol's listener (ingest/protocols), by name: up, or off (its port is 0) */
  listeners?: Record<string, 'up' | 'off'>
}

export type CheckResult = 'ok' | 'failing'

export interface Readiness {
  ready: boolean
  checks: { database: CheckResult; migrations: CheckResult; listeners: CheckResult; disk: CheckResult }
  /** why each failing check fails, for the 503's detail */
  reasons: string[]
}

export interface DiskCheck {
  /** bytes free to an unprivileged writer where the database lives; null when unknown (in memory) */
  freeBytes: () => number | null
  /** below it, not ready (READY_MIN_FREE_MB); 0 turns the check off */
  minFreeBytes: number
}

/** Free bytes of the database file's file system, for an unprivileged writer; null without a file (in memory) or when statfs fails. */
export function databaseFreeBytes(file: string | null): number | null {
  if (file === null) return null
  try {
    const stats = statfsSync(dirname(file))
    return stats.bavail * stats.bsize
  } catch {
    return null
  }
}

const MIB = 1024 * 1024

export async function readiness(store: Pick<MaintenanceStore, 'answers' | 'migrationsApplied'>, status: ServerStatus, disk?: DiskCheck): Promise<Readiness> {
  const reasons: string[] = []
  let database: CheckResult = 'failing'
  if (await store.answers()) database = 'ok'
  // closed, or the file is gone: not ready
  else reasons.push('the database does not answer')
  const migrations: CheckResult = database === 'ok' && (await store.migrationsApplied()) ? 'ok' : 'failing'
  if (migrations === 'failing' && database === 'ok') reasons.push('migrations are missing')
  const listeners: CheckResult = status.listening && !status.stopping ? 'ok' : 'failing'
  if (status.stopping) reasons.push('shutting down')
  else if (!status.listening) reasons.push('the device listeners are down')
  let diskCheck: CheckResult = 'ok'
  if (disk && disk.minFreeBytes > 0) {
    const free = disk.freeBytes()
    if (free !== null && free < disk.minFreeBytes) {
      diskCheck = 'failing'
      reasons.push(`${Math.floor(free / MIB)} MiB free where the database is, below the ${Math.ceil(disk.minFreeBytes / MIB)} MiB writes need (READY_MIN_FREE_MB)`)
    }
  }
  return {
    ready: database === 'ok' && migrations === 'ok' && listeners === 'ok' && diskCheck === 'ok',
    checks: { database, migrations, listeners, disk: diskCheck },
    reasons,
  }
}
