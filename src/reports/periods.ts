/**
 * The periods of scheduled reports, in the schedule's zone: a day (local midnight to midnight), a
 * week (Monday 00:00 to the next Monday) or a month (the 1st to the next 1st), each sent at the
 * local time `at` on the first day after it. Pure: Unix seconds in, Unix seconds out.
 */
import { localDay, offsetSeconds, startOfLocalDay } from '../timezone'

export const SCHEDULE_PERIODS = ['day', 'week', 'month'] as const
export type SchedulePeriod = (typeof SCHEDULE_PERIODS)[number]

/** A period: [from, to) in Unix seconds, and when its report is due. */
export interface PeriodWindow {
  from: number
  /** the first second after the period */
  to: number
  /** `at` on the local day the period ends (its `to`'s day) */
  sendAt: number
}

const dayText = (date: Date) =>
  `${String(date.getUTCFullYear()).padStart(4, '0')}-${String(date.getUTCMonth() + 1).padStart(2, '0')}-${String(date.getUTCDate()).padStart(2, '0')}`
const parseDay = (day: string) => {
  const [y, m, d] = day.split('-').map(Number) as [number, number, number]
  return new Date(Date.UTC(y, m - 1, d))
}
const plusDays = (day: string, days: number) => {
  const date = parseDay(day)
  date.setUTCDate(date.getUTCDate() + days)
  return dayText(date)
}

/** The first local day of the period holding `day`: itself, its week's Monday, its month's 1st. */
function periodStartDay(day: string, period: SchedulePeriod): string {
  const date = parseDay(day)
  if (period === 'day') return day
  if (period === 'week') return plusDays(day, -((date.getUTCDay() + 6) % 7))
  return `${day.slice(0, 8)}01`
}

/** The first local day of the period before the one starting on `startDay`. */
function previousStartDay(startDay: string, period: SchedulePeriod): string {
  if (period === 'day') return plusDays(startDay, -1)
  if (period === 'week') return plusDays(startDay, -7)
  return periodStartDay(plusDays(startDay, -1), 'month')
}

/**
 * The Unix second the wall clock in `zone` shows `HH:MM` on `day` (a time skipped by a change to
 * summer time falls an hour off, within that night; of an hour shown twice, the second).
 */
export function localTime(day: string, at: string, zone: string): number {
  const [hours, minutes] = at.split(':').map(Number) as [number, number]
  const date = parseDay(day)
  const wall = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate(), hours, minutes) / 1000
  // two rounds settle the offset on either side of a change (as startOfLocalDay)
  const guess = wall - offsetSeconds(wall, zone)
  return wall - offsetSeconds(guess, zone)
}

function windowEndingOn(endDay: string, period: SchedulePeriod, at: string, zone: string): PeriodWindow {
  return { from: startOfLocalDay(previousStartDay(endDay, period), zone), to: startOfLocalDay(endDay, zone), sendAt: localTime(endDay, at, zone) }
}

/** The period that ended last before `now` (whether or not its report is due yet). */
export function lastEndedPeriod(now: number, period: SchedulePeriod, at: string, zone: string): PeriodWindow {
  return windowEndingOn(periodStartDay(localDay(now, zone), period), period, at, zone)
}

/** The most recent period whose report is due at `now` (its `sendAt` ≤ now). */
export function lastDuePeriod(now: number, period: SchedulePeriod, at: string, zone: string): PeriodWindow {
  const ended = lastEndedPeriod(now, period, at, zone)
  if (ended.sendAt <= now) return ended
  return windowEndingOn(periodStartDay(localDay(ended.from, zone), period), period, at, zone)
}
