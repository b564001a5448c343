/**
 * SIGTERM and SIGINT stop the server gracefully and exit 0. A second signal, or a stop that
 * takes longer than the timeout, exits 1 at once: a supervisor waiting on us should not hang
 * behind a stuck connection. What "gracefully" means is RunningServer.stop (server.ts).
 */
import type { Logger } from '../log'

export interface ShutdownOptions {
  log: Logger
  /** give up and exit 1 after this long (default 20 s; give the supervisor a longer stop timeout, systemd's is 90 s) */
  timeoutMs?: number
  exit?: (code: number) => void
}

export function stopOnSignals(stop: () => Promise<void>, { log, timeoutMs = 20_000, exit = (code) => process.exit(code) }: ShutdownOptions): void {
  let stopping = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn('second signal: exiting without finishing the shutdown', { signal })
      return exit(1)
    }
    stopping = true
    const started = performance.now()
    log.info('shutting down', { signal })
    const deadline = setTimeout(() => {
      log.error('shutdown took too long: exiting', { timeoutMs })
      exit(1)
    }, timeoutMs)
    deadline.unref?.()
    stop().then(
      () => {
        clearTimeout(deadline)
        log.info('shut down', { ms: Math.round(performance.now() - started) })
        exit(0)
      },
      (error: unknown) => {
        clearTimeout(deadline)
        log.error('shutdown failed', { error: error instanceof Error ? error.message : String(error) })
        exit(1)
      },
    )
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
}
