/**
 * Silence is not driving: a real recording (bus 304, Limerick, 1 Hz) with a stretch of fixes cut
 * out and the rest moved an hour later, as a tracker that lost its power for an hour and more and
 * came back elsewhere. The silence is a reporting gap: no travel spans it, its time is not
 * driving, its displacement is in no distance. A silence where the bus stood is part of a stop,
 * as the contract says.
 */
import { describe, expect, test } from 'bun:test'
import { analyseTrack, DEFAULT_GAP_THRESHOLD_SECONDS, STOP_RADIUS_M, type TrackAnalysis } from '../../src/track'
import type { TrackPoint } from '../../src/track/types'
import { expectConsistent } from './invariants'
import { BUS304_GPX, haversine, LIVERPOOL_CSV, readGpx, readLiverpoolBuses } from './recordings'
import { TrackBuilder, uniform } from './synthetic'

const bus = readGpx(BUS304_GPX)
const t0 = bus[0].timestamp

/** The recording without the fixes in [from, to), and those after it `later` seconds later. */
function cut(points: readonly TrackPoint[], from: number, to: number, later: number): TrackPoint[] {
  return points.filter((p) => p.timestamp < from || p.timestamp >= to).map((p) => (p.timestamp >= to ? { ...p, timestamp: p.timestamp + later } : p))
}

function analyse(points: TrackPoint[], stopThresholdSeconds: number, gapThresholdSeconds?: number): TrackAnalysis {
  const result = analyseTrack(points, { stopThresholdSeconds, gapThresholdSeconds })
  expectConsistent(points, result, stopThresholdSeconds)
  return result
}

const driving = (result: TrackAnalysis) => result.travels.reduce((sum, travel) => sum + travel.duration, 0)

describe('bus 304 with 15 minutes cut out and the rest an hour later', () => {
  // 08:10:50 to 08:25:50 UTC removed: the bus drove a few kilometres meanwhile
  const gapped = cut(bus, t0 + 1500, t0 + 2400, 3600)
  const before = gapped.filter((p) => p.timestamp < t0 + 1500)
  const after = gapped.filter((p) => p.timestamp >= t0 + 2400)
  const lastBefore = before[before.length - 1]
  const firstAfter = after[0]

  test('the silence is one gap, from the last fix before it to the first after, with where the bus reappeared', () => {
    expect(firstAfter.timestamp - lastBefore.timestamp).toBeGreaterThan(DEFAULT_GAP_THRESHOLD_SECONDS)
    for (const threshold of [0, 20, 60, 300]) {
      const result = analyse(gapped, threshold)
      expect(result.gaps.map(({ start, end, duration }) => ({ start, end, duration }))).toEqual([
        { start: lastBefore.timestamp, end: firstAfter.timestamp, duration: firstAfter.timestamp - lastBefore.timestamp },
      ])
      const moved = haversine(lastBefore.latitude, lastBefore.longitude, firstAfter.latitude, firstAfter.longitude)
      expect(moved).toBeGreaterThan(1000)
      expect(result.gaps[0].displacement).toBeCloseTo(moved, -1)
    }
  })

  test('no travel spans the gap, and the driving time excludes it', () => {
    for (const threshold of [0, 20, 60, 300]) {
      const result = analyse(gapped, threshold)
      const [gap] = result.gaps
      for (const travel of result.travels) {
        expect(travel.end.timestamp <= gap.start || travel.start.timestamp >= gap.end).toBe(true)
      }
      // at the default threshold the bus never stops for 5 min: one travel each side of the gap
      if (threshold === 300) expect(result.travels.map((t) => [t.start.timestamp, t.end.timestamp])).toEqual([[t0, lastBefore.timestamp], [firstAfter.timestamp, gapped[gapped.length - 1].timestamp]])
      expect(driving(result)).toBeLessThanOrEqual(lastBefore.timestamp - t0 + (gapped[gapped.length - 1].timestamp - firstAfter.timestamp))
      // exactly what the two parts give when analysed apart
      expect(driving(result)).toBe(driving(analyse(before, threshold)) + driving(analyse(after, threshold)))
      expect(result.stops).toEqual([...analyse(before, threshold).stops, ...analyse(after, threshold).stops.map((s) => ({ ...s, startIndex: s.startIndex + before.length, endIndex: s.endIndex + before.length }))])
    }
  })

  test('the distance is the movement either side: the jump across the gap counts nothing, and route and travels agree', () => {
    for (const threshold of [0, 60, 300]) {
      const result = analyse(gapped, threshold)
      const apart = analyse(before, threshold).totalDistance + analyse(after, threshold).totalDistance
      expect(result.totalDistance).toBeCloseTo(apart, 6)
      expect(result.totalDistance).toBe(result.travels.reduce((sum, travel) => sum + travel.distance, 0))
      // the whole recording is longer by what the bus drove in the 15 minutes cut out
      expect(analyse(bus, threshold).totalDistance - result.totalDistance).toBeGreaterThan(result.gaps[0].displacement)
    }
  })

  test('a silence no longer than the threshold is not a gap: one travel spans it, as before', () => {
    const silence = firstAfter.timestamp - lastBefore.timestamp
    const spanned = analyse(gapped, 300, silence)
    expect(spanned.gaps).toEqual([])
    expect(spanned.travels).toHaveLength(1)
    expect(spanned.travels[0].duration).toBe(gapped[gapped.length - 1].timestamp - t0)
    // one second shorter, and it is one
    expect(analyse(gapped, 300, silence - 1).gaps).toHaveLength(1)
  })
})

describe('a silence where the device stayed put is part of a stop, never a gap', () => {
  test('bus 304 silent for two hours during its terminus wait: one stop across the silence, the same distance', () => {
    // the wait at the start is about 4 minutes; two hours of silence two minutes into it
    const silent = cut(bus, t0 + 120, t0 + 120, 7200)
    expect(silent.length).toBe(bus.length)
    const result = analyse(silent, 300)
    expect(result.gaps).toEqual([])
    expect(result.stops).toHaveLength(1)
    expect(result.stops[0].start).toBe(t0)
    expect(result.stops[0].duration).toBeGreaterThan(7200 + 240)
    expect(result.stops[0].duration).toBeLessThan(7200 + 270)
    // the same movement: only where it stood moves a little (the fix it sat at for two hours weighs more)
    expect(Math.abs(result.totalDistance - analyse(bus, 300).totalDistance)).toBeLessThan(5)
  })

  test('parked, silent for three hours, re-parked 20 m away: one stop (within the stop radius), no gap', () => {
    const builder = new TrackBuilder(52.66, -8.63, 1_700_000_000, 7).fix().move(90, 12, 300).park(600, 10, uniform(3))
    builder.quiet(3 * 3600)
    builder.east += 20
    builder.fix().park(600, 10, uniform(3)).move(0, 12, 300)
    const result = analyse(builder.points, 300)
    expect(result.gaps).toEqual([])
    expect(result.stops).toHaveLength(1)
    expect(result.stops[0].duration).toBeGreaterThan(3 * 3600 + 1200 - 20)
    expect(result.travels).toHaveLength(2)
  })

  test('one fix on arrival, nine hours asleep, a first fix 25 m off on waking: a stop of nine hours, not a gap', () => {
    const builder = new TrackBuilder(52.66, -8.63, 1_700_000_000, 9).fix().move(90, 12, 600, 5)
    const arrived = builder.time
    builder.quiet(9 * 3600)
    builder.north += 25
    builder.fix().move(0, 12, 600, 5)
    const result = analyse(builder.points, 300)
    expect(result.gaps).toEqual([])
    expect(result.stops.map((s) => [s.start, s.end])).toEqual([[arrived, arrived + 9 * 3600]])
    expect(result.travels.map((t) => t.duration)).toEqual([600, 600])
  })

  test('parked, silent for nine hours, parked 15 km away: two stops with the gap between, no travel', () => {
    const builder = new TrackBuilder(52.66, -8.63, 1_700_000_000, 8).fix().park(900, 30, uniform(3))
    const wentQuiet = builder.time
    builder.quiet(9 * 3600)
    builder.north += 15_000
    builder.fix().park(900, 30, uniform(3))
    const result = analyse(builder.points, 300)
    expect(result.stops.map((s) => [s.start, s.end])).toEqual([
      [1_700_000_000, wentQuiet],
      [wentQuiet + 9 * 3600, builder.time],
    ])
    expect(result.gaps.map((g) => [g.start, g.end])).toEqual([[wentQuiet, wentQuiet + 9 * 3600]])
    expect(result.gaps[0].displacement).toBeCloseTo(15_000, -2)
    expect(result.travels).toEqual([])
    expect(result.totalDistance).toBe(0)
  })
})

describe('Liverpool route 14, eight buses at ~25 s, each silent for two hours mid-run', () => {
  for (const [vehicle, points] of readLiverpoolBuses(LIVERPOOL_CSV)) {
    test(`bus ${vehicle}: the silence is a gap that no travel spans`, () => {
      const middle = points[Math.floor(points.length / 2)].timestamp
      const gapped = points.map((p) => (p.timestamp > middle ? { ...p, timestamp: p.timestamp + 7200 } : p))
      const result = analyse(gapped, 300)
      const at = gapped.findIndex((p) => p.timestamp === middle)
      const apart = haversine(gapped[at].latitude, gapped[at].longitude, gapped[at + 1].latitude, gapped[at + 1].longitude)
      // within the stop radius of where it went quiet, it stayed put: a stop across the silence; farther, a gap
      const gaps = result.gaps.filter((g) => g.start === middle)
      const stops = result.stops.filter((s) => s.start <= middle && s.end >= gapped[at + 1].timestamp)
      console.log(`bus ${vehicle}: reappeared ${apart.toFixed(0)} m away: ${gaps.length ? 'a gap' : 'a stop'}`)
      expect({ gaps: gaps.length, stops: stops.length }).toEqual(apart > STOP_RADIUS_M ? { gaps: 1, stops: 0 } : { gaps: 0, stops: 1 })
      for (const travel of result.travels) expect(travel.start.timestamp <= middle && travel.end.timestamp > middle).toBe(false)
      expect(driving(result)).toBeLessThan(gapped[gapped.length - 1].timestamp - gapped[0].timestamp - 7200)
    })
  }
})
