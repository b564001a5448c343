/**
 * Local times of a report's zone, for the file writers. Intl knows the IANA database; its answers
 * are cached per quarter hour (every offset change of the database falls on a quarter hour of
 * UTC), so a 100,000-row file asks it a few hundred times, not 100,000.
 */

const QUARTER_HOUR_S = 900
const CACHE_LIMIT = 4096

export interface LocalClock {
  /** seconds east of UTC at that instant */
  offsetSecondsAt(unixSeconds: number): number
  /** `2026-11-02T08:15:00+01:00` (seconds kept when they are not whole: `08:15:00.250+01:00`) */
  isoLocal(unixSeconds: number): string
  /** `2026-11-02`: the local calendar day */
  localDay(unixSeconds: number): string
  /** ms whose UTC fields read the local wall time (what a spreadsheet's date cell holds) */
  wallClockMs(unixSeconds: number): number
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n))

/** `+01:00`, `-03:30`, `+00:00` */
export function offsetText(offsetSeconds: number): string {
  const sign = offsetSeconds < 0 ? '-' : '+'
  const minutes = Math.round(Math.abs(offsetSeconds) / 60)
  return `${sign}${pad2(Math.floor(minutes / 60))}:${pad2(minutes % 60)}`
}

/** Throws RangeError for a zone Intl does not know (the route validates `tz` before). */
export function localClock(tz: string): LocalClock {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  })
  const offsets = new Map<number, number>()

  const offsetOfQuarter = (quarter: number): number => {
    const atMs = quarter * QUARTER_HOUR_S * 1000
    const parts: Record<string, number> = {}
    for (const part of format.formatToParts(new Date(atMs))) {
      if (part.type !== 'literal') parts[part.type] = Number(part.value)
    }
    const wallMs = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second)
    return Math.round((wallMs - atMs) / 1000)
  }

  const offsetSecondsAt = (unixSeconds: number): number => {
    const quarter = Math.floor(unixSeconds / QUARTER_HOUR_S)
    let offset = offsets.get(quarter)
    if (offset === undefined) {
      if (offsets.size >= CACHE_LIMIT) offsets.clear()
      offset = offsetOfQuarter(quarter)
      offsets.set(quarter, offset)
    }
    return offset
  }

  const wallClockMs = (unixSeconds: number) => Math.round((unixSeconds + offsetSecondsAt(unixSeconds)) * 1000)

  return {
    offsetSecondsAt,
    wallClockMs,
    isoLocal(unixSeconds) {
      const iso = new Date(wallClockMs(unixSeconds)).toISOString() // 2026-11-02T08:15:00.000Z
      const wall = iso.endsWith('.000Z') ? iso.slice(0, 19) : iso.slice(0, 23)
      return wall + offsetText(offsetSecondsAt(unixSeconds))
    },
    localDay(unixSeconds) {
      return new Date(wallClockMs(unixSeconds)).toISOString().slice(0, 10)
    },
  }
}

/** `2026-11-02T07:15:00Z` (GPX and KML times are UTC) */
export function isoUtc(unixSeconds: number): string {
  const iso = new Date(Math.round(unixSeconds * 1000)).toISOString()
  return iso.endsWith('.000Z') ? `${iso.slice(0, 19)}Z` : iso
}
