/**
 * Failed-authentication throttle, per client source: an IPv4 address, or an IPv6 /64
 * (ingest/sources.ts `sourceOf`, as device traffic is counted), from http/client.ts. A client
 * that keeps presenting unknown tokens is slowed down a little more each time and, past a limit,
 * its failures are refused with 429 until its window ends. Only failures count: a success erases
 * nothing (else a share-link holder could guess five keys, use the link, and repeat forever),
 * and a valid credential is served whatever the count (see authenticate).
 *
 * Passwords, unlike keys, can be guessed, and checking one costs an argon2id hash (~110 ms of CPU,
 * 64 MiB). So a password attempt is counted *before* it is checked (`reserve`), against its source
 * and against the name it tries, and the reservation is given back only when the password was
 * right: a burst of concurrent guesses then gets at most the limit checked, the rest 429 at once.
 *
 * The name's limit is what stops a guesser spread over many addresses. It is higher than twice
 * the source limit, with the same short window: one source (which can put at most two of its
 * windows, 2 × 20 failures, inside one window of the name) can never lock a name's owner out;
 * it takes several sources guessing together, and then the name is refused only until its
 * window ends (a minute after its first failure), while the owner's keys and open sessions keep
 * working. The price: a guesser with many addresses gets up to 50 guesses a minute at one name.
 */
import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock'
import { sourceOf } from '../ingest/sources'

export interface AuthThrottleOptions {
  /** failures within the window after which a source's requests are refused */
  maxFailures: number
  windowMs: number
  /** failures allowed before each further one is delayed */
  freeFailures: number
  /** delay added per failure beyond the free ones, capped at maxDelayMs */
  delayStepMs: number
  maxDelayMs: number
  /** failed password checks for one sign-in name, from any source, after which that name is refused (default 50) */
  nameMaxFailures?: number
  /** the name's window (default 60 s) */
  nameWindowMs?: number
}

export const defaultThrottle: AuthThrottleOptions = {
  maxFailures: 20,
  windowMs: 60_000,
  freeFailures: 5,
  delayStepMs: 10,
  maxDelayMs: 200,
  nameMaxFailures: 50,
  nameWindowMs: 60_000,
}

/** sources (and names) tracked at once; the least recently failed beyond this are forgotten */
const MAX_TRACKED = 10_000

interface Entry {
  failures: number
  windowStart: number
}

/** failures counted under keys, in fixed windows that start at a key's first failure */
function createFailureWindows(clock: Clock, maxFailures: number, windowMs: number) {
  const entries = new LRUCache<string, Entry>({ max: MAX_TRACKED })
  /** when the newest window ends: after it no key has anything on record */
  let lastWindowEnd = -Infinity
  const current = (key: string): Entry | undefined => {
    const entry = entries.get(key)
    if (entry && clock.now() - entry.windowStart >= windowMs) {
      entries.delete(key)
      return undefined
    }
    return entry
  }
  return {
    get active(): boolean {
      return clock.now() < lastWindowEnd
    },
    /** seconds the key must wait, or 0 when it may try */
    retryAfter(key: string): number {
      const entry = current(key)
      if (!entry || entry.failures < maxFailures) return 0
      return (entry.windowStart + windowMs - clock.now()) / 1000
    },
    /** counts one failure; the entry, to give it back by `uncount` */
    count(key: string): Entry {
      const entry = current(key) ?? { failures: 0, windowStart: clock.now() }
      entry.failures++
      lastWindowEnd = Math.max(lastWindowEnd, entry.windowStart + windowMs)
      entries.set(key, entry)
      return entry
    },
    /** gives back a failure counted by `count` (a stale entry, whose window is over, is no longer looked at) */
    uncount(entry: Entry): void {
      if (entry.failures > 0) entry.failures--
    },
  }
}

/** A password attempt counted before its check: `release` when the password was right. */
export interface Reservation {
  /** the source the attempt was counted against (IPv4 address or IPv6 /64) */
  source: string
  /** how long to hold back the answer when the password was wrong */
  delayMs: number
  release(): void
}

export type Refusal = { refused: 'source' | 'name'; retryAfterSeconds: number }

export function createAuthThrottle(clock: Clock, options: AuthThrottleOptions = defaultThrottle) {
  const sources = createFailureWindows(clock, options.maxFailures, options.windowMs)
  const names = createFailureWindows(clock, options.nameMaxFailures ?? defaultThrottle.nameMaxFailures!, options.nameWindowMs ?? defaultThrottle.nameWindowMs!)
  const delayOf = (failures: number) => Math.min(options.maxDelayMs, Math.max(0, failures - options.freeFailures) * options.delayStepMs)
  // as the users table compares names (lower(), which folds ASCII only: folding more merges more names, which only counts stricter)
  const nameKey = (name: string) => name.toLowerCase()
  return {
    /** whether any source may still be counted against (when none, nothing needs checking) */
    get active(): boolean {
      return sources.active
    },
    /** seconds the client at `address` must wait, or 0 when it may try */
    retryAfter(address: string): number {
      return sources.retryAfter(sourceOf(address))
    },
    /** records a failure of the client at `address` and tells how long to hold the answer back */
    fail(address: string): number {
      return delayOf(sources.count(sourceOf(address)).failures)
    },
    /**
     * Sign-in and password changes: why an attempt at `name` from `address` must wait (its source
     * or the name is over its limit), or null when it may be counted and checked.
     */
    refusal(address: string, name: string): Refusal | null {
      const source = sources.retryAfter(sourceOf(address))
      if (source > 0) return { refused: 'source', retryAfterSeconds: source }
      const byName = names.retryAfter(nameKey(name))
      return byName > 0 ? { refused: 'name', retryAfterSeconds: byName } : null
    },
    /** counts the attempt as a failure of its source and of the name before the password is checked */
    reserve(address: string, name: string): Reservation {
      const source = sourceOf(address)
      const bySource = sources.count(source)
      const byName = names.count(nameKey(name))
      let released = false
      return {
        source,
        delayMs: delayOf(bySource.failures),
        release() {
          if (released) return
          released = true
          sources.uncount(bySource)
          names.uncount(byName)
        },
      }
    },
  }
}

export type AuthThrottle = ReturnType<typeof createAuthThrottle>
