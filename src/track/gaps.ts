/**
 * Reporting gaps: spans without data. A device that said nothing for longer than the no-data
 * threshold (distance.ts, DEFAULT_GAP_THRESHOLD_SECONDS) and then reported from somewhere else
 * was neither driving nor stopped as far as anyone knows: the span is a gap. It ends the travel
 * before it (at the last fix before the silence), the next travel starts at the first fix after
 * it, its time is in no travel, and its displacement in no distance.
 *
 * A silence after which the device reports from the same place is no gap but part of a stop (the
 * contract: a stop includes "a gap in reporting while the position stays put"). That includes a
 * silence that the movement pass saw as a jump of a few metres beyond its radius but whose stands
 * either side stop detection merged (within STOP_RADIUS_M): a gap inside a stop is not reported.
 */
import { columnsOf, type Fixes } from './columns'
import type { Movement } from './distance'
import { metresBetween } from './geo'
import type { Stop } from './stops'

export interface Gap {
  /** timestamp of the last fix before the silence */
  start: number
  /** timestamp of the first fix after it */
  end: number
  /** end - start, seconds */
  duration: number
  /** metres in a straight line from the fix before to the fix after: where it reappeared (counted in no distance) */
  displacement: number
  /** indices of those two fixes in the analysed points */
  startIndex: number
  endIndex: number
}

/** The movement pass's silences that no stop covers, in time order. Linear: both lists are in time order. */
export function reportingGaps(fixes: Fixes, movement: Movement, stops: readonly Stop[]): Gap[] {
  const { timestamp, latitude, longitude } = columnsOf(fixes)
  const gaps: Gap[] = []
  let k = 0
  for (const silence of movement.silences) {
    const before = silence.beforeIndex
    const after = silence.afterIndex
    while (k < stops.length && stops[k].endIndex < after) k++
    if (k < stops.length && stops[k].startIndex <= before) continue // inside a stop: it stayed put
    gaps.push({
      start: timestamp[before],
      end: timestamp[after],
      duration: timestamp[after] - timestamp[before],
      displacement: metresBetween(latitude[before], longitude[before], latitude[after], longitude[after]),
      startIndex: before,
      endIndex: after,
    })
  }
  return gaps
}
