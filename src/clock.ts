/** Time comes from here, so that tests of expiry and timeouts can move it instead of sleeping. */
export interface Clock {
  /** Unix milliseconds */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock a test sets by hand. */
export function manualClock(start = Date.UTC(2026, 10, 25, 12, 0, 0)): Clock & { set(ms: number): void; advance(ms: number): void } {
  let current = start
  return {
    now: () => current,
    set: (ms) => {
      current = ms
    },
    advance: (ms) => {
      current += ms
    },
  }
}
