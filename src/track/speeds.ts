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
    const seconds = previous ? points[i].timestamp - previous.timestamp : 0
    points[i].speed = seconds > 0 ? (metresBetween(previous.latitude, previous.longitude, points[i].latitude, points[i].longitude) / seconds) * 3.6 : 0
  }
  return points as (P & { speed: number })[]
}
