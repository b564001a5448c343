/**
 * The running server: the database, the HTTP API and (as they land) the device listeners,
 * started together and stopped together.
 */
import { openDatabase } from '../db/client'
import { createApp } from './app'
import type { Clock } from './clock'
import { systemClock } from './clock'
import type { Config } from './config'
import { startGt06Listener } from './ingest/gt06'
import { LivePositions } from './ingest/live'
import { startOsmandListener } from './ingest/osmand'
import { createIngestPipeline, type IngestPipeline } from './ingest/pipeline'
import { startTeltonikaListener } from './ingest/teltonika'
import { createLogger, type Logger } from './log'

export interface RunningServer {
  /** the HTTP port actually bound (useful with PORT=0) */
  port: number
  /** the device listeners' bound ports; null when turned off (port 0 in the config) */
  ports: { osmand: number | null; gt06: number | null; teltonika: number | null }
  pipeline: IngestPipeline
  stop(): Promise<void>
}

export async function startServer(config: Config, options: { clock?: Clock; log?: Logger } = {}): Promise<RunningServer> {
  const log = options.log ?? createLogger(config.logLevel)
  const clock = options.clock ?? systemClock
  const database = openDatabase(config.databasePath, { synchronous: config.synchronous })
  const live = new LivePositions()
  const pipeline = createIngestPipeline({
    sqlite: database.sqlite,
    clock,
    log,
    live,
    offlineAfterSeconds: config.offlineAfter,
    sweepIntervalMs: Math.min(30_000, (config.offlineAfter * 1000) / 4),
  })
  const app = createApp({ database, config, clock, log, live, ingest: pipeline })
  app.listen({ port: config.port, hostname: config.host })
  const port = app.server!.port!
  log.info('serving', { url: `http://${config.host}:${port}`, database: config.databasePath })

  const listenerOptions = { pipeline, clock, log, hostname: config.host }
  const tcpIdleTimeoutMs = config.tcpIdleTimeout * 1000
  const osmand = config.osmandPort ? startOsmandListener({ ...listenerOptions, port: config.osmandPort }) : null
  const gt06 = config.gt06Port ? startGt06Listener({ ...listenerOptions, port: config.gt06Port, idleTimeoutMs: tcpIdleTimeoutMs }) : null
  const teltonika = config.teltonikaPort
    ? startTeltonikaListener({ ...listenerOptions, port: config.teltonikaPort, idleTimeoutMs: tcpIdleTimeoutMs })
    : null

  let stopped = false
  return {
    port,
    ports: { osmand: osmand?.port ?? null, gt06: gt06?.port ?? null, teltonika: teltonika?.port ?? null },
    pipeline,
    async stop() {
      if (stopped) return
      stopped = true
      // Devices first: stop accepting, commit and acknowledge what is in flight, close the
      // sessions; then the last batch (the disconnections) is flushed before the database closes.
      await Promise.all([osmand?.stop(), gt06?.stop(), teltonika?.stop()])
      await pipeline.stop()
      await app.stop()
      database.sqlite.run('PRAGMA wal_checkpoint(TRUNCATE)')
      database.close()
      log.info('stopped')
    },
  }
}
