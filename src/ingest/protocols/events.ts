/** Building the event that a decoder raises at a fix, and the alarm codes a device may raise. */
import type { DecodedEvent, DecodedFix } from '../types'

/** The code of a device alarm the product has no name for: its own code is in the context (RAW_ALARM_KEY). */
export const GENERIC_ALARM_CODE = 'alarm'
/** The context key that keeps a device's own alarm code when it is stored as GENERIC_ALARM_CODE. */
export const RAW_ALARM_KEY = 'raw_alarm'
/** a raw alarm code is kept to this many characters */
const MAX_RAW_ALARM_LENGTH = 64

/**
 * The alarm codes a device may raise (README "Alarm codes"; the console words each). Anything
 * else a device sends is stored as `alarm` with its own code in the context, never as a new
 * code: what users filter on, channels listen to and the console words stays this list whatever
 * a firmware invents, and a device cannot forge the server's own events (`device_online`,
 * `command_answered`, …).
 */
export const DEVICE_ALARM_CODES: ReadonlySet<string> = new Set([
  GENERIC_ALARM_CODE,
  'sos',
  'power_cut',
  'power_off',
  'vibration',
  'low_battery',
  'overspeed',
  'movement',
  'geofence',
  'geofence_enter',
  'geofence_exit',
  'tamper',
  'collision',
  'crash',
  'towing',
  'jamming',
  'gnss_jamming',
  'idling',
  'harsh_acceleration',
  'harsh_braking',
  'harsh_cornering',
  'ignition_on',
  'ignition_off',
  'door',
  'fall',
  'sim_change',
  'cover_open',
  'rogue_base_station',
  'sound',
  'airplane_mode',
  'deep_sleep',
  'gps_first_fix',
  'gps_blind_spot_enter',
  'gps_blind_spot_exit',
])

/** What a device's own alarm code becomes: itself when the product knows it, else `alarm` and the raw code for the context. */
export function deviceAlarm(code: string, raw: string = code): { alarmCode: string; context: Record<string, unknown> } {
  if (DEVICE_ALARM_CODES.has(code)) return { alarmCode: code, context: {} }
  return { alarmCode: GENERIC_ALARM_CODE, context: { [RAW_ALARM_KEY]: raw.slice(0, MAX_RAW_ALARM_LENGTH) } }
}

/**
 * The event as it may be stored: unchanged when its code is on the list, else `alarm` with its
 * code as the raw one (unless the decoder already put one in its context). The pipeline applies
 * it to every decoded event, whatever the protocol.
 */
export function withKnownAlarmCode(event: DecodedEvent): DecodedEvent {
  if (DEVICE_ALARM_CODES.has(event.alarmCode)) return event
  const context = typeof event.context?.[RAW_ALARM_KEY] === 'string' ? event.context : { ...event.context, ...deviceAlarm(event.alarmCode).context }
  return { ...event, alarmCode: GENERIC_ALARM_CODE, context }
}

/**
 * The key a device's own alarm is stored under in its second (events are unique on device, second,
 * code and seq; store/events.ts): 0 for a code the product knows, so a re-sent alarm is stored
 * once. Generic `alarm`s of different raw codes share their code, so each takes a negative seq
 * drawn from its raw code (FNV-1a, 31 bits): two different ones in one second are both kept, a
 * re-sent one is still stored once, and the server's own events (seq 1, 2, …) never meet them.
 */
export function deviceAlarmSeq(event: Pick<DecodedEvent, 'alarmCode' | 'context'>): number {
  const raw = event.context?.[RAW_ALARM_KEY]
  if (event.alarmCode !== GENERIC_ALARM_CODE || typeof raw !== 'string') return 0
  let hash = 0x811c9dc5
  for (let i = 0; i < raw.length; i++) hash = Math.imul(hash ^ raw.charCodeAt(i), 0x01000193)
  return -1 - (hash & 0x7fffffff)
}

/**
 * An alarm at a fix: its time, speed and satellites, and its place only when the fix is valid
 * (without a lock the coordinates are stale or zero, not a place worth showing).
 */
export function eventAtFix(
  alarmCode: string,
  fix: DecodedFix,
  cell: { mcc: number | null; mnc: number | null; dbm: number | null },
  context: Record<string, unknown> = {},
): DecodedEvent {
  return {
    timestamp: fix.timestamp,
    alarmCode,
    latitude: fix.valid ? fix.latitude : null,
    longitude: fix.valid ? fix.longitude : null,
    speed: fix.speed,
    satellites: fix.satellites,
    mcc: cell.mcc,
    mnc: cell.mnc,
    dbm: cell.dbm,
    context: { gps_valid: fix.valid, course: fix.course, altitude: fix.altitude, ...context },
  }
}

/**
 * An alarm from a packet that carries no position (a cell-only alarm, a status packet): no place,
 * no speed; `timestamp` is the device's time when it sent one, else the server's (say so in
 * `context.time_source`).
 */
export function eventWithoutFix(
  alarmCode: string,
  timestamp: number,
  cell: { mcc: number | null; mnc: number | null; dbm: number | null },
  context: Record<string, unknown> = {},
): DecodedEvent {
  return {
    timestamp,
    alarmCode,
    latitude: null,
    longitude: null,
    speed: null,
    satellites: null,
    mcc: cell.mcc,
    mnc: cell.mnc,
    dbm: cell.dbm,
    context: { gps_valid: false, ...context },
  }
}
