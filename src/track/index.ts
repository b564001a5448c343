/**
 * Track analysis: pure functions over one device's stored fixes (sorted by timestamp), no I/O.
 * `analyseTrack` is the entry point for the history service; the parts are exported for tests,
 * benchmarks and anyone who needs only one of them.
 */
export type { TrackPoint } from './types'
export {
  allocateColumns,
  columnsOf,
  isColumns,
  selectColumns,
  truncateColumns,
  type Fixes,
  type TrackColumns,
} from './columns'
export { analyseTrack, analyseTrackInPasses, DEFAULT_STOP_THRESHOLD_SECONDS, type AnalyseOptions, type TrackAnalysis } from './analyse'
export {
  filterFixes,
  MAX_SPEED_KMH,
  OUTVOTE_FIXES,
  NEW_SEGMENT_FIXES,
  FIX_REJECTED,
  FIX_VALID,
  FIX_NEW_SEGMENT,
  REASON_NONE,
  REASON_COORDINATES,
  REASON_ORDER,
  REASON_SPEED,
  type FixFilter,
  type FilterOptions,
} from './filters'
export { reportingGaps, type Gap } from './gaps'
export {
  measureMovement,
  DEFAULT_GAP_THRESHOLD_SECONDS,
  movedBetween,
  pathLength,
  MOVEMENT_RADIUS_M,
  STAND_SECONDS,
  STAND_RADIUS_M,
  STILL_SPEED_MPS,
  JITTER_ALLOWANCE_M,
  OUTLIER_LIMIT_M,
  PATH_STEP_M,
  type Movement,
  type Silence,
  type StillSpan,
} from './distance'
export {
  detectStops,
  STOP_RADIUS_M,
  BRIEF_EXCURSION_SECONDS,
  QUEUE_RADIUS_M,
  QUEUE_GAP_SECONDS,
  DRIFT_SECONDS,
  DRIFT_RADIUS_M,
  type Stop,
  type StopOptions,
} from './stops'
export {
  buildTravels,
  SPEED_WINDOW_SECONDS,
  SPEED_WINDOW_METRES,
  type Travel,
  type TravelPlace,
} from './travels'
export { metresBetween, wrapLongitude } from './geo'
export { fillMissingSpeeds, fillMissingSpeedColumn } from './speeds'
export { derivedSpeedKmh, motionOf, motionState, MOVING_SPEED_KMH, type MotionState, type TimedPosition } from './motion'
export {
  checkPosition,
  isPlausiblePosition,
  isTimely,
  judgeFix,
  timeWindow,
  DEFAULT_MAX_FIX_AGE_DAYS,
  MAX_FUTURE_SECONDS,
  type FixVerdict,
  type PositionCheck,
  type ReportedPosition,
  type TimeWindow,
} from './validate'
