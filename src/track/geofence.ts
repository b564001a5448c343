/**
 * Geofence geometry, pure (no I/O): the checks an area must pass, point-in-area tests, and a
 * bounding-box index (flatbush) so that a fix is tested exactly only against the few geofences
 * whose box holds it.
 *
 * Areas, as the API takes them:
 * - a GeoJSON `Polygon`: rings of `[longitude, latitude]` (a third number, altitude, is ignored),
 *   the first the outer ring, any others holes. Edges are straight lines in longitude/latitude,
 *   as GeoJSON has them. An edge whose longitudes differ by more than 180° crosses the
 *   antimeridian (it takes the short way round): `[179, 10] → [-179, 10]` is 2° wide, not 358°.
 *   Rings are "unwrapped" into continuous longitudes once, when the area is prepared; a ring that
 *   winds around a pole cannot be told apart from its complement this way and is refused (a
 *   circle covers a pole).
 * - a `Circle`: `center: [latitude, longitude]` (the contract's order, not GeoJSON's) and a
 *   `radius` in metres; distance is the haversine great-circle distance, which stays exact near
 *   the poles where cheap-ruler's flat approximation does not.
 *
 * The boundary belongs to the area: a fix exactly on a polygon's edge (an outer ring's or a
 * hole's) or exactly `radius` metres from a circle's centre is inside. "Exactly" allows for the
 * precision positions are stored at (1e-7°, about 1 cm): EDGE_TOLERANCE_DEGREES and
 * EDGE_TOLERANCE_M.
 */
import Flatbush from 'flatbush'
import { buildEdgeGrid, crossesEast, type EdgeGrid, gridContains, onEdge } from './edge-grid'

/** points a polygon may have, all rings together, unless the caller says otherwise (MAX_GEOFENCE_VERTICES) */
export const MAX_POLYGON_POINTS = 1000
export const MIN_CIRCLE_RADIUS_M = 10
export const MAX_CIRCLE_RADIUS_M = 100_000
/** the mean Earth radius (IUGG), for haversine */
export const EARTH_RADIUS_M = 6_371_008.8
/** a polygon's edge is this thick (degrees): the 1e-7° positions are stored at, about 1 cm */
export const EDGE_TOLERANCE_DEGREES = 1e-7
/** a circle's edge is this thick (metres) */
export const EDGE_TOLERANCE_M = 0.01

export interface PolygonArea {
  type: 'Polygon'
  /** rings of [longitude, latitude] (GeoJSON), first = last; the first is the outer ring */
  coordinates: number[][][]
}

export interface CircleArea {
  type: 'Circle'
  /** [latitude, longitude] */
  center: [number, number]
  radius: number
}

export type Area = PolygonArea | CircleArea

/** What is wrong, and where: `path` is a JSON pointer into the area (`/coordinates/0/5`, `/radius`). */
export interface AreaProblem {
  path: string
  message: string
}

/** An area ready for point tests. */
export type PreparedArea = PreparedPolygon | PreparedCircle

interface PreparedPolygon {
  kind: 'polygon'
  /** each ring as unwrapped x (longitude, continuous across the antimeridian) and y (latitude) */
  rings: { xs: Float64Array; ys: Float64Array }[]
  /**
   * every ring's edges in a grid (edge-grid.ts), built at the first test that reaches the
   * polygon's box (most of an account's geofences are never near most fixes); null when a hole
   * lies inside another hole (tested ring by ring)
   */
  grid: EdgeGrid | null | undefined
  /** the rings' points, all together */
  points: number
  minX: number
  maxX: number
  minY: number
  maxY: number
}

interface PreparedCircle {
  kind: 'circle'
  latRad: number
  lonRad: number
  cosLat: number
  radiusM: number
  latitude: number
  longitude: number
  /** the radius with the edge tolerance, as an angle (radians) */
  reachRad: number
  /** the haversine of that angle: a point is inside when its haversine from the centre is no more */
  reachHaversine: number
}

/**
 * What a caller counts a test's cost in: `work` grows by what the test read beyond a lookup (a
 * polygon's edges near the point, or all of them), and by a grid's building cost when one is
 * built; with a `limit`, a grid is not built past it (the polygon is tested edge by edge
 * then, as exactly, and its grid built by a later test).
 */
export interface WorkMeter {
  work: number
  limit?: number
}

/**
 * a grid's building cost in work units, as measured against a test's: about 9 a point, and 1
 * for each cell an edge is entered in (a comb's long teeth are entered in many)
 */
const GRID_BUILD_WORK_PER_POINT = 9

/** A box in longitude/latitude, never crossing the antimeridian (an area crossing it has two). */
export interface Box {
  minLon: number
  minLat: number
  maxLon: number
  maxLat: number
}

const RAD = Math.PI / 180

/** Longitude difference folded into (-180, 180]. */
function shortDelta(delta: number): number {
  let d = delta % 360
  if (d > 180) d -= 360
  else if (d <= -180) d += 360
  return d
}

const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value)
const fmt = (position: readonly number[]) => `[${position[0]}, ${position[1]}]`

// ---------------------------------------------------------------- distance

/** Great-circle distance in metres (haversine, on the mean sphere): exact at the poles and across the antimeridian. */
export function haversineMetres(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const dLat = (lat2 - lat1) * RAD
  const dLon = (lon2 - lon1) * RAD
  const s = Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * RAD) * Math.cos(lat2 * RAD) * Math.sin(dLon / 2) ** 2
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(s)))
}

// ---------------------------------------------------------------- checks

/**
 * Everything wrong with an area, each problem named with its place; [] when it may be stored.
 * Takes anything (it is the API's last word on geometry) and never throws. `maxPoints`: the
 * points a polygon may have, all rings together.
 */
export function checkArea(area: unknown, { maxPoints = MAX_POLYGON_POINTS }: { maxPoints?: number } = {}): AreaProblem[] {
  if (typeof area !== 'object' || area === null || Array.isArray(area)) return [{ path: '', message: 'must be an object: a GeoJSON Polygon or a Circle' }]
  const type = (area as { type?: unknown }).type
  if (type === 'Polygon') return checkPolygon(area as Record<string, unknown>, maxPoints)
  if (type === 'Circle') return checkCircle(area as Record<string, unknown>)
  return [{ path: '/type', message: 'must be "Polygon" (GeoJSON) or "Circle"' }]
}

function checkCircle(area: Record<string, unknown>): AreaProblem[] {
  const problems: AreaProblem[] = []
  for (const key of Object.keys(area)) {
    if (key !== 'type' && key !== 'center' && key !== 'radius') problems.push({ path: `/${key}`, message: 'is not a field of a Circle (type, center, radius)' })
  }
  const center = area.center
  if (!Array.isArray(center) || center.length !== 2 || !center.every(isNumber)) {
    problems.push({ path: '/center', message: 'must be [latitude, longitude], two numbers' })
  } else {
    if (center[0] < -90 || center[0] > 90) problems.push({ path: '/center/0', message: `latitude ${center[0]} is outside -90 to 90` })
    if (center[1] < -180 || center[1] > 180) problems.push({ path: '/center/1', message: `longitude ${center[1]} is outside -180 to 180` })
  }
  const radius = area.radius
  if (!isNumber(radius) || radius < MIN_CIRCLE_RADIUS_M || radius > MAX_CIRCLE_RADIUS_M) {
    problems.push({ path: '/radius', message: `must be a number of metres from ${MIN_CIRCLE_RADIUS_M} to ${MAX_CIRCLE_RADIUS_M.toLocaleString('en')}` })
  }
  return problems
}

interface Ring {
  /** the ring's index in coordinates */
  index: number
  /** distinct consecutive points, unwrapped, without the closing repeat */
  xs: number[]
  ys: number[]
  /** each point's index in the ring as given, and the closing point's last (for messages) */
  at: number[]
}

function checkPolygon(area: Record<string, unknown>, maxPoints: number): AreaProblem[] {
  const problems: AreaProblem[] = []
  for (const key of Object.keys(area)) {
    if (key !== 'type' && key !== 'coordinates' && key !== 'bbox') problems.push({ path: `/${key}`, message: 'is not a field of a Polygon (type, coordinates)' })
  }
  const coordinates = area.coordinates
  if (!Array.isArray(coordinates) || coordinates.length === 0) {
    return [...problems, { path: '/coordinates', message: 'must be a list of rings, the outer ring first' }]
  }
  let points = 0
  for (const ring of coordinates) if (Array.isArray(ring)) points += ring.length
  if (points > maxPoints) {
    return [...problems, { path: '/coordinates', message: `holds ${points} points; at most ${maxPoints.toLocaleString('en')} (all rings together)` }]
  }

  // positions: numbers, in range
  coordinates.forEach((ring, r) => {
    if (!Array.isArray(ring)) return problems.push({ path: `/coordinates/${r}`, message: 'must be a list of [longitude, latitude] points' })
    ring.forEach((position, i) => {
      const path = `/coordinates/${r}/${i}`
      if (!Array.isArray(position) || position.length < 2 || position.length > 3 || !position.every(isNumber)) {
        problems.push({ path, message: 'must be [longitude, latitude], two numbers (GeoJSON order)' })
      } else if (position[0] < -180 || position[0] > 180) problems.push({ path, message: `longitude ${position[0]} is outside -180 to 180` })
      else if (position[1] < -90 || position[1] > 90) problems.push({ path, message: `latitude ${position[1]} is outside -90 to 90` })
    })
  })
  if (problems.length > 0) return problems

  // rings: closed, enough points, not around a pole, not flat
  const rings: Ring[] = []
  ;(coordinates as number[][][]).forEach((ring, r) => {
    const path = `/coordinates/${r}`
    if (ring.length < 4) return problems.push({ path, message: `has ${ring.length} points; a ring needs at least 4 (3 corners and the first again)` })
    const first = ring[0]!
    const last = ring[ring.length - 1]!
    if (first[0] !== last[0] || first[1] !== last[1]) {
      return problems.push({ path, message: `is not closed: its last point ${fmt(last)} must repeat its first ${fmt(first)}` })
    }
    const unwrapped = unwrapRing(ring)
    if (typeof unwrapped === 'string') return problems.push({ path, message: unwrapped })
    if (unwrapped.xs.length < 3) return problems.push({ path, message: 'has fewer than 3 distinct corners' })
    if (onOneLine(unwrapped.xs, unwrapped.ys)) return problems.push({ path, message: 'has no area: its points lie on one line' })
    rings.push({ index: r, ...unwrapped })
  })
  if (problems.length > 0) return problems

  // holes are placed in the outer ring's frame of longitudes (a whole turn apart otherwise)
  const outer = rings[0]!
  const centre = (Math.min(...outer.xs) + Math.max(...outer.xs)) / 2
  for (const hole of rings.slice(1)) {
    const shift = Math.round((centre - hole.xs[0]!) / 360) * 360
    if (shift !== 0) for (let i = 0; i < hole.xs.length; i++) hole.xs[i]! += shift
  }

  const crossing = findCrossing(rings)
  if (crossing) return [crossing]
  for (const hole of rings.slice(1)) {
    if (!holeInside(outer, hole)) {
      problems.push({ path: `/coordinates/${hole.index}`, message: 'is a hole outside the outer ring (/coordinates/0)' })
    }
  }
  return problems
}

/** A hole that meets no edge of the outer ring is inside it when any of its points is. */
function holeInside(outer: Ring, hole: Ring): boolean {
  for (let i = 0; i < hole.xs.length; i++) {
    const side = ringSide(outer.xs, outer.ys, hole.xs[i]!, hole.ys[i]!, 0)
    if (side !== 0) return side > 0
  }
  return true
}

/**
 * The ring's points in continuous longitudes (each edge the short way round), consecutive repeats
 * dropped, the closing point left out; or what makes that impossible.
 */
function unwrapRing(ring: number[][]): { xs: number[]; ys: number[]; at: number[] } | string {
  const x0 = ring[0]![0]!
  const y0 = ring[0]![1]!
  const xs: number[] = [x0]
  const ys: number[] = [y0]
  const at: number[] = [0]
  let x = x0
  for (let i = 1; i < ring.length; i++) {
    const [lon, lat] = ring[i]! as [number, number]
    const [prevLon, prevLat] = ring[i - 1]! as [number, number]
    const delta = shortDelta(lon - prevLon)
    if (delta === 180) {
      return `the edge from point ${i - 1} to point ${i} spans exactly 180° of longitude: which way round it goes is ambiguous; add a point between them`
    }
    // the longitude as given, moved by whole turns to follow on from the point before (exact
    // when nothing crosses the antimeridian)
    x = lon + 360 * Math.round((x + delta - lon) / 360)
    if (delta === 0 && lat === prevLat) continue
    xs.push(x)
    ys.push(lat)
    at.push(i)
  }
  // x is now the closing point's: it must land where the ring began, not a whole turn away
  if (Math.abs(x - x0) > 1e-9) return 'winds around a pole (its longitudes turn a full 360°); polygons around a pole are not supported: use a Circle'
  if (xs.length > 1 && xs[xs.length - 1] === x0 && ys[ys.length - 1] === y0) {
    xs.pop()
    ys.pop()
    at.pop()
  }
  // the closing point ends the last edge
  at.push(ring.length - 1)
  const width = Math.max(...xs) - Math.min(...xs)
  if (width >= 360) return 'spans 360° of longitude or more'
  return { xs, ys, at }
}

function onOneLine(xs: readonly number[], ys: readonly number[]): boolean {
  for (let i = 2; i < xs.length; i++) if (orientation(xs[0]!, ys[0]!, xs[1]!, ys[1]!, xs[i]!, ys[i]!) !== 0) return false
  return true
}

function orientation(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number {
  const v = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
  return v > 0 ? 1 : v < 0 ? -1 : 0
}

/** whether c, collinear with a–b, lies within the segment's box */
function within(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): boolean {
  return cx >= Math.min(ax, bx) && cx <= Math.max(ax, bx) && cy >= Math.min(ay, by) && cy <= Math.max(ay, by)
}

/** whether segments a–b and c–d share any point (touching counts) */
function segmentsMeet(ax: number, ay: number, bx: number, by: number, cx: number, cy: number, dx: number, dy: number): boolean {
  const o1 = orientation(ax, ay, bx, by, cx, cy)
  const o2 = orientation(ax, ay, bx, by, dx, dy)
  const o3 = orientation(cx, cy, dx, dy, ax, ay)
  const o4 = orientation(cx, cy, dx, dy, bx, by)
  if (o1 !== o2 && o3 !== o4) return true
  return (
    (o1 === 0 && within(ax, ay, bx, by, cx, cy)) ||
    (o2 === 0 && within(ax, ay, bx, by, dx, dy)) ||
    (o3 === 0 && within(cx, cy, dx, dy, ax, ay)) ||
    (o4 === 0 && within(cx, cy, dx, dy, bx, by))
  )
}

interface Edge {
  ring: Ring
  /** index of its first point in the ring's distinct points */
  i: number
  ax: number
  ay: number
  bx: number
  by: number
  minX: number
  maxX: number
  minY: number
  maxY: number
}

/**
 * The first pair of edges that cross or touch where they should not, as a problem; null when the
 * rings are simple and apart. Every pair of edges (at most 1,000 of them): sorted by their
 * western end so each edge is compared only with those whose longitudes overlap it.
 */
function findCrossing(rings: Ring[]): AreaProblem | null {
  const edges: Edge[] = []
  for (const ring of rings) {
    const n = ring.xs.length
    for (let i = 0; i < n; i++) {
      const j = (i + 1) % n
      const ax = ring.xs[i]!, ay = ring.ys[i]!, bx = ring.xs[j]!, by = ring.ys[j]!
      edges.push({ ring, i, ax, ay, bx, by, minX: Math.min(ax, bx), maxX: Math.max(ax, bx), minY: Math.min(ay, by), maxY: Math.max(ay, by) })
    }
  }
  const name = (e: Edge) => `the edge from point ${e.ring.at[e.i]} to point ${e.ring.at[e.i + 1]}`
  edges.sort((a, b) => a.minX - b.minX)
  for (let p = 0; p < edges.length; p++) {
    const e = edges[p]!
    for (let q = p + 1; q < edges.length; q++) {
      const f = edges[q]!
      if (f.minX > e.maxX) break
      if (f.minY > e.maxY || f.maxY < e.minY) continue
      if (e.ring === f.ring) {
        const n = e.ring.xs.length
        const next = (e.i + 1) % n === f.i
        const previous = (f.i + 1) % n === e.i
        if (next || previous) {
          // neighbours share a corner; they may only fold back onto each other (a spike)
          const [first, second] = next ? [e, f] : [f, e]
          const turn = (first.bx - first.ax) * (second.by - second.ay) - (first.by - first.ay) * (second.bx - second.ax)
          const dot = (first.bx - first.ax) * (second.bx - second.ax) + (first.by - first.ay) * (second.by - second.ay)
          if (turn === 0 && dot < 0) {
            return { path: `/coordinates/${e.ring.index}`, message: `is self-intersecting: ${name(first)} doubles back over the one before it` }
          }
          continue
        }
        if (segmentsMeet(e.ax, e.ay, e.bx, e.by, f.ax, f.ay, f.bx, f.by)) {
          const [a, b] = e.i < f.i ? [e, f] : [f, e]
          return { path: `/coordinates/${e.ring.index}`, message: `is self-intersecting: ${name(a)} meets ${name(b)}` }
        }
      } else if (segmentsMeet(e.ax, e.ay, e.bx, e.by, f.ax, f.ay, f.bx, f.by)) {
        const [a, b] = e.ring.index < f.ring.index ? [e, f] : [f, e]
        return {
          path: `/coordinates/${b.ring.index}`,
          message: `is self-intersecting: ${name(b)} of this ring meets ${name(a)} of /coordinates/${a.ring.index}`,
        }
      }
    }
  }
  return null
}

// ---------------------------------------------------------------- point tests

/**
 * 1 inside, 0 on the boundary (within `tolerance`), -1 outside; even-odd crossing count, with
 * the edges tested for the point on them first.
 */
function ringSide(xs: ArrayLike<number>, ys: ArrayLike<number>, x: number, y: number, tolerance: number): number {
  let inside = false
  const n = xs.length
  for (let i = 0, j = n - 1; i < n; j = i++) {
    const xi = xs[i]!, yi = ys[i]!, xj = xs[j]!, yj = ys[j]!
    if (onEdge(xi, yi, xj, yj, x, y, tolerance)) return 0
    if (crossesEast(xi, yi, xj, yj, x, y)) inside = !inside
  }
  return inside ? 1 : -1
}

function polygonContains(p: PreparedPolygon, lat: number, lon: number, meter?: WorkMeter): boolean {
  if (lat < p.minY - EDGE_TOLERANCE_DEGREES || lat > p.maxY + EDGE_TOLERANCE_DEGREES) return false
  // the polygon's longitudes are continuous and less than a turn wide: the point is in its frame
  // as lon, lon + 360 or lon - 360
  const west = p.minX - EDGE_TOLERANCE_DEGREES
  const east = p.maxX + EDGE_TOLERANCE_DEGREES
  if (lon >= west && lon <= east && polygonContainsAt(p, lon, lat, meter)) return true
  if (lon + 360 >= west && lon + 360 <= east && polygonContainsAt(p, lon + 360, lat, meter)) return true
  return lon - 360 >= west && lon - 360 <= east && polygonContainsAt(p, lon - 360, lat, meter)
}

/** the test at x, the point's longitude in the polygon's frame */
function polygonContainsAt(p: PreparedPolygon, x: number, lat: number, meter?: WorkMeter): boolean {
  if (p.grid === undefined && (meter?.limit === undefined || meter.work + p.points * GRID_BUILD_WORK_PER_POINT <= meter.limit)) {
    p.grid = buildEdgeGrid(p.rings, EDGE_TOLERANCE_DEGREES)
    if (meter) meter.work += p.points * GRID_BUILD_WORK_PER_POINT + p.grid.entries
  }
  if (p.grid) return gridContains(p.grid, x, lat, EDGE_TOLERANCE_DEGREES, meter)
  if (meter) meter.work += p.points
  if (p.grid === undefined) {
    // no grid yet: every edge, as the grid would answer (on any ring's edge, else the even-odd count of them all)
    let inside = false
    for (const { xs, ys } of p.rings) {
      for (let i = 0, j = xs.length - 1; i < xs.length; j = i++) {
        if (onEdge(xs[i]!, ys[i]!, xs[j]!, ys[j]!, x, lat, EDGE_TOLERANCE_DEGREES)) return true
        if (crossesEast(xs[i]!, ys[i]!, xs[j]!, ys[j]!, x, lat)) inside = !inside
      }
    }
    return inside
  }
  // a hole inside another: ring by ring, in a hole is outside
  const outer = p.rings[0]!
  const side = ringSide(outer.xs, outer.ys, x, lat, EDGE_TOLERANCE_DEGREES)
  if (side <= 0) return side === 0
  for (let h = 1; h < p.rings.length; h++) {
    const hole = p.rings[h]!
    const holeSide = ringSide(hole.xs, hole.ys, x, lat, EDGE_TOLERANCE_DEGREES)
    if (holeSide === 0) return true
    if (holeSide > 0) return false
  }
  return true
}

function circleContains(c: PreparedCircle, lat: number, lon: number): boolean {
  const latRad = lat * RAD
  const dLat = latRad - c.latRad
  // farther north or south than the radius: outside, without a sine (most candidates of a fix)
  if (dLat > c.reachRad || dLat < -c.reachRad) return false
  const dLon = lon * RAD - c.lonRad
  // haversine distance ≤ reach ⟺ hav(distance) ≤ hav(reach): no asin, no square root
  const s = Math.sin(dLat / 2) ** 2 + c.cosLat * Math.cos(latRad) * Math.sin(dLon / 2) ** 2
  return s <= c.reachHaversine
}

/**
 * An area ready for point tests. The area must have passed checkArea: this does not repeat the
 * checks (the self-intersection test is most of their cost), and throws only on what it cannot
 * unwrap.
 */
export function prepareArea(area: Area): PreparedArea {
  if (area.type === 'Circle') {
    const [latitude, longitude] = area.center
    // a radius is at most 100 km: far less than half the Earth's circumference, where hav stops growing
    const reachRad = (area.radius + EDGE_TOLERANCE_M) / EARTH_RADIUS_M
    const reachHaversine = Math.sin(reachRad / 2) ** 2
    return { kind: 'circle', latRad: latitude * RAD, lonRad: longitude * RAD, cosLat: Math.cos(latitude * RAD), radiusM: area.radius, latitude, longitude, reachRad, reachHaversine }
  }
  const unwrapped = area.coordinates.map((ring) => {
    const result = ring.length >= 4 ? unwrapRing(ring) : 'has fewer than 4 points'
    if (typeof result === 'string') throw new Error(`prepareArea: a ring ${result}`)
    return result
  })
  const outerBox = boxOf(unwrapped[0]!)
  const centre = (outerBox.minX + outerBox.maxX) / 2
  const rings = unwrapped.map((ring, r) => {
    const shift = r === 0 ? 0 : Math.round((centre - ring.xs[0]!) / 360) * 360
    const xs = new Float64Array(ring.xs.length)
    for (let i = 0; i < xs.length; i++) xs[i] = ring.xs[i]! + shift
    return { xs, ys: new Float64Array(ring.ys) }
  })
  const box = boxOf(rings[0]!)
  return {
    kind: 'polygon',
    rings,
    // one even-odd count over every ring is the polygon's answer when no hole holds another (a
    // point in both would count as inside); the edge-by-edge test keeps the ring-by-ring rule then
    grid: nestedHoles(rings) ? null : undefined,
    points: rings.reduce((sum, ring) => sum + ring.xs.length, 0),
    ...box,
  }
}

function boxOf(ring: { xs: ArrayLike<number>; ys: ArrayLike<number> }): { minX: number; maxX: number; minY: number; maxY: number } {
  let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity
  for (let i = 0; i < ring.xs.length; i++) {
    const x = ring.xs[i]!, y = ring.ys[i]!
    if (x < minX) minX = x
    if (x > maxX) maxX = x
    if (y < minY) minY = y
    if (y > maxY) maxY = y
  }
  return { minX, maxX, minY, maxY }
}

/** Whether a hole lies inside another (holes never cross or touch: checkArea refuses it). */
function nestedHoles(rings: readonly { xs: Float64Array; ys: Float64Array }[]): boolean {
  if (rings.length < 3) return false
  const boxes = rings.map(boxOf)
  for (let a = 1; a < rings.length; a++) {
    for (let b = 1; b < rings.length; b++) {
      const inner = boxes[a]!, outer = boxes[b]!
      if (a === b || inner.minX < outer.minX || inner.maxX > outer.maxX || inner.minY < outer.minY || inner.maxY > outer.maxY) continue
      if (ringSide(rings[b]!.xs, rings[b]!.ys, rings[a]!.xs[0]!, rings[a]!.ys[0]!, 0) > 0) return true
    }
  }
  return false
}

/**
 * Whether a position (degrees) is inside the area, its boundary included. `meter.work` grows by
 * what the test read beyond a lookup (a polygon's edges near the point), for callers that bound it.
 */
export function areaContains(area: PreparedArea, latitude: number, longitude: number, meter?: WorkMeter): boolean {
  return area.kind === 'circle' ? circleContains(area, latitude, longitude) : polygonContains(area, latitude, longitude, meter)
}

/**
 * The area's bounding boxes in longitude/latitude, each within -180..180 (one that crosses the
 * antimeridian gives two), widened by the edge tolerance. A circle that reaches a pole spans
 * every longitude.
 */
export function areaBoxes(area: PreparedArea): Box[] {
  const pad = EDGE_TOLERANCE_DEGREES * 2
  if (area.kind === 'circle') {
    // angular radius, widened for the edge tolerance and rounding
    const delta = (area.radiusM + EDGE_TOLERANCE_M) / EARTH_RADIUS_M
    const dLat = delta / RAD + pad
    const minLat = area.latitude - dLat
    const maxLat = area.latitude + dLat
    if (minLat <= -90 || maxLat >= 90) return [{ minLon: -180, minLat: Math.max(-90, minLat), maxLon: 180, maxLat: Math.min(90, maxLat) }]
    // the widest point of a spherical cap is asin(sin δ / cos φ) of longitude from its centre
    const dLon = Math.asin(Math.min(1, Math.sin(delta) / Math.cos(area.latRad))) / RAD + pad
    return splitAtAntimeridian(area.longitude - dLon, minLat, area.longitude + dLon, maxLat)
  }
  return splitAtAntimeridian(area.minX - pad, area.minY - pad, area.maxX + pad, area.maxY + pad)
}

/** A box in continuous longitudes (less than a turn wide) as one or two boxes within -180..180. */
function splitAtAntimeridian(minX: number, minY: number, maxX: number, maxY: number): Box[] {
  if (maxX - minX >= 360) return [{ minLon: -180, minLat: minY, maxLon: 180, maxLat: maxY }]
  const shift = Math.floor((minX + 180) / 360) * 360
  const a = minX - shift
  const b = maxX - shift
  if (b <= 180) return [{ minLon: a, minLat: minY, maxLon: b, maxLat: maxY }]
  return [
    { minLon: a, minLat: minY, maxLon: 180, maxLat: maxY },
    { minLon: -180, minLat: minY, maxLon: b - 360, maxLat: maxY },
  ]
}

// ---------------------------------------------------------------- the index

export interface GeofenceIndex<T> {
  /** how many areas it holds */
  readonly size: number
  /** the values whose areas contain the position, in the order they were given */
  containing(latitude: number, longitude: number): T[]
}

/**
 * A static index of areas: their boxes in a flatbush R-tree, so a point costs a tree walk and
 * exact tests of only the areas whose boxes hold it. Rebuild it when the areas change.
 */
export function createGeofenceIndex<T>(entries: readonly { area: PreparedArea; value: T }[]): GeofenceIndex<T> {
  const boxes = entries.map((entry) => areaBoxes(entry.area))
  const owners: number[] = []
  const total = boxes.reduce((sum, list) => sum + list.length, 0)
  const tree = total > 0 ? new Flatbush(total) : null
  boxes.forEach((list, i) => {
    for (const box of list) {
      tree!.add(box.minLon, box.minLat, box.maxLon, box.maxLat)
      owners.push(i)
    }
  })
  tree?.finish()
  return {
    size: entries.length,
    containing(latitude, longitude) {
      if (tree === null) return []
      const hits = tree.search(longitude, latitude, longitude, latitude)
      if (hits.length === 0) return []
      // an area with two boxes is found once; keep the given order
      const found = [...new Set(hits.map((h) => owners[h]!))].sort((a, b) => a - b)
      const result: T[] = []
      for (const i of found) if (areaContains(entries[i]!.area, latitude, longitude)) result.push(entries[i]!.value)
      return result
    },
  }
}
