/**
 * Travels: the movements between stops. A travel runs from the last fix of one stop to the first
 * fix of the next (or from the track's first valid fix, or to its last), so stops and travels
 * partition the track. Its distance is the movement distance (distance.ts) between those fixes,
 * so jitter is excluded exactly as in the route's total. The few metres from a stop's first fix
 * to where it stood count in the travel that leaves the stop, so a route's total distance does
 * not depend on the threshold unless stops merge (movement inside a stop is not travel).
 *
 * A stretch in which the device did not move at all (e.g. a window holding only a wait shorter
 * than the threshold) is no travel.
 */
import type { Movement } from './distance'
import type { Stop } from './stops'
import type { TrackPoint } from './types'

/**
 * Computed speeds (when the device reports none) are averaged over windows of at least this many
 * seconds and this many metres of movement, so a few metres of GPS noise cannot read as a burst
 * of speed: 3 m of noise is at most 6% of 50 m. A vehicle covers 50 m in a few seconds, so its
 * windows are 10 s; a walker's are about 40 s.
 */
export const SPEED_WINDOW_SECONDS = 10
export const SPEED_WINDOW_METRES = 50

export interface TravelPlace {
  latitude: number
  longitude: number
  timestamp: number
  /** index of this fix in the analysed points */
  index: number
}

export interface Travel {
  start: TravelPlace
  end: TravelPlace
  /** metres, movement only */
  distance: number
  /** end.timestamp - start.timestamp, seconds */
  duration: number
  /** km/h: the highest speed the device reported in it, else the highest computed one */
  max_speed: number
  /** km/h: distance / duration, 0 when duration is 0 */
  avg_speed: number
}

export function buildTravels(
  points: readonly TrackPoint[],
  valid: Uint8Array,
  movement: Movement,
  stops: readonly Stop[],
): Travel[] {
  const travels: Travel[] = []
  let first = 0
  while (first < points.length && valid[first] === 0) first++
  if (first >= points.length) return travels
  let last = points.length - 1
  while (valid[last] === 0) last--

  let from = first
  for (const stop of stops) {
    if (stop.startIndex > from) addTravel(travels, points, valid, movement, from, stop.startIndex)
    from = stop.endIndex
  }
  if (last > from) addTravel(travels, points, valid, movement, from, last)
  return travels
}

function addTravel(
  travels: Travel[],
  points: readonly TrackPoint[],
  valid: Uint8Array,
  movement: Movement,
  from: number,
  to: number,
): void {
  const cumulative = movement.cumulative
  const distance = cumulative[to] - cumulative[from]
  if (!(distance > 0)) return
  const start = points[from]
  const end = points[to]
  const duration = end.timestamp - start.timestamp
  travels.push({
    start: { latitude: start.latitude, longitude: start.longitude, timestamp: start.timestamp, index: from },
    end: { latitude: end.latitude, longitude: end.longitude, timestamp: end.timestamp, index: to },
    distance,
    duration,
    max_speed: maxReportedSpeed(points, valid, from, to) ?? maxComputedSpeed(points, valid, cumulative, from, to),
    avg_speed: duration > 0 ? (distance / duration) * 3.6 : 0,
  })
}

/** The highest speed the device reported among the valid fixes from..to, or null if it reported none. */
function maxReportedSpeed(points: readonly TrackPoint[], valid: Uint8Array, from: number, to: number): number | null {
  let max = -1
  for (let i = from; i <= to; i++) {
    if (valid[i] === 0) continue
    const speed = points[i].speed
    if (speed !== null && speed > max && Number.isFinite(speed)) max = speed
  }
  return max >= 0 ? max : null
}

/**
 * The highest movement speed over any window (see SPEED_WINDOW_*) within from..to; windows start
 * and end at valid fixes, found with two pointers (linear). A travel shorter than one window has
 * its average speed.
 */
function maxComputedSpeed(
  points: readonly TrackPoint[],
  valid: Uint8Array,
  cumulative: Float64Array,
  from: number,
  to: number,
): number {
  const average = () => {
    const seconds = points[to].timestamp - points[from].timestamp
    return seconds > 0 ? ((cumulative[to] - cumulative[from]) / seconds) * 3.6 : 0
  }
  let max = -1
  let j = from
  for (let i = from; i < to; i++) {
    if (valid[i] === 0) continue
    const start = points[i].timestamp
    // Both bounds only grow with i, so j never moves back.
    while (
      j < to &&
      (valid[j] === 0 ||
        points[j].timestamp - start < SPEED_WINDOW_SECONDS ||
        cumulative[j] - cumulative[i] < SPEED_WINDOW_METRES)
    ) {
      j++
    }
    const seconds = points[j].timestamp - start
    if (seconds < SPEED_WINDOW_SECONDS || cumulative[j] - cumulative[i] < SPEED_WINDOW_METRES) break
    const speed = (cumulative[j] - cumulative[i]) / seconds
    if (speed > max) max = speed
  }
  return max >= 0 ? max * 3.6 : average()
}
