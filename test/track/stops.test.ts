/**
 * The stop rules of issue 24 (src/track/stops.ts): pauses and queues.
 */
import { describe, expect, test } from 'bun:test'
import { analyseTrack, QUEUE_GAP_SECONDS, STAND_SECONDS } from '../../src/track'
import { expectConsistent } from './invariants'
import { TrackBuilder, uniform } from './synthetic'

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
