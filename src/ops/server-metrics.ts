/**
 * What the server measures, by name, and the glue that feeds it: the HTTP request log records
 * requests, a counting wrapper around the ingest pipeline records fixes by protocol, the
 * pipeline's batch hook records commit times, and gauges are read at scrape time.
 */
import type { DatabaseFileSizes } from '../store/maintenance'
import { MaskedUnknownDevice, UnknownDevice, type IngestPipeline, type IngestResult } from '../ingest/pipeline'
import { Registry } from './metrics'

/** seconds: from a cached device list (~0.1 ms) to a week of route (seconds) */
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** seconds: a group commit is usually a millisecond or two; fsync stalls show up on the right */
const COMMIT_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]

export interface MetricSources {
  /** devices currently connected (the pipeline's view) */
  connectedDevices?: () => number
  /** open device TCP connections by protocol (every TCP protocol of ingest/protocols, 0 when off) */
  tcpConnections?: () => Record<string, number>
  /** the database's files, measured (store/maintenance.ts) */
  databaseSizes?: () => Promise<DatabaseFileSizes>
  /** the notification outbox: deliveries pending, and the age of the oldest (alerts/delivery.ts) */
  notificationOutbox?: () => { pending: number; oldestAgeSeconds: number }
}

export interface ServerMetricsOptions {
  /** NODE_NAME, when several processes (nodes) serve one PostgreSQL database: every sample carries `node="…"` */
  node?: string | null
}

export function createServerMetrics(options: ServerMetricsOptions = {}) {
  const registry = new Registry(options.node ? { node: options.node } : {})
  const startedAt = Date.now() / 1000
  const sources: MetricSources = {}
  /** what the asynchronous sources said at the last collect() */
  let databaseSizes: DatabaseFileSizes | null = null

  const metrics = {
    registry,
    httpRequests: registry.counter('tracker_http_requests_total', 'HTTP API requests, by method, route template and status', ['method', 'route', 'status']),
    httpDuration: registry.histogram(
      'tracker_http_request_duration_seconds',
      'Time from receiving an HTTP API request to handing back its response (for a stream: its headers)',
      ['method', 'route'],
      HTTP_BUCKETS,
    ),
    fixesIngested: registry.counter('tracker_fixes_ingested_total', 'Fixes committed to the database, by protocol', ['protocol']),
    fixesDiscarded: registry.counter(
      'tracker_fixes_discarded_total',
      'Fixes received but not stored, by protocol and reason: duplicate (already stored) or rejected (impossible coordinates or time)',
      ['protocol', 'reason'],
    ),
    eventsIngested: registry.counter('tracker_events_ingested_total', 'Events and alarms committed to the database, by protocol', ['protocol']),
    unknownDeviceMessages: registry.counter(
      'tracker_unknown_device_messages_total',
      'Logins and reports naming an unknown or unlink device identifier, by protocol and outcome: refused (the address within UNKNOWN_IDENTIFIERS_PER_MINUTE: told, closed or 404) or dropped (past it: answered as a known device would be, nothing stored)',
      ['protocol', 'outcome'],
    ),
    batchCommit: registry.histogram('tracker_ingest_batch_commit_seconds', 'Time to commit one ingest batch (group commit)', [], COMMIT_BUCKETS),
    batchOperations: registry.counter('tracker_ingest_batch_operations_total', 'Reports and state changes committed in ingest batches'),
    retentionDeleted: registry.counter('tracker_retention_deleted_rows_total', 'Rows deleted by RETENTION_DAYS, by table', ['table']),
    connectedDevices: registry.gauge('tracker_connected_devices', 'Devices currently connected', [], (set) => {
      if (sources.connectedDevices) set([], sources.connectedDevices())
    }),
    ingestDiscardedBytes: registry.counter(
      'tracker_ingest_discarded_bytes_total',
      'Bytes device TCP connections sent outside any frame of their protocol (garbage skipped by the framing), by protocol',
      ['protocol'],
    ),
    tcpRefused: registry.counter(
      'tracker_tcp_connections_refused_total',
      'Device TCP connections closed at once for being over TCP_MAX_CONNECTIONS (reason total) or TCP_MAX_CONNECTIONS_PER_ADDRESS (reason address)',
      ['protocol', 'reason'],
    ),
    tcpConnections: registry.gauge('tracker_tcp_connections', 'Open device TCP connections, by protocol', ['protocol'], (set) => {
      for (const [protocol, count] of Object.entries(sources.tcpConnections?.() ?? {})) set([protocol], count)
    }),
    databaseSize: registry.gauge('tracker_database_size_bytes', 'Size of the database on disk: SQLite\'s file (database) and its write-ahead log (wal); on PostgreSQL pg_database_size (database; wal 0)', ['file'], (set) => {
      if (!databaseSizes) return
      set(['database'], databaseSizes.database)
      set(['wal'], databaseSizes.wal)
    }),
    notificationDeliveries: registry.counter(
      'tracker_notification_deliveries_total',
      'Webhook delivery attempts of notifications, by outcome: delivered (2xx), failed (retried later), dead (failed after 24 h of retries)',
      ['outcome'],
    ),
    notificationOutboxPending: registry.gauge('tracker_notification_outbox_pending', 'Deliveries waiting in the notification outbox (not yet delivered or dead)', [], (set) => {
      const outbox = sources.notificationOutbox?.()
      if (outbox) set([], outbox.pending)
    }),
    notificationOutboxOldest: registry.gauge(
      'tracker_notification_outbox_oldest_pending_seconds',
      'How long the oldest delivery waiting in the notification outbox has waited (0 when none waits)',
      [],
      (set) => {
        const outbox = sources.notificationOutbox?.()
        if (outbox) set([], outbox.oldestAgeSeconds)
      },
    ),
    passwordChecks: registry.counter(
      'tracker_password_checks_total',
      'Passwords verified (each an argon2id hash: sign-in, and users changing their own password); an attempt refused by the throttle costs none',
    ),
    passwordAttemptsRefused: registry.counter(
      'tracker_password_attempts_refused_total',
      'Password attempts refused before any check, by reason: source (its client address or IPv6 /64 is over the failed-auth limit, 429), ' +
        'name (the name tried is over its own limit, 429), in_flight (the client has too many checks running, 429), busy (the server has, 503)',
      ['reason'],
    ),
    residentMemory: registry.gauge('process_resident_memory_bytes', 'Resident memory size in bytes', [], (set) => set([], process.memoryUsage.rss())),
    startTime: registry.gauge('process_start_time_seconds', 'Start time of the process since the Unix epoch, in seconds', [], (set) => set([], startedAt)),
    /** plug in what only exists once the server runs (the pipeline, the listeners, the database) */
    bind(more: MetricSources): void {
      Object.assign(sources, more)
    },
    /** reads the sources that answer asynchronously (the database's sizes), for the render that follows */
    async collect(): Promise<void> {
      databaseSizes = sources.databaseSizes ? await sources.databaseSizes() : null
    },
  }
  return metrics
}

export type ServerMetrics = ReturnType<typeof createServerMetrics>

/**
 * The pipeline as one protocol's listener sees it, counting what it commits and what it refuses
 * or drops for an unknown identifier. The listeners take a pipeline; handing each its own
 * counting view keeps the protocol label out of the pipeline.
 */
export function countingPipeline(pipeline: IngestPipeline, protocol: string, metrics: ServerMetrics): IngestPipeline {
  const ingested = metrics.fixesIngested.labels(protocol)
  const duplicates = metrics.fixesDiscarded.labels(protocol, 'duplicate')
  const rejected = metrics.fixesDiscarded.labels(protocol, 'rejected')
  const events = metrics.eventsIngested.labels(protocol)
  const unknownRefused = metrics.unknownDeviceMessages.labels(protocol, 'refused')
  const unknownDropped = metrics.unknownDeviceMessages.labels(protocol, 'dropped')
  const count = (result: IngestResult) => {
    if (result.stored) ingested.inc(result.stored)
    if (result.duplicates) duplicates.inc(result.duplicates)
    if (result.rejected) rejected.inc(result.rejected)
    if (result.events) events.inc(result.events)
    return result
  }
  const countRefusal = (error: unknown): never => {
    if (error instanceof UnknownDevice) unknownRefused.inc()
    else if (error instanceof MaskedUnknownDevice) unknownDropped.inc()
    throw error
  }
  const view: IngestPipeline = Object.create(pipeline)
  view.ingest = (report, origin) => pipeline.ingest(report, origin).then(count, countRefusal)
  view.openSession = (uniqueId, origin) => pipeline.openSession(uniqueId, origin).catch(countRefusal)
  view.discard = (origin) => {
    unknownDropped.inc()
    return pipeline.discard(origin)
  }
  return view
}
