/**
 * Geofence areas on a Leaflet map, as the API has them: a GeoJSON Polygon ([longitude, latitude]
 * points) or a Circle (centre [latitude, longitude], radius in metres). An edge whose longitudes
 * differ by more than 180° crosses the antimeridian the short way round (as the server reads it),
 * so a ring is drawn with continuous longitudes (179 → 181, not 179 → -179 across the world), and
 * an area reaching past ±180° is drawn a second time a world away, so that it shows on either side.
 */
import L from 'leaflet'
import type { GeofenceArea } from './types'

/** a longitude within [-180, 180) */
export const wrapLongitude = (lng: number) => ((((lng + 180) % 360) + 360) % 360) - 180

/** metres a degree of latitude spans on the mean sphere, as Leaflet and the server measure */
const METRES_PER_DEGREE = (Math.PI * 6_371_000) / 180

/** GeoJSON ring → [lat, lng] with each longitude within 180° of the one before it; the first near `near` */
export function unwrapRing(ring: readonly (readonly number[])[], near?: number): L.LatLngTuple[] {
  const out: L.LatLngTuple[] = []
  let previous = near ?? null
  for (const [lon, lat] of ring) {
    let x = lon
    if (previous !== null) {
      while (x - previous > 180) x -= 360
      while (x - previous < -180) x += 360
    }
    out.push([lat, x])
    previous = x
  }
  return out
}

/** the rings of a polygon, continuous, shifted so that most of the outer ring lies within ±180° */
function polygonRings(coordinates: readonly (readonly (readonly number[])[])[]): L.LatLngTuple[][] {
  const outer = unwrapRing(coordinates[0] ?? [])
  const rings = [outer, ...coordinates.slice(1).map((hole) => unwrapRing(hole, outer[0]?.[1]))]
  const mean = outer.reduce((sum, p) => sum + p[1], 0) / Math.max(1, outer.length)
  const shift = mean > 180 ? -360 : mean < -180 ? 360 : 0
  return shift === 0 ? rings : rings.map((ring) => ring.map(([lat, lng]) => [lat, lng + shift] as L.LatLngTuple))
}

/** how far a circle reaches east and west of its centre, in degrees of longitude */
function circleHalfWidth(latitude: number, radius: number): number {
  const cos = Math.cos((latitude * Math.PI) / 180)
  return cos < 1e-6 ? 360 : radius / (METRES_PER_DEGREE * cos)
}

/** the world copies an area spanning `[west, east]` needs: itself, and one a world away where it reaches past ±180° */
function copies(west: number, east: number): number[] {
  const shifts = [0]
  if (east > 180) shifts.push(-360)
  if (west < -180) shifts.push(360)
  return shifts
}

/** The Leaflet layers that draw an area (one, or two across the antimeridian). */
export function areaLayers(area: GeofenceArea, style: L.PathOptions): L.Path[] {
  if (area.type === 'Circle') {
    const [lat, lng] = area.center
    const half = circleHalfWidth(lat, area.radius)
    return copies(lng - half, lng + half).map((shift) => L.circle([lat, lng + shift], { ...style, radius: area.radius }))
  }
  const rings = polygonRings(area.coordinates)
  const lngs = rings[0]!.map((p) => p[1])
  return copies(Math.min(...lngs), Math.max(...lngs)).map((shift) =>
    L.polygon(
      rings.map((ring) => ring.map(([lat, lng]) => [lat, lng + shift] as L.LatLngTuple)),
      style,
    ),
  )
}

/** where its label goes: a circle's centre, a polygon's mean corner (within ±180° as drawn) */
export function areaCentre(area: GeofenceArea): L.LatLngTuple {
  if (area.type === 'Circle') return [area.center[0], area.center[1]]
  const outer = polygonRings(area.coordinates)[0]!
  // the ring repeats its first point last: leave that one out of the mean
  const corners = outer.length > 1 ? outer.slice(0, -1) : outer
  const lat = corners.reduce((sum, p) => sum + p[0], 0) / corners.length
  const lng = corners.reduce((sum, p) => sum + p[1], 0) / corners.length
  return [lat, lng]
}

/** the area's bounds, as drawn (continuous longitudes) */
export function areaBounds(area: GeofenceArea): L.LatLngBounds {
  if (area.type === 'Circle') {
    const [lat, lng] = area.center
    const dLat = area.radius / METRES_PER_DEGREE
    const half = Math.min(180, circleHalfWidth(lat, area.radius))
    return L.latLngBounds([Math.max(-90, lat - dLat), lng - half], [Math.min(90, lat + dLat), lng + half])
  }
  return L.latLngBounds(polygonRings(area.coordinates)[0]!)
}

/** the number of corners of a polygon's outer ring (its closing point not counted) */
export const cornerCount = (area: GeofenceArea) => (area.type === 'Polygon' ? Math.max(0, (area.coordinates[0]?.length ?? 1) - 1) : 0)
