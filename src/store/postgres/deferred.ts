/**
 * store/deferred.ts's background writer over PostgreSQL: the same schedule (a write `delayMs`
 * after the first change that waits, the wait doubling on failure up to a minute), with a write
 * that awaits its transaction. Writes never overlap: a flush while one runs waits for it and
 * then writes what is left.
 */
import type { Logger } from '../../log'
import { type DeferredWrites, nextTryInMs } from '../deferred'


export interface PostgresDeferredWriteOptions {
  delayMs: number
  hasPending(): boolean
  /**
   * Takes everything waiting (forgetting it) and answers its write: on failure it must put back
   * what it took, to be written by the next try.
   */
  write(): Promise<void>
  log: Logger
  failure: string
  context?(): Record<string, unknown>
}

export function createPostgresDeferredWrites(options: PostgresDeferredWriteOptions): DeferredWrites {
  let timer: ReturnType<typeof setTimeout> | null = null
  let failures = 0
  let running: Promise<boolean> | null = null

  async function writeOnce(): Promise<boolean> {
    if (!options.hasPending()) return true
    try {
      await options.write()
      failures = 0
      return true
    } catch (error) {
      failures++
      options.log.warn(options.failure, { ...options.context?.(), error: error instanceof Error ? error.message : String(error) })
      schedule()
      return false
    }
  }

  async function flush(): Promise<boolean> {
    if (timer !== null) clearTimeout(timer)
    timer = null
    while (running) await running
    running = writeOnce().finally(() => (running = null))
    return running
  }

  function schedule(): void {
    if (timer !== null || !options.hasPending()) return
    const delay = nextTryInMs(options.delayMs, failures)
    timer = setTimeout(() => {
      timer = null
      void flush()
    }, delay)
    timer.unref?.()
  }

  return { flush, schedule }
}
