/**
 * The one entry point for the history service: filter, measure, find stops and reporting gaps,
 * build travels.
 *
 * The route's total distance is defined as the sum of the travels' distances, so the route and
 * the travels over the same range give the same number by construction; a gap's displacement is
 * in neither.
 */
import { columnsOf, type Fixes } from './columns'
import { DEFAULT_GAP_THRESHOLD_SECONDS, measureMovement } from './distance'
import { filterFixes, type FilterOptions } from './filters'
import { reportingGaps, type Gap } from './gaps'
import { detectStops, type Stop } from './stops'
import { buildTravels, type Travel } from './travels'

/** The contract's default `stop_threshold_time`. */
export const DEFAULT_STOP_THRESHOLD_SECONDS = 300

export interface AnalyseOptions extends FilterOptions {
  /** minimum stop duration in seconds, ≥ 0 (0: every span where the device stood still) */
  stopThresholdSeconds?: number
  /** stop radius in metres (default STOP_RADIUS_M) */
  stopRadiusMetres?: number
  /** a silence longer than this (seconds, > 0), after which the device was elsewhere, is a gap (default DEFAULT_GAP_THRESHOLD_SECONDS) */
  gapThresholdSeconds?: number
}

export interface TrackAnalysis {
  /** per input point: non-zero when the fix is trusted (see filters.ts) */
  valid: Uint8Array
  /** input indices of fixes ignored as impossible, ascending */
  rejected: number[]
  stops: Stop[]
  /** silences after which the device was elsewhere (gaps.ts): in no stop and no travel */
  gaps: Gap[]
  travels: Travel[]
  /** metres of movement: exactly the sum of the travels' distances */
  totalDistance: number
  /** last - first point timestamp (every point, as the route lists them), 0 without points */
  totalDuration: number
}

/**
 * Analyse one device's fixes, sorted by timestamp (fixes out of order are rejected, not
 * reordered), as objects or as columns. Linear in the number of fixes; besides the input it holds
 * about 14 bytes a fix.
 */
export function analyseTrack(fixes: Fixes, options: AnalyseOptions = {}): TrackAnalysis {
  const passes = analyseTrackInPasses(fixes, options)
  for (;;) {
    const pass = passes.next()
    if (pass.done) return pass.value
  }
}

/**
 * analyseTrack, pausing between its passes (filter, measure, stops and travels): each `next()`
 * runs one, so a caller serving others meanwhile (history/turns.ts) holds the thread for one
 * pass at a time — at most ~35 ms for a month of fixes every 5 s, where the whole was up to 90.
 */
export function* analyseTrackInPasses(fixes: Fixes, options: AnalyseOptions = {}): Generator<void, TrackAnalysis, void> {
  const track = columnsOf(fixes)
  const { valid, rejected } = filterFixes(track, options)
  yield
  const movement = measureMovement(track, valid, options.gapThresholdSeconds ?? DEFAULT_GAP_THRESHOLD_SECONDS)
  yield
  const stops = detectStops(track, valid, movement, {
    thresholdSeconds: options.stopThresholdSeconds ?? DEFAULT_STOP_THRESHOLD_SECONDS,
    radiusMetres: options.stopRadiusMetres,
  })
  const gaps = reportingGaps(track, movement, stops)
  const travels = buildTravels(track, valid, movement, stops, gaps)

  let totalDistance = 0
  for (const travel of travels) totalDistance += travel.distance
  const { timestamp, length } = track
  const totalDuration = length > 0 ? timestamp[length - 1] - timestamp[0] : 0

  return { valid, rejected, stops, gaps, travels, totalDistance, totalDuration }
}
