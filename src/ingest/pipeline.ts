/**
 * The ingest pipeline: what every protocol listener hands its decoded reports to.
 *
 * identify the device (IMEI or serial) → validate each fix → queue → group commit (one
 * transaction for every report queued since the last one, at most 500 fixes, device rows
 * updated in the same transaction) → resolve the caller's promise → the caller acknowledges the device. Nothing is
 * acknowledged before it is durable, and the cost of a commit is shared by every report in it.
 *
 * Device state rules (documented in README "Devices reporting in"):
 * - any report (fix, event, keep-alive, login) marks the device connected; `connected_at` is set
 *   when it was not connected before;
 * - the newest valid fix sets `latitude`/`longitude` and the state: `moving` above
 *   MOVING_SPEED_KMH, `stopped` at or below (speed as reported, or derived from the distance to
 *   the previous fix when the device sends none). Older, re-sent fixes are stored but move nothing;
 * - disconnection (TCP session closed, or OFFLINE_AFTER seconds without a report) sets
 *   `connected = false`, `disconnected_at`, and `moving`/`stopped` → `off`;
 * - `suspended`, `unlink` and `stolen` are administrative and never changed here (the SQL
 *   re-checks, so a state set behind the cache's back is still respected).
 *
 * A batch that finds the database locked by another process (an import, an `sqlite3` shell)
 * waits for it asynchronously (store/busy.ts): the event loop keeps serving, reports arriving
 * meanwhile queue behind it, and after WRITE_DEADLINE_MS (5 s) its reports are refused
 * (Timeout), never acknowledged.
 *
 * Identification is rationed per source (sources.ts): a listener passes the client's address,
 * and a source that has tried too many unknown identifiers is refused before any lookup.
 */
import type { Database, Statement } from 'bun:sqlite'
import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock'
import { DomainError, NotFound, TooManyRequests } from '../errors'
import type { Logger } from '../log'
import { isDatabaseBusy, retryWhileBusy } from '../store/busy'
import type { LivePositions } from './live'
import { createUnknownIdentifierLimiter, type UnknownIdentifierLimits } from './sources'
import type { DecodedEvent, DecodedFix, DecodedReport } from './types'

/** A device counts as moving above this speed (km/h); below it is GPS jitter or crawling in a queue. */
export const MOVING_SPEED_KMH = 3
/** A fix more than this far ahead of the server clock is refused (a broken device clock). */
export const MAX_FUTURE_SECONDS = 86_400
/** A fix older than this many days is refused (a device clock reset to 1970 or 2000); MAX_FIX_AGE_DAYS. */
export const DEFAULT_MAX_FIX_AGE_DAYS = 365
/** positions.flags bit 0: the device said the fix is invalid, or it is the 0/0 placeholder. */
export const FLAG_INVALID = 1

const ADMINISTRATIVE_STATES = new Set(['suspended', 'unlink', 'stolen'])

/** The device is not in the fleet (or is unlinked): its data is refused. */
export class UnknownDevice extends NotFound {
  constructor(readonly uniqueId: string) {
    super(`No device with IMEI or serial ${JSON.stringify(uniqueId.slice(0, 64))}`)
  }
}

/** The source tried too many unknown identifiers: nothing from it is looked up for a while. */
export class TooManyUnknownDevices extends TooManyRequests {
  constructor(retryAfterSeconds: number) {
    super('Too many unknown device identifiers from this address; try again later', retryAfterSeconds)
  }
}

/** Where a report came from: the client's address (sources.ts counts it by IPv4 address or IPv6 /64). */
export interface ReportOrigin {
  source: string
}

/** The pipeline is shutting down and takes nothing more. */
export class PipelineStopped extends DomainError {
  constructor() {
    super(503, 'Service Unavailable', 'The server is shutting down')
  }
}

export interface DeviceRef {
  key: number
  id: string
  state: string
}

export interface IngestResult {
  device: DeviceRef
  /** fixes written */
  stored: number
  /** fixes whose (device, timestamp) was already stored */
  duplicates: number
  /** fixes refused as impossible (coordinates out of range, timestamp in the future or too old) */
  rejected: number
  /** events written (a re-sent event is not counted) */
  events: number
}

/** A TCP connection of a known device; closing the last one disconnects the device. */
export interface DeviceSession {
  readonly device: DeviceRef
  close(): void
}

export interface PipelineOptions {
  sqlite: Database
  clock: Clock
  log: Logger
  live: LivePositions
  /** seconds without a report after which a device is disconnected */
  offlineAfterSeconds: number
  /** fixes and events older than this many days are refused (default 365) */
  maxFixAgeDays?: number
  /** how many distinct unknown identifiers one source may try, per window */
  unknownIdentifiers?: UnknownIdentifierLimits
  /** flush when this many fixes are queued (default 500) */
  maxBatchFixes?: number
  /**
   * 0 (the default): flush on the next turn of the event loop, so a batch holds every report
   * that arrived while the previous commit ran: batches grow with the load, and a lone report
   * waits for nothing. > 0: flush at the latest this many ms after the first report was queued.
   */
  maxBatchDelayMs?: number
  /** how often the offline sweep runs in real time; 0 = never (tests call sweep()) */
  sweepIntervalMs?: number
  /** told after each committed batch: its operations and how long the transaction took (metrics) */
  onBatch?: (batch: { operations: number; seconds: number }) => void
}

interface PositionRow {
  ts: number
  lat: number
  lon: number
  speed: number | null
  course: number | null
  altitude: number | null
  satellites: number | null
  flags: number
  attributes: string | null
  /** valid and not 0/0: may become the device's location */
  locatable: boolean
  /** km/h as reported, for the moving/stopped decision and the live fix */
  speedKmh: number | null
  courseDeg: number | null
}

interface EventRow {
  ts: number
  code: string
  context: string
  speed: number | null
  satellites: number | null
  latitude: number | null
  longitude: number | null
  mcc: number | null
  mnc: number | null
  dbm: number | null
}

type Operation =
  | {
      kind: 'report'
      device: DeviceRef
      at: number
      rows: PositionRow[]
      events: EventRow[]
      rejected: number
      resolve: (result: IngestResult) => void
      reject: (error: unknown) => void
    }
  | { kind: 'disconnect'; deviceKey: number; at: number }
  /** resolves after the batch it joined has committed (or failed): nothing written */
  | { kind: 'barrier'; resolve: () => void; reject: (error: unknown) => void }

interface Newest {
  ts: number
  lat: number
  lon: number
}

interface Liveness {
  lastSeen: number
  connected: boolean
  sessions: number
}

/** How stale the device cache may be after another process changed devices. */
const IDENTITY_CHECK_MS = 1000

/** The state a fix implies, for a device not in an administrative state. */
function motionState(speedKmh: number): 'moving' | 'stopped' {
  return speedKmh > MOVING_SPEED_KMH ? 'moving' : 'stopped'
}

/** Equirectangular distance in metres: plenty for two consecutive fixes of one device. */
function metresBetween(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const toRad = Math.PI / 180
  const x = (lon2 - lon1) * toRad * Math.cos(((lat1 + lat2) / 2) * toRad)
  const y = (lat2 - lat1) * toRad
  return Math.sqrt(x * x + y * y) * 6_371_008
}

const finiteOrNull = (value: number | null | undefined): number | null =>
  value === null || value === undefined || !Number.isFinite(value) ? null : value

const roundOrNull = (value: number | null | undefined, scale = 1): number | null => {
  const v = finiteOrNull(value)
  return v === null ? null : Math.round(v * scale)
}

function hasKeys(object: Record<string, unknown> | undefined): boolean {
  if (!object) return false
  for (const _ in object) return true
  return false
}

export function createIngestPipeline(options: PipelineOptions) {
  const { sqlite, clock, log, live } = options
  const offlineAfterMs = options.offlineAfterSeconds * 1000
  const maxBatchFixes = options.maxBatchFixes ?? 500
  const maxBatchDelayMs = options.maxBatchDelayMs ?? 0
  const maxFixAgeSeconds = (options.maxFixAgeDays ?? DEFAULT_MAX_FIX_AGE_DAYS) * 86_400
  const unknownIdentifiers = createUnknownIdentifierLimiter({ log, limits: options.unknownIdentifiers })

  // --- prepared statements (the hot path binds positionally) ---
  // An unlinked device loses to a live one with the same identifier (a re-provisioned tracker);
  // then an IMEI match beats a serial match; then the newest device.
  const identityVersion = sqlite.query<{ version: number }, []>('SELECT version FROM access_version WHERE id = 2')
  const findDevice = sqlite.query<DeviceRef, [string]>(
    `SELECT key, id, state FROM devices WHERE imei = ?1 OR serial = ?1
     ORDER BY state = 'unlink', imei = ?1 DESC, key DESC LIMIT 1`,
  )
  const newestStored = sqlite.query<Newest, [number]>(
    `SELECT ts, lat / 1e7 AS lat, lon / 1e7 AS lon FROM positions WHERE device = ? AND (flags & ${FLAG_INVALID}) = 0 ORDER BY ts DESC LIMIT 1`,
  )
  const insertPosition: Statement = sqlite.query(
    `INSERT OR IGNORE INTO positions (device, ts, lat, lon, speed, course, altitude, satellites, flags, attributes)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const insertEvent: Statement = sqlite.query(
    `INSERT OR IGNORE INTO events (device, ts, alarm_code, context, speed, satellite, latitude, longitude, mcc, mnc, dbm)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  // ?5 is the state the newest fix implies, NULL when this batch moved nothing.
  const markSeen: Statement = sqlite.query(
    `UPDATE devices SET
       connected_at = CASE WHEN connected = 0 OR connected_at IS NULL THEN ?2 ELSE connected_at END,
       connected = 1,
       updated_at = ?2,
       latitude = coalesce(?3, latitude),
       longitude = coalesce(?4, longitude),
       state = CASE WHEN ?5 IS NULL OR state IN ('suspended', 'unlink', 'stolen') THEN state ELSE ?5 END
     WHERE key = ?1`,
  )
  const markDisconnected: Statement = sqlite.query(
    `UPDATE devices SET connected = 0, disconnected_at = ?2, updated_at = ?2,
       state = CASE WHEN state IN ('moving', 'stopped') THEN 'off' ELSE state END
     WHERE key = ?1 AND connected = 1`,
  )

  // --- in-memory state ---
  /** identifier → its device (null: none, so an unknown device costs no query either) */
  const lookups = new LRUCache<string, { device: DeviceRef | null }>({ max: 50_000 })
  /** identity version the cached lookups were made at, and when it was last read */
  let knownIdentityVersion = -1
  let identityCheckedAt = -Infinity
  /** newest committed locatable fix per device key: what a fix must beat to move the device */
  const newest = new Map<number, Newest | null>()
  const liveness = new Map<number, Liveness>()

  let queue: Operation[] = []
  let queuedFixes = 0
  let flushTimer: ReturnType<typeof setTimeout> | ReturnType<typeof setImmediate> | null = null
  /** a batch waiting for another process's write lock; the next batch starts after it settles */
  let waitingForLock: Promise<void> | null = null
  let stopped = false
  let batches = 0

  // Devices left connected by a previous run: their last sign of life is their updated_at.
  for (const row of sqlite.query<{ key: number; updated_at: number }, []>('SELECT key, updated_at FROM devices WHERE connected = 1').all()) {
    liveness.set(row.key, { lastSeen: row.updated_at, connected: true, sessions: 0 })
  }

  const sweepTimer = options.sweepIntervalMs ? setInterval(() => sweep(), options.sweepIntervalMs) : null
  sweepTimer?.unref?.()

  /**
   * The device behind an identifier; throws UnknownDevice (unknown, or unlinked), or
   * TooManyUnknownDevices without a lookup when the source has guessed too much. Without an
   * origin (reports inside an identified session) nothing is rationed.
   */
  function identify(uniqueId: string, origin?: ReportOrigin): DeviceRef {
    const now = clock.now()
    const source = origin?.source
    if (source !== undefined) {
      const retryAfter = unknownIdentifiers.refusal(source, now)
      if (retryAfter !== null) throw new TooManyUnknownDevices(retryAfter)
    }
    // A device added, re-identified or (un)linked by any process (an import) bumps the version:
    // read it at most once a second, and start over when it moved.
    if (now - identityCheckedAt >= IDENTITY_CHECK_MS || now < identityCheckedAt) {
      identityCheckedAt = now
      const version = identityVersion.get()?.version ?? 0
      if (version !== knownIdentityVersion) {
        lookups.clear()
        knownIdentityVersion = version
      }
    }
    let cached = lookups.get(uniqueId)
    if (!cached) {
      cached = { device: uniqueId === '' ? null : findDevice.get(uniqueId) }
      lookups.set(uniqueId, cached)
    }
    const device = cached.device
    if (!device || device.state === 'unlink') {
      unknownIdentifiers.unknown(source ?? 'session', uniqueId, device ? 'unlink' : 'unknown', now)
      throw new UnknownDevice(uniqueId)
    }
    return device
  }

  /** not more than a day ahead (a broken clock), not older than MAX_FIX_AGE_DAYS (a clock reset to 1970) */
  function timely(ts: number, nowSeconds: number): boolean {
    return Number.isFinite(ts) && ts >= nowSeconds - maxFixAgeSeconds && ts <= nowSeconds + MAX_FUTURE_SECONDS
  }

  /** coordinates in range and a timely timestamp: what a fix needs to be stored, whatever the device */
  function possible(fix: DecodedFix, nowSeconds: number): boolean {
    const { latitude, longitude } = fix
    if (!Number.isFinite(latitude) || !Number.isFinite(longitude) || latitude < -90 || latitude > 90 || longitude < -180 || longitude > 180) {
      return false
    }
    return timely(Math.floor(fix.timestamp), nowSeconds)
  }

  function validateFix(fix: DecodedFix, nowSeconds: number): PositionRow | null {
    if (!possible(fix, nowSeconds)) return null
    const { latitude, longitude } = fix
    const ts = Math.floor(fix.timestamp)
    const lat = Math.round(latitude * 1e7)
    const lon = Math.round(longitude * 1e7)
    const nullIsland = lat === 0 && lon === 0
    const locatable = fix.valid && !nullIsland
    const speedKmh = finiteOrNull(fix.speed)
    const courseDeg = finiteOrNull(fix.course)
    return {
      ts,
      lat,
      lon,
      speed: speedKmh === null ? null : Math.round(speedKmh * 10),
      course: courseDeg === null ? null : Math.round(courseDeg),
      altitude: roundOrNull(fix.altitude),
      satellites: roundOrNull(fix.satellites),
      flags: locatable ? 0 : FLAG_INVALID,
      attributes: hasKeys(fix.attributes) ? JSON.stringify(fix.attributes) : null,
      locatable,
      speedKmh,
      courseDeg,
    }
  }

  function validateEvent(event: DecodedEvent, nowSeconds: number): EventRow | null {
    const ts = Math.floor(event.timestamp)
    if (!timely(ts, nowSeconds)) return null
    if (typeof event.alarmCode !== 'string' || event.alarmCode === '') return null
    const lat = finiteOrNull(event.latitude)
    const lon = finiteOrNull(event.longitude)
    const placed = lat !== null && lon !== null && Math.abs(lat) <= 90 && Math.abs(lon) <= 180 && !(lat === 0 && lon === 0)
    return {
      ts,
      code: event.alarmCode.slice(0, 64),
      context: JSON.stringify(event.context ?? {}),
      speed: roundOrNull(event.speed),
      satellites: roundOrNull(event.satellites),
      latitude: placed ? lat : null,
      longitude: placed ? lon : null,
      mcc: roundOrNull(event.mcc),
      mnc: roundOrNull(event.mnc),
      dbm: roundOrNull(event.dbm),
    }
  }

  function seen(deviceKey: number, at: number): void {
    const entry = liveness.get(deviceKey)
    if (entry) {
      entry.lastSeen = Math.max(entry.lastSeen, at)
      entry.connected = true
    } else liveness.set(deviceKey, { lastSeen: at, connected: true, sessions: 0 })
  }

  function enqueue(operation: Operation, fixes: number): void {
    queue.push(operation)
    queuedFixes += fixes
    if (queuedFixes >= maxBatchFixes) flush()
    else if (flushTimer === null) flushTimer = maxBatchDelayMs > 0 ? setTimeout(flush, maxBatchDelayMs) : setImmediate(flush)
  }

  /**
   * Queue a report; the promise resolves once it is committed (then acknowledge the device),
   * and rejects with UnknownDevice, PipelineStopped, or the database's error (do not acknowledge).
   * A report without fixes or events is a keep-alive: it only marks the device connected.
   * `origin` (the client's address) rations unknown identifiers: pass it for every report that
   * identifies a device (an OsmAnd request, a login), not for reports of an identified session.
   */
  function ingest(report: DecodedReport, origin?: ReportOrigin): Promise<IngestResult> {
    if (stopped) return Promise.reject(new PipelineStopped())
    let device: DeviceRef
    try {
      device = identify(report.uniqueId, origin)
    } catch (error) {
      return Promise.reject(error)
    }
    const at = clock.now()
    const nowSeconds = Math.floor(at / 1000)
    const rows: PositionRow[] = []
    let rejected = 0
    const events: EventRow[] = []
    try {
      for (const fix of report.fixes) {
        const row = validateFix(fix, nowSeconds)
        if (row) rows.push(row)
        else rejected++
      }
      for (const event of report.events) {
        const row = validateEvent(event, nowSeconds)
        if (row) events.push(row)
      }
    } catch (error) {
      // a decoder handed over something that is not data (attributes JSON cannot hold)
      return Promise.reject(error)
    }
    if (rejected > 0) log.debug('fixes refused', { device: device.id, rejected })
    seen(device.key, at)
    return new Promise((resolve, reject) => {
      enqueue({ kind: 'report', device, at, rows, events, rejected, resolve, reject }, rows.length + events.length + 1)
    })
  }

  /**
   * A TCP session of a known device: marks it connected (resolves after commit, so a login is
   * acknowledged only once that is durable); closing the last session disconnects it.
   */
  async function openSession(uniqueId: string, origin?: ReportOrigin): Promise<DeviceSession> {
    const result = await ingest({ uniqueId, fixes: [], events: [] }, origin)
    const device = result.device
    const entry = liveness.get(device.key)!
    entry.sessions++
    let closed = false
    return {
      device,
      close() {
        if (closed) return
        closed = true
        entry.sessions = Math.max(0, entry.sessions - 1)
        if (entry.sessions === 0 && entry.connected) disconnect(device.key)
      },
    }
  }

  /**
   * How many of the report's fixes would be refused as impossible, decided without knowing the
   * device (an HTTP listener answers this before identifying, so the answer reveals nothing).
   */
  function refusedFixes(report: DecodedReport): number {
    const nowSeconds = Math.floor(clock.now() / 1000)
    let refused = 0
    for (const fix of report.fixes) if (!possible(fix, nowSeconds)) refused++
    return refused
  }

  /** Resolves once the next batch has committed: the wait a report would have had, with nothing written. */
  function afterCommit(): Promise<void> {
    if (stopped) return Promise.reject(new PipelineStopped())
    return new Promise((resolve, reject) => enqueue({ kind: 'barrier', resolve, reject }, 1))
  }

  function disconnect(deviceKey: number): void {
    const entry = liveness.get(deviceKey)
    if (entry) entry.connected = false
    // After stop() there is no batch to join; the next start's sweep disconnects it.
    if (!stopped) enqueue({ kind: 'disconnect', deviceKey, at: clock.now() }, 1)
  }

  /** Disconnect every device quiet for OFFLINE_AFTER; returns how many. Runs on its timer, or by hand. */
  function sweep(): number {
    unknownIdentifiers.sweep(clock.now())
    const cutoff = clock.now() - offlineAfterMs
    let count = 0
    for (const [key, entry] of liveness) {
      if (entry.connected && entry.lastSeen <= cutoff) {
        disconnect(key)
        count++
      }
    }
    if (count > 0) flush()
    return count
  }

  interface DeviceUpdate {
    at: number
    fix: PositionRow | null
    /** state implied by the newest fix, or null */
    state: string | null
  }

  /**
   * Commit everything queued, in one transaction; then settle the callers' promises. While a
   * batch waits for the lock, this leaves the queue for the flush that follows its commit.
   */
  function flush(): void {
    if (flushTimer !== null) {
      if (maxBatchDelayMs > 0) clearTimeout(flushTimer as ReturnType<typeof setTimeout>)
      else clearImmediate(flushTimer as ReturnType<typeof setImmediate>)
      flushTimer = null
    }
    if (queue.length === 0 || waitingForLock !== null) return
    const operations = queue
    queue = []
    queuedFixes = 0

    const results: (IngestResult | null)[] = new Array(operations.length).fill(null)
    const published: { deviceKey: number; row: PositionRow }[] = []
    /** events this batch wrote (a re-sent one is not news), told to live streams after the commit */
    const publishedAlarms: { deviceKey: number; event: EventRow }[] = []
    const newestAfter = new Map<number, Newest>()

    const newestOf = (key: number): Newest | null => {
      const pending = newestAfter.get(key)
      if (pending) return pending
      let known = newest.get(key)
      if (known === undefined) {
        known = newestStored.get(key)
        newest.set(key, known)
      }
      return known
    }

    const write = () => {
      // a retried attempt starts over: the one before it rolled back
      results.fill(null)
      published.length = 0
      publishedAlarms.length = 0
      newestAfter.clear()
      const updates = new Map<number, DeviceUpdate>()
      const applyUpdate = (key: number, update: DeviceUpdate) => {
        const fix = update.fix
        markSeen.run(key, update.at, fix ? fix.lat / 1e7 : null, fix ? fix.lon / 1e7 : null, update.state)
      }
      for (let i = 0; i < operations.length; i++) {
        const op = operations[i]
        if (op.kind === 'barrier') continue
        if (op.kind === 'disconnect') {
          const pending = updates.get(op.deviceKey)
          if (pending) {
            applyUpdate(op.deviceKey, pending)
            updates.delete(op.deviceKey)
          }
          markDisconnected.run(op.deviceKey, op.at)
          continue
        }
        const key = op.device.key
        // read what is stored before this batch adds to it
        if (op.rows.length > 0) newestOf(key)
        let stored = 0
        for (const row of op.rows) {
          const changes = insertPosition.run(key, row.ts, row.lat, row.lon, row.speed, row.course, row.altitude, row.satellites, row.flags, row.attributes).changes
          if (changes === 0) continue
          stored++
          if (!row.locatable) continue
          published.push({ deviceKey: key, row })
          const previous = newestOf(key)
          if (previous && previous.ts >= row.ts) continue
          let speed = row.speedKmh
          if (speed === null) {
            const seconds = previous ? row.ts - previous.ts : 0
            speed = previous && seconds > 0 ? (metresBetween(previous.lat, previous.lon, row.lat / 1e7, row.lon / 1e7) / seconds) * 3.6 : 0
          }
          newestAfter.set(key, { ts: row.ts, lat: row.lat / 1e7, lon: row.lon / 1e7 })
          const update = updates.get(key)
          if (update) {
            update.fix = row
            update.state = motionState(speed)
          } else updates.set(key, { at: op.at, fix: row, state: motionState(speed) })
        }
        let events = 0
        for (const e of op.events) {
          const written = insertEvent.run(key, e.ts, e.code, e.context, e.speed, e.satellites, e.latitude, e.longitude, e.mcc, e.mnc, e.dbm).changes
          events += written
          if (written > 0) publishedAlarms.push({ deviceKey: key, event: e })
        }
        const update = updates.get(key)
        if (update) update.at = Math.max(update.at, op.at)
        else updates.set(key, { at: op.at, fix: null, state: null })
        results[i] = { device: op.device, stored, duplicates: op.rows.length - stored, rejected: op.rejected, events }
      }
      for (const [key, update] of updates) applyUpdate(key, update)
    }

    let started = 0
    const commit = () => {
      started = performance.now()
      sqlite.transaction(write).immediate()
    }
    const fail = (error: unknown) => {
      log.error('ingest batch failed', { operations: operations.length, error: (error as Error).message })
      for (const op of operations) if (op.kind !== 'disconnect') op.reject(error)
    }
    const settle = () => {
      batches++
      options.onBatch?.({ operations: operations.length, seconds: (performance.now() - started) / 1000 })
      for (const [key, value] of newestAfter) newest.set(key, value)
      // Only now, after the commit: tell the callers (who acknowledge) and the live streams.
      for (let i = 0; i < operations.length; i++) {
        const op = operations[i]
        if (op.kind === 'report') op.resolve(results[i]!)
        else if (op.kind === 'barrier') op.resolve()
      }
      for (const { deviceKey, row } of published) {
        try {
          live.publish({ deviceKey, timestamp: row.ts, latitude: row.lat / 1e7, longitude: row.lon / 1e7, speed: row.speedKmh, course: row.courseDeg })
        } catch (error) {
          // a live-stream subscriber's failure is its own; the fixes are committed and acknowledged
          log.error('live position subscriber failed', { error: (error as Error)?.message })
        }
      }
      for (const { deviceKey, event } of publishedAlarms) {
        try {
          live.publishAlarm({ deviceKey, alarmCode: event.code, timestamp: event.ts, latitude: event.latitude, longitude: event.longitude, speed: event.speed })
        } catch (error) {
          log.error('live alarm subscriber failed', { error: (error as Error)?.message })
        }
      }
    }

    try {
      commit()
    } catch (error) {
      if (!isDatabaseBusy(error)) return fail(error)
      // another process holds the write lock: wait for it without blocking the event loop
      log.warn('database locked by another process: the ingest batch waits for it', { operations: operations.length })
      waitingForLock = retryWhileBusy(sqlite, commit, { clock, afterBusy: true })
        .then(settle, fail)
        .finally(() => {
          waitingForLock = null
          flush()
        })
      return
    }
    settle()
  }

  /**
   * This process just changed devices (the admin API): the next identification reads the
   * identity version at once instead of up to IDENTITY_CHECK_MS later, so a device created or
   * re-identified reports in on its very next fix, and an old identifier is refused.
   */
  function devicesChanged(): void {
    identityCheckedAt = -Infinity
  }

  /** Flush what is queued (waiting for a locked database up to its deadline) and take nothing more. Sessions should be closed before this. */
  async function stop(): Promise<void> {
    if (sweepTimer) clearInterval(sweepTimer)
    flush()
    while (waitingForLock !== null) await waitingForLock
    stopped = true
  }

  return {
    identify,
    devicesChanged,
    ingest,
    openSession,
    refusedFixes,
    afterCommit,
    sweep,
    flush,
    stop,
    get stats() {
      return { queued: queue.length, batches, connected: [...liveness.values()].filter((e) => e.connected).length }
    },
  }
}

export type IngestPipeline = ReturnType<typeof createIngestPipeline>
