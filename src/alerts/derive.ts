/**
 * The rules that derive events, as pure functions of a device's rule state and what just
 * happened to it: (state, input) → (new state, events). No I/O, no clock: time is the fixes'
 * own timestamps (and the moment of a connection change), so a replay derives the same events.
 * rules.ts reads and writes the state in ingest's transaction around these.
 *
 * The rules (the alerts contract, and what it leaves open):
 * - Fixes count in timestamp order. A fix no newer than the newest valid fix already seen
 *   (late, or a re-sent one) derives nothing and changes nothing. A batch is sorted first, so a
 *   device's buffer sent oldest-last still counts in order.
 * - A fix the device flagged invalid derives nothing and changes nothing (its position and
 *   attributes are not trusted), nor does a 0/0 placeholder.
 * - `geofence_enter` / `geofence_exit`: the first valid fix inside / outside an applicable
 *   geofence after one on the other side. "Outside" is the state of a device never seen inside,
 *   so the first fix a device ever sends inside a geofence is an enter, and a geofence created (or
 *   grown, or newly applying to the device) around a device gives an enter on its next fix. A
 *   geofence deleted, or no longer applying to the device, is forgotten without an exit. Exits
 *   come before enters; each set in the order of the geofences (name, then id).
 *   One report's geofence work is bounded: after MAX_GEOFENCE_EVENTS_PER_REPORT such events, or
 *   once the context says its work is spent (rules.ts counts the tests), its fixes are not tested
 *   until its newest, which is: a device's geofences are then where its newest fix is, the
 *   crossings in between dated at that fix (and an untested fix's overspeed is judged against the
 *   limits of the geofences the device was last found in).
 * - `overspeed`: a valid fix faster than the lowest limit that applies to it, among the device's
 *   `properties.speed_limit` and the `speed_limit` of each geofence it is inside. The first such
 *   fix of a continuous overspeed derives one, then one more for each further 5 minutes (by fix
 *   timestamps) while it lasts; a valid fix at or under the limit ends it, and a fix without a
 *   speed neither continues nor ends it. `context: { limit, speed, geofence? }`: the lowest limit
 *   exceeded, and the geofence it belongs to when it is a geofence's.
 * - `ignition_on` / `ignition_off`: the `ignition` attribute (true/false, or 1/0) of a valid fix
 *   or of a status report differs from the last one known; the first one a device ever reports is
 *   not a change. A reading older than the last one is ignored.
 * - `device_online` / `device_offline`: a connection change. Online only after offline (the
 *   first connection ever is not "reporting again"); offline unless already offline (a device
 *   whose state predates the rules was online if it was connected). Repeats derive nothing.
 */

import { isPlausiblePosition } from '../track/validate'

/** one more `overspeed` event for each further this many seconds of continuous overspeed */
export const OVERSPEED_REPEAT_SECONDS = 300
/**
 * geofence_enter/exit events one report may derive: past them, its fixes are no longer tested
 * against geofences but for its newest, which settles where the device is (its events dated there).
 * A fleet's report derives a handful; thousands are an account drawing to slow the server down.
 */
export const MAX_GEOFENCE_EVENTS_PER_REPORT = 1000

export interface RuleState {
  /** Unix seconds of the newest valid fix seen; null: none yet */
  lastFixTs: number | null
  /** ids of the geofences the device is inside, in geofence order */
  inside: readonly string[]
  /** fix timestamp the current continuous overspeed began; null: not over a limit */
  overspeedSince: number | null
  /** fix timestamp of this overspeed's last event */
  overspeedReportedTs: number | null
  ignition: boolean | null
  ignitionTs: number | null
  /** null: no connection change seen yet */
  online: boolean | null
}

export const INITIAL_STATE: RuleState = {
  lastFixTs: null,
  inside: [],
  overspeedSince: null,
  overspeedReportedTs: null,
  ignition: null,
  ignitionTs: null,
  online: null,
}

/** A fix as the rules read it: degrees, km/h, Unix seconds. */
export interface RuleFix {
  timestamp: number
  latitude: number
  longitude: number
  /** km/h; null when the device sent none */
  speed: number | null
  /** false when the device said the fix is not valid */
  valid: boolean
  satellites?: number | null
  attributes?: Record<string, unknown> | null
}

export interface RuleGeofence {
  id: string
  name: string
  /** km/h, or null */
  speedLimit: number | null
}

/** What the rules know of the device's world at the moment of a fix. */
export interface RuleContext {
  /** the applicable geofences that contain the position, in geofence order */
  geofencesAt(latitude: number, longitude: number): readonly RuleGeofence[]
  /** the geofence if it still exists and applies to the device (else it is forgotten without an exit) */
  applicable(geofenceId: string): RuleGeofence | null
  /** the device's `properties.speed_limit` (km/h), or null */
  deviceSpeedLimit: number | null
  /**
   * Whether this report's geofence work is spent: its fixes are then not tested against
   * geofences but for the newest. Absent: never.
   */
  geofenceWorkSpent?(): boolean
}

/**
 * An event as ingest stores device alarms (the same fields a decoder's events have): the
 * pipeline inserts these in its transaction, as it does a device's own alarms.
 */
export interface DerivedEvent {
  /** Unix seconds */
  timestamp: number
  alarmCode: 'geofence_enter' | 'geofence_exit' | 'overspeed' | 'ignition_on' | 'ignition_off' | 'device_online' | 'device_offline'
  latitude: number | null
  longitude: number | null
  /** km/h */
  speed: number | null
  satellites: number | null
  mcc: null
  mnc: null
  dbm: null
  context: Record<string, unknown>
}

export interface Derived {
  state: RuleState
  events: DerivedEvent[]
  /** new valid fixes that were not tested against geofences (the report's geofence work was bounded) */
  untested?: number
}

/** the device's own speed limit from its properties: a number above 0, else none */
export function speedLimitOf(properties: Record<string, unknown> | null | undefined): number | null {
  const limit = properties?.speed_limit
  return typeof limit === 'number' && Number.isFinite(limit) && limit > 0 ? limit : null
}

/** an ignition reading: true/false, or 1/0 as some devices send it; anything else is none */
export function ignitionOf(attributes: Record<string, unknown> | null | undefined): boolean | null {
  const value = attributes?.ignition
  if (value === true || value === 1) return true
  if (value === false || value === 0) return false
  return null
}

function event(alarmCode: DerivedEvent['alarmCode'], fix: RuleFix | null, timestamp: number, context: Record<string, unknown>): DerivedEvent {
  return {
    timestamp,
    alarmCode,
    latitude: fix ? fix.latitude : null,
    longitude: fix ? fix.longitude : null,
    speed: fix ? fix.speed : null,
    satellites: fix?.satellites ?? null,
    mcc: null,
    mnc: null,
    dbm: null,
    context,
  }
}

function usable(fix: RuleFix): boolean {
  return (
    fix.valid &&
    Number.isFinite(fix.timestamp) &&
    isPlausiblePosition(fix.latitude, fix.longitude)
  )
}

function ignitionChange(state: RuleState, reading: boolean | null, timestamp: number, fix: RuleFix | null, events: DerivedEvent[]): RuleState {
  if (reading === null) return state
  if (state.ignitionTs !== null && timestamp <= state.ignitionTs) return state
  if (state.ignition !== null && state.ignition !== reading) events.push(event(reading ? 'ignition_on' : 'ignition_off', fix, timestamp, {}))
  return { ...state, ignition: reading, ignitionTs: timestamp }
}

/** whether a fix is in exactly the geofences the device was in (both in geofence order) */
function sameGeofences(here: readonly RuleGeofence[], inside: readonly string[]): boolean {
  if (here.length !== inside.length) return false
  for (let i = 0; i < here.length; i++) if (here[i]!.id !== inside[i]) return false
  return true
}

/** the geofences the device was last found in that still apply to it (for an untested fix's speed limits) */
function lastFound(state: RuleState, context: RuleContext): RuleGeofence[] {
  const found: RuleGeofence[] = []
  for (const id of state.inside) {
    const g = context.applicable(id)
    if (g !== null) found.push(g)
  }
  return found
}

/**
 * One valid fix, newer than any seen; the caller moves `lastFixTs`. Returns `state` itself when
 * nothing else changed. `tested`: whether it is tested against geofences (else the device is
 * taken to be where it was); `tally.geofenceEvents` counts the enters and exits.
 */
function applyFix(state: RuleState, fix: RuleFix, context: RuleContext, events: DerivedEvent[], tested: boolean, tally: { geofenceEvents: number }): RuleState {
  const ts = fix.timestamp
  const hasSpeed = fix.speed !== null && Number.isFinite(fix.speed)
  let here: readonly RuleGeofence[]
  let next: RuleState
  if (!tested) {
    here = hasSpeed && state.inside.length > 0 ? lastFound(state, context) : []
    next = state
  } else {
    here = context.geofencesAt(fix.latitude, fix.longitude)
    if (sameGeofences(here, state.inside)) {
      // the common cases, on the road outside every geofence or still in the same ones: no sets,
      // no new state
      next = state
    } else {
      const hereIds = new Set(here.map((g) => g.id))
      const before = events.length
      // geofences: exits (of those still applying), then enters
      for (const id of state.inside) {
        if (hereIds.has(id)) continue
        const left = context.applicable(id)
        if (left !== null) events.push(event('geofence_exit', fix, ts, { geofence: id, name: left.name }))
      }
      const was = new Set(state.inside)
      for (const g of here) if (!was.has(g.id)) events.push(event('geofence_enter', fix, ts, { geofence: g.id, name: g.name }))
      tally.geofenceEvents += events.length - before
      next = { ...state, inside: here.map((g) => g.id) }
    }
  }

  // overspeed: the lowest limit exceeded
  if (hasSpeed) {
    const speed = fix.speed as number
    let limit: number | null = null
    let geofence: string | undefined
    if (context.deviceSpeedLimit !== null && speed > context.deviceSpeedLimit) limit = context.deviceSpeedLimit
    for (const g of here) {
      if (g.speedLimit !== null && speed > g.speedLimit && (limit === null || g.speedLimit < limit)) {
        limit = g.speedLimit
        geofence = g.id
      }
    }
    if (limit === null) {
      if (next.overspeedSince !== null || next.overspeedReportedTs !== null) next = { ...next, overspeedSince: null, overspeedReportedTs: null }
    }
    else if (next.overspeedSince === null || next.overspeedReportedTs === null || ts - next.overspeedReportedTs >= OVERSPEED_REPEAT_SECONDS) {
      events.push(event('overspeed', fix, ts, { limit, speed: Math.round(speed * 10) / 10, ...(geofence === undefined ? {} : { geofence }) }))
      next = { ...next, overspeedSince: next.overspeedSince ?? ts, overspeedReportedTs: ts }
    }
  }

  return ignitionChange(next, ignitionOf(fix.attributes), ts, fix, events)
}

/** New fixes of one device: the events they derive and the state after them. */
export function deriveFromFixes(state: RuleState, fixes: readonly RuleFix[], context: RuleContext): Derived {
  const events: DerivedEvent[] = []
  // a report usually comes whole and in order: then the fixes are read as they are, with no copy
  let inOrder = true
  for (let i = 0; i < fixes.length && inOrder; i++) inOrder = usable(fixes[i]) && (i === 0 || fixes[i - 1].timestamp <= fixes[i].timestamp)
  const ordered = inOrder ? fixes : fixes.filter(usable).sort((a, b) => a.timestamp - b.timestamp)
  // the newest fix is always tested: it settles where the device is
  const newest = ordered.length > 0 ? ordered[ordered.length - 1]!.timestamp : null
  const tally = { geofenceEvents: 0 }
  let untested = 0
  let next = state
  let lastFixTs = state.lastFixTs
  for (const fix of ordered) {
    if (lastFixTs !== null && fix.timestamp <= lastFixTs) continue
    const tested = fix.timestamp === newest || (tally.geofenceEvents < MAX_GEOFENCE_EVENTS_PER_REPORT && context.geofenceWorkSpent?.() !== true)
    if (!tested) untested++
    next = applyFix(next, fix, context, events, tested, tally)
    lastFixTs = fix.timestamp
  }
  return { state: lastFixTs === next.lastFixTs ? next : { ...next, lastFixTs }, events, ...(untested > 0 ? { untested } : {}) }
}

/** A report without a fix that carries attributes (a status packet): only ignition is read from it. */
export function deriveFromAttributes(state: RuleState, attributes: Record<string, unknown>, timestamp: number): Derived {
  const events: DerivedEvent[] = []
  return { state: ignitionChange(state, ignitionOf(attributes), Math.floor(timestamp), null, events), events }
}

/** The device connected (any report after silence, a TCP session) or disconnected (TCP closed, OFFLINE_AFTER silence), at `timestamp` (Unix seconds). */
export function deriveFromConnection(state: RuleState, connected: boolean, timestamp: number): Derived {
  const ts = Math.floor(timestamp)
  if (connected) {
    if (state.online === true) return { state, events: [] }
    const events = state.online === false ? [event('device_online', null, ts, {})] : []
    return { state: { ...state, online: true }, events }
  }
  if (state.online === false) return { state, events: [] }
  return { state: { ...state, online: false }, events: [event('device_offline', null, ts, {})] }
}
