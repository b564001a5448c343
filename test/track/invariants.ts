import { expect } from 'bun:test'
import type { TrackAnalysis } from '../../src/track'
import type { TrackPoint } from '../../src/track/types'

/** The invariants every analysis must keep, whatever the track. */
export function expectConsistent(points: readonly TrackPoint[], result: TrackAnalysis, threshold: number): void {
  const { stops, travels, valid } = result
  // Route total = travels total, exactly: same numbers added in the same order.
  expect(result.totalDistance).toBe(travels.reduce((sum, travel) => sum + travel.distance, 0))
  expect(result.totalDuration).toBe(points.length > 0 ? points[points.length - 1].timestamp - points[0].timestamp : 0)
  for (const stop of stops) {
    expect(stop.duration).toBe(stop.end - stop.start)
    expect(stop.duration).toBeGreaterThanOrEqual(threshold)
    expect(stop.start).toBe(points[stop.startIndex].timestamp)
    expect(stop.end).toBe(points[stop.endIndex].timestamp)
    expect(valid[stop.startIndex]).not.toBe(0)
    expect(valid[stop.endIndex]).not.toBe(0)
  }
  for (const travel of travels) {
    expect(travel.duration).toBe(travel.end.timestamp - travel.start.timestamp)
    expect(travel.distance).toBeGreaterThan(0)
    expect(travel.avg_speed).toBeCloseTo(travel.duration > 0 ? (travel.distance / travel.duration) * 3.6 : 0, 9)
    expect(travel.max_speed).toBeGreaterThanOrEqual(0)
    expect(travel.start.timestamp).toBe(points[travel.start.index].timestamp)
    expect(travel.end.latitude).toBe(points[travel.end.index].latitude)
  }
  for (const gap of result.gaps) {
    expect(gap.duration).toBe(gap.end - gap.start)
    expect(gap.start).toBe(points[gap.startIndex].timestamp)
    expect(gap.end).toBe(points[gap.endIndex].timestamp)
    // no valid fix inside the silence
    for (let i = gap.startIndex + 1; i < gap.endIndex; i++) expect(valid[i]).toBe(0)
  }
  // Stops, gaps and travels follow each other in time without overlapping: each travel runs from
  // the end of a stop or a gap (or the first valid fix) to the start of the next stop or gap (or
  // the last valid fix). No travel spans a gap.
  const events = [
    ...stops.map((stop) => ({ from: stop.startIndex, to: stop.endIndex, kind: 'stop' })),
    ...result.gaps.map((gap) => ({ from: gap.startIndex, to: gap.endIndex, kind: 'gap' })),
    ...travels.map((travel) => ({ from: travel.start.index, to: travel.end.index, kind: 'travel' })),
  ].sort((a, b) => a.from - b.from || a.to - b.to)
  for (let k = 1; k < events.length; k++) {
    expect(events[k].from).toBeGreaterThanOrEqual(events[k - 1].to)
    if (events[k].kind === 'travel' && events[k - 1].kind !== 'travel') expect(events[k].from).toBe(events[k - 1].to)
    if (events[k].kind !== 'travel' && events[k - 1].kind === 'travel') expect(events[k].from).toBe(events[k - 1].to)
  }
}
