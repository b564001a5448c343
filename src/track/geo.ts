/**
 * Geodesic distance for track analysis: cheap-ruler's flat-earth approximation of the WGS84
 * ellipsoid, with one ruler per narrow latitude band so that a track of any length stays exact.
 *
 * Why bands: a ruler is exact at its own latitude; its east-west scale drifts by about
 * tan(lat) × Δlat (radians) away from it. Bands of 0.01° keep every ruler within 0.005° of the
 * latitude it measures at, i.e. under 0.02% up to 70° N/S, on top of cheap-ruler's own error
 * (about 0.1% at 500 km, far less at the few-metre to few-kilometre steps between fixes).
 * Rulers are cached, so measuring costs two multiplications and a square root.
 */
import CheapRuler from 'cheap-ruler'

const BAND_DEGREES = 0.01

const rulers = new Map<number, CheapRuler>()
let lastBand = Number.NaN
let lastRuler: CheapRuler = new CheapRuler(0, 'metres')

/** The metre ruler for the latitude band that holds `latitude`. */
export function rulerAt(latitude: number): CheapRuler {
  const band = Math.floor(latitude / BAND_DEGREES)
  if (band === lastBand) return lastRuler
  let ruler = rulers.get(band)
  if (ruler === undefined) {
    ruler = new CheapRuler((band + 0.5) * BAND_DEGREES, 'metres')
    rulers.set(band, ruler)
  }
  lastBand = band
  lastRuler = ruler
  return ruler
}

/** Longitude difference folded into [-180, 180), so a step across the antimeridian is short. */
export function wrapLongitude(delta: number): number {
  if (delta >= -180 && delta < 180) return delta
  return ((((delta + 180) % 360) + 360) % 360) - 180
}

/** Geodesic distance in metres between two WGS84 positions (degrees). */
export function metresBetween(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const ruler = rulerAt((lat1 + lat2) / 2)
  const dx = wrapLongitude(lon2 - lon1) * ruler.kx
  const dy = (lat2 - lat1) * ruler.ky
  return Math.sqrt(dx * dx + dy * dy)
}
