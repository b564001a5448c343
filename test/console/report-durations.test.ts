/**
 * The Reports page's durations foot: a person adding up the Duration column as the page shows it
 * gets the Total the page shows under it. Two trips of 1 h 14 min 30 s each were shown as 1:15
 * and 1:15 over a total of 2:29 (each rounded to the minute, the total summed from seconds).
 * The page's cells come from `cellText`, the function the table and its totals row both draw with.
 */
import { describe, expect, test } from 'bun:test'
import { cellText } from '../../src/console/app/reports'

const ZONE = 'UTC'
const shown = (key: string, seconds: number) => cellText(key, seconds, ZONE, {}, (code) => code)
/** a shown duration read back as a person reads it: h:mm or h:mm:ss → seconds */
function readBack(text: string): number {
  const parts = text.split(':').map(Number)
  expect(parts.every(Number.isInteger)).toBe(true)
  return parts.length === 3 ? parts[0] * 3600 + parts[1] * 60 + parts[2] : parts[0] * 3600 + parts[1] * 60
}

describe('durations on the Reports page', () => {
  test('the shown rows add up to the shown total (two trips of 1:14:30)', () => {
    const rows = [4470, 4470]
    const total = rows.reduce((a, b) => a + b, 0)
    const sumOfShown = rows.map((s) => readBack(shown('duration_s', s))).reduce((a, b) => a + b, 0)
    expect(sumOfShown).toBe(readBack(shown('duration_s', total)))
  })

  test('every duration column reads exactly, to the second, in hours past a day', () => {
    for (const key of ['duration_s', 'driving_s', 'stopped_s', 'engine_on_s']) {
      for (const seconds of [0, 59, 60, 4470, 86_399, 90_061, 31 * 86_400]) expect(readBack(shown(key, seconds))).toBe(seconds)
    }
    expect(shown('duration_s', 4470)).toBe('1:14:30')
    expect(shown('driving_s', 90_061)).toBe('25:01:01')
  })
})
