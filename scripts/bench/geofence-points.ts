/**
 * `npm run bench -- geofence-points`: point tests per second against 1,000 geofences of one account,
 * with the bounding-box prefilter (src/track/geofence.ts: a flatbush index, then exact tests of
 * the areas whose boxes hold the point) and without it (the exact test of every geofence), side
 * by side in one run.
 *
 * The geofences lie in a 1° × 1° metro area, as a fleet's would: a third circles of 50 m to 2 km,
 * the rest polygons of 8 to 200 points, up to 3 km across. The fixes fall uniformly over the same
 * area, so most are inside none or one or two geofences.
 */
import { areaContains, checkArea, createGeofenceIndex, prepareArea, type Area } from '../../src/track/geofence'
import { seededRandom } from '../../test/support/random'

const GEOFENCES = 1000
const POINTS = 200_000
const ROUNDS = 3
const random = seededRandom(1)
const centre = { lat: 48.5, lon: 2.0 }

function geofence(i: number): Area {
  const lat = centre.lat + random()
  const lon = centre.lon + random()
  if (i % 3 === 0) return { type: 'Circle', center: [lat, lon], radius: 50 + random() * 1950 }
  // a star-shaped polygon (never self-intersecting): corners at rising angles, varying radii
  const corners = 8 + Math.floor(random() * 193)
  const radiusDeg = 0.002 + random() * 0.012
  const ring: number[][] = []
  for (let k = 0; k < corners; k++) {
    const angle = (k / corners) * 2 * Math.PI
    const r = radiusDeg * (0.5 + random() * 0.5)
    ring.push([lon + r * Math.cos(angle) * 1.5, lat + r * Math.sin(angle)])
  }
  ring.push(ring[0]!)
  return { type: 'Polygon', coordinates: [ring] }
}

const given = Array.from({ length: GEOFENCES }, (_, i) => geofence(i))
const checkStarted = performance.now()
const refused = given.filter((area) => checkArea(area).length > 0).length
const checkMs = performance.now() - checkStarted
if (refused > 0) throw new Error(`${refused} generated geofences were refused`)
const started = performance.now()
const areas = given.map((area) => prepareArea(area))
const prepareMs = performance.now() - started
const indexStarted = performance.now()
const index = createGeofenceIndex(areas.map((area, value) => ({ area, value })))
const indexMs = performance.now() - indexStarted
const points = Array.from({ length: POINTS }, () => [centre.lat + random(), centre.lon + random()] as const)

function withIndex(): number {
  let found = 0
  for (const [lat, lon] of points) found += index.containing(lat, lon).length
  return found
}

function everyGeofence(): number {
  let found = 0
  for (const [lat, lon] of points) for (const area of areas) if (areaContains(area, lat, lon)) found++
  return found
}

function rate(work: () => number, points: number): { perSecond: number; found: number } {
  let best = Infinity
  let found = 0
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = performance.now()
    found = work()
    best = Math.min(best, performance.now() - t0)
  }
  return { perSecond: (points / best) * 1000, found }
}

const fmt = (n: number) => Math.round(n).toLocaleString('en')
// the full scan is slow: a tenth of the points, same distribution
const fast = rate(withIndex, POINTS)
const allPoints = points.splice(POINTS / 10)
const slow = rate(everyGeofence, points.length)
points.push(...allPoints)

console.log(`${GEOFENCES} geofences: checked in ${checkMs.toFixed(1)} ms (as the API does, one by one), prepared in ${prepareMs.toFixed(1)} ms, indexed in ${indexMs.toFixed(1)} ms`)
console.log(`with the prefilter:    ${fmt(fast.perSecond).padStart(12)} point tests/s  (${(1e6 / fast.perSecond).toFixed(2)} µs a fix; ${(fast.found / POINTS).toFixed(2)} geofences hold a fix on average)`)
console.log(`every geofence tested: ${fmt(slow.perSecond).padStart(12)} point tests/s  (${(1e6 / slow.perSecond).toFixed(2)} µs a fix; ${(slow.found / (POINTS / 10)).toFixed(2)} on average)`)
console.log(`ratio: ${(fast.perSecond / slow.perSecond).toFixed(0)}× with the prefilter`)
