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
   * A full garbage collection as a step of its own (12–16 ms with a 60 MB heap), once however
   * often it is asked before it runs: after a large answer has been sent, its garbage (the rows
   * read, the JSON chunks: ~80 MB for a month of fixes every 5 s) goes at once. Left to the
   * engine, eight such routes one after the other piled up 80 MB of it and the peak reached
   * 260 MiB, against 187 MiB collected after each (`npm run bench -- budgets` measures the server).
   */
  collectGarbage(): void
}

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
  const turns: StepTurns = {
    next() {
      return new Promise((resolve) => {
        waiting.push(resolve)
        schedule()
      })
    },
    collectGarbage() {
      if (collecting) return
      collecting = true
      void turns.next().then(() => {
        collecting = false
        Bun.gc(true)
      })
    },
  }
  return turns
}
