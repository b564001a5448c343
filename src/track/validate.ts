/**
 * What makes a fix or an event worth storing, whatever protocol brought it: the one place where a
 * position is judged possible or plausible, and a timestamp timely. Pure, no I/O: the ingest
 * pipeline, track analysis (filters.ts) and anyone else ask here.
 */

/** A fix more than this far ahead of the server clock is refused (a broken device clock). */
export const MAX_FUTURE_SECONDS = 86_400
/** A fix older than this many days is refused (a device clock reset to 1970 or 2000); MAX_FIX_AGE_DAYS. */
export const DEFAULT_MAX_FIX_AGE_DAYS = 365

/**
 * `impossible`: not a number, or outside [-90, 90] × [-180, 180]; `null_island`: exactly 0/0,
 * the placeholder devices send before their first fix; `plausible`: anything else.
 */
export type PositionCheck = 'impossible' | 'null_island' | 'plausible'

export function checkPosition(latitude: number, longitude: number): PositionCheck {
  // comparisons are false for NaN, so NaN is impossible too
  if (!(latitude >= -90 && latitude <= 90 && longitude >= -180 && longitude <= 180)) return 'impossible'
  return latitude === 0 && longitude === 0 ? 'null_island' : 'plausible'
}

/** True when latitude/longitude can be a real position (finite, in range, not the 0/0 marker). */
export function isPlausiblePosition(latitude: number, longitude: number): boolean {
  return checkPosition(latitude, longitude) === 'plausible'
}

/** The timestamps the server takes: not more than a day ahead, not older than MAX_FIX_AGE_DAYS. */
export interface TimeWindow {
  /** the server's clock, Unix seconds */
  nowSeconds: number
  maxAgeSeconds: number
}

export function timeWindow(nowSeconds: number, maxAgeDays = DEFAULT_MAX_FIX_AGE_DAYS): TimeWindow {
  return { nowSeconds, maxAgeSeconds: maxAgeDays * 86_400 }
}

/** Whether a timestamp (Unix seconds, whole) falls in the window. */
export function isTimely(timestamp: number, window: TimeWindow): boolean {
  return Number.isFinite(timestamp) && timestamp >= window.nowSeconds - window.maxAgeSeconds && timestamp <= window.nowSeconds + MAX_FUTURE_SECONDS
}

/** A fix as a device reported it: only what the verdict needs. */
export interface ReportedPosition {
  timestamp: number
  latitude: number
  longitude: number
  /** false when the device itself says the fix is not valid (no GPS lock, 0 satellites) */
  valid: boolean
}

/**
 * `refused`: not stored (impossible coordinates, or a time outside the window); `kept`: stored,
 * but never the device's location (the device called it invalid, or it is 0/0); `locatable`:
 * stored, and may become the device's location.
 */
export type FixVerdict = 'refused' | 'kept' | 'locatable'

export function judgeFix(fix: ReportedPosition, window: TimeWindow): FixVerdict {
  const position = checkPosition(fix.latitude, fix.longitude)
  if (position === 'impossible' || !isTimely(Math.floor(fix.timestamp), window)) return 'refused'
  return fix.valid && position === 'plausible' ? 'locatable' : 'kept'
}
