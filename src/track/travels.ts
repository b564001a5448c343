/**
 * Travels: the movements between stops. A travel runs from the last fix of one stop to the first
 * fix of the next (or from the track's first valid fix, or to its last), so stops, travels and
 * reporting gaps partition the track: a gap (gaps.ts) ends a travel at the last fix before the
 * silence, and the next one starts at the first fix after it, so no travel spans a silence. Its distance is the movement distance (distance.ts) between those fixes,
 * so jitter is excluded exactly as in the route's total. The few metres from a stop's first fix
 * to where it stood count in the travel that leaves the stop, so a route's total distance does
 * not depend on the threshold unless stops merge (movement inside a stop is not travel).
 *
 * A stretch in which the device did not move at all (e.g. a window holding only a wait shorter
 * than the threshold) is no travel.
 */
import type { Movement } from './distance'
import type { Gap } from './gaps'
import type { Stop } from './stops'
import { columnsOf, type Fixes, type TrackColumns } from './columns'

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
  fixes: Fixes,
  valid: Uint8Array,
  movement: Movement,
  stops: readonly Stop[],
  gaps: readonly Gap[] = [],
): Travel[] {
  const track = columnsOf(fixes)
  const travels: Travel[] = []
  let first = 0
  while (first < track.length && valid[first] === 0) first++
  if (first >= track.length) return travels
  let last = track.length - 1
  while (valid[last] === 0) last--

  // Stops and gaps, in time order (neither overlaps another): each ends the travel before it.
  let from = first
  let s = 0
  let g = 0
  while (s < stops.length || g < gaps.length) {
    const nextIsStop = g >= gaps.length || (s < stops.length && stops[s].startIndex < gaps[g].startIndex)
    const { startIndex, endIndex } = nextIsStop ? stops[s++] : gaps[g++]
    if (startIndex > from) addTravel(travels, track, valid, movement, from, startIndex)
    from = endIndex
  }
  if (last > from) addTravel(travels, track, valid, movement, from, last)
  addCreep(travels, stops)
  return travels
}

/**
 * A stop's creep (stops.ts: moving up a queue inside it) is driven distance: it counts in the
 * travel that ended at the stop, else in the one that leaves it; with neither (the whole window
 * one stop) in none. Average speeds follow; both lists are in time order.
 */
function addCreep(travels: Travel[], stops: readonly Stop[]): void {
  let t = 0
  for (const stop of stops) {
    if (!(stop.creep > 0)) continue
    while (t < travels.length && travels[t].end.index < stop.startIndex) t++
    let travel: Travel | undefined
    if (t > 0 && travels[t - 1].end.index === stop.startIndex) travel = travels[t - 1]
    else if (t < travels.length && travels[t].start.index === stop.endIndex) travel = travels[t]
    else if (t < travels.length && travels[t].end.index === stop.startIndex) travel = travels[t]
    if (travel === undefined) continue
    travel.distance += stop.creep
    travel.avg_speed = travel.duration > 0 ? (travel.distance / travel.duration) * 3.6 : 0
    // The top speed is never below the average (a computed one may have missed the creep).
    if (travel.max_speed < travel.avg_speed) travel.max_speed = travel.avg_speed
  }
}

function addTravel(
  travels: Travel[],
  track: TrackColumns,
  valid: Uint8Array,
  movement: Movement,
  from: number,
  to: number,
): void {
  const cumulative = movement.cumulative
  const distance = cumulative[to] - cumulative[from]
  if (!(distance > 0)) return
  const { timestamp, latitude, longitude } = track
  const duration = timestamp[to] - timestamp[from]
  travels.push({
    start: { latitude: latitude[from], longitude: longitude[from], timestamp: timestamp[from], index: from },
    end: { latitude: latitude[to], longitude: longitude[to], timestamp: timestamp[to], index: to },
    distance,
    duration,
    max_speed: maxReportedSpeed(track, valid, from, to) ?? maxComputedSpeed(track, valid, cumulative, from, to),
    avg_speed: duration > 0 ? (distance / duration) * 3.6 : 0,
  })
}

/** The highest speed the device reported among the valid fixes from..to, or null if it reported none. */
function maxReportedSpeed(track: TrackColumns, valid: Uint8Array, from: number, to: number): number | null {
  const speeds = track.speed
  let max = -1
  for (let i = from; i <= to; i++) {
    if (valid[i] === 0) continue
    const speed = speeds[i]
    // NaN (no speed sent) fails both tests
    if (speed > max && Number.isFinite(speed)) max = speed
  }
  return max >= 0 ? max : null
}

/**
 * The highest movement speed over any window (see SPEED_WINDOW_*) within from..to; windows start
 * and end at valid fixes, found with two pointers (linear). A travel shorter than one window has
 * its average speed.
 */
function maxComputedSpeed(
  track: TrackColumns,
  valid: Uint8Array,
  cumulative: Float64Array,
  from: number,
  to: number,
): number {
  const timestamp = track.timestamp
  const average = () => {
    const seconds = timestamp[to] - timestamp[from]
    return seconds > 0 ? ((cumulative[to] - cumulative[from]) / seconds) * 3.6 : 0
  }
  let max = -1
  let j = from
  for (let i = from; i < to; i++) {
    if (valid[i] === 0) continue
    const start = timestamp[i]
    // Both bounds only grow with i, so j never moves back.
    while (
      j < to &&
      (valid[j] === 0 ||
        timestamp[j] - start < SPEED_WINDOW_SECONDS ||
        cumulative[j] - cumulative[i] < SPEED_WINDOW_METRES)
    ) {
      j++
    }
    const seconds = timestamp[j] - start
    if (seconds < SPEED_WINDOW_SECONDS || cumulative[j] - cumulative[i] < SPEED_WINDOW_METRES) break
    const speed = (cumulative[j] - cumulative[i]) / seconds
    if (speed > max) max = speed
  }
  return max >= 0 ? max * 3.6 : average()
}
