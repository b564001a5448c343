/**
 * Impossible fixes: which stored fixes track analysis must not trust.
 *
 * A rejected fix still belongs to the route (the route lists every stored fix); it only counts
 * neither in distance nor in stops. So the result is a flag per fix plus the rejected indices,
 * never a silently shortened list.
 *
 * Callers pass fixes sorted by timestamp (the history service sorts in SQL). A fix whose
 * timestamp is not after the last accepted fix (a duplicate timestamp, or out of order) is
 * rejected rather than reordered.
 */
import { metresBetween } from './geo'
import type { TrackPoint } from './types'

/** Faster than any vehicle the server tracks; a jump implying more is a bad fix. */
export const MAX_SPEED_KMH = 500

/**
 * Fixes that agree with each other but not with the last accepted fix outvote it: after this
 * many, the few accepted fixes just before them (fewer than this many) are the spike, not they.
 * This is what rescues a track whose very first fix is the spike.
 */
export const OUTVOTE_FIXES = 3

/**
 * After this many consistent fixes still unreachable from the accepted ones, the device really is
 * elsewhere (e.g. it reported a stale position before its first real fix): accept them and
 * start a new segment. The jump between the segments counts as no distance.
 */
export const NEW_SEGMENT_FIXES = 10

/** Values of `FixFilter.valid`. */
export const FIX_REJECTED = 0
export const FIX_VALID = 1
/** Valid, but unreachable from the fix before it: no distance is counted across the jump. */
export const FIX_NEW_SEGMENT = 2

/** Values of `FixFilter.reasons`. */
export const REASON_NONE = 0
/** NaN or infinite values, latitude/longitude out of range, or exactly 0/0 (a "no fix" marker). */
export const REASON_COORDINATES = 1
/** Timestamp not after the last accepted fix: a duplicate or out of order. */
export const REASON_ORDER = 2
/** Reaching it from the neighbouring accepted fixes needs more than MAX_SPEED_KMH. */
export const REASON_SPEED = 3

export interface FixFilter {
  /** Per input index: FIX_REJECTED (0), FIX_VALID (1) or FIX_NEW_SEGMENT (2); non-zero means use it. */
  valid: Uint8Array
  /** Per input index: why it was rejected (REASON_*), REASON_NONE when it was not. */
  reasons: Uint8Array
  /** Input indices of the rejected fixes, ascending. */
  rejected: number[]
}

export interface FilterOptions {
  maxSpeedKmh?: number
}

/** True when latitude/longitude can be a real position (finite, in range, not the 0/0 marker). */
export function isPlausiblePosition(latitude: number, longitude: number): boolean {
  // Comparisons are false for NaN, so NaN fails here too.
  if (!(latitude >= -90 && latitude <= 90 && longitude >= -180 && longitude <= 180)) return false
  return !(latitude === 0 && longitude === 0)
}

export function filterFixes(points: readonly TrackPoint[], options: FilterOptions = {}): FixFilter {
  const n = points.length
  const maxMetresPerSecond = (options.maxSpeedKmh ?? MAX_SPEED_KMH) / 3.6
  const valid = new Uint8Array(n)
  const reasons = new Uint8Array(n)

  /** Whether `to` can be reached from `from` (which is earlier) without exceeding the limit. */
  const reachable = (from: TrackPoint, to: TrackPoint): boolean =>
    metresBetween(from.latitude, from.longitude, to.latitude, to.longitude) <=
    maxMetresPerSecond * (to.timestamp - from.timestamp)

  // The last accepted fixes, newest first, for outvoting; and how many were accepted in all.
  let last = -1
  let beforeLast = -1
  let acceptedCount = 0
  // Rejected-for-speed fixes that agree with each other (each reachable from the previous one).
  const chain: number[] = []

  const accept = (i: number, flag: number) => {
    valid[i] = flag
    reasons[i] = REASON_NONE
    beforeLast = last
    last = i
    acceptedCount++
  }

  const unaccept = (i: number) => {
    valid[i] = FIX_REJECTED
    reasons[i] = REASON_SPEED
    acceptedCount--
  }

  /** The chain outvotes the last one or two accepted fixes if they alone stand against it. */
  const tryOutvote = (): boolean => {
    const first = points[chain[0]]
    const island: number[] = []
    for (const candidate of [last, beforeLast]) {
      if (candidate < 0) break
      if (reachable(points[candidate], first)) {
        for (const i of island) unaccept(i)
        last = candidate // accepting the chain refills beforeLast
        for (const i of chain) accept(i, FIX_VALID)
        return true
      }
      island.push(candidate)
    }
    if (island.length === acceptedCount) {
      // Everything accepted so far was the spike (typically the track's first fix or two).
      for (const i of island) unaccept(i)
      last = -1
      beforeLast = -1
      for (const i of chain) accept(i, FIX_VALID)
      return true
    }
    return false
  }

  for (let i = 0; i < n; i++) {
    const point = points[i]
    if (!isPlausiblePosition(point.latitude, point.longitude) || !Number.isFinite(point.timestamp)) {
      reasons[i] = REASON_COORDINATES
      continue
    }
    if (last >= 0 && !(point.timestamp > points[last].timestamp)) {
      reasons[i] = REASON_ORDER
      continue
    }
    if (last < 0 || reachable(points[last], point)) {
      accept(i, FIX_VALID)
      chain.length = 0
      continue
    }

    reasons[i] = REASON_SPEED
    const chainEnd = chain.length > 0 ? points[chain[chain.length - 1]] : undefined
    if (chainEnd !== undefined && point.timestamp > chainEnd.timestamp && reachable(chainEnd, point)) {
      chain.push(i)
    } else {
      chain.length = 0
      chain.push(i)
    }
    if (chain.length === OUTVOTE_FIXES && tryOutvote()) {
      chain.length = 0
    } else if (chain.length >= NEW_SEGMENT_FIXES) {
      accept(chain[0], FIX_NEW_SEGMENT)
      for (let k = 1; k < chain.length; k++) accept(chain[k], FIX_VALID)
      chain.length = 0
    }
  }

  const rejected: number[] = []
  for (let i = 0; i < n; i++) if (valid[i] === FIX_REJECTED) rejected.push(i)
  return { valid, reasons, rejected }
}
