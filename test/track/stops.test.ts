/**
 * The stop rules of issue 24 (src/track/stops.ts): pauses, drifts and queues, and a parked
 * receiver's drift that makes no trip.
 */
import { describe, expect, test } from 'bun:test'
import { analyseTrack, DRIFT_SECONDS, QUEUE_GAP_SECONDS, STAND_SECONDS } from '../../src/track'
import { expectConsistent } from './invariants'
import { TrackBuilder, uniform, wandering } from './synthetic'

describe('parked drift makes no trip', () => {
  for (const interval of [1, 10, 30]) {
    test(`±30 m around a point for 8 h, a fix every ${interval} s: one stop, 0 trips, 0 m`, () => {
      const points = new TrackBuilder(52.66, -8.63, 1_700_000_000, 7).fix().park(8 * 3600, interval, uniform(30)).points
      for (const threshold of [0, 300]) {
        const result = analyseTrack(points, { stopThresholdSeconds: threshold })
        expectConsistent(points, result, threshold)
        expect(result.travels).toEqual([])
        expect(result.totalDistance).toBe(0)
        expect(result.stops.length).toBe(1)
        expect(result.stops[0].duration).toBe(8 * 3600)
      }
    })
  }

  test('a receiver wandering (correlated, σ 15 m) for 8 h: 0 trips, 0 m', () => {
    const points = new TrackBuilder(48.85, 2.35, 1_700_000_000, 3).fix().park(8 * 3600, 5, wandering(15, 0.9)).points
    const result = analyseTrack(points)
    expectConsistent(points, result, 300)
    expect(result.travels).toEqual([])
    expect(result.totalDistance).toBe(0)
  })

  test('parked in drift, then driven 2 km, then parked: one trip of about 2 km between two stops', () => {
    const builder = new TrackBuilder(52.66, -8.63, 1_700_000_000, 9).fix()
    builder.park(3600, 10, uniform(30)).move(90, 14, 143, 1).park(3600, 10, uniform(30))
    const result = analyseTrack(builder.points)
    expectConsistent(builder.points, result, 300)
    expect(result.stops.length).toBe(2)
    expect(result.travels.length).toBe(1)
    // The drift near each end adds at most the distance from a stand's centre to its last fix.
    expect(Math.abs(result.travels[0].distance - 2002)).toBeLessThan(100)
  })
})

describe('pauses: a tracker that reports rarely while it stands', () => {
  test('one step of 18 s that moved 3 m between fixes at 30 km/h is a stop of 18 s', () => {
    const builder = new TrackBuilder().fix().move(0, 8.3, 60, 1)
    builder.move(0, 3 / 18, 18, 18).move(0, 8.3, 60, 1)
    const result = analyseTrack(builder.points, { stopThresholdSeconds: 0 })
    expectConsistent(builder.points, result, 0)
    expect(result.stops.length).toBe(1)
    // from the last fix at speed before the pause (the car was already there) to the one after
    expect(result.stops[0].duration).toBeGreaterThanOrEqual(18)
    expect(result.stops[0].duration).toBeLessThanOrEqual(20)
    expect(result.travels.length).toBe(2)
  })

  test(`a step of ${STAND_SECONDS - 1} s, or one that moved 15 m, is no stop`, () => {
    for (const [seconds, metres] of [[STAND_SECONDS - 1, 2], [18, 15]]) {
      const builder = new TrackBuilder().fix().move(0, 8.3, 60, 1)
      builder.move(0, metres / seconds, seconds, seconds).move(0, 8.3, 60, 1)
      expect(analyseTrack(builder.points, { stopThresholdSeconds: 0 }).stops).toEqual([])
    }
  })
})

describe('queues: stands close in place and time are one stop', () => {
  test(`stands 60 m and ${QUEUE_GAP_SECONDS - 20} s apart are one stop, placed between them`, () => {
    const builder = new TrackBuilder().fix().move(0, 10, 60, 1)
    builder.park(40, 1, uniform(1)).move(0, 6, 10, 1).park(40, 1, uniform(1)).move(0, 10, 60, 1)
    const result = analyseTrack(builder.points, { stopThresholdSeconds: 0 })
    expectConsistent(builder.points, result, 0)
    expect(result.stops.length).toBe(1)
    expect(result.stops[0].duration).toBeGreaterThanOrEqual(85)
    expect(result.travels.length).toBe(2)
  })

  test('stops 160 m apart (two bus stops) stay two, however close in time', () => {
    const builder = new TrackBuilder().fix().move(0, 10, 60, 1)
    builder.park(40, 1, uniform(1)).move(0, 10, 16, 1).park(40, 1, uniform(1)).move(0, 10, 60, 1)
    const result = analyseTrack(builder.points, { stopThresholdSeconds: 0 })
    expectConsistent(builder.points, result, 0)
    expect(result.stops.length).toBe(2)
    expect(result.travels.length).toBe(3)
  })

  test(`stands 60 m apart with ${QUEUE_GAP_SECONDS + 10} s between them (around the block) stay two`, () => {
    const builder = new TrackBuilder().fix().move(0, 10, 60, 1)
    builder.park(40, 1, uniform(1)).move(0, 10, 23, 1).move(180, 10, 17, 1).park(40, 1, uniform(1)).move(0, 10, 60, 1)
    const result = analyseTrack(builder.points, { stopThresholdSeconds: 0 })
    expectConsistent(builder.points, result, 0)
    expect(result.stops.length).toBe(2)
  })
})

describe('drifts are not slow movement', () => {
  test(`a walker (1.2 m/s, noisy) for an hour is one travel, no stop of a minute or more (a drift needs ${DRIFT_SECONDS} s)`, () => {
    const builder = new TrackBuilder().fix().move(30, 1.2, 3600, 1, wandering(3, 0.95))
    const result = analyseTrack(builder.points, { stopThresholdSeconds: 60 })
    expectConsistent(builder.points, result, 60)
    expect(result.stops).toEqual([])
    expect(result.travels.length).toBe(1)
    expect(Math.abs(result.totalDistance / 4320 - 1)).toBeLessThan(0.05)
  })

  test('a car crawling 40 m in 3 minutes in a jam is a stop there', () => {
    const builder = new TrackBuilder().fix().move(0, 14, 60, 1).move(0, 40 / 180, 180, 1, uniform(2)).move(0, 14, 60, 1)
    const result = analyseTrack(builder.points, { stopThresholdSeconds: 120 })
    expectConsistent(builder.points, result, 120)
    expect(result.stops.length).toBe(1)
    expect(result.travels.length).toBe(2)
  })
})
