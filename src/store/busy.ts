/**
 * Writes that wait for another process's write lock (an import, an `sqlite3` shell) without
 * holding up the process. bun:sqlite waits for a lock synchronously, for the connection's busy
 * timeout, and nothing else runs meanwhile: the server's connection waits only
 * SERVER_BUSY_TIMEOUT_MS (db/client.ts), and its writes retry here, asynchronously, with backoff,
 * until they commit or their deadline passes (then Timeout: a 504 to an HTTP caller).
 *
 * One write a connection probes the lock at a time: the others wait for its outcome (or their
 * own backoff step) instead of each blocking the event loop for the busy timeout in turn, so
 * a hundred waiting writes cost what one does.
 *
 * `work` must be all-or-nothing (one transaction), as a retry runs it again from the start.
 */
import type { Database } from 'bun:sqlite'
import { type Clock, systemClock } from '../clock'
import { Timeout } from '../errors'

/** how long a write waits for the lock at most, in all (the 504 of the API) */
export const WRITE_DEADLINE_MS = 5000
/** the first wait after a busy attempt; it doubles up to MAX_RETRY_DELAY_MS */
const FIRST_RETRY_DELAY_MS = 5
/** a write runs at most this long after the lock goes; each probe blocks for the busy timeout, so not much less */
const MAX_RETRY_DELAY_MS = 100

/** SQLite said another connection holds the lock (BUSY, or one of its extended codes; LOCKED alike). */
export function isDatabaseBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))
}

export interface BusyRetryOptions {
  /** where the deadline is read (the injected clock); the waits themselves are real time */
  clock?: Clock
  /** give up this long after the call (default WRITE_DEADLINE_MS) */
  deadlineMs?: number
  /** the caller's own attempt just found the database busy: start by waiting */
  afterBusy?: boolean
}

/** the write of a connection that is probing the lock now, and what its waiters wait for */
interface Probe {
  done: Promise<void>
  finish(): void
}

const probes = new WeakMap<Database, Probe>()

/**
 * Runs `work` (one synchronous transaction on `sqlite`) now, or, while another process holds the
 * write lock, again and again until it commits: resolves with its result, rejects with its
 * error (not busy), or with Timeout once `deadlineMs` has passed.
 */
export async function retryWhileBusy<T>(sqlite: Database, work: () => T, options: BusyRetryOptions = {}): Promise<T> {
  const clock = options.clock ?? systemClock
  const deadline = clock.now() + (options.deadlineMs ?? WRITE_DEADLINE_MS)
  let delayMs = FIRST_RETRY_DELAY_MS
  let mine: Probe | null = null
  let tryNow = !options.afterBusy
  try {
    for (;;) {
      const probing = probes.get(sqlite)
      if (tryNow && (probing === undefined || probing === mine)) {
        try {
          return work()
        } catch (error) {
          if (!isDatabaseBusy(error)) throw error
        }
      }
      // busy: this write probes the lock from now on, unless another one already does
      if (!probes.has(sqlite)) {
        let finish = () => {}
        const done = new Promise<void>((resolve) => (finish = resolve))
        mine = { done, finish }
        probes.set(sqlite, mine)
      }
      if (clock.now() >= deadline) throw new Timeout('The database was busy for too long (another process holds its write lock); try again')
      const probe = probes.get(sqlite)!
      const pause = Bun.sleep(delayMs)
      // a waiter also wakes when the probing write ends, committed or not
      await (probe === mine ? pause : Promise.race([pause, probe.done]))
      delayMs = Math.min(delayMs * 2, MAX_RETRY_DELAY_MS)
      tryNow = true
    }
  } finally {
    if (mine !== null && probes.get(sqlite) === mine) {
      probes.delete(sqlite)
      mine.finish()
    }
  }
}

/**
 * Runs `work` now and answers its result as a settled promise, a throw as a rejection: how an
 * SQLite adapter (synchronous inside) answers at its promise boundary.
 */
export function settled<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work())
  } catch (error) {
    return Promise.reject(error)
  }
}

/**
 * A store's write: waits out another process's lock (`retryWhileBusy`), or, with `retry` false
 * (a process alone on the database: the command line), runs at once within SQLite's own busy
 * timeout.
 */
export function storeWriter(sqlite: Database, options: { clock?: Clock; retry?: boolean } = {}): <T>(work: () => T) => Promise<T> {
  if (options.retry === false) return settled
  return (work) => retryWhileBusy(sqlite, work, { clock: options.clock })
}
