import type { TrackColumns } from './columns'
import { derivedSpeedKmh } from './motion'
import type { TrackPoint } from './types'

/**
 * Gives every point without a reported speed one from the previous point (km/h; 0 for the first
 * point or a repeated timestamp), so a listed route never shows a moving vehicle at 0 km/h.
 * Changes the points in place and returns them typed as having a speed.
 */
export function fillMissingSpeeds<P extends TrackPoint>(points: P[]): (P & { speed: number })[] {
  for (let i = 0; i < points.length; i++) {
    if (points[i].speed !== null) continue
    const previous = points[i - 1]
    const point = points[i]
    point.speed = previous ? derivedSpeedKmh(previous.timestamp, previous.latitude, previous.longitude, point.timestamp, point.latitude, point.longitude) : 0
  }
  return points as (P & { speed: number })[]
}

/** The same for columns: every NaN speed is replaced, in place. */
export function fillMissingSpeedColumn(track: TrackColumns): void {
  const { timestamp, latitude, longitude, speed } = track
  for (let i = 0; i < track.length; i++) {
    if (!Number.isNaN(speed[i])) continue
    speed[i] = i === 0 ? 0 : derivedSpeedKmh(timestamp[i - 1], latitude[i - 1], longitude[i - 1], timestamp[i], latitude[i], longitude[i])
  }
}
