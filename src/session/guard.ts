/**
 * What a password check may cost. Checking a password is an argon2id hash (~110 ms of one core,
 * 64 MiB), so every check — sign-in, and a user's change of their own password — passes here:
 *
 * 1. refused at once, costing no hash, when its source or the name it tries is over the
 *    failed-authentication throttle (http/limits.ts): 429 with Retry-After;
 * 2. refused at once when its source already has `inFlightPerSource` checks running or waiting
 *    (429, Retry-After 1), or `waiting` checks of anyone wait for a slot (503, Retry-After 1);
 * 3. counted as a failure of its source and name (reserved) before it runs, and given back only
 *    when the password was right, so that guesses arriving together cannot outrun the count;
 * 4. run when one of `inFlight` process-wide slots is free (first come, first served), which
 *    caps the memory and CPU that password checks take from everything else the server does.
 *
 * A refusal is decided synchronously, before anything is awaited: concurrent requests see each
 * other's counts.
 */
import { TooManyRequests, Unavailable } from '../errors'
import type { AuthThrottle } from '../http/limits'

export interface PasswordCheckLimits {
  /** password checks running at once in the process (default 2: 128 MiB of argon2id at most) */
  inFlight: number
  /** checks one source may have running or waiting (default 4: a few people behind one NAT signing in together) */
  inFlightPerSource: number
  /** checks that may wait for a slot (default 32: about 2.5 s of waiting at most) */
  waiting: number
}

export const defaultPasswordCheckLimits: PasswordCheckLimits = { inFlight: 2, inFlightPerSource: 4, waiting: 32 }

export type RefusalReason = 'source' | 'name' | 'in_flight' | 'busy'

export interface PasswordGuardOptions {
  throttle: AuthThrottle
  limits?: Partial<PasswordCheckLimits>
  /** told of each attempt refused without a check (a metric) */
  onRefused?: (reason: RefusalReason) => void
}

export function createPasswordGuard({ throttle, limits = {}, onRefused = () => {} }: PasswordGuardOptions) {
  const { inFlight, inFlightPerSource, waiting } = { ...defaultPasswordCheckLimits, ...limits }
  let running = 0
  const queue: (() => void)[] = []
  /** source → checks running or waiting */
  const bySource = new Map<string, number>()

  const refuse = (reason: RefusalReason, error: Error): never => {
    onRefused(reason)
    throw error
  }

  async function slot(): Promise<void> {
    if (running < inFlight) {
      running++
      return
    }
    // the slot is handed over by the check that frees it (`running` stays as it is)
    await new Promise<void>((resolve) => queue.push(resolve))
  }
  function freeSlot(): void {
    const next = queue.shift()
    if (next) next()
    else running--
  }

  return {
    /**
     * Runs `check` (which verifies a password: its result, or null when the password is wrong)
     * for an attempt at `name` from `address`, within the limits above. A wrong password's null
     * comes back after the throttle's delay for the source.
     */
    async attempt<T>(address: string, name: string, check: () => Promise<T | null>): Promise<T | null> {
      const refusal = throttle.refusal(address, name)
      if (refusal?.refused === 'source') {
        refuse('source', new TooManyRequests('Too many failed authentications from this client; try again later', refusal.retryAfterSeconds))
      } else if (refusal) {
        refuse('name', new TooManyRequests('Too many failed sign-ins for this name, from anywhere; try again later', refusal.retryAfterSeconds))
      }
      const reservation = throttle.reserve(address, name)
      const pending = bySource.get(reservation.source) ?? 0
      if (pending >= inFlightPerSource) {
        reservation.release()
        refuse('in_flight', new TooManyRequests('Too many password checks from this client at once; try again in a second', 1))
      }
      if (running >= inFlight && queue.length >= waiting) {
        reservation.release()
        refuse('busy', new Unavailable('Too many password checks at once on this server; try again in a second', 1))
      }
      bySource.set(reservation.source, pending + 1)
      let result: T | null
      try {
        await slot()
        try {
          result = await check()
        } finally {
          freeSlot()
        }
      } catch (error) {
        // not a wrong password (a database error, say): nothing was learnt, nothing is counted
        reservation.release()
        throw error
      } finally {
        const left = bySource.get(reservation.source)! - 1
        if (left === 0) bySource.delete(reservation.source)
        else bySource.set(reservation.source, left)
      }
      if (result !== null) {
        reservation.release()
        return result
      }
      if (reservation.delayMs > 0) await Bun.sleep(reservation.delayMs)
      return null
    },
  }
}

export type PasswordGuard = ReturnType<typeof createPasswordGuard>
