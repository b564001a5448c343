/** Track analysis: pure functions over a device's stored fixes, no I/O. */
export type { TrackPoint } from './types'
export { analyseTrack, DEFAULT_STOP_THRESHOLD_SECONDS, type AnalyseOptions, type TrackAnalysis } from './analyse'
export {
  filterFixes,
  isPlausiblePosition,
  MAX_SPEED_KMH,
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
export {
  measureMovement,
  movedBetween,
  pathLength,
  MOVEMENT_RADIUS_M,
  STILL_SPEED_MPS,
  type Movement,
  type StillSpan,
} from './distance'
export { detectStops, STOP_RADIUS_M, type Stop, type StopOptions } from './stops'
export { buildTravels, SPEED_WINDOW_SECONDS, type Travel, type TravelPlace } from './travels'
export { metresBetween } from './geo'
