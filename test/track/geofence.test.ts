import { describe, expect, test } from 'bun:test'
import {
  type Area,
  areaBoxes,
  areaContains,
  checkArea,
  createGeofenceIndex,
  EARTH_RADIUS_M,
  haversineMetres,
  MAX_POLYGON_POINTS,
  prepareArea,
} from '../../src/track/geofence'
import { seededRandom } from '../support/random'

const polygon = (...rings: number[][][]): Area => ({ type: 'Polygon', coordinates: rings })
const circle = (lat: number, lon: number, radius: number): Area => ({ type: 'Circle', center: [lat, lon], radius })
const inside = (area: Area, lat: number, lon: number) => areaContains(prepareArea(area), lat, lon)
/** degrees of latitude for a distance along a meridian */
const degreesNorth = (metres: number) => (metres / EARTH_RADIUS_M) * (180 / Math.PI)

// a 1° square near Paris, [lon, lat], with a hole in its middle
const square = [[2, 48], [3, 48], [3, 49], [2, 49], [2, 48]]
const hole = [[2.4, 48.4], [2.6, 48.4], [2.6, 48.6], [2.4, 48.6], [2.4, 48.4]]

describe('polygons', () => {
  test('inside, outside, and the boundary counts as inside', () => {
    const area = polygon(square)
    expect(inside(area, 48.5, 2.5)).toBe(true)
    expect(inside(area, 49.5, 2.5)).toBe(false)
    expect(inside(area, 48.5, 1.9)).toBe(false)
    // exactly on an edge, on a corner
    expect(inside(area, 48, 2.5)).toBe(true)
    expect(inside(area, 48.5, 3)).toBe(true)
    expect(inside(area, 49, 2)).toBe(true)
    // past a corner along the edge's line is not on the edge
    expect(inside(area, 48, 3.001)).toBe(false)
    // just off the edge: 1e-6° is about 10 cm
    expect(inside(area, 47.999999, 2.5)).toBe(false)
  })

  test('a fix exactly on a slanted edge is inside, wherever the line runs', () => {
    const triangle = polygon([[0, 0], [3, 1], [0, 2], [0, 0]])
    expect(inside(triangle, 0.5, 1.5)).toBe(true)
    expect(inside(triangle, 1.5, 1.5)).toBe(true)
    expect(inside(triangle, 0.49, 1.5)).toBe(false)
    // a position stored at 1e-7° (about 1 cm) of an edge still counts as on it
    expect(inside(triangle, Math.round(((1 / 3) * 1e7)) / 1e7 - 0.5e-7, 1)).toBe(true)
  })

  test('a hole is outside; its edge belongs to the area', () => {
    const area = polygon(square, hole)
    expect(inside(area, 48.5, 2.5)).toBe(false)
    expect(inside(area, 48.3, 2.5)).toBe(true)
    expect(inside(area, 48.4, 2.5)).toBe(true)
    expect(inside(area, 48.5, 2.6)).toBe(true)
  })

  test('a polygon crossing the antimeridian covers both sides of it, and only the short way round', () => {
    // 20° wide: from 170° E over 180° to 170° W (the long way round would be 340° wide)
    const area = polygon([[170, -10], [-170, -10], [-170, 10], [170, 10], [170, -10]])
    expect(checkArea(area)).toEqual([])
    for (const lon of [170.5, 179.9, 180, -180, -179.9, -170.5]) expect(inside(area, 0, lon)).toBe(true)
    for (const lon of [169, -169, 0, 90, -90]) expect(inside(area, 0, lon)).toBe(false)
    // its edges: on the antimeridian, at 170° W
    expect(inside(area, 10, 180)).toBe(true)
    expect(inside(area, 5, -170)).toBe(true)
    expect(areaBoxes(prepareArea(area))).toHaveLength(2)
  })

  test('a polygon whose points wander across the antimeridian more than once, with a hole on the other side', () => {
    const area = polygon(
      [[178, 0], [-178, 0], [-178, 4], [178, 4], [178, 0]],
      [[179.5, 1], [-179.5, 1], [-179.5, 3], [179.5, 3], [179.5, 1]],
    )
    expect(checkArea(area)).toEqual([])
    expect(inside(area, 2, 180)).toBe(false)
    expect(inside(area, 2, -179.8)).toBe(false)
    expect(inside(area, 0.5, 179.9)).toBe(true)
    expect(inside(area, 2, -178.5)).toBe(true)
  })
})

describe('circles', () => {
  test('distance is great-circle: exact across a pole, where a flat ruler is not', () => {
    // 0.01° from the pole on opposite meridians: 0.02° apart over the pole, about 2,224 m
    expect(haversineMetres(89.99, 0, 89.99, 180)).toBeCloseTo((0.02 * Math.PI * EARTH_RADIUS_M) / 180, 3)
    const area = circle(89.99, 0, 3000)
    expect(inside(area, 89.99, 180)).toBe(true)
    expect(inside(area, 90, 0)).toBe(true)
    expect(inside(area, 89.99, 90)).toBe(true)
    // 0.01 + 0.03 = 0.04° over the pole: about 4,448 m
    expect(inside(area, 89.97, 180)).toBe(false)
    expect(inside(area, 89.97, 0)).toBe(true)
  })

  test('a circle around a pole is found by the index at every longitude', () => {
    const index = createGeofenceIndex([{ area: prepareArea(circle(-89.98, 45, 3000)), value: 'south pole' }])
    expect(index.containing(-90, 0)).toEqual(['south pole'])
    expect(index.containing(-89.995, -135)).toEqual(['south pole'])
    expect(index.containing(-89.99, -135)).toEqual([])
    expect(index.containing(-89.995, 179.9)).toEqual(['south pole'])
  })

  test('exactly on the edge is inside; 2 cm past it is not', () => {
    const area = circle(48.85, 2.35, 500)
    expect(inside(area, 48.85 + degreesNorth(500), 2.35)).toBe(true)
    expect(inside(area, 48.85 - degreesNorth(500), 2.35)).toBe(true)
    expect(inside(area, 48.85 + degreesNorth(500.02), 2.35)).toBe(false)
  })

  test('a circle across the antimeridian', () => {
    const area = prepareArea(circle(0, 179.999, 1000))
    expect(areaContains(area, 0, -179.998)).toBe(true)
    expect(areaContains(area, 0, -179.99)).toBe(false)
    const index = createGeofenceIndex([{ area, value: 1 }])
    expect(index.containing(0, -179.998)).toEqual([1])
    expect(index.containing(0, 179.995)).toEqual([1])
  })
})

describe('checks name what is wrong', () => {
  const problems = (area: unknown) => checkArea(area)

  test('an unclosed ring is refused', () => {
    expect(problems(polygon([[2, 48], [3, 48], [3, 49], [2, 49]]))).toEqual([
      { path: '/coordinates/0', message: 'is not closed: its last point [2, 49] must repeat its first [2, 48]' },
    ])
  })

  test('a self-intersecting ring is refused, naming the edges', () => {
    // a bow tie
    const [found] = problems(polygon([[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]))
    expect(found!.path).toBe('/coordinates/0')
    expect(found!.message).toBe('is self-intersecting: the edge from point 0 to point 1 meets the edge from point 2 to point 3')
    // a figure eight touching itself at one corner
    expect(problems(polygon([[0, 0], [2, 0], [1, 1], [2, 2], [0, 2], [1, 1], [0, 0]]))[0]!.message).toContain('self-intersecting')
    // a spike folding back on itself
    expect(problems(polygon([[0, 0], [2, 0], [2, 2], [2, 1], [0, 2], [0, 0]]))[0]!.message).toContain('self-intersecting')
    // a self-intersection across the antimeridian
    expect(problems(polygon([[179, 0], [-179, 1], [-179, 0], [179, 1], [179, 0]]))[0]!.message).toContain('self-intersecting')
  })

  test('holes: crossing the outer ring, or outside it', () => {
    expect(problems(polygon(square, [[2.5, 48.5], [3.5, 48.5], [3.5, 48.7], [2.5, 48.7], [2.5, 48.5]]))[0]).toMatchObject({
      path: '/coordinates/1',
      message: expect.stringContaining('meets the edge from point 1 to point 2 of /coordinates/0'),
    })
    expect(problems(polygon(square, [[5, 5], [6, 5], [6, 6], [5, 5]]))).toEqual([{ path: '/coordinates/1', message: 'is a hole outside the outer ring (/coordinates/0)' }])
  })

  test('ranges, sizes and shapes', () => {
    expect(problems(polygon([[2, 48], [200, 48], [3, 49], [2, 48]]))).toEqual([{ path: '/coordinates/0/1', message: 'longitude 200 is outside -180 to 180' }])
    expect(problems(polygon([[2, 48], [3, 95], [3, 49], [2, 48]]))).toEqual([{ path: '/coordinates/0/1', message: 'latitude 95 is outside -90 to 90' }])
    expect(problems(polygon([[2, 48], [3, 48], [2, 48]]))[0]!.message).toContain('at least 4')
    expect(problems(polygon([[2, 48], [3, 48], [4, 48], [2, 48]]))[0]!.message).toContain('no area')
    expect(problems({ type: 'Polygon', coordinates: [[[2, 48], ['3', 48], [3, 49], [2, 48]]] })).toEqual([
      { path: '/coordinates/0/1', message: 'must be [longitude, latitude], two numbers (GeoJSON order)' },
    ])
    const many = Array.from({ length: MAX_POLYGON_POINTS }, (_, i) => [Math.cos((i / MAX_POLYGON_POINTS) * 2 * Math.PI), Math.sin((i / MAX_POLYGON_POINTS) * 2 * Math.PI)])
    expect(problems(polygon([...many, many[0]!]))[0]).toEqual({ path: '/coordinates', message: 'holds 1001 points; at most 1,000 (all rings together)' })
    expect(problems(polygon([...many.slice(1), many[1]!]))).toEqual([])
    expect(problems(polygon([[0, 80], [120, 80], [-120, 80], [0, 80]]))[0]!.message).toContain('winds around a pole')
    expect(problems(polygon([[0, 0], [180, 0], [180, 1], [0, 0]]))[0]!.message).toContain('spans exactly 180°')
    expect(problems({ type: 'Square' })).toEqual([{ path: '/type', message: 'must be "Polygon" (GeoJSON) or "Circle"' }])
  })

  test('circles: radius 10 to 100,000 m, centre in range', () => {
    expect(problems(circle(48.85, 2.35, 10))).toEqual([])
    expect(problems(circle(48.85, 2.35, 100_000))).toEqual([])
    expect(problems(circle(48.85, 2.35, 9.99))).toEqual([{ path: '/radius', message: 'must be a number of metres from 10 to 100,000' }])
    expect(problems(circle(48.85, 2.35, 100_001))[0]!.path).toBe('/radius')
    expect(problems(circle(91, 2.35, 100))).toEqual([{ path: '/center/0', message: 'latitude 91 is outside -90 to 90' }])
    expect(problems({ type: 'Circle', center: [2.35], radius: 100 })).toEqual([{ path: '/center', message: 'must be [latitude, longitude], two numbers' }])
  })

  test('an area that cannot be unwrapped cannot be prepared', () => {
    expect(() => prepareArea(polygon([[0, 80], [120, 80], [-120, 80], [0, 80]]))).toThrow('winds around a pole')
  })
})

describe('the index', () => {
  test('finds exactly what testing every geofence finds', () => {
    const random = seededRandom(14)
    const areas = Array.from({ length: 1000 }, (_, i) => {
      // around the antimeridian half the time, so that split boxes are exercised
      const lon = i % 2 === 0 ? -180 + random() * 20 - 10 : random() * 20
      const lat = random() * 20 - 10
      const wrap = (x: number) => (x > 180 ? x - 360 : x < -180 ? x + 360 : x)
      if (i % 3 === 0) return circle(lat, wrap(lon), 10 + random() * 50_000)
      const size = 0.05 + random() * 0.5
      const corners = [
        [lon, lat],
        [lon + size, lat],
        [lon + size, lat + size],
        [lon + size / 2, lat + size / 2],
        [lon, lat + size],
      ].map(([x, y]) => [wrap(x!), y!])
      return polygon([...corners, corners[0]!])
    })
    const prepared = areas.map((area) => prepareArea(area))
    const index = createGeofenceIndex(prepared.map((area, value) => ({ area, value })))
    let hits = 0
    for (let n = 0; n < 2000; n++) {
      const lat = random() * 22 - 11
      const east = 168 + random() * 24
      const lon = n % 2 === 0 ? (east > 180 ? east - 360 : east) : random() * 22 - 1
      const expected = prepared.flatMap((area, i) => (areaContains(area, lat, lon) ? [i] : []))
      expect(index.containing(lat, lon)).toEqual(expected)
      hits += expected.length
    }
    expect(hits).toBeGreaterThan(100)
  })

  test('an empty index finds nothing', () => {
    expect(createGeofenceIndex([]).containing(0, 0)).toEqual([])
  })
})
