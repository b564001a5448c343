/**
 * The one entry point for the history service: filter, measure, find stops, build travels.
 *
 * The route's total distance is defined as the sum of the travels' distances, so the route and
 * the travels over the same range give the same number by construction.
 */
import { measureMovement } from './distance'
import { filterFixes, type FilterOptions } from './filters'
import { detectStops, type Stop } from './stops'
import { buildTravels, type Travel } from './travels'
import type { TrackPoint } from './types'

/** The contract's default `stop_threshold_time`. */
export const DEFAULT_STOP_THRESHOLD_SECONDS = 300

export interface AnalyseOptions extends FilterOptions {
  /** minimum stop duration in seconds, ≥ 0 (0: every span where the device stood still) */
  stopThresholdSeconds?: number
  /** stop radius in metres (default STOP_RADIUS_M) */
  stopRadiusMetres?: number
}

export interface TrackAnalysis {
  /** per input point: non-zero when the fix is trusted (see filters.ts) */
  valid: Uint8Array
  /** input indices of fixes ignored as impossible, ascending */
  rejected: number[]
  stops: Stop[]
  travels: Travel[]
  /** metres of movement: exactly the sum of the travels' distances */
  totalDistance: number
  /** last - first point timestamp (every point, as the route lists them), 0 without points */
  totalDuration: number
}

/**
 * Analyse one device's fixes, sorted by timestamp (fixes out of order are rejected, not
 * reordered). Linear in the number of fixes.
 */
export function analyseTrack(points: readonly TrackPoint[], options: AnalyseOptions = {}): TrackAnalysis {
  const { valid, rejected } = filterFixes(points, options)
  const movement = measureMovement(points, valid)
  const stops = detectStops(points, valid, movement, {
    thresholdSeconds: options.stopThresholdSeconds ?? DEFAULT_STOP_THRESHOLD_SECONDS,
    radiusMetres: options.stopRadiusMetres,
  })
  const travels = buildTravels(points, valid, movement, stops)

  let totalDistance = 0
  for (const travel of travels) totalDistance += travel.distance
  const totalDuration = points.length > 0 ? points[points.length - 1].timestamp - points[0].timestamp : 0

  return { valid, rejected, stops, travels, totalDistance, totalDuration }
}
