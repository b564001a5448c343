/**
 * History work is cut into steps — a read of FIXES_PER_READ fixes, the analysis, a chunk of the
 * route's JSON — each synchronous for up to a few tens of milliseconds on a 31-day window. The
 * steps of every request in flight take turns: at most one runs per turn of the event loop, so
 * whatever else the server does (`/health`, the API, devices' fixes) waits at most one step,
 * however many routes are in flight. Without it, eight routes' steps ran back to back in one
 * turn and `/health` waited 170–500 ms (`npm run bench -- budgets`).
 */

export interface StepTurns {
  /** resolves on a later turn of the event loop, one in which no other history step runs; first come, first served */
  next(): Promise<void>
  /**
   * Tells that an answer reckoned at `bytes` has been sent: once those told since the last
   * collection reach GARBAGE_COLLECT_AFTER_BYTES, a full garbage collection runs as a step of its
   * own (12–16 ms with a 60 MB heap). A large answer's garbage (the rows read, the JSON chunks:
   * ~80 MB for a month of fixes every 5 s) then goes at once; left to the engine, eight such
   * routes one after the other piled up 80 MB of it and the peak reached 260 MiB, against 187 MiB
   * collected after each. Small answers add up to one collection now and then, so a string of
   * one-day routes is not slowed by one each (`npm run bench -- budgets | history`).
   */
  sent(bytes: number): void
}

/** Answers reckoned at this much, sent since the last collection, call for the next one. */
export const GARBAGE_COLLECT_AFTER_BYTES = 24 * 1024 * 1024

export function createStepTurns(): StepTurns {
  const waiting: (() => void)[] = []
  let scheduled = false
  function schedule() {
    if (scheduled) return
    scheduled = true
    setImmediate(runOne)
  }
  // an immediate queued while immediates run waits for the next turn, after the I/O that came meanwhile
  function runOne() {
    scheduled = false
    waiting.shift()?.()
    if (waiting.length > 0) schedule()
  }
  let collecting = false
  let sentBytes = 0
  const turns: StepTurns = {
    next() {
      return new Promise((resolve) => {
        waiting.push(resolve)
        schedule()
      })
    },
    sent(bytes) {
      sentBytes += bytes
      if (collecting || sentBytes < GARBAGE_COLLECT_AFTER_BYTES) return
      collecting = true
      sentBytes = 0
      void turns.next().then(() => {
        collecting = false
        Bun.gc(true)
      })
    },
  }
  return turns
}
