/** A stored fix as track analysis sees it. Speed in km/h, or null when the device sent none. */
export interface TrackPoint {
  timestamp: number
  latitude: number
  longitude: number
  speed: number | null
}
