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
import { columnsOf, type Fixes, type TrackColumns } from './columns'
import { metresBetween } from './geo'
import { isPlausiblePosition } from './validate'

export { isPlausiblePosition }

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

export function filterFixes(fixes: Fixes, options: FilterOptions = {}): FixFilter {
  const track = columnsOf(fixes)
  const { timestamp, latitude, longitude } = track
  const n = track.length
  const limit = (options.maxSpeedKmh ?? MAX_SPEED_KMH) / 3.6 // metres per second
  const valid = new Uint8Array(n)
  const reasons = new Uint8Array(n)
  // Accepted fixes in order, as a stack: the top is the last accepted, and outvoting pops.
  const accepted = new Int32Array(n)
  let top = 0
  // Fixes rejected for speed that agree with each other (each reachable from the one before).
  const chain: number[] = []

  for (let i = 0; i < n; i++) {
    if (!isPlausiblePosition(latitude[i], longitude[i]) || !Number.isFinite(timestamp[i])) {
      reasons[i] = REASON_COORDINATES
      continue
    }
    if (top === 0) {
      valid[i] = FIX_VALID
      accepted[top++] = i
      continue
    }
    const last = accepted[top - 1]
    if (!(timestamp[i] > timestamp[last])) {
      reasons[i] = REASON_ORDER
      continue
    }
    if (reachable(track, last, i, limit)) {
      valid[i] = FIX_VALID
      accepted[top++] = i
      if (chain.length !== 0) chain.length = 0
      continue
    }

    // Too fast from the last accepted fix: a spike, unless the spike is the last accepted fix.
    reasons[i] = REASON_SPEED
    const chainEnd = chain.length > 0 ? chain[chain.length - 1] : -1
    if (chainEnd < 0 || !(timestamp[i] > timestamp[chainEnd]) || !reachable(track, chainEnd, i, limit)) {
      chain.length = 0
    }
    chain.push(i)
    if (chain.length === OUTVOTE_FIXES) {
      const kept = outvote(track, chain, accepted, top, limit)
      if (kept >= 0) {
        for (let k = kept; k < top; k++) {
          valid[accepted[k]] = FIX_REJECTED
          reasons[accepted[k]] = REASON_SPEED
        }
        top = kept
        for (const c of chain) {
          valid[c] = FIX_VALID
          reasons[c] = REASON_NONE
          accepted[top++] = c
        }
        chain.length = 0
      }
    } else if (chain.length >= NEW_SEGMENT_FIXES) {
      for (const c of chain) {
        valid[c] = FIX_VALID
        reasons[c] = REASON_NONE
        accepted[top++] = c
      }
      valid[chain[0]] = FIX_NEW_SEGMENT
      chain.length = 0
    }
  }

  const rejected: number[] = []
  for (let i = 0; i < n; i++) if (valid[i] === FIX_REJECTED) rejected.push(i)
  return { valid, reasons, rejected }
}

/** Whether fix `to` can be reached from fix `from` (which is earlier) within the speed limit (m/s). */
function reachable(track: TrackColumns, from: number, to: number, limit: number): boolean {
  const { latitude, longitude, timestamp } = track
  return metresBetween(latitude[from], longitude[from], latitude[to], longitude[to]) <= limit * (timestamp[to] - timestamp[from])
}

/**
 * Whether the chain outvotes the last accepted fixes: it does if fewer than OUTVOTE_FIXES of them
 * (the island) stand against it, i.e. the chain's first fix is reachable from the accepted fix
 * just before the island, or the island is everything accepted so far (the track began with the
 * spike). Returns how many accepted fixes to keep (the island is the rest), or -1.
 */
function outvote(track: TrackColumns, chain: readonly number[], accepted: Int32Array, top: number, limit: number): number {
  const first = chain[0]
  for (let keep = top; keep > top - OUTVOTE_FIXES; keep--) {
    if (keep === 0) return 0
    if (reachable(track, accepted[keep - 1], first, limit)) return keep === top ? -1 : keep
  }
  return -1
}
