/**
 * A budget for outbound requests to one geocoding service: at most one request started every
 * `intervalMs` (Nominatim's usage policy asks for at most 1 a second) and at most `maxInFlight`
 * waiting for an answer. It never queues: a request over budget is refused at once, and the
 * caller answers from the offline geocoder instead, so a burst of lookups costs no waiting and
 * cannot pile up requests against the service.
 */

export interface RequestLimits {
  /** minimum time between the starts of two requests; 0 leaves only the in-flight limit */
  intervalMs: number
  /** requests waiting for their answer at once */
  maxInFlight: number
}

export interface RequestLimiter {
  /** a release function when a request may start now (call it once it has settled), else null */
  tryAcquire(): (() => void) | null
  readonly inFlight: number
  readonly limits: Readonly<RequestLimits>
}

export const DEFAULT_LIMITS: RequestLimits = { intervalMs: 1000, maxInFlight: 2 }

export function createRequestLimiter(limits: RequestLimits, now: () => number = () => performance.now()): RequestLimiter {
  if (!(limits.intervalMs >= 0) || !Number.isFinite(limits.intervalMs)) throw new RangeError(`intervalMs must be 0 or more, got ${limits.intervalMs}`)
  if (!Number.isInteger(limits.maxInFlight) || limits.maxInFlight < 1) throw new RangeError(`maxInFlight must be a positive integer, got ${limits.maxInFlight}`)
  let inFlight = 0
  let nextStartAt = -Infinity
  return {
    tryAcquire() {
      const at = now()
      if (inFlight >= limits.maxInFlight || at < nextStartAt) return null
      inFlight++
      nextStartAt = at + limits.intervalMs
      let released = false
      return () => {
        if (released) return
        released = true
        inFlight--
      }
    },
    get inFlight() {
      return inFlight
    },
    limits: { ...limits },
  }
}

/**
 * One limiter per service (origin) and limits, for the whole process: every geocoder of the
 * process that asks the same service draws on one budget, because the service's policy counts
 * the requests of this machine, not of one geocoder.
 */
const shared = new Map<string, RequestLimiter>()

export function sharedLimiter(serviceUrl: string, limits: RequestLimits): RequestLimiter {
  const key = `${originOf(serviceUrl)} ${limits.intervalMs} ${limits.maxInFlight}`
  let limiter = shared.get(key)
  if (!limiter) {
    limiter = createRequestLimiter(limits)
    shared.set(key, limiter)
  }
  return limiter
}

function originOf(url: string): string {
  try {
    return new URL(url).origin
  } catch {
    return url
  }
}
