import type { TrackColumns } from './columns'
import { metresBetween } from './geo'
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
    point.speed = previous ? speedBetween(previous.timestamp, previous.latitude, previous.longitude, point.timestamp, point.latitude, point.longitude) : 0
  }
  return points as (P & { speed: number })[]
}

/** The same for columns: every NaN speed is replaced, in place. */
export function fillMissingSpeedColumn(track: TrackColumns): void {
  const { timestamp, latitude, longitude, speed } = track
  for (let i = 0; i < track.length; i++) {
    if (!Number.isNaN(speed[i])) continue
    speed[i] = i === 0 ? 0 : speedBetween(timestamp[i - 1], latitude[i - 1], longitude[i - 1], timestamp[i], latitude[i], longitude[i])
  }
}

/** km/h from one fix to the next, 0 when no time passed between them. */
function speedBetween(time1: number, lat1: number, lon1: number, time2: number, lat2: number, lon2: number): number {
  const seconds = time2 - time1
  return seconds > 0 ? (metresBetween(lat1, lon1, lat2, lon2) / seconds) * 3.6 : 0
}
