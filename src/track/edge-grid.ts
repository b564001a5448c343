/**
 * A polygon's edges in a grid over its box, so that a point is tested against the few edges of
 * its own cell instead of every edge (pure; track/geofence.ts builds one for each polygon).
 *
 * The answer is the even-odd test's, bit for bit: the edge-by-edge test (geofence.ts's ringSide)
 * counts the edges that cross the horizontal ray from the point to the east (an edge "crosses"
 * when one end is above the point's latitude and the other is not, and the crossing lies east of
 * the point) and says "on the boundary" when an edge is within the tolerance. Split the edges into
 * those of the point's cell (every edge that comes within the tolerance of the cell, so an edge
 * the point is on is always one of them) and the rest. The cell's edges are tested as before,
 * with the same arithmetic. Each of the rest lies, within the cell's row, wholly west or wholly
 * east of the cell (it would cross the cell otherwise), so it crosses the ray exactly when it lies
 * east and spans the point's latitude: a count that depends on the latitude only, and is
 * precomputed for the row's bottom line. Going up the row, that count changes only where a
 * vertex lies (an edge starts or stops spanning), and its parity only where the chain of the
 * boundary through that vertex (a run of vertices at one latitude, and the two edges that leave
 * it) has one leaving edge among the eastern rest and the other not, which only happens when the
 * cell's own edges are involved: those latitudes are kept with the cell. Nothing but comparisons
 * of stored numbers decides the rest's count, so no rounding can make it differ from the
 * edge-by-edge test's.
 *
 * A cell that no edge comes near is wholly inside or wholly outside: one lookup.
 */

/** what a grid may cost, in cells for each edge, and at most (a polygon has at most a few thousand edges) */
const CELLS_PER_EDGE = 2
const MAX_CELLS = 1 << 14
/** cells an edge may be entered in, on average, before the grid is made coarser (a comb's long teeth): memory */
const MAX_ENTRIES_PER_EDGE = 16

const OUTSIDE = -1
const INSIDE = -2

export interface EdgeGrid {
  /** every ring's vertices, one after another: edge k runs from vertex k to vertex next[k] */
  xs: Float64Array
  ys: Float64Array
  next: Int32Array
  columns: number
  rows: number
  /** the grid's west and south edges, and a cell's width and height */
  west: number
  south: number
  cellWidth: number
  cellHeight: number
  /** the east side of each column (`columns` of them) and the south side of each row, then the north edge (`rows + 1`) */
  columnEast: Float64Array
  rowSouth: Float64Array
  /**
   * each cell (row by row, west to east): OUTSIDE, INSIDE, or the number of its entry in the
   * tables below (entries are numbered row by row, east to west, as they are filled)
   */
  cells: Int16Array
  /** an entry's edges: edgeIds[edgeStart[b] … edgeStart[b + 1]) */
  edgeStart: Uint16Array | Uint32Array
  edgeIds: Uint16Array | Uint32Array
  /** the parity of the other edges east of the cell that span its row's bottom line */
  eastParity: Uint8Array
  /** the latitudes within the row where that parity flips: flips[flipStart[b] … flipStart[b + 1]) */
  flipStart: Uint16Array | Uint32Array
  flips: Float64Array
  /** the entries' edges, all cells together (what a build cost) */
  entries: number
}

/**
 * Whether the point is within `tolerance` of the edge from (xj, yj) to (xi, yi): within its box
 * (widened) and close to its line, and not past either end by more than the tolerance. Shared
 * with geofence.ts's ringSide: the grid must decide exactly as it does.
 */
export function onEdge(xi: number, yi: number, xj: number, yj: number, x: number, y: number, tolerance: number): boolean {
  if (x < Math.min(xi, xj) - tolerance || x > Math.max(xi, xj) + tolerance || y < Math.min(yi, yj) - tolerance || y > Math.max(yi, yj) + tolerance) return false
  const dx = xj - xi
  const dy = yj - yi
  const cross = dx * (y - yi) - dy * (x - xi)
  const length = Math.hypot(dx, dy)
  if (Math.abs(cross) > tolerance * length) return false
  const t = length === 0 ? 0 : ((x - xi) * dx + (y - yi) * dy) / (length * length)
  const reach = length === 0 ? 0 : tolerance / length
  return t >= -reach && t <= 1 + reach
}

/** Whether the edge from (xj, yj) to (xi, yi) crosses the ray east from (x, y) (the even-odd rule's test; shared with ringSide). */
export function crossesEast(xi: number, yi: number, xj: number, yj: number, x: number, y: number): boolean {
  return yi > y !== yj > y && x < xi + ((y - yi) * (xj - xi)) / (yj - yi)
}

/** The longitude at which the edge from (xj, yj) to (xi, yi) crosses latitude y, as crossesEast computes it. */
function crossingX(xi: number, yi: number, xj: number, yj: number, y: number): number {
  return xi + ((y - yi) * (xj - xi)) / (yj - yi)
}

/**
 * The grid of a polygon's rings (each closed implicitly: its last vertex joins its first; no
 * consecutive repeats, not flat). `tolerance`: how near an edge a point is on it.
 */
export function buildEdgeGrid(rings: readonly { xs: Float64Array; ys: Float64Array }[], tolerance: number): EdgeGrid {
  let n = 0
  for (const ring of rings) n += ring.xs.length
  // one ring (most polygons) is read where it is; several are put one after another
  const xs = rings.length === 1 ? rings[0]!.xs : new Float64Array(n)
  const ys = rings.length === 1 ? rings[0]!.ys : new Float64Array(n)
  const next = new Int32Array(n)
  const previous = new Int32Array(n)
  const ringOffsets: number[] = []
  let offset = 0
  for (const ring of rings) {
    const m = ring.xs.length
    if (rings.length > 1) {
      xs.set(ring.xs, offset)
      ys.set(ring.ys, offset)
    }
    for (let k = 0; k < m; k++) {
      next[offset + k] = offset + (k + 1 === m ? 0 : k + 1)
      previous[offset + k] = offset + (k === 0 ? m - 1 : k - 1)
    }
    ringOffsets.push(offset)
    offset += m
  }
  let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity
  for (let v = 0; v < n; v++) {
    const x = xs[v]!, y = ys[v]!
    if (x < minX) minX = x
    if (x > maxX) maxX = x
    if (y < minY) minY = y
    if (y > maxY) maxY = y
  }
  // an edge is entered in every cell it comes within `reach` of: the tolerance, and room for rounding
  const reach = tolerance * 2 + 1e-9
  const west = minX - reach
  const south = minY - reach
  const width = maxX - minX + 2 * reach
  const height = maxY - minY + 2 * reach

  // the grid's shape: about CELLS_PER_EDGE cells an edge, as square as the box allows; coarser
  // while long edges would be entered in too many cells (a comb's teeth)
  let spanX = 0
  let spanY = 0
  for (let k = 0; k < n; k++) {
    spanX += Math.abs(xs[next[k]!]! - xs[k]!)
    spanY += Math.abs(ys[next[k]!]! - ys[k]!)
  }
  let target = Math.min(MAX_CELLS, Math.max(1, CELLS_PER_EDGE * n))
  let columns = 1
  let rows = 1
  for (;;) {
    columns = Math.max(1, Math.min(target, Math.round(Math.sqrt((target * width) / height))))
    rows = Math.max(1, Math.min(target, Math.round(target / columns)))
    // about the cells an edge is entered in, all edges together
    const entries = (spanX / width) * columns + (spanY / height) * rows + 2 * n
    if (entries <= MAX_ENTRIES_PER_EDGE * n || target <= 4) break
    target = Math.floor(target / 2)
  }
  const cellWidth = width / columns
  const cellHeight = height / rows
  const columnEast = new Float64Array(columns)
  for (let c = 0; c < columns; c++) columnEast[c] = c === columns - 1 ? west + width : west + (c + 1) * cellWidth
  const rowSouth = new Float64Array(rows + 1)
  for (let r = 0; r <= rows; r++) rowSouth[r] = r === rows ? south + height : south + r * cellHeight
  const cellCount = columns * rows

  // each edge into the cells it comes near, as (cell, edge) pairs, then grouped by cell
  let pairs = new Int32Array(Math.max(16, 4 * n))
  let pairCount = 0
  for (let k = 0; k < n; k++) {
    const j = next[k]!
    const ax = xs[k]!, ay = ys[k]!, bx = xs[j]!, by = ys[j]!
    const low = ay < by ? ay : by
    const high = ay < by ? by : ay
    const firstRow = Math.max(0, Math.floor((low - reach - south) / cellHeight))
    const lastRow = Math.min(rows - 1, Math.floor((high + reach - south) / cellHeight))
    for (let r = firstRow; r <= lastRow; r++) {
      // the edge's longitudes within this row (widened by the reach)
      let xLow = ax < bx ? ax : bx
      let xHigh = ax < bx ? bx : ax
      if (ay !== by) {
        const y0 = Math.max(low, rowSouth[r]! - reach)
        const y1 = Math.min(high, rowSouth[r + 1]! + reach)
        const x0 = ax + ((y0 - ay) * (bx - ax)) / (by - ay)
        const x1 = ax + ((y1 - ay) * (bx - ax)) / (by - ay)
        xLow = x0 < x1 ? x0 : x1
        xHigh = x0 < x1 ? x1 : x0
      }
      const firstColumn = Math.max(0, Math.floor((xLow - reach - west) / cellWidth))
      const lastColumn = Math.min(columns - 1, Math.floor((xHigh + reach - west) / cellWidth))
      if (pairCount + 2 * (lastColumn - firstColumn + 1) > pairs.length) {
        const grown = new Int32Array(Math.max(pairs.length * 2, pairCount + 2 * (lastColumn - firstColumn + 1)))
        grown.set(pairs)
        pairs = grown
      }
      for (let c = firstColumn; c <= lastColumn; c++) {
        pairs[pairCount++] = r * columns + c
        pairs[pairCount++] = k
      }
    }
  }
  const counts = new Uint32Array(cellCount)
  for (let p = 0; p < pairCount; p += 2) counts[pairs[p]!]!++
  // the cells that hold edges get an entry each, numbered row by row, east to west (the order
  // the flips are found in below); a grid has fewer than 2^15 cells
  const cells = new Int16Array(cellCount)
  let boundary = 0
  for (let r = 0; r < rows; r++) {
    for (let c = columns - 1; c >= 0; c--) cells[r * columns + c] = counts[r * columns + c]! > 0 ? boundary++ : OUTSIDE
  }
  const entries = pairCount / 2
  const edgeStart = entries <= 0xffff ? new Uint16Array(boundary + 1) : new Uint32Array(boundary + 1)
  for (let c = 0; c < cellCount; c++) if (cells[c]! >= 0) edgeStart[cells[c]! + 1] = counts[c]!
  for (let b = 0; b < boundary; b++) edgeStart[b + 1]! += edgeStart[b]!
  const edgeIds = n <= 0xffff ? new Uint16Array(entries) : new Uint32Array(entries)
  const filled = new Uint32Array(boundary)
  for (let p = 0; p < pairCount; p += 2) {
    const b = cells[pairs[p]!]!
    edgeIds[edgeStart[b]! + filled[b]!++] = pairs[p + 1]!
  }

  // runs: the maximal chains of consecutive vertices at one latitude (most are one vertex); the
  // two edges that leave a run are the ones that start or stop spanning a latitude there
  const runOf = new Int32Array(n)
  const runFirst: number[] = []
  const runLast: number[] = []
  for (let index = 0; index < rings.length; index++) {
    const m = rings[index]!.xs.length
    // start at a vertex whose predecessor is at another latitude
    let start = ringOffsets[index]!
    for (let tries = 0; ys[previous[start]!] === ys[start]; tries++) {
      if (tries >= m) throw new Error('a ring is flat')
      start = next[start]!
    }
    let v = start
    do {
      const id = runFirst.length
      runFirst.push(v)
      runOf[v] = id
      let last = v
      while (next[last] !== start && ys[next[last]!] === ys[v]) {
        last = next[last]!
        runOf[last] = id
      }
      runLast.push(last)
      v = next[last]!
    } while (v !== start)
  }

  // the edges spanning each row's bottom line (low ≤ y < high, as crossesEast has it): which
  // columns they lie east of (a column's east side below the crossing)
  const toggles = new Uint8Array(cellCount)
  for (let k = 0; k < n; k++) {
    const j = next[k]!
    // as ringSide pairs them: (xi, yi) the edge's end, (xj, yj) its start
    const xi = xs[j]!, yi = ys[j]!, xj = xs[k]!, yj = ys[k]!
    if (yi === yj) continue
    const low = yi < yj ? yi : yj
    const high = yi < yj ? yj : yi
    let r = Math.min(rows - 1, Math.max(0, Math.floor((low - south) / cellHeight)))
    while (r > 0 && rowSouth[r - 1]! >= low) r--
    while (r < rows && rowSouth[r]! < low) r++
    for (; r < rows && rowSouth[r]! < high; r++) {
      const x = crossingX(xi, yi, xj, yj, rowSouth[r]!)
      // how many columns' east sides are below x
      let east = Math.min(columns, Math.max(0, Math.floor((x - west) / cellWidth)))
      while (east > 0 && columnEast[east - 1]! >= x) east--
      while (east < columns && columnEast[east]! < x) east++
      if (east > 0) toggles[r * columns + east - 1]! ^= 1
    }
  }

  // each cell: wholly inside or outside, or the parity of the other edges east of it and where it flips
  const eastParity = new Uint8Array(boundary)
  const flipList: number[] = []
  const flipAt = new Uint32Array(boundary + 1)
  const edgeMark = new Int32Array(n).fill(-1)
  const runMark = new Int32Array(runFirst.length).fill(-1)
  for (let r = 0; r < rows; r++) {
    const y = rowSouth[r]!
    const top = rowSouth[r + 1]!
    let parity = 0
    for (let c = columns - 1; c >= 0; c--) {
      const cell = r * columns + c
      parity ^= toggles[cell]!
      const b = cells[cell]!
      if (b < 0) {
        cells[cell] = parity === 1 ? INSIDE : OUTSIDE
        continue
      }
      const east = columnEast[c]!
      const from = edgeStart[b]!
      const to = edgeStart[b + 1]!
      // the cell's own edges are tested at each point: out of the row's count with them
      let own = parity
      for (let e = from; e < to; e++) {
        const k = edgeIds[e]!
        edgeMark[k] = b
        const j = next[k]!
        const xi = xs[j]!, yi = ys[j]!, xj = xs[k]!, yj = ys[k]!
        if (yi > y !== yj > y && crossingX(xi, yi, xj, yj, y) > east) own ^= 1
      }
      eastParity[b] = own
      // Up the row, the count of the other eastern edges flips at a run of which one leaving edge
      // is among them and the other not (the other edges at a run lie on one side of the cell
      // unless the run crosses it): only runs at the cell's own edges can.
      flipAt[b] = flipList.length
      for (let e = from; e < to; e++) {
        const k = edgeIds[e]!
        for (let end = 0; end < 2; end++) {
          const v = end === 0 ? k : next[k]!
          const yv = ys[v]!
          if (!(yv > y && yv < top)) continue
          const run = runOf[v]!
          if (runMark[run] === b) continue
          runMark[run] = b
          // the edges leaving the run: into its first vertex, out of its last
          const first = runFirst[run]!
          const last = runLast[run]!
          const into = previous[first]!
          const eastInto = edgeMark[into] !== b && xs[first]! > east
          const eastOut = edgeMark[last] !== b && xs[last]! > east
          if (eastInto !== eastOut) flipList.push(yv)
        }
      }
    }
  }
  flipAt[boundary] = flipList.length
  const flipStart = flipList.length <= 0xffff ? Uint16Array.from(flipAt) : flipAt
  return {
    xs, ys, next, columns, rows, west, south, cellWidth, cellHeight, columnEast, rowSouth, cells,
    edgeStart, edgeIds, eastParity, flipStart, flips: Float64Array.from(flipList), entries,
  }
}

/**
 * Whether the point is inside the polygon or within `tolerance` of its boundary, as the even-odd
 * test of every edge says (the tolerance the grid was built with). `meter.work` grows by the
 * edges and flips read.
 */
export function gridContains(g: EdgeGrid, x: number, y: number, tolerance: number, meter?: { work: number }): boolean {
  if (x < g.west || y < g.south || x > g.columnEast[g.columns - 1]! || y > g.rowSouth[g.rows]!) return false
  const c = Math.min(g.columns - 1, Math.floor((x - g.west) / g.cellWidth))
  let r = Math.min(g.rows - 1, Math.floor((y - g.south) / g.cellHeight))
  // the row whose latitudes hold y, as the flips were chosen for it
  while (r > 0 && y < g.rowSouth[r]!) r--
  while (r < g.rows - 1 && y >= g.rowSouth[r + 1]!) r++
  const b = g.cells[r * g.columns + c]!
  if (b < 0) return b === INSIDE
  let inside = g.eastParity[b] === 1
  const flipEnd = g.flipStart[b + 1]!
  for (let f = g.flipStart[b]!; f < flipEnd; f++) if (g.flips[f]! <= y) inside = !inside
  const xs = g.xs
  const ys = g.ys
  const edgeEnd = g.edgeStart[b + 1]!
  for (let e = g.edgeStart[b]!; e < edgeEnd; e++) {
    const k = g.edgeIds[e]!
    const j = g.next[k]!
    const xi = xs[j]!, yi = ys[j]!, xj = xs[k]!, yj = ys[k]!
    if (onEdge(xi, yi, xj, yj, x, y, tolerance)) return true
    if (crossesEast(xi, yi, xj, yj, x, y)) inside = !inside
  }
  if (meter) meter.work += edgeEnd - g.edgeStart[b]! + flipEnd - g.flipStart[b]!
  return inside
}
