/**
 * The running server: the database, the HTTP API and (as they land) the device listeners,
 * started together and stopped together.
 */
import { openDatabase } from '../db/client'
import { createApp } from './app'
import type { Clock } from './clock'
import { systemClock } from './clock'
import type { Config } from './config'
import { LivePositions } from './ingest/live'
import { createLogger, type Logger } from './log'

export interface RunningServer {
  /** the HTTP port actually bound (useful with PORT=0) */
  port: number
  stop(): Promise<void>
}

export async function startServer(config: Config, options: { clock?: Clock; log?: Logger } = {}): Promise<RunningServer> {
  const log = options.log ?? createLogger(config.logLevel)
  const clock = options.clock ?? systemClock
  const database = openDatabase(config.databasePath, { synchronous: config.synchronous })
  const live = new LivePositions()
  const app = createApp({ database, config, clock, log, live })
  app.listen({ port: config.port, hostname: config.host })
  const port = app.server!.port!
  log.info('serving', { url: `http://${config.host}:${port}`, database: config.databasePath })

  let stopped = false
  return {
    port,
    async stop() {
      if (stopped) return
      stopped = true
      await app.stop()
      database.sqlite.run('PRAGMA wal_checkpoint(TRUNCATE)')
      database.close()
      log.info('stopped')
    },
  }
}
