/**
 * A track as columns: entry i of each array is fix i. This is how the history service holds a
 * long window: 32 bytes a fix, where an object per fix costs about 60 bytes more (measured in Bun:
 * 61 bytes an object and its array slot), and a 31-day window at 1 Hz is 2.7 million fixes.
 * Every analysis function takes either form; they work on columns inside.
 */
import type { TrackPoint } from './types'

export interface TrackColumns {
  /** the number of fixes; every array has exactly this length */
  readonly length: number
  /** Unix seconds */
  readonly timestamp: Float64Array
  /** WGS84 degrees */
  readonly latitude: Float64Array
  readonly longitude: Float64Array
  /** km/h; NaN where the device sent none */
  readonly speed: Float64Array
}

/** Fixes sorted by timestamp, as objects or as columns. */
export type Fixes = readonly TrackPoint[] | TrackColumns

/** Columns for `length` fixes, zero-filled. */
export function allocateColumns(length: number): TrackColumns {
  return {
    length,
    timestamp: new Float64Array(length),
    latitude: new Float64Array(length),
    longitude: new Float64Array(length),
    speed: new Float64Array(length),
  }
}

/** The first `length` fixes of `track`, sharing its memory. */
export function truncateColumns(track: TrackColumns, length: number): TrackColumns {
  if (length === track.length) return track
  return {
    length,
    timestamp: track.timestamp.subarray(0, length),
    latitude: track.latitude.subarray(0, length),
    longitude: track.longitude.subarray(0, length),
    speed: track.speed.subarray(0, length),
  }
}

/** A copy of the fixes whose `keep` entry is non-zero, in order. */
export function selectColumns(track: TrackColumns, keep: Uint8Array): TrackColumns {
  let count = 0
  for (let i = 0; i < track.length; i++) if (keep[i] !== 0) count++
  const selected = allocateColumns(count)
  let j = 0
  for (let i = 0; i < track.length; i++) {
    if (keep[i] === 0) continue
    selected.timestamp[j] = track.timestamp[i]
    selected.latitude[j] = track.latitude[i]
    selected.longitude[j] = track.longitude[i]
    selected.speed[j] = track.speed[i]
    j++
  }
  return selected
}

export function isColumns(fixes: Fixes): fixes is TrackColumns {
  return !Array.isArray(fixes)
}

/** The fixes as columns: columns as they are, objects copied (a null speed becomes NaN). */
export function columnsOf(fixes: Fixes): TrackColumns {
  if (isColumns(fixes)) return fixes
  const points = fixes as readonly TrackPoint[]
  const track = allocateColumns(points.length)
  for (let i = 0; i < points.length; i++) {
    const point = points[i]
    track.timestamp[i] = point.timestamp
    track.latitude[i] = point.latitude
    track.longitude[i] = point.longitude
    track.speed[i] = point.speed ?? Number.NaN
  }
  return track
}
