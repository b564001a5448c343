/**
 * Writes that no request waits for: counters and "last used" times that reads note in memory
 * (share-link views, API keys' last use), written later in the background in one transaction.
 * A read must answer while another process holds the database's write lock, or the disk is
 * full, so the write never happens on a request's path and never waits for the lock: it fails at
 * once, is logged, and is tried again later (the wait doubling from `delayMs` up to a minute).
 * What waits is lost if the process dies before a write; a clean stop writes it (`flush({ wait: true })`).
 */
import type { Database } from 'bun:sqlite'
import { ALONE_BUSY_TIMEOUT_MS } from '../../db/client'
import type { Logger } from '../log'

/** how long a failing write waits at most before it tries again (it doubles from delayMs) */
const MAX_RETRY_MS = 60_000

/** How long a background writer waits before its next try: `delayMs`, doubled by each failure in a row, a minute at most. */
export const nextTryInMs = (delayMs: number, failures: number): number => Math.min(delayMs * 2 ** failures, MAX_RETRY_MS)

export interface DeferredWriteOptions {
  /** how soon a write follows the first change that waits (it is tried once for everything waiting then) */
  delayMs: number
  /** whether anything waits to be written */
  hasPending(): boolean
  /**
   * Writes everything waiting in one synchronous transaction, then forgets it; a throw leaves it
   * all waiting (the transaction rolled back) for the next try. Synchronous, so nothing can be
   * added between the write and the forgetting.
   */
  write(): void
  log: Logger
  /** logged at warn when a write fails, with `context()` and the error */
  failure: string
  context?(): Record<string, unknown>
}

export function createDeferredWrites(sqlite: Database, options: DeferredWriteOptions): DeferredWrites {
  const busyTimeout = sqlite.query<{ timeout: number }, []>('PRAGMA busy_timeout')
  let timer: ReturnType<typeof setTimeout> | null = null
  let failures = 0

  /**
   * Writes what waits now; false when it could not (kept for the next try). Unless `wait`, it
   * does not wait for another process's write lock: a timer must not block the event loop for
   * the busy timeout. With `wait` (at stop, nothing else to serve) it waits up to
   * ALONE_BUSY_TIMEOUT_MS, whatever the connection's own (short, in the server) busy timeout.
   */
  function flush({ wait = false } = {}): boolean {
    if (timer !== null) clearTimeout(timer)
    timer = null
    if (!options.hasPending()) return true
    let restoreTimeout: number | null = null
    try {
      restoreTimeout = busyTimeout.get()?.timeout ?? null
      sqlite.run(`PRAGMA busy_timeout = ${wait ? Math.max(restoreTimeout ?? 0, ALONE_BUSY_TIMEOUT_MS) : 0}`)
      options.write()
      failures = 0
      return true
    } catch (error) {
      failures++
      options.log.warn(options.failure, { ...options.context?.(), error: error instanceof Error ? error.message : String(error) })
      schedule()
      return false
    } finally {
      if (restoreTimeout !== null) {
        try {
          sqlite.run(`PRAGMA busy_timeout = ${restoreTimeout}`)
        } catch {
          // the database has closed: nothing to restore
        }
      }
    }
  }

  /** a write soon, unless one is already due or nothing waits */
  function schedule(): void {
    if (timer !== null || !options.hasPending()) return
    const delay = nextTryInMs(options.delayMs, failures)
    timer = setTimeout(() => {
      timer = null
      flush()
    }, delay)
    // what waits never keeps a process alive; a clean stop flushes it
    timer.unref?.()
  }

  return { flush, schedule }
}

/** A background writer: what the SQLite adapter above builds, and what a PostgreSQL adapter builds over its pool. */
export interface DeferredWrites {
  /**
   * Writes what waits now; false when it could not (kept for the next try). The SQLite adapter
   * answers at once; a PostgreSQL adapter answers a promise (await it at stop).
   */
  flush(options?: { wait?: boolean }): boolean | Promise<boolean>
  /** a write soon, unless one is already due or nothing waits */
  schedule(): void
}
