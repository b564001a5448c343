/**
 * IANA time zones through the runtime's own Intl data (no library: Bun ships ICU's zone database):
 * checking a name a user gives, and the local calendar days reports cut a period into.
 */
import { Invalid } from './errors'

/** The longest zone name accepted (the longest IANA name is 32 characters). */
const MAX_ZONE_LENGTH = 64

/**
 * The zone named, as the runtime spells it (`europe/dublin` → `Europe/Dublin`), or a 400 at
 * `path`. Only IANA names: offsets such as `+01:00`, which Intl also accepts, are refused
 * (a fixed offset has no summer time, so its days would be wrong half the year).
 */
export function checkZone(name: string, path: string): string {
  if (name.length === 0 || name.length > MAX_ZONE_LENGTH || !/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name)) {
    throw Invalid.field(path, `must be an IANA time zone such as Europe/Dublin or UTC; got ${JSON.stringify(name.slice(0, MAX_ZONE_LENGTH))}`)
  }
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone
  } catch {
    throw Invalid.field(path, `must be an IANA time zone such as Europe/Dublin or UTC; ${JSON.stringify(name)} is not one`)
  }
}

const partsFormats = new Map<string, Intl.DateTimeFormat>()

function partsFormat(zone: string): Intl.DateTimeFormat {
  let format = partsFormats.get(zone)
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
    if (partsFormats.size > 1000) partsFormats.clear()
    partsFormats.set(zone, format)
  }
  return format
}

/** The wall clock in `zone` at Unix second `at`, as fields. */
function wallClock(at: number, zone: string): { year: number; month: number; day: number; hour: number; minute: number; second: number } {
  const fields: Record<string, number> = {}
  for (const part of partsFormat(zone).formatToParts(at * 1000)) if (part.type !== 'literal') fields[part.type] = Number(part.value)
  return { year: fields.year!, month: fields.month!, day: fields.day!, hour: fields.hour!, minute: fields.minute!, second: fields.second! }
}

/** Seconds `zone` is ahead of UTC at Unix second `at` (Europe/Dublin in summer: 3600). */
export function offsetSeconds(at: number, zone: string): number {
  const w = wallClock(at, zone)
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) / 1000 - Math.floor(at)
}

/** The local calendar day of Unix second `at` in `zone`: `YYYY-MM-DD`. */
export function localDay(at: number, zone: string): string {
  const w = wallClock(at, zone)
  return `${String(w.year).padStart(4, '0')}-${String(w.month).padStart(2, '0')}-${String(w.day).padStart(2, '0')}`
}

/**
 * The Unix second the local day `YYYY-MM-DD` begins in `zone` (its first second on the wall
 * clock; where midnight is skipped by a change of offset, the first second that exists).
 */
export function startOfLocalDay(day: string, zone: string): number {
  const [year, month, date] = day.split('-').map(Number) as [number, number, number]
  const midnightUtc = Date.UTC(year, month - 1, date) / 1000
  // two rounds settle the offset on either side of a change
  let at = midnightUtc - offsetSeconds(midnightUtc, zone)
  at = midnightUtc - offsetSeconds(at, zone)
  // a skipped midnight lands on the day before: step to where the day has begun
  if (localDay(at, zone) !== day) at += 3600
  return at
}

/** The day after `YYYY-MM-DD` (years past 9999 written with their digits, as localDay writes them). */
export function nextDay(day: string): string {
  const [year, month, date] = day.split('-').map(Number) as [number, number, number]
  const next = new Date(Date.UTC(year, month - 1, date + 1))
  return `${String(next.getUTCFullYear()).padStart(4, '0')}-${String(next.getUTCMonth() + 1).padStart(2, '0')}-${String(next.getUTCDate()).padStart(2, '0')}`
}

/** One local day of a period: its date and its part of the period (Unix seconds, inclusive). */
export interface LocalDaySpan {
  day: string
  from: number
  to: number
}

/**
 * The local days of `zone` that the period [from, to] touches, each clipped to the period, in
 * order. At most `maxDays` (a 31-day period touches 32): the walk always moves on, whatever the
 * zone or the year.
 */
export function localDaysOf(from: number, to: number, zone: string, maxDays = 40): LocalDaySpan[] {
  const days: LocalDaySpan[] = []
  let at = from
  while (at <= to && days.length < maxDays) {
    const day = localDay(at, zone)
    const next = startOfLocalDay(nextDay(day), zone)
    const end = Number.isFinite(next) && next > at ? Math.min(to, next - 1) : to
    days.push({ day, from: at, to: end })
    at = end + 1
  }
  return days
}
