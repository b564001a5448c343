/**
 * The running server: the database, the HTTP API, the ingest pipeline with its device listeners
 * and the retention job, started together and stopped together (in the order stop() explains).
 */
import { readFileSync } from 'node:fs'
import { openProduct } from './database'
import { createApp } from './app'
import { ensurePartitions, partitionsAhead } from '../db/postgres/partitions'
import { createLocalLeases, type Leases } from './store/leases'
import { createPostgresLeases } from './store/postgres/leases'
import { createNodeSignals, type NodeSignals } from './store/postgres/signals'
import { relayStoredBatch } from './ingest/relay'
import type { Clock } from './clock'
import { systemClock } from './clock'
import type { Config } from './config'
import { createCommandQueue } from './commands/queue'
import { LivePositions } from './ingest/live'
import { createGeofenceCache } from './alerts/cache'
import { createAlertRules } from './alerts/rules'
import { createIngestPipeline, type IngestPipeline } from './ingest/pipeline'
import { createRecentUnknowns } from './ingest/recent-unknowns'
import { PROTOCOLS } from './ingest/protocols'
import { devicePortsOf } from './ingest/protocols/ports'
import type { Listener, Protocol } from './ingest/protocols/protocol'
import { createConnectionGate, startTcpListener, type TcpListener } from './ingest/tcp'
import { createLogger, type Logger } from './log'
import type { ServerStatus } from './ops/health'
import { startRetention } from './ops/retention'
import { createDeliveryWorker, messagingOf } from './alerts/delivery'
import { countingPipeline, createServerMetrics, type ServerMetrics } from './ops/server-metrics'
import { consoleAddresses, createFirstRun, setupUrl } from './session/setup'
import pkg from '../package.json'

/** how long in-flight HTTP requests get to finish at shutdown before their connections are cut (live streams never finish) */
const HTTP_DRAIN_MS = 2000

export interface RunningServer {
  /** the HTTP port actually bound (useful with PORT=0) */
  port: number
  /** each protocol's bound port, by its name (ingest/protocols); null when turned off (port 0 in the config) */
  ports: Record<string, number | null>
  pipeline: IngestPipeline
  metrics: ServerMetrics
  /** stop accepting, acknowledge or refuse every fix received, close sessions, checkpoint, close the database */
  stop(): Promise<void>
}

export async function startServer(config: Config, options: { clock?: Clock; log?: Logger } = {}): Promise<RunningServer> {
  // the protocols' port variables, checked before anything opens (a bad one is a ConfigError)
  const devicePorts = devicePortsOf(config.env)
  const log = options.log ?? createLogger(config.logLevel)
  const clock = options.clock ?? systemClock
  // SQLite: a short busy timeout (a statement waiting for another process's lock blocks the whole
  // event loop; writes wait asynchronously instead, store/busy.ts). PostgreSQL: a pool, migrated
  // under an advisory lock. The built-in models are brought up to date on the way (src/database.ts)
  const database = await openProduct(config, { purpose: 'server', clock })
  const { stores } = database
  // background work runs on one node at a time: advisory locks on PostgreSQL, this process's own on SQLite
  const leases = database.postgres ? createPostgresLeases(database.postgres.sql) : createLocalLeases()
  const live = new LivePositions()
  // several nodes may serve one PostgreSQL database: each labels its samples
  const metrics = createServerMetrics({ node: database.engine === 'postgres' ? config.nodeName : null })
  const status: ServerStatus = { listening: false, stopping: false }
  // alerts: the rules derive events inside ingest's transaction; the outbox rows written with them
  // are sent by the delivery worker (started below), woken after each commit
  const geofenceCache = createGeofenceCache({ reads: stores.geofenceCache, clock, log })
  const alertRules = createAlertRules({ states: stores.ruleStates, clock, geofences: geofenceCache, log })
  // one set of messaging settings for the worker and the API's test sends: its console link is
  // settled once the server listens (below)
  const messaging = messagingOf(config)
  const notificationDelivery = createDeliveryWorker({ store: stores.deliveries, clock, log, metrics, allowPrivate: config.webhookAllowPrivate, messaging })
  // the unknown identifiers refused lately: the pipeline lists them, the admin API shows them
  const recentUnknowns = createRecentUnknowns()
  const pipeline = createIngestPipeline({
    alerts: { rules: alertRules, wake: () => notificationDelivery.wake() },
    stores,
    clock,
    log,
    live,
    offlineAfterSeconds: config.offlineAfter,
    maxFixAgeDays: config.maxFixAgeDays,
    unknownIdentifiers: { perSource: config.unknownIdentifiersPerMinute },
    recentUnknowns,
    sweepIntervalMs: Math.min(30_000, (config.offlineAfter * 1000) / 4),
    onBatch: ({ operations, seconds }) => {
      metrics.batchCommit.observe([], seconds)
      metrics.batchOperations.inc([], operations)
    },
  })
  // a device created or re-identified over the API reports in on its very next fix
  // no user yet: a one-time setup link (its token in memory only, new at every start until setup is done)
  const firstRun = await createFirstRun(stores.people)
  // one command queue: the API queues into it, the device listeners deliver from it (the app runs its sweep)
  // many nodes: what is queued here is announced to the node holding the device's session
  const signals: NodeSignals | null = database.postgres ? createNodeSignals(database.postgres.sql, config.nodeName) : null
  const commandQueue = createCommandQueue({
    commands: stores.commands,
    clock,
    live,
    log,
    ttlSeconds: config.commandTtl,
    announce: signals ? (deviceKey) => void signals.commandQueued(deviceKey).catch((error: Error) => log.error('announcing a command failed', { error: error.message })) : undefined,
  })
  if (signals) {
    // another node's committed batches reach this node's live streams; its queued commands, this node's sessions
    signals.onBatch((batch) => relayStoredBatch(batch, { live, forget: pipeline.forget, log }))
    signals.onCommandQueued((deviceKey) => commandQueue.ready(deviceKey))
    await signals.start()
  }
  // scheduled reports: their look runs under the lease, on one node at a time
  const app = createApp({ stores, config, clock, log, live, metrics, status, firstRun, commandQueue, messaging, reportSchedules: { leases, start: true }, onDevicesChanged: () => pipeline.devicesChanged(), recentUnknowns,
    onGeofencesChanged: (accountId) => alertRules.geofencesChanged(accountId),
  })

  // each listener counts its own protocol's fixes through a view of the one pipeline
  const listenerOptions = (protocol: string) => ({ pipeline: countingPipeline(pipeline, protocol, metrics), clock, log, hostname: config.host })
  // one gate for every TCP listener: the caps are on file descriptors, whatever the protocol
  const gate = createConnectionGate({ maxConnections: config.tcpMaxConnections, maxConnectionsPerAddress: config.tcpMaxConnectionsPerAddress })
  warnIfDescriptorsShort(config.tcpMaxConnections, config.maxStreams, log)
  const garbage = metrics.ingestDiscardedBytes
  const startListener = (protocol: Protocol, port: number): Listener | TcpListener =>
    protocol.transport === 'http'
      ? protocol.start({ ...listenerOptions(protocol.name), port })
      : startTcpListener(protocol, {
          ...listenerOptions(protocol.name),
          port,
          idleTimeoutMs: config.tcpIdleTimeout * 1000,
          loginTimeoutMs: config.tcpLoginTimeout * 1000,
          gate,
          onRefused: (reason) => metrics.tcpRefused.inc([protocol.name, reason]),
          onGarbage: (bytes) => garbage.inc([protocol.name], bytes),
          commands: commandQueue,
        })

  // What is up so far, undone in reverse when a later port cannot be bound: a failed start
  // leaves nothing listening and the database closed.
  const started: (() => unknown)[] = [() => database.close(), () => signals?.close(), () => pipeline.stop()]
  /** every protocol's listener by name, null when its port is 0 (turned off) */
  const listeners = new Map<string, Listener | TcpListener | null>()
  try {
    // Bun would refuse a large body itself, with a bare 413; the API reads bodies after
    // authentication and refuses past 1 MiB with problem details (http/body.ts), and an unread
    // body is never buffered. Elysia asks for SO_REUSEPORT unless told not to: a second server
    // would then share the port and take half the requests, against its own database.
    bind('PORT', config.port, () =>
      app.listen({ port: config.port, hostname: config.host, maxRequestBodySize: Number.MAX_SAFE_INTEGER, reusePort: false }),
    )
    started.push(() => app.stop(true))
    for (const protocol of PROTOCOLS) {
      const port = devicePorts[protocol.name]
      if (!port) {
        listeners.set(protocol.name, null)
        continue
      }
      const listener = bind(protocol.portVariable, port, () => startListener(protocol, port))
      started.push(() => listener.stop())
      listeners.set(protocol.name, listener)
    }
  } catch (error) {
    for (const undo of started.reverse()) await undo()
    throw error
  }
  // said once every port is bound: a start that fails on a device port never claims to serve
  const port = app.server!.port!
  log.info('serving', { url: `http://${config.host}:${port}`, port, database: database.where, engine: database.engine, node: config.nodeName, version: pkg.version })
  status.listening = true
  status.listeners = Object.fromEntries([...listeners].map(([name, listener]) => [name, listener ? 'up' : 'off']))
  const addresses = consoleAddresses(config, port)
  // without APP_URL, a mail's console link names the address the setup link names first (a LAN
  // address when listening on every interface), which opens from another machine; localhost does not
  if (!config.appUrlSet) messaging.appUrl = addresses[0]!
  if (firstRun.token !== null) {
    // the one log line that carries a secret, on purpose: whoever reads the server's log is its operator
    const urls = addresses.map((address) => setupUrl(address, firstRun.token!))
    const where = urls.length === 1 ? urls[0] : `${urls.join(' or ')} (whichever reaches this server from your browser)`
    log.warn(
      `first run: no user yet; open ${where} to create the first account and its admin (the link works once; a new one at every start until then), or run \`tracker init\``,
      { setup_url: urls[0], setup_urls: urls },
    )
  }
  if (!config.appUrlSet && !isLoopback(config.host)) {
    // the console works at any of them; a share link must name one address that works from anywhere
    log.warn(
      `APP_URL is not set: share links begin with ${config.appUrl}, which opens only on this machine; set APP_URL to the address people reach the server at (such as https://fleet.example.org)`,
      { console_urls: addresses },
    )
  }
  metrics.bind({
    connectedDevices: () => pipeline.stats.connected,
    tcpConnections: () =>
      Object.fromEntries(PROTOCOLS.filter((p) => p.transport === 'tcp').map((p) => [p.name, (listeners.get(p.name) as TcpListener | null)?.connections ?? 0])),
  })
  const maintenance = stores.maintenance
  const retention = config.retentionDays
    ? startRetention({
        store: stores.retention,
        leases,
        maintenance,
        clock,
        log,
        days: config.retentionDays,
        onDeleted: (table, rows) => metrics.retentionDeleted.inc([table], rows),
      })
    : null
  // webhooks: the outbox's pending deliveries (a restart carries on with them), then each new one
  notificationDelivery.start()
  const upkeep = database.postgres ? startNodeUpkeep({ sql: database.postgres.sql, leases, pipeline, clock, log, sweepIntervalMs: Math.min(30_000, (config.offlineAfter * 1000) / 4) }) : null

  let stopped = false
  return {
    port,
    ports: Object.fromEntries([...listeners].map(([name, listener]) => [name, listener?.port ?? null])),
    pipeline,
    metrics,
    async stop() {
      if (stopped) return
      stopped = true
      // /ready answers 503 from now on; a retention pass ends after its current batch
      status.stopping = true
      await upkeep?.stop()
      await retention?.stop()
      // attempts under way are cut off and stay pending: sent again (same delivery id) after the restart
      await notificationDelivery.stop()
      // The API takes no new connections; requests in flight go on while the devices drain.
      const httpServer = app.server
      const httpDrained = httpServer?.stop(false)
      // Devices: stop accepting, commit and acknowledge what is in flight (anything not
      // committed is refused, never acknowledged), close the sessions; then the last batch
      // (the disconnections) is flushed before the database closes.
      await Promise.all([...listeners.values()].map((listener) => listener?.stop()))
      await pipeline.stop()
      // API requests get a moment to finish; live streams never do, so their connections are cut
      await Promise.race([httpDrained, Bun.sleep(HTTP_DRAIN_MS)])
      await app.stop(true)
      // fold the WAL into the database file: a clean file to copy, a fast next start (not when
      // another process holds it: then it stays for the next start)
      await maintenance.truncateLog().catch(() => undefined)
      await signals?.close()
      await database.close()
      log.info('stopped')
    },
  }
}

/** how often a node tries to take the month partitions' upkeep */
const PARTITION_UPKEEP_MS = 60 * 60_000

/**
 * The background work of many nodes on one PostgreSQL, each job under a lease (one node at a
 * time): the month partitions of positions made ahead (this month and the next two), and the
 * devices a dead node left connected disconnected once quiet for OFFLINE_AFTER.
 */
function startNodeUpkeep(options: { sql: import('postgres').Sql; leases: Leases; pipeline: IngestPipeline; clock: Clock; log: Logger; sweepIntervalMs: number }): { stop(): Promise<void> } {
  const { sql, leases, pipeline, clock, log } = options
  // the jobs under way: stop waits for them, or the pool would close under a job's reserved
  // connection (its queries failing, the close waiting out its 5 s timeout for that connection)
  const running = new Set<Promise<unknown>>()
  const track = (job: () => Promise<unknown>) => () => {
    const done = job().finally(() => running.delete(done))
    running.add(done)
  }
  const partitions = track(() =>
    leases
      .run('partitions', () => ensurePartitions(sql, partitionsAhead(clock.now())))
      .catch((error: Error) => log.error('partition upkeep failed', { error: error.message })),
  )
  const sweep = track(() => leases.run('offline-sweep', () => pipeline.sweepStored()).catch((error: Error) => log.error('stored offline sweep failed', { error: error.message })))
  partitions()
  const timers = [setInterval(partitions, PARTITION_UPKEEP_MS), setInterval(sweep, options.sweepIntervalMs)]
  for (const timer of timers) timer.unref?.()
  return {
    async stop() {
      for (const timer of timers) clearInterval(timer)
      await Promise.all(running)
    },
  }
}

/** A port this server needs is bound by another process (another server, most likely). */
export class PortInUse extends Error {
  constructor(
    readonly port: number,
    /** the configuration variable that chose it */
    readonly variable: string,
  ) {
    super(`port ${port} is already in use (${variable})`)
  }
}

/** `start()` binding `port`; EADDRINUSE becomes PortInUse, naming the port and its variable. */
function bind<T>(variable: string, port: number, start: () => T): T {
  try {
    return start()
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === 'EADDRINUSE') throw new PortInUse(port, variable)
    throw error
  }
}

/** descriptors the rest of the process wants besides device connections: the database, the API's clients, logs */
const DESCRIPTOR_HEADROOM = 1024

/**
 * TCP_MAX_CONNECTIONS and MAX_STREAMS (each live stream holds a socket) protect the API only below
 * the process's open-file limit: say so at start when they are not (Linux tells us in /proc;
 * elsewhere nothing is said).
 */
function warnIfDescriptorsShort(maxConnections: number, maxStreams: number, log: Logger): void {
  let limit: number
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'))
    limit = Number(line?.split(/\s{2,}/)[1])
  } catch {
    return
  }
  if (Number.isFinite(limit) && maxConnections + maxStreams + DESCRIPTOR_HEADROOM > limit) {
    log.warn('TCP_MAX_CONNECTIONS and MAX_STREAMS leave too few file descriptors for the API: lower them or raise the open-file limit (ulimit -n)', {
      maxConnections,
      maxStreams,
      openFileLimit: limit,
    })
  }
}

/** 127.0.0.0/8, ::1 and localhost: only this machine reaches the server, so APP_URL's default is right */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host)
}
