import { describe, expect, test } from 'bun:test'
import { analyseTrack, type TrackAnalysis } from '../../src/track'
import type { TrackPoint } from '../../src/track/types'
import { expectConsistent } from './invariants'
import { haversine } from './recordings'
import { TrackBuilder, uniform, wandering } from './synthetic'

function analyse(points: TrackPoint[], stopThresholdSeconds: number): TrackAnalysis {
  const result = analyseTrack(points, { stopThresholdSeconds })
  expectConsistent(points, result, stopThresholdSeconds)
  return result
}

describe('parked', () => {
  test('an hour of ±5 m jitter at 1 Hz: no distance, one stop of 3600 s where it stood', () => {
    const builder = new TrackBuilder().fix()
    const points = builder.park(3600, 1, uniform(5)).points
    for (const threshold of [0, 20, 300, 3600]) {
      const result = analyse(points, threshold)
      expect(result.totalDistance).toBe(0)
      expect(result.travels).toEqual([])
      expect(result.stops.length).toBe(1)
      const [stop] = result.stops
      expect(stop.duration).toBe(3600)
      const [lat, lon] = builder.toLatLon(0, 0)
      expect(haversine(stop.latitude, stop.longitude, lat, lon)).toBeLessThan(1)
    }
    expect(analyse(points, 3601).stops).toEqual([])
  })

  test('an hour with a wandering receiver (σ 5 m, drifting): one stop, no distance', () => {
    for (const seed of [1, 2, 3]) {
      const builder = new TrackBuilder(52.66, -8.63, 1_700_000_000, seed).fix()
      const result = analyse(builder.park(3600, 1, wandering(5, 0.98)).points, 300)
      expect(result.stops.length).toBe(1)
      expect(result.stops[0].duration).toBe(3600)
      expect(result.totalDistance).toBe(0)
    }
  })

  test('a tracker that reports every 2 minutes while parked', () => {
    const result = analyse(new TrackBuilder().fix().park(7200, 120, uniform(4)).points, 300)
    expect(result.stops.map((stop) => stop.duration)).toEqual([7200])
    expect(result.totalDistance).toBe(0)
  })
})

describe('reporting gaps', () => {
  test('moving, parked 20 min without a fix, moving: a stop of 20 min', () => {
    const builder = new TrackBuilder().fix().move(90, 12, 300)
    const arrival = builder.time
    builder.quiet(1200).fix() // the tracker wakes up where it went quiet
    builder.move(0, 12, 300)
    const result = analyse(builder.points, 300)
    expect(result.stops.length).toBe(1)
    expect(result.stops[0].start).toBe(arrival)
    expect(result.stops[0].duration).toBe(1200)
    expect(result.travels.length).toBe(2)
    expect(result.travels[0].end.timestamp).toBe(arrival)
    expect(result.travels[1].start.timestamp).toBe(arrival + 1200)
    expect(Math.abs(result.totalDistance / 7200 - 1)).toBeLessThan(0.005)
  })

  test('a gap while the device moved on is no stop', () => {
    const builder = new TrackBuilder().fix().move(90, 12, 300).quiet(600)
    builder.east += 5000
    builder.fix().move(90, 12, 300)
    const result = analyse(builder.points, 300)
    expect(result.stops).toEqual([])
    expect(result.travels.length).toBe(1)
  })
})

describe('spikes', () => {
  test('a single fix 50 km away is ignored: same distance, stops and travels as without it', () => {
    const clean = new TrackBuilder().fix().move(0, 12, 600).park(600, 1, uniform(3)).move(90, 12, 600).points
    const spiked = clean.map((point) => ({ ...point }))
    spiked[300] = { ...spiked[300], latitude: spiked[300].latitude + 0.45 }
    spiked[900] = { ...spiked[900], longitude: spiked[900].longitude - 0.7 } // and one while parked
    const a = analyse(clean, 300)
    const b = analyse(spiked, 300)
    expect(b.rejected).toEqual([300, 900])
    // Same spans; the stop's centre moves by a hair because one parked fix fewer is averaged.
    expect(b.totalDistance).toBeCloseTo(a.totalDistance, 1)
    expect(b.stops.map((stop) => [stop.start, stop.end])).toEqual(a.stops.map((stop) => [stop.start, stop.end]))
    expect(haversine(b.stops[0].latitude, b.stops[0].longitude, a.stops[0].latitude, a.stops[0].longitude)).toBeLessThan(0.1)
    expect(b.travels.map((travel) => [travel.start.index, travel.end.index])).toEqual(
      a.travels.map((travel) => [travel.start.index, travel.end.index]),
    )
  })

  test('the route still lists every fix: flags are per input point', () => {
    const points = new TrackBuilder().fix().move(0, 12, 60).points
    points[10] = { ...points[10], latitude: 0, longitude: 0 }
    const result = analyse(points, 300)
    expect(result.valid.length).toBe(points.length)
    expect(result.valid[10]).toBe(0)
    expect(result.rejected).toEqual([10])
  })
})

describe('slow movement is movement', () => {
  test('a walker at 1.2 m/s for 30 min: about 2160 m, no stop', () => {
    const points = new TrackBuilder().fix().move(60, 1.2, 1800).points
    for (const threshold of [0, 20, 300]) {
      const result = analyse(points, threshold)
      expect(result.stops).toEqual([])
      expect(result.travels.length).toBe(1)
      expect(Math.abs(result.totalDistance / 2160 - 1)).toBeLessThan(0.02)
      expect(result.travels[0].max_speed).toBeCloseTo(4.32, 1)
    }
  })

  test('a walker with a wandering receiver: within 2%, no stop at the default threshold', () => {
    const points = new TrackBuilder(52.66, -8.63, 1_700_000_000, 11).fix().move(60, 1.2, 1800, 1, wandering(2, 0.97)).points
    const result = analyse(points, 300)
    expect(result.stops).toEqual([])
    expect(Math.abs(result.totalDistance / 2160 - 1)).toBeLessThan(0.02)
    expect(result.travels[0].max_speed).toBeLessThan(7) // 4.3 km/h true; no absurd maxima
  })

  test('a runner at 2.75 m/s, 1 Hz, for 20 min: 3300 m, no stop', () => {
    const points = new TrackBuilder().fix().move(200, 2.75, 1200).points
    const result = analyse(points, 20)
    expect(result.stops).toEqual([])
    expect(Math.abs(result.totalDistance / 3300 - 1)).toBeLessThan(0.01)
  })

  test('a runner who pauses at a crossing for 40 s', () => {
    const builder = new TrackBuilder().fix().move(200, 2.75, 300)
    const pause = builder.time
    builder.park(40, 1, uniform(1.5)).move(200, 2.75, 300)
    const result = analyse(builder.points, 30)
    expect(result.stops.length).toBe(1)
    // A stop's ends are as sharp as the time it takes to cross the movement radius: ~4-7 s here.
    expect(Math.abs(result.stops[0].start - pause)).toBeLessThanOrEqual(8)
    expect(Math.abs(result.stops[0].end - (pause + 40))).toBeLessThanOrEqual(8)
    expect(Math.abs(result.totalDistance / 1650 - 1)).toBeLessThan(0.02)
  })
})

describe('thresholds', () => {
  /** A drive with pauses of the given lengths (seconds) at traffic lights, 1 Hz, slight jitter. */
  function driveWithPauses(pauses: number[]): TrackPoint[] {
    const builder = new TrackBuilder(52.66, -8.63, 1_700_000_000, 4).fix().move(0, 12, 120)
    for (const pause of pauses) builder.park(pause, 1, uniform(1)).move(0, 12, 120)
    return builder.points
  }

  test('threshold 0 reports every pause of at least 10 s, never a moving car', () => {
    const points = driveWithPauses([5, 12, 30, 90])
    expect(analyse(points, 0).stops.map((stop) => stop.duration)).toEqual([12, 30, 90])
    expect(analyse(points, 20).stops.map((stop) => stop.duration)).toEqual([30, 90])
    expect(analyse(points, 60).stops.map((stop) => stop.duration)).toEqual([90])
    expect(analyse(points, 300).stops).toEqual([])
    // The distance does not depend on the threshold here: the pauses hold no movement.
    const distances = [0, 20, 60, 300].map((threshold) => analyse(points, threshold).totalDistance)
    for (const distance of distances) expect(distance).toBeCloseTo(distances[0], 6)
    expect(Math.abs(distances[0] / (5 * 120 * 12) - 1)).toBeLessThan(0.005)
  })

  test('a negative or NaN threshold is a programming error', () => {
    const points = driveWithPauses([])
    expect(() => analyseTrack(points, { stopThresholdSeconds: -1 })).toThrow(RangeError)
    expect(() => analyseTrack(points, { stopThresholdSeconds: Number.NaN })).toThrow(RangeError)
  })

  test('the default threshold is 300 s', () => {
    const builder = new TrackBuilder().fix().move(0, 12, 60).park(299).move(0, 12, 60).park(301).move(0, 12, 60)
    expect(analyseTrack(builder.points).stops.map((stop) => stop.duration)).toEqual([301])
  })
})

describe('stops at the same place are one stop', () => {
  test('parked, moved 15 m across the car park, parked: one stop', () => {
    const builder = new TrackBuilder().fix().move(0, 12, 120)
    const arrival = builder.time
    builder.park(1800, 5, uniform(3)).move(90, 1.5, 10).park(1800, 5, uniform(3)).move(180, 12, 120)
    const result = analyse(builder.points, 300)
    expect(result.stops.length).toBe(1)
    expect(Math.abs(result.stops[0].start - arrival)).toBeLessThanOrEqual(2) // 12 m/s: within a fix or two
    expect(Math.abs(result.stops[0].duration - 3610)).toBeLessThanOrEqual(4)
    expect(result.travels.length).toBe(2)
  })

  test('two short waits 15 m apart add up to one stop over the threshold', () => {
    const builder = new TrackBuilder().fix().move(0, 12, 120).park(200, 1, uniform(1)).move(0, 1.5, 10)
    builder.park(200, 1, uniform(1)).move(0, 12, 120)
    const result = analyse(builder.points, 300)
    expect(result.stops.length).toBe(1)
    expect(result.stops[0].duration).toBeGreaterThanOrEqual(400)
  })

  test('a burst of multipath fixes 45 m away while parked does not split the stop', () => {
    const builder = new TrackBuilder().fix().park(1800, 1, uniform(3))
    builder.east += 45
    builder.park(4, 1, uniform(3))
    builder.east -= 45
    builder.park(1800, 1, uniform(3))
    const result = analyse(builder.points, 300)
    expect(result.stops.map((stop) => stop.duration)).toEqual([3604])
    expect(result.totalDistance).toBe(0)
  })

  test('driving off for five minutes and parking at the same spot again is two stops', () => {
    const builder = new TrackBuilder().fix().park(1800, 10, uniform(3)).move(0, 10, 150).move(180, 10, 150)
    builder.park(1800, 10, uniform(3))
    const result = analyse(builder.points, 300)
    expect(result.stops.length).toBe(2)
    expect(result.travels.length).toBe(1)
    expect(Math.abs(result.totalDistance - 3000)).toBeLessThan(30)
  })

  test('two car parks 500 m apart are two stops with a travel between', () => {
    const builder = new TrackBuilder().fix().park(600, 10, uniform(3)).move(90, 10, 50).park(600, 10, uniform(3))
    const result = analyse(builder.points, 300)
    expect(result.stops.map((stop) => stop.duration)).toEqual([600, 600])
    expect(result.travels.length).toBe(1)
    expect(result.travels[0].start.timestamp).toBe(result.stops[0].end)
    expect(result.travels[0].end.timestamp).toBe(result.stops[1].start)
    expect(Math.abs(result.totalDistance - 500)).toBeLessThan(15)
  })
})

describe('travels', () => {
  test('max speed is the highest reported speed when the device reports speed', () => {
    const builder = new TrackBuilder().fix(0, 0, 0).move(0, 10, 60, 1, undefined, true)
    builder.move(0, 20, 30, 1, undefined, true).move(0, 8, 60, 1, undefined, true)
    const [travel] = analyse(builder.points, 300).travels
    expect(travel.max_speed).toBe(72)
  })

  test('computed max speed follows the true speed, and GPS noise does not make it absurd', () => {
    const builder = new TrackBuilder(52.66, -8.63, 1_700_000_000, 9).fix()
    builder.move(0, 8, 120, 1, wandering(3, 0.9)).move(0, 14, 120, 1, wandering(3, 0.9)).move(0, 8, 120, 1, wandering(3, 0.9))
    const [travel] = analyse(builder.points, 300).travels
    expect(travel.max_speed).toBeGreaterThan(14 * 3.6 * 0.95)
    expect(travel.max_speed).toBeLessThan(14 * 3.6 * 1.15)
  })

  test('avg speed is distance over duration', () => {
    const points = new TrackBuilder().fix().move(45, 15, 600, 10).points
    const [travel] = analyse(points, 300).travels
    expect(travel.duration).toBe(600)
    expect(travel.avg_speed).toBeCloseTo((travel.distance / 600) * 3.6, 9)
    expect(Math.abs(travel.avg_speed / 54 - 1)).toBeLessThan(0.005)
  })

  test('a long day: stops and travels partition the track, the route total is the travels total', () => {
    const builder = new TrackBuilder(48.85, 2.35, 1_700_000_000, 21).fix()
    builder.park(900, 30, wandering(3, 0.9)).move(10, 14, 900, 1, wandering(2, 0.95)).park(45, 1, uniform(2))
    builder.move(100, 9, 600, 1, wandering(2, 0.95)).quiet(1800).fix().move(190, 1.2, 900, 1, wandering(2, 0.97))
    builder.park(3600, 60, uniform(4)).move(300, 20, 1200, 5, wandering(3, 0.9))
    for (const threshold of [0, 30, 300, 1000]) analyse(builder.points, threshold)
    const result = analyse(builder.points, 300)
    const expected = [900, 1800, 3600]
    expect(result.stops.length).toBe(expected.length)
    // A walker takes ~8 s to leave the movement radius, so its stop ends are that soft.
    result.stops.forEach((stop, k) => expect(Math.abs(stop.duration - expected[k])).toBeLessThanOrEqual(10))
  })
})

describe('edge cases', () => {
  test('no points: zero totals, empty lists', () => {
    expect(analyse([], 300)).toEqual({
      valid: new Uint8Array(0),
      rejected: [],
      stops: [],
      gaps: [],
      travels: [],
      totalDistance: 0,
      totalDuration: 0,
    })
  })

  test('one point: no stop, no travel', () => {
    const result = analyse(new TrackBuilder().fix().points, 0)
    expect(result.stops).toEqual([])
    expect(result.travels).toEqual([])
    expect(result.totalDuration).toBe(0)
  })

  test('two fixes at the same place 20 min apart: a 20 min stop, even at threshold 0', () => {
    const points = new TrackBuilder().fix().quiet(1200).fix().points
    for (const threshold of [0, 300, 1200]) {
      const result = analyse(points, threshold)
      expect(result.stops.map((stop) => stop.duration)).toEqual([1200])
      expect(result.totalDistance).toBe(0)
    }
  })

  test('only impossible fixes: nothing to analyse, the duration still spans the points', () => {
    const points = new TrackBuilder().fix().park(60).points.map((point) => ({ ...point, latitude: 0, longitude: 0 }))
    const result = analyse(points, 0)
    expect(result.rejected.length).toBe(points.length)
    expect(result.stops).toEqual([])
    expect(result.travels).toEqual([])
    expect(result.totalDuration).toBe(60)
  })

  test('out-of-order input is the caller’s to sort: fixes that go back in time are rejected', () => {
    const points = new TrackBuilder().fix().move(0, 12, 120).points
    const shuffled = [...points.slice(0, 50), points[80], ...points.slice(50, 80), ...points.slice(81)]
    const result = analyse(shuffled, 300)
    expect(result.rejected.length).toBeGreaterThan(0)
    expect(result.travels.length).toBe(1)
    expect(() => analyseTrack([...points].reverse())).not.toThrow()
  })
})
