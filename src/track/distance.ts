/**
 * Distance along a track, counting movement only.
 *
 * GPS jitter while parked is not movement, but slow real movement is (a walker at 1 Hz moves
 * about 1 m per fix, less than the jitter). So movement is never decided per step; it is decided
 * over a window of time and space. From an anchor fix, the fixes that follow form a stay while
 * they remain within MOVEMENT_RADIUS_M of the stay's (time-weighted) centre. The first fix that
 * leaves the radius ends the stay and anchors the next one. Then:
 * - if the stay drifted no faster than STILL_SPEED_MPS, the device stood there: its fixes are
 *   jitter and count nothing; the move is the geodesic from its anchor to the leaving fix. The
 *   stay is recorded as a still span, which stop detection builds on;
 * - otherwise it was slow movement (a walker, a bus in a queue): the move is the path through
 *   its fixes or its chord (see PATH_STEP_M), spread over its fixes by time.
 * At vehicle speeds the radius is left at almost every fix and this is the plain geodesic sum.
 *
 * Distance is returned as a running total per fix, so the distance between any two fixes is a
 * subtraction, and travels add up to the route's total exactly.
 */
import { FIX_NEW_SEGMENT } from './filters'
import { metresBetween, rulerAt, wrapLongitude } from './geo'
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
 * counting the jump): movement distance per fix and the spans where the device stood still.
 */
export function measureMovement(points: readonly TrackPoint[], valid: Uint8Array): Movement {
  const n = points.length
  const cumulative = new Float64Array(n)
  const stillSpans: StillSpan[] = []
  let travelled = 0

  // The current stay: its anchor fix, a local metric frame at the anchor, running sums of the
  // time-weighted centre (trapezoids between consecutive fixes) in metres from the anchor, and
  // the path length through its fixes.
  let anchor = -1
  let anchorLat = 0
  let anchorLon = 0
  let kx = 0
  let ky = 0
  let weight = 0
  let sumX = 0
  let sumY = 0
  let path = 0
  let steps = 0
  let previous = -1
  let previousX = 0
  let previousY = 0
  let lastStill = -1
  // The longest stand within the stay so far: time spent within STAND_RADIUS_M of a fix.
  let standFrom = -1
  let standX = 0
  let standY = 0
  let longestStand = 0

  const startStay = (i: number) => {
    const point = points[i]
    const ruler = rulerAt(point.latitude)
    anchor = i
    anchorLat = point.latitude
    anchorLon = point.longitude
    kx = ruler.kx
    ky = ruler.ky
    weight = 0
    sumX = 0
    sumY = 0
    path = 0
    steps = 0
    previous = i
    previousX = 0
    previousY = 0
    lastStill = i
    standFrom = i
    standX = 0
    standY = 0
    longestStand = 0
  }

  /** Whether the current stay was standing still; if so, it is recorded. */
  const closeStay = (): boolean => {
    if (lastStill === anchor) return false
    const first = points[anchor]
    const last = points[lastStill]
    const seconds = last.timestamp - first.timestamp
    if (seconds < STAND_SECONDS) return false
    if (longestStand < STAND_SECONDS) {
      const drift = metresBetween(first.latitude, first.longitude, last.latitude, last.longitude)
      if (drift - JITTER_ALLOWANCE_M > STILL_SPEED_MPS * seconds) return false // slow movement
    }
    const centreX = weight > 0 ? sumX / weight : 0
    const centreY = weight > 0 ? sumY / weight : 0
    stillSpans.push({
      startIndex: anchor,
      endIndex: lastStill,
      latitude: anchorLat + centreY / ky,
      longitude: wrapLongitude(anchorLon + centreX / kx),
      weight,
    })
    return true
  }

  /** Offset in metres of fix i from the current stay's centre. */
  const offsetFromCentre = (i: number, centreX: number, centreY: number): number => {
    const point = points[i]
    const dx = wrapLongitude(point.longitude - anchorLon) * kx - centreX
    const dy = (point.latitude - anchorLat) * ky - centreY
    return Math.sqrt(dx * dx + dy * dy)
  }

  /**
   * Ends the current stay at fix `end` (the fix that left the radius, or the stay's own last
   * fix when the track or segment ends) and returns the running total at `end`.
   */
  const settleStay = (end: number): number => {
    const base = cumulative[anchor]
    const from = points[anchor]
    const to = points[end]
    const stood = closeStay()
    if (stood && end === lastStill) return base // ended standing: nothing moved
    let moved: number
    if (stood) {
      // It came in to where it stood, and left from there; its jitter there is no movement.
      const stand = stillSpans[stillSpans.length - 1]
      moved =
        metresBetween(from.latitude, from.longitude, stand.latitude, stand.longitude) +
        metresBetween(stand.latitude, stand.longitude, to.latitude, to.longitude)
    } else {
      moved = metresBetween(from.latitude, from.longitude, to.latitude, to.longitude)
      const before = points[previous]
      const along = end === previous ? path : path + metresBetween(before.latitude, before.longitude, to.latitude, to.longitude)
      const alongSteps = end === previous ? steps : steps + 1
      // Net progress well above the noise between fixes (a vehicle): the path through them, which
      // follows curves. Less (a walker, a runner): the chord, in which their noise cancels.
      if (moved >= PATH_STEP_M * alongSteps) moved = along
      // Spread over the stay's fixes by time, so speeds over short windows stay smooth.
      const seconds = to.timestamp - from.timestamp
      for (let k = anchor + 1; k < end; k++) cumulative[k] = base + (moved * (points[k].timestamp - from.timestamp)) / seconds
    }
    cumulative[end] = base + moved
    return base + moved
  }

  for (let i = 0; i < n; i++) {
    const flag = valid[i]
    if (flag === 0) {
      cumulative[i] = travelled
      continue
    }
    if (anchor < 0 || flag === FIX_NEW_SEGMENT) {
      // A new segment: the jump to it is not movement, but the stay before it may have been.
      if (anchor >= 0) travelled = lastStill > anchor ? settleStay(lastStill) : travelled
      startStay(i)
      cumulative[i] = travelled
      continue
    }

    const point = points[i]
    const x = wrapLongitude(point.longitude - anchorLon) * kx
    const y = (point.latitude - anchorLat) * ky
    const centreX = weight > 0 ? sumX / weight : 0
    const centreY = weight > 0 ? sumY / weight : 0
    const offset = Math.sqrt((x - centreX) * (x - centreX) + (y - centreY) * (y - centreY))

    if (offset <= MOVEMENT_RADIUS_M) {
      // Within the radius. Weigh each fix by the time it represents (parked trackers report
      // rarely, and the fix they sat at for 20 minutes is where they stood).
      const halfSeconds = (point.timestamp - points[previous].timestamp) / 2
      sumX += (previousX + x) * halfSeconds
      sumY += (previousY + y) * halfSeconds
      weight += 2 * halfSeconds
      path += Math.sqrt((x - previousX) * (x - previousX) + (y - previousY) * (y - previousY))
      steps++
      const standDx = x - standX
      const standDy = y - standY
      if (standDx * standDx + standDy * standDy <= STAND_RADIUS_M * STAND_RADIUS_M) {
        const stood = point.timestamp - points[standFrom].timestamp
        if (stood > longestStand) longestStand = stood
      } else {
        standFrom = i
        standX = x
        standY = y
      }
      previous = i
      previousX = x
      previousY = y
      lastStill = i
      cumulative[i] = travelled
      continue
    }

    if (offset <= OUTLIER_LIMIT_M) {
      let next = i + 1
      while (next < n && valid[next] === 0) next++
      if (next < n && valid[next] !== FIX_NEW_SEGMENT && offsetFromCentre(next, centreX, centreY) <= MOVEMENT_RADIUS_M) {
        // A lone outlier: part of the stay's time, not of its centre, and not a departure.
        lastStill = i
        cumulative[i] = travelled
        continue
      }
    }

    // It left the radius: the stay is over, and this fix anchors the next one.
    travelled = settleStay(i)
    cumulative[i] = travelled
    startStay(i)
  }
  // The track ends inside the last stay: if that was slow movement, it still counts.
  if (anchor >= 0 && lastStill > anchor) travelled = settleStay(lastStill)

  return { cumulative, stillSpans }
}
