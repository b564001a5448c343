/**
 * Failed-authentication throttle, per client address (http/client.ts). A client that keeps
 * presenting unknown tokens is slowed down a little more each time and, past a limit, its
 * failures are refused with 429 until its window ends. Only failures count: a success erases
 * nothing (else a share-link holder could guess five keys, use the link, and repeat forever),
 * and a valid credential is served whatever the count (see authenticate).
 */
import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock'

export interface AuthThrottleOptions {
  /** failures within the window after which requests are refused */
  maxFailures: number
  windowMs: number
  /** failures allowed before each further one is delayed */
  freeFailures: number
  /** delay added per failure beyond the free ones, capped at maxDelayMs */
  delayStepMs: number
  maxDelayMs: number
}

export const defaultThrottle: AuthThrottleOptions = { maxFailures: 20, windowMs: 60_000, freeFailures: 5, delayStepMs: 10, maxDelayMs: 200 }

interface Entry {
  failures: number
  windowStart: number
}

export function createAuthThrottle(clock: Clock, options: AuthThrottleOptions = defaultThrottle) {
  const clients = new LRUCache<string, Entry>({ max: 10_000 })
  /** when the newest window ends: after it no client has anything on record */
  let lastWindowEnd = -Infinity
  const current = (client: string): Entry | undefined => {
    const entry = clients.get(client)
    if (entry && clock.now() - entry.windowStart >= options.windowMs) {
      clients.delete(client)
      return undefined
    }
    return entry
  }
  return {
    /** whether any client may still be counted against (when none, nothing needs checking) */
    get active(): boolean {
      return clock.now() < lastWindowEnd
    },
    /** seconds the client must wait, or 0 when it may try */
    retryAfter(client: string): number {
      const entry = current(client)
      if (!entry || entry.failures < options.maxFailures) return 0
      return (entry.windowStart + options.windowMs - clock.now()) / 1000
    },
    /** records a failure and tells how long to hold the answer back */
    fail(client: string): number {
      const entry = current(client) ?? { failures: 0, windowStart: clock.now() }
      entry.failures++
      lastWindowEnd = Math.max(lastWindowEnd, entry.windowStart + options.windowMs)
      clients.set(client, entry)
      return Math.min(options.maxDelayMs, Math.max(0, entry.failures - options.freeFailures) * options.delayStepMs)
    },
  }
}

export type AuthThrottle = ReturnType<typeof createAuthThrottle>
