/**
 * Track analysis benchmark: one day at 1 Hz (86,400 fixes), against the floor of one plain
 * geodesic sum over the same fixes, measured side by side. Not a test (no timing is asserted);
 * run it with `node_modules/.bin/bun test/track/bench.ts`.
 */
import { analyseTrack, pathLength } from '../../src/track'
import type { TrackPoint } from '../../src/track/types'
import { TrackBuilder, uniform, wandering } from './synthetic'

/** A day: driving, crawling in traffic, parked, walking, in rotation; correlated noise throughout. */
function day(): TrackPoint[] {
  const builder = new TrackBuilder(48.85, 2.35, 1_700_000_000, 5).fix()
  let bearing = 0
  while (builder.points.length < 86_400) {
    for (let k = 0; k < 10; k++) builder.move((bearing += 20), 14, 60, 1, wandering(2, 0.95))
    builder.move(bearing, 2, 120, 1, wandering(2, 0.95))
    builder.park(600, 1, uniform(4))
    builder.move(bearing + 90, 1.2, 300, 1, wandering(2, 0.97))
    builder.park(180, 1, wandering(3, 0.98))
  }
  builder.points.length = 86_400
  return builder.points
}

function measure(run: () => unknown, rounds: number): { median: number; p90: number } {
  const times: number[] = []
  for (let k = 0; k < rounds; k++) {
    const start = performance.now()
    run()
    times.push(performance.now() - start)
  }
  times.sort((a, b) => a - b)
  return { median: times[Math.floor(rounds / 2)], p90: times[Math.floor(rounds * 0.9)] }
}

const points = day()
for (let k = 0; k < 10; k++) analyseTrack(points) // warm up the JIT

const floor = measure(() => pathLength(points), 50)
console.log(`fixes: ${points.length}`)
console.log(`floor (plain geodesic sum): median ${floor.median.toFixed(2)} ms, p90 ${floor.p90.toFixed(2)} ms`)
for (const threshold of [0, 300]) {
  const analysis = measure(() => analyseTrack(points, { stopThresholdSeconds: threshold }), 50)
  const result = analyseTrack(points, { stopThresholdSeconds: threshold })
  console.log(
    `analyseTrack (threshold ${threshold} s): median ${analysis.median.toFixed(2)} ms, p90 ${analysis.p90.toFixed(2)} ms, ` +
      `${(analysis.median / floor.median).toFixed(1)}× the floor; ${result.stops.length} stops, ${result.travels.length} travels, ` +
      `${(result.totalDistance / 1000).toFixed(1)} km`,
  )
}
