/**
 * What bounds history requests in flight. A route over 31 days at 1 Hz is 2.7 million fixes,
 * about 125 MB while it is analysed and sent; without a cap, one share token firing requests in
 * parallel held gigabytes, and eight share links of one user did as much as eight users.
 *
 * - Per user: a few requests at once, whatever key or session, and through every share link the
 *   user made (a link spends its creator's budget; principal.ts budgetHolder). Beyond: 429.
 * - Per process: a memory budget. Each request reserves what its window will cost (its fixes ×
 *   BYTES_PER_FIX_IN_FLIGHT) before it reads anything, and gives it back once its answer has been
 *   sent or abandoned. A request that does not fit waits its turn (first come, first served); one
 *   alone always runs, however large. At most `maxWaiting` wait, each at most `maxWaitMs`;
 *   beyond: 503.
 */
import { TooManyRequests, Unavailable } from '../errors'
import { budgetHolder, type Principal } from '../principal'

/** Requests beyond the cap are told to come back after this long (a 1-day route takes ~50 ms, 31 days a few seconds). */
export const HISTORY_RETRY_AFTER_SECONDS = 1

/**
 * What one fix in a window is reckoned to cost while its request is in flight: the columns (33
 * bytes), the analysis' own arrays (about 14), and a share of the rows read and the JSON chunks
 * written before they are collected. An estimate, not a measure: with the default 64 MiB, eight
 * 31-day routes at once peak about 90 MiB above the idle server (`npm run bench -- budgets`).
 */
export const BYTES_PER_FIX_IN_FLIGHT = 96

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
      const key = budgetHolder(principal)
      const taken = inFlight.get(key) ?? 0
      if (taken >= perPrincipal) {
        throw new TooManyRequests(
          principal.kind === 'user'
            ? `At most ${perPrincipal} history requests may run at once for one user (their keys, sessions and share links together); try again when one has finished`
            : `At most ${perPrincipal} history requests may run at once through the share links and keys of the user who made this link; try again when one has finished`,
          HISTORY_RETRY_AFTER_SECONDS,
        )
      }
      inFlight.set(key, taken + 1)
      return once(() => {
        const left = (inFlight.get(key) ?? 1) - 1
        if (left > 0) inFlight.set(key, left)
        else inFlight.delete(key)
      })
    },
  }
}

export interface MemoryBudget {
  /**
   * Resolves once `bytes` fit in the budget (at once when they do), to the release; rejects
   * with Unavailable when `maxWaiting` requests already wait, when the wait passes `maxWaitMs`,
   * or when `signal` aborts meanwhile.
   */
  reserve(bytes: number, signal?: AbortSignal): Promise<() => void>
  /** `bytes` at once if they fit and none wait before them (the release), else null: never waits. */
  tryReserve(bytes: number): (() => void) | null
}

export interface MemoryBudgetOptions {
  maxBytes: number
  /** requests that may wait at once */
  maxWaiting: number
  /**
   * How long one may wait. Bounded, and well below the server's idle timeout: a client that
   * holds one route's body unread until another's headers arrive (`Promise.all` of fetches)
   * would otherwise wait on itself; it gets a 503 for the second, reads the first, and retries.
   */
  maxWaitMs: number
}

interface Waiter {
  bytes: number
  grant(): void
}

export function createMemoryBudget({ maxBytes, maxWaiting, maxWaitMs }: MemoryBudgetOptions): MemoryBudget {
  let reservedBytes = 0
  const queue: Waiter[] = []
  const fits = (bytes: number) => reservedBytes === 0 || reservedBytes + bytes <= maxBytes
  // first come, first served: a large request at the head is not overtaken by small ones forever
  const grantWhatFits = () => {
    while (queue.length > 0 && fits(queue[0].bytes)) queue.shift()!.grant()
  }

  function take(bytes: number): () => void {
    reservedBytes += bytes
    return once(() => {
      reservedBytes -= bytes
      grantWhatFits()
    })
  }

  return {
    tryReserve(bytes) {
      return queue.length === 0 && fits(bytes) ? take(bytes) : null
    },
    reserve(bytes, signal) {
      if (signal?.aborted) return Promise.reject(new Unavailable('The request was abandoned', HISTORY_RETRY_AFTER_SECONDS))
      if (queue.length === 0 && fits(bytes)) return Promise.resolve(take(bytes))
      if (queue.length >= maxWaiting) {
        return Promise.reject(new Unavailable('The server is answering as many history requests as its memory allows, and more wait; try again shortly', HISTORY_RETRY_AFTER_SECONDS))
      }
      return new Promise((resolve, reject) => {
        const leave = (error: Unavailable) => {
          clearTimeout(timer)
          signal?.removeEventListener('abort', onAbort)
          const at = queue.indexOf(waiter)
          if (at >= 0) queue.splice(at, 1)
          // the head leaving may let those behind it in
          grantWhatFits()
          reject(error)
        }
        const onAbort = () => leave(new Unavailable('The request was abandoned while it waited', HISTORY_RETRY_AFTER_SECONDS))
        const timer = setTimeout(
          () => leave(new Unavailable(`The server's history memory stayed taken for ${maxWaitMs / 1000} s while this request waited; try again shortly`, HISTORY_RETRY_AFTER_SECONDS)),
          maxWaitMs,
        )
        const waiter: Waiter = {
          bytes,
          grant() {
            clearTimeout(timer)
            signal?.removeEventListener('abort', onAbort)
            resolve(take(bytes))
          },
        }
        queue.push(waiter)
        signal?.addEventListener('abort', onAbort, { once: true })
      })
    },
  }
}

/** `release` once: later calls do nothing. */
function once(release: () => void): () => void {
  let released = false
  return () => {
    if (released) return
    released = true
    release()
  }
}
