/**
 * createApp(deps) → the Elysia app: the one place where modules meet. Services are built here
 * from their dependencies and handed to the routes; the server (main.ts) and the tests both
 * start from this function.
 */
import { Elysia } from 'elysia'
import { adminRoutes } from './admin'
import { geofenceRoutes } from './alerts'
import { createGeofenceService } from './alerts/service'
import { type Clock, systemClock } from './clock'
import { commandsRoutes } from './commands'
import { consoleRoutes } from './console'
import { createCommandService } from './commands/service'
import { createCommandQueue, type CommandQueue } from './commands/queue'
import { type Config, loadConfig } from './config'
import { createDeviceAccess } from './devices/access'
import { devicesRoutes } from './devices'
import { deviceAdminRoutes } from './devices/admin-routes'
import { createUnknownIdentifiers } from './devices/unknown'
import { unknownDeviceRoutes } from './devices/unknown-routes'
import type { RecentUnknowns } from './ingest/recent-unknowns'
import { createDeviceAdmin } from './devices/admin-service'
import { createModelAdmin } from './admin/models'
import { modelRoutes } from './admin/models-routes'
import { createDeviceService } from './devices/service'
import { createGeocoder, type Geocoder } from './geocode'
import { eventsRoutes } from './events'
import { createEventsService } from './events/service'
import { createSqliteStores, type Stores } from './store'
import { historyRoutes } from './history'
import { createHistoryService } from './history/service'
import { reportRoutes } from './reports'
import { createReportService } from './reports/service'
import { createReportScheduler, type ReportScheduler } from './reports/scheduler'
import { createScheduleService } from './reports/schedules'
import { scheduleRoutes } from './reports/schedules-routes'
import { createLocalLeases, type Leases } from './store/leases'
import { API_DESCRIPTION } from './http/description'
import { apiDocs } from './http/docs'
import { authPlugin } from './http/auth'
import { createClientAddress, createRequestOrigin, createForwardedForWatch, forwardedForPlugin } from './http/client'
import { headerLimit } from './http/headers'
import { createAuthThrottle, defaultThrottle, type AuthThrottleOptions } from './http/limits'
import { problemDetails } from './http/problem'
import { LivePositions } from './ingest/live'
import { createKeyLookup, createKeyUsage } from './keys/service'
import { sessionRoutes, setupRoutes } from './session'
import { createPasswordGuard, type PasswordCheckLimits } from './session/guard'
import { createSessionService } from './session/service'
import { createFirstRun, type FirstRun } from './session/setup'
import { shareRoutes } from './share'
import { sharePageRoutes } from './share/page'
import { createShareService } from './share/service'
import { createShareTokenCache } from './share/tokens'
import { viewerOf } from './share/viewer'
import { streamRoutes } from './stream'
import { createLiveStreams } from './stream/service'
import { type Logger, silentLogger } from './log'
import { opsRoutes } from './ops'
import { notificationRoutes } from './alerts/notifications'
import { emailAlertRoutes } from './alerts/email-alerts'
import { messagingOf, type MessagingSettings } from './alerts/delivery'
import type { ServerStatus } from './ops/health'
import { requestLog } from './ops/requests'
import { createServerMetrics, type ServerMetrics } from './ops/server-metrics'
import type { DatabaseHandle } from '../db/client'
import pkg from '../package.json'

export interface AppDeps {
  /** the SQLite database the app's stores are made over, when `stores` is not given */
  database?: DatabaseHandle
  /** the stores (src/store/index.ts: SQLite's, or src/store/postgres/index.ts: PostgreSQL's); default: SQLite's over `database` */
  stores?: Stores
  config?: Config
  clock?: Clock
  log?: Logger
  live?: LivePositions
  throttle?: AuthThrottleOptions
  /** caps on password checks in flight (session/guard.ts); tests widen or narrow them */
  passwordChecks?: Partial<PasswordCheckLimits>
  /** heartbeat interval of live streams (default 15 s); tests shorten it */
  streamHeartbeatMs?: number
  /** how long a history request may wait for the memory budget (default 5 s); tests shorten it */
  historyMaxWaitMs?: number
  /** how soon share-link views are written in the background (default 1 s); tests shorten it */
  shareAccessFlushMs?: number
  /** how soon API keys' last use is written in the background (default 1 s); tests shorten it */
  keyUseFlushMs?: number
  /** reverse geocoder for travel addresses; default: offline, plus GEOCODER_URL when set */
  geocoder?: Geocoder
  /** what /metrics reports; default: a fresh set that sees this app's requests and database */
  metrics?: ServerMetrics
  /** listeners up, shutting down: read by /ready; default: ready (an app without listeners) */
  status?: ServerStatus
  /** free bytes where the database is, for /ready; default statfs of its directory */
  diskFreeBytes?: () => number | null
  /** told when the admin API has changed devices: the server drops the ingest pipeline's device cache at once */
  onDevicesChanged?: () => void
  /** the first-run setup link's token (server.ts logs it); default: a random one, when the database has no user */
  firstRun?: FirstRun | Promise<FirstRun>
  /** how soon sessions' last use is written in the background (default 1 s); tests shorten it */
  sessionFlushMs?: number
  /**
   * the command queue (commands/queue.ts), when the protocol listeners deliver from the same one
   * (built with the same `live`); default: one of this app's own. The app runs its expiry sweep.
   */
  commandQueue?: CommandQueue
  /** told when the API has changed an account's geofences: the server drops the alert rules' geofence cache at once */
  onGeofencesChanged?: (accountId: string) => void
  /** the unknown identifiers the device listeners refused lately (GET /devices/unknown); default: none */
  recentUnknowns?: RecentUnknowns
  /** email and Telegram settings, shared with the server's delivery worker; default: the config's */
  messaging?: MessagingSettings
  /**
   * scheduled reports: the lease their look runs under (default: this process's own; the server
   * passes PostgreSQL's), whether the app starts the scheduler's timer (the server does; tests
   * call tick() and move the clock), and who is handed the scheduler
   */
  reportSchedules?: { leases?: Leases; start?: boolean; expose?: (scheduler: ReportScheduler) => void }
}

export function createApp(deps: AppDeps) {
  const config = deps.config ?? loadConfig({})
  const clock = deps.clock ?? systemClock
  const log = deps.log ?? silentLogger
  const live = deps.live ?? new LivePositions()
  const metrics = deps.metrics ?? createServerMetrics()
  const stores = deps.stores ?? createSqliteStores(requireDatabase(deps.database), { clock })
  const maintenance = stores.maintenance
  metrics.bind({ databaseSizes: () => maintenance.fileSizes() })

  const access = createDeviceAccess(stores.deviceAccess)
  const shareLinks = stores.shareLinks
  const shareTokens = createShareTokenCache(shareLinks, clock, { log, accessFlushMs: deps.shareAccessFlushMs })
  const shares = createShareService({
    links: shareLinks,
    access,
    clock,
    tokens: shareTokens,
    appUrl: config.appUrl,
    shortUrlBase: config.shortUrlBase,
    maxActiveLinksPerUser: config.maxShareLinksPerUser,
  })
  const forwardedFor = createForwardedForWatch({ log, clock })
  const clientAddress = createClientAddress(config.trustedProxies, forwardedFor)
  const requestOrigin = createRequestOrigin(config.trustedProxies)
  const keys = stores.keys
  const keyUsage = createKeyUsage(keys, clock, { log, flushMs: deps.keyUseFlushMs })
  // one throttle: bad keys, bad session cookies and wrong passwords count together
  const throttle = createAuthThrottle(clock, deps.throttle ?? defaultThrottle)
  const people = stores.people
  const sessions = createSessionService({ people, clock, log, flushMs: deps.sessionFlushMs, onPasswordCheck: () => metrics.passwordChecks.inc() })
  const passwordGuard = createPasswordGuard({ throttle, limits: deps.passwordChecks, onRefused: (reason) => metrics.passwordAttemptsRefused.inc([reason]) })
  const auth = authPlugin({
    clientAddress,
    findUserByKey: createKeyLookup(keys, clock, keyUsage),
    findUserBySession: sessions.findUserBySession,
    appOrigin: config.appUrlSet ? new URL(config.appUrl).origin : null,
    requestOrigin,
    resolveShareToken: (token, request, client) => shares.resolve(token, viewerOf(request, client)),
    throttle,
  })
  const commandQueue = deps.commandQueue ?? createCommandQueue({ commands: stores.commands, clock, live, log, ttlSeconds: config.commandTtl })
  commandQueue.start()
  const modelStore = stores.models
  const commands = createCommandService({ models: modelStore, access, queue: commandQueue })
  const deviceAdmin = createDeviceAdmin({ store: stores.deviceAdmin, clock, onDevicesChanged: deps.onDevicesChanged })
  const modelAdmin = createModelAdmin({ models: modelStore, clock })
  const geocoder = deps.geocoder ?? createGeocoder({
    url: config.geocoderUrl,
    timeoutMs: config.geocoderTimeoutMs,
    intervalMs: config.geocoderIntervalMs,
    maxInFlight: config.geocoderMaxInFlight,
  })
  const positionReads = stores.positions
  const me = { people, access, linkExpiresAt: shares.expiresAt }
  const eventReads = stores.events
  const devices = createDeviceService({ positions: positionReads, statuses: stores.statuses, access, live, geocoder })
  const history = createHistoryService({ positions: positionReads, events: eventReads, access, geocoder, memoryBytes: config.historyMemoryMb * 1024 * 1024, maxWaitMs: deps.historyMaxWaitMs })
  const notificationStore = stores.notifications
  const geofences = createGeofenceService({
    store: stores.geofences,
    clock,
    onChange: deps.onGeofencesChanged,
    maxPerAccount: config.maxGeofencesPerAccount,
    maxPoints: config.maxGeofenceVertices,
  })
  const streams = createLiveStreams({
    positions: positionReads,
    access,
    live,
    clock,
    linkActive: shares.isActive,
    linkExpiresAt: shares.expiresAt,
    onLinkChange: shares.onChange,
    heartbeatMs: deps.streamHeartbeatMs,
    maxStreams: config.maxStreams,
  })

  const reportService = createReportService({ history, events: eventReads, reports: stores.reports, access, people, geocoder, clock })
  const messaging = deps.messaging ?? messagingOf(config)
  const reportScheduler = createReportScheduler({
    store: stores.reportSchedules,
    reports: reportService,
    access,
    people,
    notifications: notificationStore,
    clock,
    leases: deps.reportSchedules?.leases ?? createLocalLeases(),
    log,
    messaging,
    allowPrivate: config.webhookAllowPrivate,
  })
  if (deps.reportSchedules?.start) reportScheduler.start()
  deps.reportSchedules?.expose?.(reportScheduler)
  const schedules = createScheduleService({
    store: stores.reportSchedules,
    notifications: notificationStore,
    people,
    access,
    clock,
    smtpConfigured: messaging.smtpUrl !== null,
    runNow: reportScheduler.runNow,
  })

  // what the stop hook writes: Elysia calls its stop hooks without awaiting them, and over
  // PostgreSQL the writes are truly asynchronous, so stop() waits for them (below)
  let stopWrites: Promise<unknown> = Promise.resolve()
  const app = new Elysia({ normalize: false })
    .use(problemDetails(log))
    .use(requestLog({ log, metrics }))
    .use(headerLimit())
    .use(forwardedForPlugin(config.trustedProxies, forwardedFor))
    .use(
      opsRoutes({
        database: maintenance,
        status: deps.status ?? { listening: true, stopping: false },
        metrics,
        metricsToken: config.metricsToken,
        minFreeBytes: config.readyMinFreeMb * 1024 * 1024,
        freeBytes: deps.diskFreeBytes,
        warnings: forwardedFor.warnings,
      }),
    )
    .use(apiDocs(API_DESCRIPTION, pkg.version))
    .use(commandsRoutes(auth, commands))
    .use(historyRoutes(auth, history))
    .use(eventsRoutes(auth, createEventsService({ access, store: eventReads, clock, geocoder })))
    .use(scheduleRoutes(auth, schedules))
    .use(reportRoutes(auth, reportService))
    .use(shareRoutes(auth, shares))
    .use(sharePageRoutes(shares, { tileUrl: config.tileUrl, appUrl: config.appUrl }))
    .use(consoleRoutes({ tileUrl: config.tileUrl }))
    .use(streamRoutes(auth, streams))
    .use(unknownDeviceRoutes(auth, createUnknownIdentifiers({ store: stores.unknownIdentifiers, clock, recent: deps.recentUnknowns ?? null })))
    .use(devicesRoutes(auth, devices))
    .use(adminRoutes(auth, { clock, access, keyUsage, keys, people, auditLog: stores.audit, me }))
    .use(deviceAdminRoutes(auth, { admin: deviceAdmin, devices }))
    .use(modelRoutes(auth, { models: modelAdmin }))
    .use(geofenceRoutes(auth, { geofences }))
    .use(notificationRoutes(auth, { store: notificationStore, clock, allowPrivate: config.webhookAllowPrivate, messaging }))
    .use(emailAlertRoutes(auth, { store: notificationStore, clock, smtpConfigured: config.smtpUrl !== null }))
    .use(sessionRoutes(auth, sessions, { guard: passwordGuard, clientAddress, requestOrigin, appUrl: config.appUrl, appUrlSet: config.appUrlSet, me }))
    .use(setupRoutes({ people, firstRun: deps.firstRun ?? createFirstRun(people), sessions, clock, appUrl: config.appUrl, requestOrigin }))
    // share-link views still in memory are written before the server closes the database
    .onStop(() => {
      commandQueue.stop()
      stopWrites = Promise.all([reportScheduler.stop(), shareTokens.flush({ wait: true }), keyUsage.flush({ wait: true }), sessions.flush({ wait: true })])
    })
  const stopServer = app.stop
  app.stop = async (closeActiveConnections) => {
    await stopServer(closeActiveConnections)
    await stopWrites
    return app
  }
  return app
}

export type App = ReturnType<typeof createApp>

function requireDatabase(database: DatabaseHandle | undefined): DatabaseHandle {
  if (!database) throw new Error('createApp needs its stores or a database')
  return database
}
