/**
 * Moving or stopped: the state a device's newest fix gives it, and the speed that decides it when
 * the device sent none. Pure; the ingest pipeline asks here for every fix that moves a device.
 */
import { metresBetween } from './geo'

/** A device counts as moving above this speed (km/h); below it is GPS jitter or crawling in a queue. */
export const MOVING_SPEED_KMH = 3

export type MotionState = 'moving' | 'stopped'

/** The state a speed implies, for a device not in an administrative state. */
export function motionState(speedKmh: number): MotionState {
  return speedKmh > MOVING_SPEED_KMH ? 'moving' : 'stopped'
}

/** km/h from one fix to the next, 0 when no time passed between them (or time ran backwards). */
export function derivedSpeedKmh(time1: number, lat1: number, lon1: number, time2: number, lat2: number, lon2: number): number {
  const seconds = time2 - time1
  return seconds > 0 ? (metresBetween(lat1, lon1, lat2, lon2) / seconds) * 3.6 : 0
}

export interface TimedPosition {
  timestamp: number
  latitude: number
  longitude: number
}

/**
 * The state a newest fix gives its device: by the speed it reported, or else by the speed from the
 * previous fix (a device that sends no speed; stopped when there is none to compare with).
 */
export function motionOf(reportedKmh: number | null, fix: TimedPosition, previous: TimedPosition | null): MotionState {
  if (reportedKmh !== null) return motionState(reportedKmh)
  if (!previous) return 'stopped'
  return motionState(derivedSpeedKmh(previous.timestamp, previous.latitude, previous.longitude, fix.timestamp, fix.latitude, fix.longitude))
}
