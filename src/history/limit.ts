/**
 * How many history requests one principal may have in flight. A route over 31 days at 1 Hz is
 * 2.7 million fixes, about 125 MB while it is analysed and sent; without a cap, one share token
 * firing requests in parallel held gigabytes. A user counts once whatever key they use; a share
 * link counts once however many people hold its token.
 */
import { TooManyRequests } from '../errors'
import type { Principal } from '../principal'

/** Requests beyond the cap are told to come back after this long (a 1-day route takes ~50 ms, 31 days a few seconds). */
export const HISTORY_RETRY_AFTER_SECONDS = 1

export interface InFlightLimit {
  /**
   * Takes one of the principal's slots, or throws TooManyRequests when they are all taken.
   * Returns the release, to call once the answer has been sent or abandoned (later calls do nothing).
   */
  acquire(principal: Principal): () => void
}

export function createInFlightLimit(perPrincipal: number): InFlightLimit {
  const inFlight = new Map<string, number>()
  return {
    acquire(principal) {
      const key = principal.kind === 'user' ? `user:${principal.userId}` : `share:${principal.linkId}`
      const taken = inFlight.get(key) ?? 0
      if (taken >= perPrincipal) {
        throw new TooManyRequests(
          `At most ${perPrincipal} history requests may run at once for one user or share link; try again when one has finished`,
          HISTORY_RETRY_AFTER_SECONDS,
        )
      }
      inFlight.set(key, taken + 1)
      let released = false
      return () => {
        if (released) return
        released = true
        const left = (inFlight.get(key) ?? 1) - 1
        if (left > 0) inFlight.set(key, left)
        else inFlight.delete(key)
      }
    },
  }
}
