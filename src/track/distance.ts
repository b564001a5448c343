/**
 * Distance along a track, counting movement only.
 *
 * GPS jitter while parked is not movement, but slow real movement is (a walker at 1 Hz moves
 * about 1 m per fix, less than the jitter). So movement is never decided per step; it is decided
 * over a window of time and space. From an anchor fix, the fixes that follow form a stay while
 * they remain within MOVEMENT_RADIUS_M of the stay's (time-weighted) centre. The first fix that
 * leaves the radius ends the stay and anchors the next one. Then:
 * - if the device stood there (see STAND_SECONDS), its fixes there are jitter and count nothing:
 *   the move is from the anchor to where it stood (the stay's centre) and on to the leaving fix.
 *   The stay is recorded as a still span, which stop detection builds on;
 * - otherwise it was slow movement (a walker, a bus in a queue): the move is the path through
 *   its fixes or its chord (see PATH_STEP_M), spread over its fixes by time.
 * At vehicle speeds the radius is left at almost every fix and this is the plain geodesic sum.
 *
 * Distance is returned as a running total per fix, so the distance between any two fixes is a
 * subtraction, and travels add up to the route's total exactly.
 *
 * Silence is not movement: when the device said nothing for longer than the no-data threshold
 * (DEFAULT_GAP_THRESHOLD_SECONDS) and then reports from somewhere else, nothing is known of how it
 * got there, so the jump counts no distance (as a new segment's does) and the silence is recorded
 * as a reporting gap (gaps.ts decides which are reported). A silence after which it reports from
 * the same place is part of the stay, as before: a parked tracker that sleeps is standing still.
 */
import { FIX_NEW_SEGMENT } from './filters'
import { metresBetween, rulerAt, wrapLongitude } from './geo'
import { columnsOf, type Fixes, type TrackColumns } from './columns'
import type { TrackPoint } from './types'

/**
 * Radius around the centre of a stay within which fixes are jitter. Parked receivers scatter
 * a few metres around their true position (the centre of a stay, not a single noisy fix, is the
 * reference, which halves the scatter seen); 10 m is above that and still small enough that a
 * stop's start and end are within a couple of seconds of the real ones at vehicle speeds.
 */
export const MOVEMENT_RADIUS_M = 10

/**
 * A stay is where the device stood (a still span) if it lasted at least STAND_SECONDS and
 * either it stood within STAND_RADIUS_M of one spot for STAND_SECONDS (a bus at a stop that
 * rolls in and creeps out, a tracker that goes quiet and wakes up at the same place), or its net
 * drift, first fix to last, was at most STILL_SPEED_MPS beyond JITTER_ALLOWANCE_M (a parked
 * receiver whose jitter is wider than the stand radius). A walker (1.2 m/s) also lingers within
 * the movement radius for ~15 s at a time, but drifts steadily and never stands.
 * Shorter pauses cannot be told from slow movement and are not stops, whatever the threshold.
 */
export const STAND_SECONDS = 10
export const STAND_RADIUS_M = 5
/** 0.5 m/s = 1.8 km/h */
export const STILL_SPEED_MPS = 0.5
/** Displacement that jitter alone can produce between two fixes of a parked device. */
export const JITTER_ALLOWANCE_M = 5

/**
 * A single fix that jumps out of the radius (by at most this much) while the next fix is back
 * inside is a jitter outlier, not a departure: it neither moves the anchor nor counts as distance.
 */
export const OUTLIER_LIMIT_M = 30

/**
 * When a stay turns out to be movement, its distance is the path through its fixes if it made
 * at least this much net progress per fix (a vehicle, ≥ 7 km/h at 1 Hz: the noise between
 * consecutive fixes is small beside the step, and the path follows the curves that a chord would
 * cut); otherwise the chord from its anchor to the fix that left (a walker: per-fix noise is
 * comparable to the step and would add up along the path, but cancels in the chord). Measured:
 * on the bus 304 recording the path recovers 0.8% that chords lose on bends; a jogger at 10 km/h
 * with strongly correlated 3 m noise reads ~3% long, with white noise much more.
 */
export const PATH_STEP_M = 2

/**
 * A silence longer than this, after which the device reports from somewhere else, ends the
 * movement: it counts no distance and no travel spans it (Traccar's reports end a trip on the
 * same default, its "minimal no data duration" of an hour). An hour is longer than any tracker's
 * reporting interval while it moves (seconds to a few minutes), even in a tunnel or a dead zone,
 * and shorter than the silence of a tracker that was switched off or lost its power.
 */
export const DEFAULT_GAP_THRESHOLD_SECONDS = 3600

/** A silence after which the device was elsewhere: the fixes either side of it (indices). */
export interface Silence {
  /** the last valid fix before it */
  beforeIndex: number
  /** the first valid fix after it */
  afterIndex: number
}

/** A span of fixes where the device stood still, with where it stood. */
export interface StillSpan {
  /** index of the first fix (where it arrived) */
  startIndex: number
  /** index of the last fix before it moved away */
  endIndex: number
  /** time-weighted centre of its fixes */
  latitude: number
  longitude: number
  /** seconds of time behind the centre (weights merges of spans) */
  weight: number
}

export interface Movement {
  /**
   * Per input index: metres moved from the first valid fix up to this fix. Non-decreasing;
   * within a stretch of slow movement it grows with time; rejected fixes take a value between
   * their neighbours' (never use them as ends).
   */
  cumulative: Float64Array
  /** Where the device stood still, in time order, not overlapping. */
  stillSpans: StillSpan[]
  /** Silences longer than the threshold after which the device was elsewhere, in time order. */
  silences: Silence[]
}

/** Metres moved between two fixes, by the movement logic (indices into the analysed points). */
export function movedBetween(movement: Movement, fromIndex: number, toIndex: number): number {
  return movement.cumulative[toIndex] - movement.cumulative[fromIndex]
}

/** The plain geodesic length through the given fixes (all, or those flagged valid), jitter included. */
export function pathLength(points: readonly TrackPoint[], valid?: Uint8Array): number {
  let total = 0
  let previous: TrackPoint | undefined
  for (let i = 0; i < points.length; i++) {
    if (valid !== undefined && valid[i] === 0) continue
    const point = points[i]
    if (previous !== undefined) {
      total += metresBetween(previous.latitude, previous.longitude, point.latitude, point.longitude)
    }
    previous = point
  }
  return total
}

/**
 * One linear pass over the valid fixes (`valid[i] !== 0`; FIX_NEW_SEGMENT restarts without
 * counting the jump): movement distance per fix, the spans where the device stood still, and the
 * silences longer than `gapThresholdSeconds` (> 0) after which it was elsewhere (no distance).
 */
export function measureMovement(fixes: Fixes, valid: Uint8Array, gapThresholdSeconds = DEFAULT_GAP_THRESHOLD_SECONDS): Movement {
  if (!(gapThresholdSeconds > 0)) throw new RangeError(`gap threshold must be > 0 seconds, got ${gapThresholdSeconds}`)
  return new MovementPass(columnsOf(fixes), valid, gapThresholdSeconds).run()
}

/** The state of the pass: the current stay and the running total (a class, for speed). */
class MovementPass {
  readonly cumulative: Float64Array
  readonly stillSpans: StillSpan[] = []
  readonly silences: Silence[] = []
  travelled = 0

  // The current stay: its anchor fix and a local metric frame there (metres east/north of it).
  anchor = -1
  anchorLat = 0
  anchorLon = 0
  kx = 0
  ky = 0
  // Its time-weighted centre: sums of trapezoids between consecutive fixes.
  weight = 0
  sumX = 0
  sumY = 0
  // The path through its fixes, and the last fix on it.
  path = 0
  steps = 0
  previous = -1
  previousX = 0
  previousY = 0
  // The last fix that belongs to it (the path's last, or a lone outlier after it).
  lastStill = -1
  // Its longest stand: time spent within STAND_RADIUS_M of one fix.
  standFrom = -1
  standX = 0
  standY = 0
  longestStand = 0

  readonly timestamp: Float64Array
  readonly latitude: Float64Array
  readonly longitude: Float64Array

  constructor(
    readonly track: TrackColumns,
    readonly valid: Uint8Array,
    readonly gapSeconds: number,
  ) {
    this.timestamp = track.timestamp
    this.latitude = track.latitude
    this.longitude = track.longitude
    this.cumulative = new Float64Array(track.length)
  }

  run(): Movement {
    const { timestamp, latitude, longitude, valid, cumulative } = this
    const n = this.track.length
    for (let i = 0; i < n; i++) {
      const flag = valid[i]
      if (flag === 0) {
        cumulative[i] = this.travelled
        continue
      }
      if (this.anchor < 0 || flag === FIX_NEW_SEGMENT) {
        // A new segment: the jump to it is not movement, but the stay before it may have been.
        if (this.anchor >= 0) this.breakAt(i)
        this.startStay(i)
        cumulative[i] = this.travelled
        continue
      }

      const x = wrapLongitude(longitude[i] - this.anchorLon) * this.kx
      const y = (latitude[i] - this.anchorLat) * this.ky
      const centreX = this.weight > 0 ? this.sumX / this.weight : 0
      const centreY = this.weight > 0 ? this.sumY / this.weight : 0
      const offset = Math.sqrt((x - centreX) * (x - centreX) + (y - centreY) * (y - centreY))

      if (offset <= MOVEMENT_RADIUS_M) {
        this.addStill(i, x, y)
        cumulative[i] = this.travelled
        continue
      }
      if (offset <= OUTLIER_LIMIT_M && this.nextReturns(i, centreX, centreY)) {
        // A lone outlier: part of the stay's time, not of its centre, and not a departure.
        this.lastStill = i
        cumulative[i] = this.travelled
        continue
      }
      // It left the radius: the stay is over, and this fix anchors the next one. After a long
      // silence the way it went is unknown: like a new segment, the jump counts nothing.
      if (timestamp[i] - timestamp[this.lastStill] > this.gapSeconds) {
        this.breakAt(i)
        this.startStay(i)
        cumulative[i] = this.travelled
        continue
      }
      this.travelled = this.settle(i)
      this.startStay(i)
    }
    // The track ends inside the last stay: if that was slow movement, it still counts.
    if (this.anchor >= 0 && this.lastStill > this.anchor) this.travelled = this.settle(this.lastStill)
    return { cumulative, stillSpans: this.stillSpans, silences: this.silences }
  }

  /**
   * The track breaks before fix i (a new segment, or somewhere else after a silence): the current
   * stay ends at its own last fix, and a silence longer than the threshold is noted.
   */
  breakAt(i: number): void {
    const before = this.lastStill
    if (this.timestamp[i] - this.timestamp[before] > this.gapSeconds) this.silences.push({ beforeIndex: before, afterIndex: i })
    if (before > this.anchor) this.travelled = this.settle(before)
  }

  startStay(i: number): void {
    const ruler = rulerAt(this.latitude[i])
    this.anchor = i
    this.anchorLat = this.latitude[i]
    this.anchorLon = this.longitude[i]
    this.kx = ruler.kx
    this.ky = ruler.ky
    this.weight = 0
    this.sumX = 0
    this.sumY = 0
    this.path = 0
    this.steps = 0
    this.previous = i
    this.previousX = 0
    this.previousY = 0
    this.lastStill = i
    this.standFrom = i
    this.standX = 0
    this.standY = 0
    this.longestStand = 0
  }

  /** Fix i (at x, y in the stay's frame) is within the radius: it joins the stay. */
  addStill(i: number, x: number, y: number): void {
    const time = this.timestamp[i]
    // Weigh each fix by the time it represents: parked trackers report rarely, and the fix they
    // sat at for 20 minutes is where they stood.
    const halfSeconds = (time - this.timestamp[this.previous]) / 2
    this.sumX += (this.previousX + x) * halfSeconds
    this.sumY += (this.previousY + y) * halfSeconds
    this.weight += 2 * halfSeconds
    const dx = x - this.previousX
    const dy = y - this.previousY
    this.path += Math.sqrt(dx * dx + dy * dy)
    this.steps++
    const sx = x - this.standX
    const sy = y - this.standY
    if (sx * sx + sy * sy <= STAND_RADIUS_M * STAND_RADIUS_M) {
      const stood = time - this.timestamp[this.standFrom]
      if (stood > this.longestStand) this.longestStand = stood
    } else {
      this.standFrom = i
      this.standX = x
      this.standY = y
    }
    this.previous = i
    this.previousX = x
    this.previousY = y
    this.lastStill = i
  }

  /** Whether the next valid fix after i is back within the radius of the stay's centre. */
  nextReturns(i: number, centreX: number, centreY: number): boolean {
    const { valid } = this
    const n = this.track.length
    let next = i + 1
    while (next < n && valid[next] === 0) next++
    if (next >= n || valid[next] === FIX_NEW_SEGMENT) return false
    const dx = wrapLongitude(this.longitude[next] - this.anchorLon) * this.kx - centreX
    const dy = (this.latitude[next] - this.anchorLat) * this.ky - centreY
    return Math.sqrt(dx * dx + dy * dy) <= MOVEMENT_RADIUS_M
  }

  /** Whether the current stay was standing still; if so, it is recorded as a still span. */
  closeStay(): boolean {
    const { anchor, lastStill } = this
    if (lastStill === anchor) return false
    const { timestamp, latitude, longitude } = this
    const seconds = timestamp[lastStill] - timestamp[anchor]
    if (seconds < STAND_SECONDS) return false
    if (this.longestStand < STAND_SECONDS) {
      const drift = metresBetween(latitude[anchor], longitude[anchor], latitude[lastStill], longitude[lastStill])
      if (drift - JITTER_ALLOWANCE_M > STILL_SPEED_MPS * seconds) return false // slow movement
    }
    const centreX = this.weight > 0 ? this.sumX / this.weight : 0
    const centreY = this.weight > 0 ? this.sumY / this.weight : 0
    this.stillSpans.push({
      startIndex: anchor,
      endIndex: lastStill,
      latitude: this.anchorLat + centreY / this.ky,
      longitude: wrapLongitude(this.anchorLon + centreX / this.kx),
      weight: this.weight,
    })
    return true
  }

  /**
   * Ends the current stay at fix `end` (the fix that left the radius, or the stay's own last
   * fix when the track or segment ends); returns the running total at `end`.
   */
  settle(end: number): number {
    const { timestamp, latitude, longitude, cumulative, anchor } = this
    const base = cumulative[anchor]
    if (this.lastStill === anchor) {
      // Left at the first fix after the anchor (a vehicle at speed, most fixes): a plain step.
      const step = base + metresBetween(latitude[anchor], longitude[anchor], latitude[end], longitude[end])
      cumulative[end] = step
      return step
    }
    const stood = this.closeStay()
    if (stood && end === this.lastStill) return base // ended standing: nothing moved
    let moved: number
    if (stood) {
      // It came in to where it stood, and left from there; its jitter there is no movement.
      const stand = this.stillSpans[this.stillSpans.length - 1]
      moved =
        metresBetween(latitude[anchor], longitude[anchor], stand.latitude, stand.longitude) +
        metresBetween(stand.latitude, stand.longitude, latitude[end], longitude[end])
    } else {
      moved = metresBetween(latitude[anchor], longitude[anchor], latitude[end], longitude[end])
      let along = this.path
      let alongSteps = this.steps
      if (end !== this.previous) {
        const before = this.previous
        along += metresBetween(latitude[before], longitude[before], latitude[end], longitude[end])
        alongSteps++
      }
      // Net progress well above the noise between fixes (a vehicle): the path through them, which
      // follows curves. Less (a walker, a runner): the chord, in which their noise cancels.
      if (moved >= PATH_STEP_M * alongSteps) moved = along
      // Spread over the stay's fixes by time, so speeds over short windows stay smooth.
      const seconds = timestamp[end] - timestamp[anchor]
      for (let k = anchor + 1; k < end; k++) cumulative[k] = base + (moved * (timestamp[k] - timestamp[anchor])) / seconds
    }
    cumulative[end] = base + moved
    return base + moved
  }
}
