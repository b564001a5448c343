// A polygon's edge grid answers exactly as the test of every edge does (the even-odd rule, the
// boundary within the tolerance), on the shapes that stress it: jagged stars, combs whose teeth
// cross every row, staircases and snapped points sharing latitudes (runs of vertices), holes,
// and vertices and points lying exactly on the grid's own row and column lines.
import { describe, expect, test } from 'bun:test'
import { buildEdgeGrid, crossesEast, type EdgeGrid, gridContains, onEdge } from '../../src/track/edge-grid'
import { areaContains, EDGE_TOLERANCE_DEGREES, prepareArea } from '../../src/track/geofence'
import { seededRandom } from '../support/random'

const TOLERANCE = EDGE_TOLERANCE_DEGREES
type Ring = { xs: Float64Array; ys: Float64Array }

/** rings from [x, y] points (no closing repeat, no consecutive repeats) */
const ringsOf = (...rings: number[][][]): Ring[] => rings.map((points) => ({ xs: Float64Array.from(points, (p) => p[0]!), ys: Float64Array.from(points, (p) => p[1]!) }))

/** the test of every edge, as geofence.ts had it before the grid: on an edge, or an odd count of crossings east */
function everyEdge(rings: Ring[], x: number, y: number): boolean {
  let inside = false
  for (const { xs, ys } of rings) {
    for (let i = 0, j = xs.length - 1; i < xs.length; j = i++) {
      if (onEdge(xs[i]!, ys[i]!, xs[j]!, ys[j]!, x, y, TOLERANCE)) return true
      if (crossesEast(xs[i]!, ys[i]!, xs[j]!, ys[j]!, x, y)) inside = !inside
    }
  }
  return inside
}

const random = seededRandom(19)

function star(corners: number, x: number, y: number, radius: number, jag: number, snap = 0): number[][] {
  const points: number[][] = []
  for (let k = 0; k < corners; k++) {
    const angle = (k / corners) * 2 * Math.PI
    const r = radius * (1 - jag + random() * jag)
    let px = x + r * Math.cos(angle)
    let py = y + r * Math.sin(angle)
    // snapped to a coarse lattice: many corners share a latitude
    if (snap > 0) [px, py] = [Math.round(px / snap) * snap, Math.round(py / snap) * snap]
    const last = points[points.length - 1]
    if (!last || last[0] !== px || last[1] !== py) points.push([px, py])
  }
  if (points.length > 1 && points[0]![0] === points[points.length - 1]![0] && points[0]![1] === points[points.length - 1]![1]) points.pop()
  return points
}

/** teeth from a spine, each as tall as the comb: every row of the grid crosses them all */
function comb(teeth: number, x: number, y: number, width: number, height: number): number[][] {
  const step = width / teeth
  const spine = y + height * 0.1
  const points = [[x, y], [x + width, y]]
  for (let t = teeth - 1; t >= 0; t--) {
    const left = x + t * step
    points.push([left + step * 0.6, spine], [left + step * 0.6, y + height], [left + step * 0.1, y + height], [left + step * 0.1, spine])
  }
  points.push([x, spine])
  return points
}

/** steps up to the right, then back along a top edge cut into many collinear pieces (long runs at one latitude) */
function stairs(steps: number, x: number, y: number, size: number): number[][] {
  const points = [[x, y]]
  for (let i = 0; i < steps; i++) points.push([x + (i + 1) * size, y + i * size], [x + (i + 1) * size, y + (i + 1) * size])
  for (let i = steps - 1; i >= 0; i--) points.push([x + i * size, y + steps * size])
  return points.filter((p, i) => i === 0 || p[0] !== points[i - 1]![0] || p[1] !== points[i - 1]![1])
}

/** points around and on the rings: random ones, the corners, corners' latitudes elsewhere, along the edges, just off them */
function probes(rings: Ring[], count: number): [number, number][] {
  let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity
  for (const { xs, ys } of rings) {
    for (let i = 0; i < xs.length; i++) {
      minX = Math.min(minX, xs[i]!); maxX = Math.max(maxX, xs[i]!)
      minY = Math.min(minY, ys[i]!); maxY = Math.max(maxY, ys[i]!)
    }
  }
  const w = maxX - minX, h = maxY - minY
  const points: [number, number][] = []
  for (let k = 0; k < count; k++) points.push([minX - w * 0.05 + random() * w * 1.1, minY - h * 0.05 + random() * h * 1.1])
  for (const { xs, ys } of rings) {
    for (let i = 0; i < xs.length; i++) {
      const j = (i + 1) % xs.length
      const t = random()
      points.push(
        [xs[i]!, ys[i]!],
        [minX + random() * w, ys[i]!],
        [xs[i]!, ys[i]! + 1e-7],
        [xs[i]! + 1.5e-7, ys[i]!],
        [xs[i]! + t * (xs[j]! - xs[i]!), ys[i]! + t * (ys[j]! - ys[i]!)],
        [xs[i]! + t * (xs[j]! - xs[i]!) + 3e-7, ys[i]! + t * (ys[j]! - ys[i]!)],
      )
    }
  }
  // as positions are stored: 1e-7°
  return points.flatMap(([x, y]) => [[x, y], [Math.round(x * 1e7) / 1e7, Math.round(y * 1e7) / 1e7]] as [number, number][])
}

function expectSameAnswers(rings: Ring[], grid: EdgeGrid, points: [number, number][]): void {
  const wrong = points.filter(([x, y]) => gridContains(grid, x, y, TOLERANCE) !== everyEdge(rings, x, y))
  expect(wrong).toEqual([])
}

describe('the edge grid answers as the test of every edge', () => {
  test('jagged and smooth stars, of 3 to 1,000 corners, some snapped to a lattice', () => {
    for (let i = 0; i < 30; i++) {
      const corners = i === 0 ? 1000 : 3 + Math.floor(random() * 600)
      const rings = ringsOf(star(corners, 2.35, 48.85, 0.005 + random() * 0.3, random(), random() < 0.4 ? 0.002 : 0))
      expectSameAnswers(rings, buildEdgeGrid(rings, TOLERANCE), probes(rings, 1000))
    }
  })

  test('combs, whose long teeth cross every row, and staircases with long runs at one latitude', () => {
    for (const teeth of [1, 3, 40, 249]) {
      const rings = ringsOf(comb(teeth, 2, 48, 0.3, 0.2))
      expectSameAnswers(rings, buildEdgeGrid(rings, TOLERANCE), probes(rings, 2000))
    }
    for (const steps of [1, 2, 17, 300]) {
      const rings = ringsOf(stairs(steps, 2, 48, 0.001))
      expectSameAnswers(rings, buildEdgeGrid(rings, TOLERANCE), probes(rings, 1000))
    }
  })

  test('holes: a point in a hole is outside, on its edge inside', () => {
    const rings = ringsOf(
      [[2, 48], [3, 48], [3, 49], [2, 49]],
      [[2.4, 48.4], [2.6, 48.4], [2.6, 48.6], [2.4, 48.6]],
      star(200, 2.2, 48.2, 0.05, 0.5),
    )
    const grid = buildEdgeGrid(rings, TOLERANCE)
    expectSameAnswers(rings, grid, probes(rings, 3000))
    expect(gridContains(grid, 2.5, 48.5, TOLERANCE)).toBe(false)
    expect(gridContains(grid, 2.5, 48.4, TOLERANCE)).toBe(true)
    expect(gridContains(grid, 2.5, 48.3, TOLERANCE)).toBe(true)
  })

  test("corners and points exactly on the grid's row and column lines", () => {
    for (let trial = 0; trial < 40; trial++) {
      const teeth = 8 + Math.floor(random() * 300)
      // a band with a sawtooth top: the grid depends on the box and the corner count only, so
      // the corners can be moved onto its lines without changing it
      const tops = Array.from({ length: teeth + 1 }, (_, k) => [1 - k / teeth, 0.5 + random() * 0.5])
      const band = (top: number[][]) => ringsOf([[0, 0], [1, 0], [1, 1], ...top.slice(1, -1), [0, 1]])
      const lines = buildEdgeGrid(band(tops), TOLERANCE)
      const onLines = tops.map(([x, y], k) => {
        const row = lines.rowSouth.reduce((best, r) => (r > 0.45 && r < 1 && Math.abs(r - y!) < Math.abs(best - y!) ? r : best), 2)
        const column = lines.columnEast.reduce((best, c) => (Math.abs(c - x!) < Math.abs(best - x!) ? c : best), 2)
        const px = k > 0 && k < teeth && random() < 0.3 && column < tops[k - 1]![0]! && column > tops[k + 1]![0]! ? column : x!
        return [px, random() < 0.7 ? row : y!]
      })
      const rings = band(onLines)
      const grid = buildEdgeGrid(rings, TOLERANCE)
      expect([...grid.rowSouth]).toEqual([...lines.rowSouth])
      const points: [number, number][] = []
      for (const y of grid.rowSouth) for (let k = 0; k < 30; k++) points.push([-0.01 + random() * 1.02, y])
      for (const x of grid.columnEast) for (let k = 0; k < 30; k++) points.push([x, -0.01 + random() * 1.02])
      for (const y of grid.rowSouth) for (const x of grid.columnEast) points.push([x, y])
      for (const [x, y] of onLines) points.push([x!, y!], [x! - 1e-3, y!], [random(), y!])
      expectSameAnswers(rings, grid, points)
    }
  })
})

test('a polygon whose hole holds another hole keeps the ring-by-ring rule: in the inner hole is outside', () => {
  const area = prepareArea({
    type: 'Polygon',
    coordinates: [
      [[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]],
      [[2, 2], [8, 2], [8, 8], [2, 8], [2, 2]],
      [[4, 4], [6, 4], [6, 6], [4, 6], [4, 4]],
    ],
  })
  expect(areaContains(area, 5, 5)).toBe(false)
  expect(areaContains(area, 3, 3)).toBe(false)
  expect(areaContains(area, 1, 1)).toBe(true)
  expect(areaContains(area, 2, 5)).toBe(true)
})
