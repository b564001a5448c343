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
