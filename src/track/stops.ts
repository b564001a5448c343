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
 * Two more kinds of stand, found here over the fixes (linear, cheap: most fixes cost a comparison):
 * - a pause: two consecutive fixes at least STAND_SECONDS apart and within STAND_RADIUS_M of each
 *   other (many trackers, like the bus 304 logger, report rarely while standing, so a short stop is
 *   one long step of no movement that the movement pass's stays, anchored on the approach, miss);
 * - a drift: at least DRIFT_SECONDS without a fix farther than DRIFT_RADIUS_M from the first (a
 *   parked receiver whose fixes wander ±30 m, wider than any movement radius: without this, its
 *   jitter was a trip of hundreds of kilometres a night). A walker is that far within 85 s, a
 *   vehicle within seconds, so neither is a drift.
 * And stands close in place and time are one stop: within QUEUE_RADIUS_M of each other with at
 * most QUEUE_GAP_SECONDS between them (a bus or a car moving up a queue to its stop, a parked
 * receiver's drift windows); bus stops are 140 m or more apart, so two stops are not merged.
 *
 * Threshold 0 reports every still span: every time the device stood for at least STAND_SECONDS
 * (10 s; shorter pauses cannot be told from slow movement), never a lone fix, never a walker.
 * Any threshold below 10 s therefore behaves like 10 s.
 */
import { FIX_NEW_SEGMENT } from './filters'
import { metresBetween, rulerAt, wrapLongitude } from './geo'
import { MOVEMENT_RADIUS_M, STAND_RADIUS_M, STAND_SECONDS, type Movement, type Silence, type StillSpan } from './distance'
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

/**
 * A drift (see above): this long without getting farther than this from its first fix, i.e. under
 * 3 km/h: no journey. A parked receiver's fixes stay within ±50 m; a walker is 100 m away in 85 s.
 */
export const DRIFT_SECONDS = 120
export const DRIFT_RADIUS_M = 100

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
  const stands = allStands(withSilencesInPlace(movement, timestamp, latitude, longitude, radius), pauses(timestamp, latitude, longitude, valid))
  const spans = allStands(stands, drifting(drifts(timestamp, latitude, longitude, valid, movement.silences), stands, timestamp))
  if (spans.length === 0) return stops
  reachEdges(spans, timestamp, latitude, longitude, valid)

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
 * Windows of at least DRIFT_SECONDS in which no valid fix was farther than DRIFT_RADIUS_M from
 * the window's first (it went nowhere); the first fix beyond starts the next window, as does a
 * new segment or the first fix after a silence of the movement pass. Placed at the plain mean of their fixes. One pass, one distance a fix.
 */
function drifts(
  timestamp: Float64Array,
  latitude: Float64Array,
  longitude: Float64Array,
  valid: Uint8Array,
  silences: readonly Silence[],
): StillSpan[] {
  const spans: StillSpan[] = []
  let nextSilence = 0
  let start = -1
  let last = -1
  let kx = 0
  let ky = 0
  let sumX = 0
  let sumY = 0
  let count = 0
  const close = () => {
    if (start < 0 || timestamp[last] - timestamp[start] < DRIFT_SECONDS) return
    spans.push({
      startIndex: start,
      endIndex: last,
      latitude: latitude[start] + sumY / count / ky,
      longitude: wrapLongitude(longitude[start] + sumX / count / kx),
      weight: timestamp[last] - timestamp[start],
    })
  }
  for (let i = 0; i < valid.length; i++) {
    const flag = valid[i]
    if (flag === 0) continue
    // A silence after which the device was elsewhere (a gap, gaps.ts) ends a drift, however near.
    while (nextSilence < silences.length && silences[nextSilence].afterIndex < i) nextSilence++
    const afterSilence = nextSilence < silences.length && silences[nextSilence].afterIndex === i
    if (start >= 0 && flag !== FIX_NEW_SEGMENT && !afterSilence) {
      const x = wrapLongitude(longitude[i] - longitude[start]) * kx
      const y = (latitude[i] - latitude[start]) * ky
      if (x * x + y * y <= DRIFT_RADIUS_M * DRIFT_RADIUS_M) {
        sumX += x
        sumY += y
        count++
        last = i
        continue
      }
    }
    close()
    const ruler = rulerAt(latitude[i])
    start = last = i
    kx = ruler.kx
    ky = ruler.ky
    sumX = sumY = 0
    count = 1
  }
  close()
  return spans
}

/**
 * Drifts as stops where the other stands explain less than half of them: a receiver whose jitter
 * is wider than the movement radius has few stands in its drift, and the drift is the stop. A
 * vehicle that stood still has a stand from its arrival to its departure, and a drift window
 * around it adds only its approach and departure (up to DRIFT_RADIUS_M of them: a walker's last
 * 80 s): such a drift is cut to its first and last stands, joining what lies between them.
 * Both lists in time order, stands not overlapping one another; linear.
 */
function drifting(drifts: StillSpan[], stands: readonly StillSpan[], timestamp: Float64Array): StillSpan[] {
  if (drifts.length === 0 || stands.length === 0) return drifts
  const kept: StillSpan[] = []
  let k = 0
  for (const drift of drifts) {
    const from = timestamp[drift.startIndex]
    const to = timestamp[drift.endIndex]
    while (k < stands.length && timestamp[stands[k].endIndex] <= from) k++
    let covered = 0
    let j = k
    for (; j < stands.length && timestamp[stands[j].startIndex] < to; j++) {
      covered += Math.min(to, timestamp[stands[j].endIndex]) - Math.max(from, timestamp[stands[j].startIndex])
    }
    if (covered * 2 < to - from) {
      kept.push(drift)
    } else {
      // Mostly stood: the drift only joins the stands it holds, from the first to the last, and
      // leaves their place as they found it (no weight: its mean counts the approach's fixes).
      const startIndex = Math.max(drift.startIndex, stands[k].startIndex)
      const endIndex = Math.min(drift.endIndex, stands[j - 1].endIndex)
      if (endIndex > startIndex) kept.push({ ...drift, startIndex, endIndex, weight: 0 })
    }
  }
  return kept
}

/**
 * A track that opens (or closes) a few seconds and metres from a stand, within QUEUE_RADIUS_M and
 * QUEUE_GAP_SECONDS, opens in that queue: the stand reaches the first (last) valid fix, as two
 * stands that close would be one stop. Otherwise a parked receiver's drift made a trip of its first
 * few fixes, before its first stand.
 */
function reachEdges(spans: StillSpan[], timestamp: Float64Array, latitude: Float64Array, longitude: Float64Array, valid: Uint8Array): void {
  const near = (span: StillSpan, i: number, j: number): boolean => {
    if (Math.abs(timestamp[j] - timestamp[i]) > QUEUE_GAP_SECONDS) return false
    for (let k = Math.min(i, j); k <= Math.max(i, j); k++) {
      if (valid[k] === FIX_NEW_SEGMENT && k > Math.min(i, j)) return false
      if (valid[k] !== 0 && metresBetween(latitude[k], longitude[k], span.latitude, span.longitude) > QUEUE_RADIUS_M) return false
    }
    return true
  }
  let first = 0
  while (first < valid.length && valid[first] === 0) first++
  let last = valid.length - 1
  while (last >= 0 && valid[last] === 0) last--
  // Copies: the spans may be the movement pass's own.
  const opening = spans[0]
  if (opening.startIndex > first && near(opening, first, opening.startIndex)) spans[0] = { ...opening, startIndex: first }
  const closing = spans[spans.length - 1]
  if (closing.endIndex < last && near(closing, closing.endIndex, last)) spans[spans.length - 1] = { ...closing, endIndex: last }
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
