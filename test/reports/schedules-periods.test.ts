/**
 * The periods of scheduled reports (src/reports/periods.ts): which period is due when, in the
 * schedule's zone, for days, weeks (Monday–Sunday) and months, across changes of summer time.
 */
import { describe, expect, test } from 'bun:test'
import { lastDuePeriod, lastEndedPeriod, localTime } from '../../src/reports/periods'

const unix = (iso: string) => Date.parse(iso) / 1000
const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000', '')
const shown = (w: { from: number; to: number; sendAt: number }) => ({ from: iso(w.from), to: iso(w.to), sendAt: iso(w.sendAt) })

describe('scheduled report periods', () => {
  test('a day: the previous local day, due at `at` on the next; before that, the day before', () => {
    // Dublin, Sunday 25 October 2026: summer time (UTC+1) ended at 01:00 UTC
    expect(shown(lastDuePeriod(unix('2026-10-25T07:00:00Z'), 'day', '07:00', 'Europe/Dublin'))).toEqual({ from: '2026-10-23T23:00:00Z', to: '2026-10-24T23:00:00Z', sendAt: '2026-10-25T07:00:00Z' })
    expect(shown(lastDuePeriod(unix('2026-10-25T06:59:59Z'), 'day', '07:00', 'Europe/Dublin'))).toEqual({ from: '2026-10-22T23:00:00Z', to: '2026-10-23T23:00:00Z', sendAt: '2026-10-24T06:00:00Z' })
    // the 25-hour Sunday
    expect(shown(lastDuePeriod(unix('2026-10-26T08:00:00Z'), 'day', '07:00', 'Europe/Dublin'))).toEqual({ from: '2026-10-24T23:00:00Z', to: '2026-10-26T00:00:00Z', sendAt: '2026-10-26T07:00:00Z' })
    // the 23-hour Sunday of spring, in New York (8 March 2026)
    expect(shown(lastDuePeriod(unix('2026-03-09T12:00:00Z'), 'day', '06:30', 'America/New_York'))).toEqual({ from: '2026-03-08T05:00:00Z', to: '2026-03-09T04:00:00Z', sendAt: '2026-03-09T10:30:00Z' })
  })

  test('a week runs Monday to Sunday, due on Monday; a month is the calendar month, due on the 1st', () => {
    // Wednesday 25 November 2026
    const now = unix('2026-11-25T12:00:00Z')
    expect(shown(lastDuePeriod(now, 'week', '07:00', 'UTC'))).toEqual({ from: '2026-11-16T00:00:00Z', to: '2026-11-23T00:00:00Z', sendAt: '2026-11-23T07:00:00Z' })
    expect(shown(lastDuePeriod(now, 'month', '07:00', 'Europe/Paris'))).toEqual({ from: '2026-09-30T22:00:00Z', to: '2026-10-31T23:00:00Z', sendAt: '2026-11-01T06:00:00Z' })
    // Monday 23 November, 06:00 UTC: the week just ended is not due before 07:00
    expect(shown(lastDuePeriod(unix('2026-11-23T06:00:00Z'), 'week', '07:00', 'UTC'))).toEqual({ from: '2026-11-09T00:00:00Z', to: '2026-11-16T00:00:00Z', sendAt: '2026-11-16T07:00:00Z' })
    // 1 January: December, across the year
    expect(shown(lastDuePeriod(unix('2027-01-01T09:00:00Z'), 'month', '08:00', 'UTC'))).toEqual({ from: '2026-12-01T00:00:00Z', to: '2027-01-01T00:00:00Z', sendAt: '2027-01-01T08:00:00Z' })
    // run now: the last period that has ended, due or not
    expect(shown(lastEndedPeriod(unix('2026-11-23T06:00:00Z'), 'week', '07:00', 'UTC')).from).toBe('2026-11-16T00:00:00Z')
  })

  test('`at` follows the wall clock on either side of a change', () => {
    expect(iso(localTime('2026-10-24', '07:00', 'Europe/Dublin'))).toBe('2026-10-24T06:00:00Z')
    expect(iso(localTime('2026-10-25', '07:00', 'Europe/Dublin'))).toBe('2026-10-25T07:00:00Z')
    expect(iso(localTime('2026-11-02', '23:59', 'Australia/Sydney'))).toBe('2026-11-02T12:59:00Z')
  })
})
