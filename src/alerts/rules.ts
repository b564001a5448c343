/**
 * The alert rules' entry point: what the ingest pipeline calls, INSIDE its write transaction,
 * to derive events (geofence_enter/exit, overspeed, ignition_on/off, device_online/offline)
 * from what it is committing. The rules themselves are pure (derive.ts); this reads the
 * device's rule state, its account's geofences (cache.ts) and its groups, and writes the new
 * state, all on the same connection, so the state and the events the caller inserts commit or
 * roll back together: a crash never loses or doubles an event, and a retried batch (after
 * SQLITE_BUSY) derives the same events again from the state as it was.
 *
 * For the engineer who wires it:
 *
 *   const rules = createAlertRules({ states: createRuleStateStore(database), clock, geofences: createGeofenceCache({ reads: createGeofenceCacheReads(database), clock, log }) })
 *   // give the same cache's invalidate to createApp: onGeofencesChanged: (account) => rules.geofencesChanged(account)
 *
 *   in ingest's unit of work (the store's group commit, one transaction) {
 *     // per device, after its fixes are inserted (pass every fix of the report, valid or not,
 *     // duplicates too: the rules skip invalid, late and re-sent ones themselves)
 *     for (const e of rules.onFixes(deviceKey, fixes)) insert e like a device alarm, publish it after commit
 *     // a report without fixes that carries attributes (a status packet with `ignition`)
 *     for (const e of rules.onAttributes(deviceKey, attributes, timestampSeconds)) …
 *     // when the device becomes connected (a report after silence, a TCP login) or disconnected
 *     // (TCP closed, OFFLINE_AFTER silence); repeats are harmless
 *     for (const e of rules.onConnection(deviceKey, connected, atMs)) …
 *   }
 *
 * Ingest does the same through a batch, one per transaction: `const batch = rules.beginBatch()`,
 * `batch.onFixes(…)` etc. inside it, `batch.committed()` after the commit. A batch reads each
 * device's state once, and once committed its states are kept in memory for the next batches
 * (the rules are alert_states' only writer but for a device's deletion, which row 7 counts, and
 * one server ingests into a database file; a batch whose transaction rolled back is dropped, and
 * a call outside a batch forgets what is kept for its device).
 *
 * Each call throws if no transaction is open on the connection (bun:sqlite's transactions are
 * the connection's: there is no separate `tx` to pass; the rule state store's statements run
 * inside it, src/store/geofences.ts `RuleStateStore`).
 * Events come back in the shape of a decoder's events (DerivedEvent: timestamp, alarmCode,
 * coordinates, speed, context, …). Cost per call: the device's account and speed limit and its
 * state from memory in a batch (else a read of each), a read of its groups when any geofence of
 * the account is limited to groups, a write of the state
 * only when it changed (just the newest fix's timestamp on most reports), and per fix a lookup of
 * its 0.01° cell's candidate geofences (cache.ts): 4–6 µs a 10-fix report against 1,000
 * geofences, through the pipeline (`npm run bench -- alerts`). Whatever an account draws, one
 * report's geofence work is bounded (MAX_GEOFENCE_WORK_PER_REPORT tests, and
 * MAX_GEOFENCE_EVENTS_PER_REPORT events in derive.ts): past either, its fixes are tested only at
 * its newest (`npm run bench -- geofences`).
 *
 * The pipeline stores each event returned with the events store's `append` (a new row at its own
 * second, whatever else of its code that second holds): never give back an event already stored.
 */
import type { Clock } from '../clock'
import { type Logger, silentLogger } from '../log'
import type { RuleStateStore } from '../store/geofences'
import type { CachedGeofence, GeofenceCache } from './cache'
import {
  type Derived,
  type DerivedEvent,
  deriveFromAttributes,
  deriveFromConnection,
  deriveFromFixes,
  INITIAL_STATE,
  type RuleContext,
  type RuleFix,
  type RuleState,
  speedLimitOf,
} from './derive'

export type { DerivedEvent, RuleFix } from './derive'

export interface AlertRulesDeps {
  /** the rules' reads and writes inside ingest's transaction (src/store/geofences.ts) */
  states: RuleStateStore
  clock: Clock
  geofences: GeofenceCache
  /** told, a line a minute at most, when reports' geofence work was bounded */
  log?: Logger
}

/**
 * The geofence work one report may cost (its fixes' tests: a unit for each geofence a fix is
 * compared with, and each polygon edge read; cache.ts counts them), about 20 ms: 1,000 fixes
 * against 400 geofences at each. Past it, the report's fixes are not tested but for its newest
 * (derive.ts): whatever an account draws, one report stays well under 50 ms.
 */
export const MAX_GEOFENCE_WORK_PER_REPORT = 1_000_000
/** how often at most the log says reports' geofence work was bounded */
const BOUNDED_LOG_INTERVAL_MS = 60_000

/** What the rules read of a device: its account, and its `properties.speed_limit` (km/h) */
interface DeviceFacts {
  accountId: string
  speedLimit: number | null
}

interface Loaded extends DeviceFacts {
  state: RuleState
  /** the state as read (null: no row yet), to tell whether it changed */
  stored: RuleState | null
}

const NONE_INSIDE: readonly string[] = []
/** states (and devices' facts) kept in memory at most, a device each; past it they are read again */
const MAX_KEPT_STATES = 200_000

/** the states a transaction has read or written, by device key (null: no row) */
type Scope = Map<number, RuleState | null>

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

export function createAlertRules({ states, clock, geofences, log = silentLogger }: AlertRulesDeps) {
  /**
   * Each device's account and speed limit, read once, not on every report; forgotten, with the
   * states kept, when access_version row 7 moves (migrations 0011 and 0012: a device's account or
   * properties changed, or a device was deleted, in any process), which is checked once a batch
   * and on every call outside one.
   */
  const devicesSeen = new Map<number, DeviceFacts>()
  let devicesVersion = -1
  function checkDevicesVersion(): void {
    const version = states.devicesVersion()
    if (version === devicesVersion) return
    // a device changed or was deleted (its state rows with it): read everything again
    devicesSeen.clear()
    committedStates.clear()
    devicesVersion = version
  }
  function deviceFacts(deviceKey: number): DeviceFacts | null {
    let facts = devicesSeen.get(deviceKey)
    if (facts === undefined) {
      const device = states.device(deviceKey)
      // not kept: a key not found yet may be a device being added
      if (device === null) return null
      let properties: Record<string, unknown> | null = null
      try {
        properties = JSON.parse(device.properties) as Record<string, unknown>
      } catch {
        // properties are checked on the way in; a hand-edited row just has no limit
      }
      facts = { accountId: device.account_id, speedLimit: speedLimitOf(properties) }
      if (devicesSeen.size >= MAX_KEPT_STATES) devicesSeen.clear()
      devicesSeen.set(deviceKey, facts)
    }
    return facts
  }

  function requireTransaction(): void {
    if (!states.inTransaction()) throw new Error("alert rules: call inside ingest's transaction, so the state and its events commit together")
  }

  const bit = (value: boolean | null) => (value === null ? null : value ? 1 : 0)
  const flag = (value: number | null) => (value === null ? null : value !== 0)

  /** the device's rule state as alert_states holds it (null: no row yet) */
  function readStored(deviceKey: number): RuleState | null {
    const row = states.state(deviceKey)
    if (row === null) return null
    return {
      lastFixTs: row.last_fix_ts,
      inside: row.inside === '[]' ? NONE_INSIDE : (JSON.parse(row.inside) as string[]),
      overspeedSince: row.overspeed_since,
      overspeedReportedTs: row.overspeed_reported_ts,
      ignition: flag(row.ignition),
      ignitionTs: row.ignition_ts,
      online: flag(row.online),
    }
  }

  /**
   * Each device's state as last committed by a batch (null: no row), so that a report reads only
   * its device's row: the rules are alert_states' only writer (a device's deletion aside: row 7
   * counts it), one server ingests into a file, and a batch tells what it wrote
   * only after its commit (`committed()`), so a rolled-back batch leaves nothing here.
   */
  const committedStates = new Map<number, RuleState | null>()

  function load(scope: Scope, deviceKey: number): Loaded | null {
    const device = deviceFacts(deviceKey)
    if (device === null) return null
    let stored = scope.get(deviceKey)
    if (stored === undefined) stored = committedStates.get(deviceKey)
    if (stored === undefined) {
      stored = readStored(deviceKey)
      scope.set(deviceKey, stored)
    }
    return { accountId: device.accountId, speedLimit: device.speedLimit, state: stored ?? INITIAL_STATE, stored }
  }

  function save(scope: Scope, deviceKey: number, loaded: Loaded, derived: Derived): DerivedEvent[] {
    const s = derived.state
    const was = loaded.stored
    // the rules return the very state they were given when nothing changed
    if (was === s) return derived.events
    const sameInside = was !== null && sameIds(was.inside, s.inside)
    if (
      was !== null &&
      sameInside &&
      was.overspeedSince === s.overspeedSince &&
      was.overspeedReportedTs === s.overspeedReportedTs &&
      was.ignition === s.ignition &&
      was.ignitionTs === s.ignitionTs &&
      was.online === s.online
    ) {
      if (was.lastFixTs !== s.lastFixTs) {
        states.writeLastFix(deviceKey, s.lastFixTs, clock.now())
        scope.set(deviceKey, s)
      }
      return derived.events
    }
    states.writeState(
      deviceKey,
      {
        last_fix_ts: s.lastFixTs,
        inside: s.inside.length === 0 ? '[]' : JSON.stringify(s.inside),
        overspeed_since: s.overspeedSince,
        overspeed_reported_ts: s.overspeedReportedTs,
        ignition: bit(s.ignition),
        ignition_ts: s.ignitionTs,
        online: bit(s.online),
      },
      clock.now(),
    )
    scope.set(deviceKey, s)
    return derived.events
  }

  /** reports whose geofence work was bounded since the last log line, and their untested fixes */
  const bounded = { reports: 0, fixes: 0, loggedAt: -Infinity }
  function noteBounded(deviceKey: number, accountId: string, untested: number): void {
    bounded.reports++
    bounded.fixes += untested
    const now = clock.now()
    if (now - bounded.loggedAt < BOUNDED_LOG_INTERVAL_MS) return
    log.warn('geofence work bounded: fixes of a report were not tested against geofences, but its newest (too many geofence events, or tests, in one report)', {
      reports: bounded.reports,
      untested_fixes: bounded.fixes,
      device: deviceKey,
      account: accountId,
    })
    bounded.reports = 0
    bounded.fixes = 0
    bounded.loggedAt = now
  }

  function contextFor(deviceKey: number, loaded: Loaded): RuleContext {
    const account = geofences.forAccount(loaded.accountId)
    // this report's geofence work, bounded
    const meter = { work: 0, limit: MAX_GEOFENCE_WORK_PER_REPORT }
    let groups: Set<string> | null = null
    const applies = (g: CachedGeofence) => {
      if (g.groups.size === 0) return true
      groups ??= new Set(states.groupsOf(deviceKey))
      for (const id of g.groups) if (groups.has(id)) return true
      return false
    }
    return {
      geofencesAt: (latitude, longitude) => {
        const here = account.containing(latitude, longitude, meter)
        return here.length === 0 || !account.grouped ? here : here.filter(applies)
      },
      geofenceWorkSpent: () => meter.work >= MAX_GEOFENCE_WORK_PER_REPORT,
      applicable: (id) => {
        const g = account.byId.get(id)
        return g !== undefined && applies(g) ? g : null
      },
      deviceSpeedLimit: loaded.speedLimit,
    }
  }

  function onFixes(scope: Scope, deviceKey: number, fixes: readonly RuleFix[]): DerivedEvent[] {
    requireTransaction()
    if (fixes.length === 0) return []
    const loaded = load(scope, deviceKey)
    if (loaded === null) return []
    const derived = deriveFromFixes(loaded.state, fixes, contextFor(deviceKey, loaded))
    if (derived.untested !== undefined) noteBounded(deviceKey, loaded.accountId, derived.untested)
    return save(scope, deviceKey, loaded, derived)
  }

  function onAttributes(scope: Scope, deviceKey: number, attributes: Record<string, unknown>, timestampSeconds: number): DerivedEvent[] {
    requireTransaction()
    if (!('ignition' in attributes)) return []
    const loaded = load(scope, deviceKey)
    if (loaded === null) return []
    return save(scope, deviceKey, loaded, deriveFromAttributes(loaded.state, attributes, timestampSeconds))
  }

  function onConnection(scope: Scope, deviceKey: number, connected: boolean, atMs: number): DerivedEvent[] {
    requireTransaction()
    const loaded = load(scope, deviceKey)
    if (loaded === null) return []
    return save(scope, deviceKey, loaded, deriveFromConnection(loaded.state, connected, atMs / 1000))
  }

  /** A single call outside a batch: it reads the state from the table, and what it writes is not kept (its transaction may yet roll back). */
  function alone<T extends unknown[]>(call: (scope: Scope, deviceKey: number, ...rest: T) => DerivedEvent[]) {
    return (deviceKey: number, ...rest: T): DerivedEvent[] => {
      checkDevicesVersion()
      committedStates.delete(deviceKey)
      return call(new Map(), deviceKey, ...rest)
    }
  }

  return {
    /**
     * New fixes of a device (valid or not, in any order: the rules sort them and skip the
     * invalid, the late and the re-sent): the events to insert with them.
     */
    onFixes: alone(onFixes),
    /** A report without a fix that carries attributes (a status packet): ignition changes only. */
    onAttributes: alone(onAttributes),
    /** The device became connected or disconnected at `atMs` (Unix milliseconds). */
    onConnection: alone(onConnection),

    /**
     * The same calls for one transaction of many reports (ingest's batch): each device's state is
     * read once, from what earlier batches committed when known. Call `committed()` once the
     * transaction has committed; a batch whose transaction rolled back is just dropped.
     */
    beginBatch(): AlertRulesBatch {
      checkDevicesVersion()
      const scope: Scope = new Map()
      return {
        onFixes: (deviceKey, fixes) => onFixes(scope, deviceKey, fixes),
        onAttributes: (deviceKey, attributes, timestampSeconds) => onAttributes(scope, deviceKey, attributes, timestampSeconds),
        onConnection: (deviceKey, connected, atMs) => onConnection(scope, deviceKey, connected, atMs),
        committed() {
          if (committedStates.size + scope.size > MAX_KEPT_STATES) committedStates.clear()
          for (const [key, state] of scope) committedStates.set(key, state)
        },
      }
    },

    /**
     * Another process (a node of the same PostgreSQL database) wrote these devices' state: what
     * is kept of them is read again by their next batch.
     */
    forget(deviceKeys: Iterable<number>): void {
      for (const key of deviceKeys) committedStates.delete(key)
    },

    /** An account's geofences changed (the API's service, through the app's onGeofencesChanged). */
    geofencesChanged(accountId?: string): void {
      geofences.invalidate(accountId)
    },
  }
}

export interface AlertRulesBatch {
  onFixes(deviceKey: number, fixes: readonly RuleFix[]): DerivedEvent[]
  onAttributes(deviceKey: number, attributes: Record<string, unknown>, timestampSeconds: number): DerivedEvent[]
  onConnection(deviceKey: number, connected: boolean, atMs: number): DerivedEvent[]
  /** the batch's transaction committed: its states are now the devices' states */
  committed(): void
}

export type AlertRules = ReturnType<typeof createAlertRules>
