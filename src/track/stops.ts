/**
 * Stops: spans of at least `thresholdSeconds` during which the device stays within a small radius.
 *
 * Built on the still spans of the movement pass (distance.ts), so a stop starts at the fix where
 * the device arrived and ends at the last fix before it moved away; a gap in reporting while it
 * stays put is inside the span (two fixes at the same place 20 minutes apart are 20 minutes of
 * stop). A silence longer than the no-data threshold (distance.ts) after which the device reports
 * from within the stop radius of where it went quiet is a stand too, from the fix before the
 * silence to the fix after (a parked tracker that sleeps and wakes with a first fix a few metres
 * off); farther away, the silence is a reporting gap (gaps.ts), no stop.
 * Still spans at the same place (within STOP_RADIUS_M, with every fix between them within it too)
 * are one stop: a parked receiver's slow drift, a car moving across a car park, a bus
 * inching forward in a queue; so are spans at the very same spot around a brief excursion (see
 * BRIEF_EXCURSION_SECONDS). Only then is the threshold applied, so the threshold decides which
 * stops are reported, never where they begin or end.
 *
 * Another kind of stand, found here over the fixes (linear, cheap: most fixes cost a comparison):
 * - a pause: two consecutive fixes at least STAND_SECONDS apart and within STAND_RADIUS_M of each
 *   other (many trackers, like the bus 304 logger, report rarely while standing, so a short stop is
 *   one long step of no movement that the movement pass's stays, anchored on the approach, miss);
 * And stands close in place and time are one stop: within QUEUE_RADIUS_M of each other with at
 * most QUEUE_GAP_SECONDS between them (a bus or a car moving up a queue to its stop); bus stops are 140 m or more apart, so two stops are not merged.
 *
 * Threshold 0 reports every still span: every time the device stood for at least STAND_SECONDS
 * (10 s; shorter pauses cannot be told from slow movement), never a lone fix, never a walker.
 * Any threshold below 10 s therefore behaves like 10 s.
 */
import { FIX_NEW_SEGMENT } from './filters'
import { metresBetween, rulerAt, wrapLongitude } from './geo'
import { MOVEMENT_RADIUS_M, STAND_RADIUS_M, STAND_SECONDS, type Movement, type StillSpan } from './distance'
import { columnsOf, type Fixes } from './columns'

/**
 * Radius of a stop: 30 m holds a parked car's drift and a bus's creep at a stop, while real
 * movement of a few seconds at urban speed already leaves it. Bus stops are 200-400 m apart,
 * so neighbouring stops are not merged.
 */
export const STOP_RADIUS_M = 30

/** An excursion this short that ends back at the same spot does not end a stop. */
export const BRIEF_EXCURSION_SECONDS = 60

/**
 * Stands at most this far apart (metres between their places) and this close in time (seconds
 * from one's last fix to the next one's first) are one stop: moving up a queue, a few car lengths
 * at a time. Measured on bus 304: the queues before and after its stops are 30-80 m and 5-18 s
 * apart; its closest stops 158 m and 18 s.
 */
export const QUEUE_RADIUS_M = 100
export const QUEUE_GAP_SECONDS = 30

export interface Stop {
  /** where it stood: the time-weighted centre of its fixes */
  latitude: number
  longitude: number
  /** timestamp of the first fix of the stop (arrival) */
  start: number
  /** timestamp of the last fix before it moved away */
  end: number
  /** end - start, seconds */
  duration: number
  /** indices of those first and last fixes in the analysed points */
  startIndex: number
  endIndex: number
  /**
   * Metres it moved up a queue within the stop: from its first fix to its last in a straight
   * line when that is beyond the stop radius, else 0 (jitter). Not movement lost: travels.ts
   * counts it in the travel that reached the stop, or else in the one that left it.
   */
  creep: number
}

export interface StopOptions {
  /** minimum duration of a stop in seconds, ≥ 0 */
  thresholdSeconds: number
  /** defaults to STOP_RADIUS_M */
  radiusMetres?: number
}

export function detectStops(
  fixes: Fixes,
  valid: Uint8Array,
  movement: Movement,
  options: StopOptions,
): Stop[] {
  const threshold = options.thresholdSeconds
  if (!(threshold >= 0)) throw new RangeError(`stop threshold must be ≥ 0 seconds, got ${threshold}`)
  const radius = options.radiusMetres ?? STOP_RADIUS_M
  const { timestamp, latitude, longitude } = columnsOf(fixes)

  const stops: Stop[] = []
  const spans = allStands(withSilencesInPlace(movement, timestamp, latitude, longitude, radius), pauses(timestamp, latitude, longitude, valid))
  if (spans.length === 0) return stops

  // The stop being grown, starting from the first still span.
  let current: StillSpan = { ...spans[0] }

  const flush = () => {
    const start = timestamp[current.startIndex]
    const end = timestamp[current.endIndex]
    if (end - start < threshold) return
    const first = current.startIndex
    const last = current.endIndex
    const across = metresBetween(latitude[first], longitude[first], latitude[last], longitude[last])
    stops.push({
      latitude: current.latitude,
      longitude: current.longitude,
      start,
      end,
      duration: end - start,
      startIndex: current.startIndex,
      endIndex: current.endIndex,
      creep: across > radius ? across : 0,
    })
  }

  /**
   * Whether `span` is the same stop as the current one: its place is within `radius`, and so was
   * every fix in between; or it is back at the very spot (within MOVEMENT_RADIUS_M) after a brief
   * excursion (a burst of multipath fixes, a car re-parked).
   */
  const samePlace = (span: StillSpan): boolean => {
    const apart = metresBetween(current.latitude, current.longitude, span.latitude, span.longitude)
    for (let i = current.endIndex + 1; i <= span.startIndex; i++) if (valid[i] === FIX_NEW_SEGMENT) return false
    const between = timestamp[span.startIndex] - timestamp[current.endIndex]
    if (apart <= QUEUE_RADIUS_M && between <= QUEUE_GAP_SECONDS) return true
    if (apart > radius) return false
    let allWithin = true
    for (let i = current.endIndex + 1; i <= span.startIndex; i++) {
      if (valid[i] === 0) continue
      if (allWithin && metresBetween(current.latitude, current.longitude, latitude[i], longitude[i]) > radius) {
        allWithin = false
      }
    }
    if (allWithin) return true
    const away = timestamp[span.startIndex] - timestamp[current.endIndex]
    return apart <= MOVEMENT_RADIUS_M && away <= BRIEF_EXCURSION_SECONDS
  }

  for (let k = 1; k < spans.length; k++) {
    const span = spans[k]
    if (samePlace(span)) {
      // One stop: its place is the time-weighted centre of both.
      const total = current.weight + span.weight
      const share = total > 0 ? span.weight / total : 0.5
      current.latitude += (span.latitude - current.latitude) * share
      current.longitude = wrapLongitude(current.longitude + wrapLongitude(span.longitude - current.longitude) * share)
      current.weight = total
      current.endIndex = span.endIndex
    } else {
      flush()
      current = { ...span }
    }
  }
  flush()
  return stops
}

/**
 * The still spans, with the silences after which the device was still within `radius` of where
 * it went quiet as spans of their own (placed halfway, weighted by their time), in time order.
 * A silence starts at the last fix of the span before it at the earliest, so the order is by start.
 */
function withSilencesInPlace(
  movement: Movement,
  timestamp: Float64Array,
  latitude: Float64Array,
  longitude: Float64Array,
  radius: number,
): StillSpan[] {
  const { stillSpans, silences } = movement
  if (silences.length === 0) return stillSpans
  const spans: StillSpan[] = []
  let k = 0
  for (const { beforeIndex, afterIndex } of silences) {
    if (metresBetween(latitude[beforeIndex], longitude[beforeIndex], latitude[afterIndex], longitude[afterIndex]) > radius) continue
    while (k < stillSpans.length && stillSpans[k].startIndex <= beforeIndex) spans.push(stillSpans[k++])
    spans.push({
      startIndex: beforeIndex,
      endIndex: afterIndex,
      latitude: (latitude[beforeIndex] + latitude[afterIndex]) / 2,
      longitude: wrapLongitude(longitude[beforeIndex] + wrapLongitude(longitude[afterIndex] - longitude[beforeIndex]) / 2),
      weight: timestamp[afterIndex] - timestamp[beforeIndex],
    })
  }
  while (k < stillSpans.length) spans.push(stillSpans[k++])
  return spans
}

/**
 * Steps of at least STAND_SECONDS between consecutive valid fixes of one segment that moved at
 * most STAND_RADIUS_M: the device stood there meanwhile. Placed halfway, weighted by their time.
 */
function pauses(timestamp: Float64Array, latitude: Float64Array, longitude: Float64Array, valid: Uint8Array): StillSpan[] {
  const spans: StillSpan[] = []
  let previous = -1
  for (let i = 0; i < valid.length; i++) {
    const flag = valid[i]
    if (flag === 0) continue
    if (
      previous >= 0 &&
      flag !== FIX_NEW_SEGMENT &&
      timestamp[i] - timestamp[previous] >= STAND_SECONDS &&
      metresBetween(latitude[previous], longitude[previous], latitude[i], longitude[i]) <= STAND_RADIUS_M
    ) {
      spans.push({
        startIndex: previous,
        endIndex: i,
        latitude: (latitude[previous] + latitude[i]) / 2,
        longitude: wrapLongitude(longitude[previous] + wrapLongitude(longitude[i] - longitude[previous]) / 2),
        weight: timestamp[i] - timestamp[previous],
      })
    }
    previous = i
  }
  return spans
}

/**
 * The stands of every kind in time order, overlapping ones joined (their place the
 * weight-averaged centre): each list is in time order and its spans do not overlap one another.
 */
function allStands(...lists: StillSpan[][]): StillSpan[] {
  const nonEmpty = lists.filter((list) => list.length > 0)
  if (nonEmpty.length === 0) return []
  if (nonEmpty.length === 1) return nonEmpty[0]
  const sorted = nonEmpty.flat().sort((a, b) => a.startIndex - b.startIndex || a.endIndex - b.endIndex)
  const joined: StillSpan[] = []
  let current = { ...sorted[0] }
  for (let k = 1; k < sorted.length; k++) {
    const span = sorted[k]
    if (span.startIndex < current.endIndex) {
      if (span.endIndex > current.endIndex) current.endIndex = span.endIndex
      const total = current.weight + span.weight
      const share = total > 0 ? span.weight / total : 0.5
      current.latitude += (span.latitude - current.latitude) * share
      current.longitude = wrapLongitude(current.longitude + wrapLongitude(span.longitude - current.longitude) * share)
      current.weight = total
    } else {
      joined.push(current)
      current = { ...span }
    }
  }
  joined.push(current)
  return joined
}
