/** Building the event that a decoder raises at a fix. */
import type { DecodedEvent, DecodedFix } from '../types'

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
