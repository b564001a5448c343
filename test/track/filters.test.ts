import { describe, expect, test } from 'bun:test'
import {
  FIX_NEW_SEGMENT,
  FIX_VALID,
  filterFixes,
  isPlausiblePosition,
  REASON_COORDINATES,
  REASON_ORDER,
  REASON_SPEED,
} from '../../src/track/filters'
import type { TrackPoint } from '../../src/track/types'
import { TrackBuilder } from './synthetic'

/** A car at 15 m/s, one fix a second, `n` fixes. */
function drive(n: number): TrackPoint[] {
  return new TrackBuilder().fix().move(90, 15, n - 1).points
}

/** The same fix moved `km` kilometres north: at 1 s from its neighbours, far beyond 500 km/h. */
function displaced(point: TrackPoint, km: number): TrackPoint {
  return { ...point, latitude: point.latitude + km / 111.2 }
}

describe('isPlausiblePosition', () => {
  test('accepts real positions, including the edges of the ranges', () => {
    expect(isPlausiblePosition(52.66, -8.63)).toBe(true)
    expect(isPlausiblePosition(-90, 180)).toBe(true)
    expect(isPlausiblePosition(0, 10)).toBe(true)
    expect(isPlausiblePosition(10, 0)).toBe(true)
  })
  test('rejects out of range, NaN, infinities and exactly 0/0', () => {
    expect(isPlausiblePosition(90.0001, 0)).toBe(false)
    expect(isPlausiblePosition(0, -180.5)).toBe(false)
    expect(isPlausiblePosition(Number.NaN, 1)).toBe(false)
    expect(isPlausiblePosition(1, Number.NaN)).toBe(false)
    expect(isPlausiblePosition(Number.POSITIVE_INFINITY, 1)).toBe(false)
    expect(isPlausiblePosition(0, 0)).toBe(false)
  })
})

describe('filterFixes', () => {
  test('keeps a clean track whole', () => {
    const { valid, rejected } = filterFixes(drive(100))
    expect(rejected).toEqual([])
    expect([...valid].every((flag) => flag === FIX_VALID)).toBe(true)
  })

  test('empty input', () => {
    const result = filterFixes([])
    expect(result.valid.length).toBe(0)
    expect(result.rejected).toEqual([])
  })

  test('flags bad coordinates and keeps their index in the result', () => {
    const points = drive(10)
    points[3] = { ...points[3], latitude: 0, longitude: 0 }
    points[5] = { ...points[5], latitude: Number.NaN }
    points[7] = { ...points[7], longitude: 200 }
    const { valid, reasons, rejected } = filterFixes(points)
    expect(valid.length).toBe(10)
    expect(rejected).toEqual([3, 5, 7])
    for (const i of rejected) expect(reasons[i]).toBe(REASON_COORDINATES)
  })

  test('a single spike is rejected, not the good fixes after it', () => {
    const points = drive(60)
    points[30] = displaced(points[30], 50)
    const { rejected, reasons } = filterFixes(points)
    expect(rejected).toEqual([30])
    expect(reasons[30]).toBe(REASON_SPEED)
  })

  test('two consecutive spikes at the same wrong place are both rejected', () => {
    const points = drive(60)
    points[30] = displaced(points[30], 50)
    points[31] = displaced(points[31], 50)
    expect(filterFixes(points).rejected).toEqual([30, 31])
  })

  test('a run of three spikes that agree with each other is still rejected', () => {
    const points = drive(60)
    for (const i of [30, 31, 32]) points[i] = displaced(points[i], 50)
    expect(filterFixes(points).rejected).toEqual([30, 31, 32])
  })

  test('scattered spikes in different directions are each rejected', () => {
    const points = drive(60)
    for (const [i, km] of [[10, 5], [11, -7], [12, 30], [40, -2]]) points[i] = displaced(points[i], km)
    expect(filterFixes(points).rejected).toEqual([10, 11, 12, 40])
  })

  test('the first fix being the spike rejects only it', () => {
    const points = drive(60)
    points[0] = displaced(points[0], 50)
    expect(filterFixes(points).rejected).toEqual([0])
  })

  test('the first two fixes being a spike rejects only them', () => {
    const points = drive(60)
    points[0] = displaced(points[0], 50)
    points[1] = displaced(points[1], 50)
    expect(filterFixes(points).rejected).toEqual([0, 1])
  })

  test('a spike right after the first fix does not take the first fix with it', () => {
    const points = drive(60)
    points[1] = displaced(points[1], 50)
    expect(filterFixes(points).rejected).toEqual([1])
  })

  test('a spike on the last fix is rejected', () => {
    const points = drive(60)
    points[59] = displaced(points[59], 50)
    expect(filterFixes(points).rejected).toEqual([59])
  })

  test('a fast but possible jump (a long gap) is kept', () => {
    const builder = new TrackBuilder().fix().move(0, 15, 10)
    builder.quiet(3600) // one hour of silence ...
    builder.east += 100_000 // ... then 100 km away: 100 km/h on average
    builder.fix().move(0, 15, 10)
    expect(filterFixes(builder.points).rejected).toEqual([])
  })

  test('duplicate and out-of-order timestamps are rejected, the first one standing', () => {
    const points = drive(10)
    const duplicate = { ...points[4], latitude: points[4].latitude + 0.00001 }
    const late = { ...points[2] }
    const withExtras = [...points.slice(0, 5), duplicate, points[5], late, ...points.slice(6)]
    const { rejected, reasons } = filterFixes(withExtras)
    expect(rejected).toEqual([5, 7])
    expect(reasons[5]).toBe(REASON_ORDER)
    expect(reasons[7]).toBe(REASON_ORDER)
  })

  test('reversed input is not reordered: all but the first fix are out of order', () => {
    const points = drive(10).reverse()
    const { rejected } = filterFixes(points)
    expect(rejected).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9])
  })

  test('a device that really is elsewhere is followed after a few fixes, as a new segment', () => {
    // Five stale fixes from somewhere 300 km away, then the real track: impossible between them.
    const real = drive(40)
    const stale = real.slice(0, 5).map((point, i) => ({
      ...displaced(point, 300),
      timestamp: point.timestamp - 10 + i,
    }))
    const points = [...stale, ...real]
    const { valid, rejected } = filterFixes(points)
    // The stale island is too long to be outvoted, so it stays; the real fixes are taken up
    // as a new segment rather than all being lost.
    expect(rejected).toEqual([])
    expect(valid[5]).toBe(FIX_NEW_SEGMENT)
    expect(valid.slice(6).every((flag) => flag === FIX_VALID)).toBe(true)
  })

  test('a lower speed limit is honoured', () => {
    const points = drive(20) // 54 km/h
    expect(filterFixes(points, { maxSpeedKmh: 40 }).rejected.length).toBeGreaterThan(0)
    expect(filterFixes(points, { maxSpeedKmh: 60 }).rejected).toEqual([])
  })
})
