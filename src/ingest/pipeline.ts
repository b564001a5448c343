/**
 * The ingest pipeline: what every protocol listener hands its decoded reports to. It reads as its
 * flow, one function a step:
 *
 *   identify    the device behind the IMEI or serial (identify.ts; unknown devices are refused,
 *               or masked past their source's ration: answered as known, nothing stored)
 *   validate    each fix and event, by the pure rules of track/validate.ts, encoded for the store
 *               (an alarm code outside the product's list stored as `alarm`, protocols/events.ts)
 *   commit      group commit: one unit of work for every report queued since the last one (at
 *               most 500 fixes), one call of store/ingest.ts that owns the transaction: fixes,
 *               events, the device rows, device status, and the rules' state and outbox rows
 *               through the rules' synchronous hook and the outbox's in-transaction writer
 *   acknowledge the caller's promise resolves only after the commit: then it answers the device.
 *               Nothing is acknowledged before it is durable, and the cost of a commit is shared
 *               by every report in it.
 *
 * Device state rules (documented in README "Devices reporting in"):
 * - any report (fix, event, keep-alive, login) marks the device connected; `connected_at` is set
 *   when it was not connected before;
 * - the newest locatable fix sets `latitude`/`longitude` and the state, `moving` or `stopped`
 *   (track/motion.ts: the speed as reported, or derived from the previous fix). Older, re-sent
 *   fixes are stored but move nothing;
 * - disconnection (TCP session closed, or OFFLINE_AFTER seconds without a report) sets
 *   `connected = false`, `disconnected_at`, and `moving`/`stopped` → `off`;
 * - `suspended`, `unlink` and `stolen` are administrative and never changed here (the SQL
 *   re-checks, so a state set behind the cache's back is still respected);
 * - what a report says about the device itself (status and information packets) is merged into
 *   its latest status (store/status.ts).
 *
 * A batch that finds the database locked by another process (an import, an `sqlite3` shell)
 * waits for it asynchronously (store/busy.ts): the event loop keeps serving, reports arriving
 * meanwhile queue behind it, and after WRITE_DEADLINE_MS (5 s) its reports are refused
 * (Timeout), never acknowledged.
 */
import type { DatabaseHandle } from '../../db/client'
import { beginOutboxBatch, type FixToNotify } from '../alerts/outbox'
import type { AlertRules, AlertRulesBatch, DerivedEvent, RuleFix } from '../alerts/rules'
import type { Clock } from '../clock'
import { DomainError } from '../errors'
import type { Logger } from '../log'
import { createDeviceIdentityReads, type DeviceIdentityReads } from '../store/devices'
import { encodeEvent, type EncodedEvent } from '../store/events'
import { type ConnectedDevice, createIngestStore, type IngestStore, type IngestTouches, type IngestUnit } from '../store/ingest'
import { decodeCoordinate, encodePosition, type EncodedPosition } from '../store/positions'
import { motionOf, type MotionState, type TimedPosition } from '../track/motion'
import { DEFAULT_MAX_FIX_AGE_DAYS, isPlausiblePosition, isTimely, judgeFix, timeWindow, type TimeWindow } from '../track/validate'
import { createDeviceIdentifier, MaskedUnknownDevice, type DeviceRef, type ReportOrigin } from './identify'
import { liveAlarmOf, type LivePositions } from './live'
import { deviceAlarmSeq, withKnownAlarmCode } from './protocols/events'
import type { RecentUnknowns } from './recent-unknowns'
import type { UnknownIdentifierLimits } from './sources'
import type { DecodedReport } from './types'

export { MaskedUnknownDevice, UnknownDevice, type DeviceRef, type ReportOrigin } from './identify'

/** The pipeline is shutting down and takes nothing more. */
export class PipelineStopped extends DomainError {
  constructor() {
    super(503, 'Service Unavailable', 'The server is shutting down')
  }
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
  /** the SQLite database its stores are made on, when `stores` is not given */
  database?: Pick<DatabaseHandle, 'sqlite'>
  /** its stores: the group commit's and identification's reads (either engine's; default: SQLite's over `database`) */
  stores?: { ingest: IngestStore; deviceIdentity: DeviceIdentityReads }
  clock: Clock
  log: Logger
  live: LivePositions
  /** seconds without a report after which a device is disconnected */
  offlineAfterSeconds: number
  /** fixes and events older than this many days are refused (default 365) */
  maxFixAgeDays?: number
  /** how many distinct unknown identifiers one source is told of (refused) per window before the next are masked */
  unknownIdentifiers?: UnknownIdentifierLimits
  /** where the unknown identifiers refused are listed (GET /devices/unknown); none without it */
  recentUnknowns?: RecentUnknowns
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
  /**
   * Alerts, decided and queued in the commit's transaction: the rules derive events from what is
   * stored, and every stored event and fix is written to the notification outbox;
   * `wake` (the delivery worker's) is called after each commit. Absent: neither.
   */
  alerts?: PipelineAlerts
}

export interface PipelineAlerts {
  rules: AlertRules
  wake: () => void
}

/**
 * A fix that passed validation, encoded for the store, with what the device state needs. It is
 * itself the position (a TimedPosition) and what the alert rules read (a RuleFix): no copy is
 * made for either.
 */
interface CheckedFix extends RuleFix {
  row: EncodedPosition
  /** may become the device's location */
  locatable: boolean
  /** as stored: Unix seconds, degrees (for the device row, the motion rule, live streams, the rules) */
  timestamp: number
  latitude: number
  longitude: number
  /** km/h as reported, null when not */
  speed: number | null
  courseDeg: number | null
  satellites: number | null
  /** what the rules read (ignition), as reported */
  attributes: Record<string, unknown> | null
  /** the device called it valid */
  valid: boolean
}

/** A report that passed validation: what the commit writes. */
interface CheckedReport {
  fixes: CheckedFix[]
  /** fixes refused as impossible */
  rejected: number
  events: EncodedEvent[]
  /** each event's seq in its second (deviceAlarmSeq), in the order of `events` */
  eventSeqs: number[]
  /** attributes to merge into the device's status; null when the report said nothing of it */
  status: Record<string, unknown> | null
}

type Operation =
  | {
      kind: 'report'
      device: DeviceRef
      /** the built-in model of the protocol it came on, for a device still without one; null: none to give */
      builtinModel: string | null
      at: number
      /** the device was not known connected when this report came (the rules hear it came online) */
      connecting: boolean
      checked: CheckedReport
      resolve: (result: IngestResult) => void
      reject: (error: unknown) => void
    }
  /** `since`: the device's last report this process saw (Unix ms): a newer one elsewhere (another node) keeps it connected */
  | { kind: 'disconnect'; deviceKey: number; at: number; since: number }
  /** resolves after the batch it joined has committed (or failed): nothing written */
  | { kind: 'barrier'; resolve: () => void; reject: (error: unknown) => void }

interface Liveness {
  lastSeen: number
  connected: boolean
  sessions: number
}

/** What a committed batch tells live streams, once it is durable. */
interface Published {
  fixes: { deviceKey: number; fix: CheckedFix }[]
  alarms: { deviceKey: number; event: EncodedEvent }[]
  statuses: { deviceKey: number; attributes: Record<string, unknown>; at: number }[]
}

const finiteOrNull = (value: number | null | undefined): number | null =>
  value === null || value === undefined || !Number.isFinite(value) ? null : value

function hasKeys(object: Record<string, unknown> | undefined): object is Record<string, unknown> {
  if (!object) return false
  for (const _ in object) return true
  return false
}

// ---------------------------------------------------------------------------------------------
// validate: pure, before anything is queued
// ---------------------------------------------------------------------------------------------

/**
 * Each fix judged (refused, kept, or locatable) and encoded; each event kept when timely and
 * named, placed only at a plausible position; the status attributes checked. Throws when a
 * decoder handed over attributes JSON cannot hold.
 */
function validateReport(report: DecodedReport, window: TimeWindow): CheckedReport {
  const fixes: CheckedFix[] = []
  let rejected = 0
  for (const fix of report.fixes) {
    const verdict = judgeFix(fix, window)
    if (verdict === 'refused') {
      rejected++
      continue
    }
    const row = encodePosition(fix, verdict === 'locatable')
    fixes.push({
      row,
      locatable: verdict === 'locatable',
      timestamp: row.ts,
      latitude: decodeCoordinate(row.lat),
      longitude: decodeCoordinate(row.lon),
      speed: finiteOrNull(fix.speed),
      satellites: row.satellites,
      courseDeg: finiteOrNull(fix.course),
      attributes: fix.attributes ?? null,
      valid: verdict === 'locatable',
    })
  }
  const events: EncodedEvent[] = []
  const eventSeqs: number[] = []
  for (const decoded of report.events) {
    if (typeof decoded.alarmCode !== 'string' || decoded.alarmCode === '') continue
    if (!isTimely(Math.floor(decoded.timestamp), window)) continue
    // a code the product does not list is stored as `alarm`, the device's own in its context
    const event = withKnownAlarmCode(decoded)
    const latitude = finiteOrNull(event.latitude)
    const longitude = finiteOrNull(event.longitude)
    events.push(encodeEvent(event, latitude !== null && longitude !== null && isPlausiblePosition(latitude, longitude)))
    eventSeqs.push(deviceAlarmSeq(event))
  }
  let status: Record<string, unknown> | null = null
  if (hasKeys(report.status)) {
    // refused here, as a fix's attributes are, rather than failing the whole batch later
    JSON.stringify(report.status)
    status = report.status
  }
  return { fixes, rejected, events, eventSeqs, status }
}

export function createIngestPipeline(options: PipelineOptions) {
  const { clock, log, live } = options
  const offlineAfterMs = options.offlineAfterSeconds * 1000
  const maxBatchFixes = options.maxBatchFixes ?? 500
  const maxBatchDelayMs = options.maxBatchDelayMs ?? 0
  const maxFixAgeDays = options.maxFixAgeDays ?? DEFAULT_MAX_FIX_AGE_DAYS
  const identifier = createDeviceIdentifier({
    reads: options.stores?.deviceIdentity ?? createDeviceIdentityReads(sqliteOf(options)),
    clock,
    log,
    limits: options.unknownIdentifiers,
    recentUnknowns: options.recentUnknowns,
  })
  const store = options.stores?.ingest ?? createIngestStore(sqliteOf(options))
  const alerts = options.alerts ?? null

  // --- in-memory state ---
  /** newest committed locatable fix per device key: what a fix must beat to move the device */
  const newest = new Map<number, TimedPosition | null>()
  const liveness = new Map<number, Liveness>()

  let queue: Operation[] = []
  let queuedFixes = 0
  let flushTimer: ReturnType<typeof setTimeout> | ReturnType<typeof setImmediate> | null = null
  /**
   * the batch being committed (or waiting for another process's write lock) until its callers are
   * settled: the next batch starts after it, so it reads the newest fixes and rule states it left
   */
  let committing: Promise<void> | null = null
  let stopped = false
  let batches = 0

  // Devices left connected by a previous run: their last sign of life is their updated_at.
  const restore = (rows: ConnectedDevice[]) => {
    for (const row of rows) if (!liveness.has(row.key)) liveness.set(row.key, { lastSeen: row.updatedAt, connected: true, sessions: 0 })
  }
  const connectedBefore = store.connectedDevices()
  if (Array.isArray(connectedBefore)) restore(connectedBefore)
  else connectedBefore.then(restore, (error: unknown) => log.error('reading the devices left connected failed', { error: (error as Error)?.message }))

  const sweepTimer = options.sweepIntervalMs ? setInterval(() => sweep(), options.sweepIntervalMs) : null
  sweepTimer?.unref?.()

  const windowAt = (at: number) => timeWindow(Math.floor(at / 1000), maxFixAgeDays)

  /**
   * Queue a report; the promise resolves once it is committed (then acknowledge the device),
   * and rejects with UnknownDevice, PipelineStopped, or the database's error (do not acknowledge).
   * A report without fixes, events or status is a keep-alive: it only marks the device connected.
   * `origin` (the client's address) rations what unknown identifiers are told: pass it for every
   * report that identifies a device (an OsmAnd request, a login), not for reports of an
   * identified session. Past the ration it rejects with MaskedUnknownDevice, after the commit a
   * known device's report would have waited for: answer as for a known device, store nothing.
   */
  function ingest(report: DecodedReport, origin?: ReportOrigin): Promise<IngestResult> {
    if (stopped) return Promise.reject(new PipelineStopped())
    const at = clock.now()
    identifying++
    // identification answers in call order, and `.then` continues in that order: reports are queued as they came
    return new Promise<IngestResult>((resolve, reject) => {
      identifier.identify(report.uniqueId, origin).then(
        (device) => {
          identified()
          try {
            if (stopped) throw new PipelineStopped()
            const checked = validateReport(report, windowAt(at))
            if (checked.rejected > 0) log.debug('fixes refused', { device: device.id, rejected: checked.rejected })
            const connecting = liveness.get(device.key)?.connected !== true
            seen(device.key, at)
            const builtinModel = device.modelless ? (origin?.builtinModel ?? null) : null
            enqueue({ kind: 'report', device, builtinModel, at, connecting, checked, resolve, reject }, checked.fixes.length + checked.events.length + 1)
          } catch (error) {
            reject(error)
          }
        },
        (error) => {
          identified()
          if (error instanceof MaskedUnknownDevice) afterCommit().then(() => reject(error), reject)
          else reject(error)
        },
      )
    })
  }

  /** reports being identified: stop() waits for them to be queued */
  let identifying = 0
  let allIdentified: PromiseWithResolvers<void> | null = null
  function identified(): void {
    if (--identifying === 0 && allIdentified !== null) {
      allIdentified.resolve()
      allIdentified = null
    }
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
    const window = windowAt(clock.now())
    let refused = 0
    for (const fix of report.fixes) if (judgeFix(fix, window) === 'refused') refused++
    return refused
  }

  /** Resolves once the next batch has committed: the wait a report would have had, with nothing written. */
  function afterCommit(): Promise<void> {
    if (stopped) return Promise.reject(new PipelineStopped())
    return new Promise((resolve, reject) => enqueue({ kind: 'barrier', resolve, reject }, 1))
  }

  /**
   * A report on a connection whose identifier was masked (MaskedUnknownDevice): dropped, counted
   * for its source's log line; resolves when a known device's report would have been committed
   * (then answer it as one), rejects only with PipelineStopped.
   */
  function discard(origin: ReportOrigin): Promise<void> {
    if (stopped) return Promise.reject(new PipelineStopped())
    identifier.dropped(origin)
    return afterCommit()
  }

  function seen(deviceKey: number, at: number): void {
    const entry = liveness.get(deviceKey)
    if (entry) {
      entry.lastSeen = Math.max(entry.lastSeen, at)
      entry.connected = true
    } else liveness.set(deviceKey, { lastSeen: at, connected: true, sessions: 0 })
  }

  function disconnect(deviceKey: number): void {
    const entry = liveness.get(deviceKey)
    if (entry) entry.connected = false
    // After stop() there is no batch to join; the next start's sweep disconnects it.
    if (!stopped) enqueue({ kind: 'disconnect', deviceKey, at: clock.now(), since: entry?.lastSeen ?? clock.now() }, 1)
  }

  /**
   * Devices the database holds connected, quiet for OFFLINE_AFTER, that this process neither holds
   * a session of nor heard from since: disconnected here (the node that held them died, or stopped
   * without its last batch). For many nodes on one database, run by one node at a time (a lease);
   * one process alone restores them as it starts instead. Returns how many.
   */
  async function sweepStored(): Promise<number> {
    const cutoff = clock.now() - offlineAfterMs
    let count = 0
    for (const row of await store.connectedDevices()) {
      if (row.updatedAt > cutoff) continue
      const entry = liveness.get(row.key)
      if (entry && (entry.sessions > 0 || (entry.connected && entry.lastSeen > cutoff))) continue
      if (entry) entry.lastSeen = Math.max(entry.lastSeen, row.updatedAt)
      else liveness.set(row.key, { lastSeen: row.updatedAt, connected: true, sessions: 0 })
      disconnect(row.key)
      count++
    }
    if (count > 0) flush()
    return count
  }

  /**
   * Another node committed reports of these devices: what this process kept of them (the newest
   * fix a fix must beat, the rules' state) is read again by their next batch.
   */
  function forget(deviceKeys: readonly number[]): void {
    for (const key of deviceKeys) newest.delete(key)
    alerts?.rules.forget(deviceKeys)
  }

  /** Disconnect every device quiet for OFFLINE_AFTER; returns how many. Runs on its timer, or by hand. */
  function sweep(): number {
    identifier.sweep(clock.now())
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

  // ---------------------------------------------------------------------------------------------
  // commit: queued reports in one transaction
  // ---------------------------------------------------------------------------------------------

  function enqueue(operation: Operation, weight: number): void {
    queue.push(operation)
    queuedFixes += weight
    if (queuedFixes >= maxBatchFixes) flush()
    else if (flushTimer === null) flushTimer = maxBatchDelayMs > 0 ? setTimeout(flush, maxBatchDelayMs) : setImmediate(flush)
  }

  interface DeviceUpdate {
    at: number
    fix: CheckedFix | null
    /** state implied by the newest fix, or null */
    state: MotionState | null
  }

  /**
   * One attempt at writing a batch, inside its transaction (a retried attempt starts over: the
   * one before it rolled back). Fills `results` and returns what to publish after the commit and
   * the newest fixes it made.
   */
  function writeBatch(
    unit: IngestUnit,
    operations: Operation[],
    results: (IngestResult | null)[],
  ): { published: Published; newestAfter: Map<number, TimedPosition>; rules: AlertRulesBatch | null } {
    results.fill(null)
    const published: Published = { fixes: [], alarms: [], statuses: [] }
    const newestAfter = new Map<number, TimedPosition>()
    const updates = new Map<number, DeviceUpdate>()
    /** each device's status attributes in this batch, merged (a later report's value wins): one write a device */
    const statusChanges = new Map<number, { attributes: Record<string, unknown>; at: number }>()

    const newestOf = (key: number): TimedPosition | null => {
      const pending = newestAfter.get(key)
      if (pending) return pending
      let known = newest.get(key)
      if (known === undefined) {
        known = unit.newestValid(key)
        newest.set(key, known)
      }
      return known
    }
    const nowMs = clock.now()
    // the rules of this attempt: what they read and write is kept only once it has committed
    const rules = alerts ? alerts.rules.beginBatch() : null
    // the outbox of this attempt: channels checked once; fixes gathered only when some channel forwards them
    const outbox = alerts ? unit.inTransaction(beginOutboxBatch) : null
    const forwarding = outbox !== null && outbox.forwardsPositions
    const fixesToNotify: FixToNotify[] = []
    /** a stored event: on the live stream after the commit, in the outbox now */
    const storedEvent = (key: number, event: EncodedEvent) => {
      published.alarms.push({ deviceKey: key, event })
      if (outbox) outbox.enqueueEvent({ device: key, ...event }, nowMs)
    }
    /**
     * Derived events are never re-sends (the rules' persisted state derives each once), so each is
     * stored, at its own second, however many of its code that second holds already (one fix
     * entering two geofences, a device reconnecting several times in a second).
     */
    const storeDerived = (key: number, derived: readonly DerivedEvent[]) => {
      for (const e of derived) {
        const placed = e.latitude !== null && e.longitude !== null && isPlausiblePosition(e.latitude, e.longitude)
        const row = encodeEvent(e, placed)
        unit.appendEvent(key, row)
        storedEvent(key, row)
      }
    }
    const applyUpdate = (key: number, update: DeviceUpdate) => {
      const position = update.fix
      unit.markSeen(key, update.at, position ? position.latitude : null, position ? position.longitude : null, update.state)
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
        // false: the device reported since, through another node, which keeps it connected
        if (!unit.markDisconnected(op.deviceKey, op.at, op.since)) continue
        if (rules) storeDerived(op.deviceKey, rules.onConnection(op.deviceKey, false, op.at))
        continue
      }
      const key = op.device.key
      const { checked } = op
      if (op.builtinModel !== null) unit.giveBuiltinModel(key, op.builtinModel)
      // read what is stored before this batch adds to it
      if (checked.fixes.length > 0) newestOf(key)
      let stored = 0
      for (const fix of checked.fixes) {
        if (!unit.insertFix(key, fix.row)) continue
        stored++
        if (forwarding) {
          // every stored fix is forwarded; one that is no location (flagged invalid, or 0/0) says so
          const attributes = fix.locatable ? fix.attributes : { ...fix.attributes, valid: false }
          fixesToNotify.push({ device: key, timestamp: fix.timestamp, latitude: fix.latitude, longitude: fix.longitude, speed: fix.speed, course: fix.row.course, altitude: fix.row.altitude, attributes })
        }
        if (!fix.locatable) continue
        published.fixes.push({ deviceKey: key, fix })
        const previous = newestOf(key)
        if (previous && previous.timestamp >= fix.timestamp) continue
        const state = motionOf(fix.speed, fix, previous)
        newestAfter.set(key, fix)
        const update = updates.get(key)
        if (update) {
          update.fix = fix
          update.state = state
        } else updates.set(key, { at: op.at, fix, state })
      }
      let written = 0
      for (const [i, event] of checked.events.entries()) {
        if (!unit.insertEvent(key, event, checked.eventSeqs[i])) continue
        written++
        storedEvent(key, event)
      }
      if (rules) {
        // the rules read the state this transaction has written so far, and write theirs in it
        // only when it was not connected (a report after a disconnect, or the first since this
        // process started): a call a report measured 6 µs of a 10-fix report's 45
        if (op.connecting) storeDerived(key, rules.onConnection(key, true, op.at))
        // every fix, duplicates too: the rules skip the invalid, the late and the re-sent
        if (checked.fixes.length > 0) storeDerived(key, rules.onFixes(key, checked.fixes))
        else if (checked.status !== null) storeDerived(key, rules.onAttributes(key, checked.status, Math.floor(op.at / 1000)))
      }
      if (checked.status !== null) {
        const change = statusChanges.get(key)
        if (change) {
          Object.assign(change.attributes, checked.status)
          change.at = Math.max(change.at, op.at)
        } else statusChanges.set(key, { attributes: { ...checked.status }, at: op.at })
      }
      const update = updates.get(key)
      if (update) update.at = Math.max(update.at, op.at)
      else updates.set(key, { at: op.at, fix: null, state: null })
      results[i] = { device: op.device, stored, duplicates: checked.fixes.length - stored, rejected: checked.rejected, events: written }
    }
    for (const [key, update] of updates) applyUpdate(key, update)
    for (const [key, { attributes, at }] of statusChanges) {
      unit.mergeStatus(key, JSON.stringify(attributes), at)
      published.statuses.push({ deviceKey: key, attributes, at })
    }
    if (outbox && fixesToNotify.length > 0) outbox.enqueuePositions(fixesToNotify, nowMs)
    return { published, newestAfter, rules }
  }

  /** What a batch of operations will write (asked only by a store that reads ahead: PostgreSQL). */
  function touchesOf(operations: Operation[]): IngestTouches {
    const touches: IngestTouches = { devices: [], fixes: [], alarms: [] }
    for (const op of operations) {
      if (op.kind === 'barrier') continue
      if (op.kind === 'disconnect') {
        touches.devices.push(op.deviceKey)
        continue
      }
      const key = op.device.key
      touches.devices.push(key)
      for (const fix of op.checked.fixes) touches.fixes.push({ device: key, ts: fix.row.ts })
      op.checked.events.forEach((event, i) => touches.alarms.push({ device: key, ts: event.ts, code: event.alarm_code, seq: op.checked.eventSeqs[i]! }))
    }
    return touches
  }

  /** Only after the commit: live streams hear of what became durable. A subscriber's failure is its own. */
  function publish({ fixes, alarms, statuses: changed }: Published): void {
    for (const { deviceKey, fix } of fixes) {
      try {
        live.publish({ deviceKey, timestamp: fix.timestamp, latitude: fix.latitude, longitude: fix.longitude, speed: fix.speed, course: fix.courseDeg })
      } catch (error) {
        log.error('live position subscriber failed', { error: (error as Error)?.message })
      }
    }
    for (const { deviceKey, event } of alarms) {
      try {
        live.publishAlarm(liveAlarmOf(deviceKey, event))
      } catch (error) {
        log.error('live alarm subscriber failed', { error: (error as Error)?.message })
      }
    }
    for (const { deviceKey, attributes, at } of changed) {
      try {
        live.publishStatus({ deviceKey, attributes, updatedAt: at })
      } catch (error) {
        log.error('live status subscriber failed', { error: (error as Error)?.message })
      }
    }
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
    if (queue.length === 0 || committing !== null) return
    const operations = queue
    queue = []
    queuedFixes = 0

    const results: (IngestResult | null)[] = new Array(operations.length).fill(null)
    let started = 0
    // one attempt, inside the store's unit of work (a retried attempt starts over)
    const write = (unit: IngestUnit) => {
      started = performance.now()
      return writeBatch(unit, operations, results)
    }
    const fail = (error: unknown) => {
      log.error('ingest batch failed', { operations: operations.length, error: (error as Error).message })
      for (const op of operations) if (op.kind !== 'disconnect') op.reject(error)
    }
    // acknowledge: only now, after the commit, are the callers told (and they answer the devices)
    let settled = false
    const settle = (written: ReturnType<typeof writeBatch>) => {
      settled = true
      try {
        // first: the rules' memory must follow the commit even if a hook below throws
        written.rules?.committed()
        batches++
        options.onBatch?.({ operations: operations.length, seconds: (performance.now() - started) / 1000 })
        const { published, newestAfter } = written
        for (const [key, value] of newestAfter) newest.set(key, value)
        for (let i = 0; i < operations.length; i++) {
          const op = operations[i]
          // the device has its model now: its later reports (the cached ref is shared) skip the write
          if (op.kind === 'report' && op.builtinModel !== null) op.device.modelless = 0
          if (op.kind === 'report') op.resolve(results[i]!)
          else if (op.kind === 'barrier') op.resolve()
        }
        publish(published)
      } catch (error) {
        log.error('ingest batch settling failed', { error: (error as Error)?.message })
      }
      // the outbox rows just committed: the worker looks now rather than at its next poll
      if (alerts) {
        try {
          alerts.wake()
        } catch (error) {
          log.error('notification worker wake failed', { error: (error as Error)?.message })
        }
      }
    }

    // Another process holding the write lock is waited for inside the store, without blocking the
    // event loop; a batch that committed at once was settled within the call (`committed`).
    const onBusy = () => log.warn('database locked by another process: the ingest batch waits for it', { operations: operations.length })
    const outcome = store.commit(write, { clock, onBusy, committed: settle, touches: () => touchesOf(operations) })
    if (settled) return
    committing = outcome
      .then(() => {}, fail)
      .finally(() => {
        committing = null
        flush()
      })
  }

  /** Flush what is queued (waiting for a locked database up to its deadline) and take nothing more. Sessions should be closed before this. */
  async function stop(): Promise<void> {
    if (sweepTimer) clearInterval(sweepTimer)
    // reports called for before stop() are queued, and committed with the rest
    while (identifying > 0) await (allIdentified ??= Promise.withResolvers<void>()).promise
    flush()
    while (committing !== null) await committing
    stopped = true
  }

  return {
    identify: identifier.identify,
    /**
     * This process just changed devices (the admin API): the next identification reads the
     * identity version at once, so a device created or re-identified reports in on its very next
     * fix, and an old identifier is refused.
     */
    devicesChanged: identifier.changed,
    ingest,
    openSession,
    refusedFixes,
    afterCommit,
    discard,
    sweep,
    sweepStored,
    forget,
    flush,
    stop,
    get stats() {
      return { queued: queue.length, batches, connected: [...liveness.values()].filter((e) => e.connected).length }
    },
  }
}

export type IngestPipeline = ReturnType<typeof createIngestPipeline>

function sqliteOf(options: PipelineOptions): Pick<DatabaseHandle, 'sqlite'> {
  if (!options.database) throw new Error('the ingest pipeline needs its stores or a database')
  return options.database
}
