/**
 * The Reports page's reckoning: the periods in the user's time zone (its `timezone` from GET /me,
 * else the browser's), the query of GET /reports/{kind}, and how each column reads (km, h:mm:ss,
 * km/h, local times in the report's zone).
 */
import { signal } from '@preact/signals'
import { getJson } from './api'

export const REPORT_KINDS = ['trips', 'stops', 'summary', 'events', 'route'] as const
export type ReportKind = (typeof REPORT_KINDS)[number]
/** the files each kind has (README "Report files") */
export const REPORT_FILES: Record<ReportKind, string[]> = {
  trips: ['csv', 'xlsx'],
  stops: ['csv', 'xlsx'],
  summary: ['csv', 'xlsx'],
  events: ['csv', 'xlsx'],
  route: ['csv', 'xlsx', 'gpx', 'kml'],
}

export const PERIODS = ['today', 'yesterday', 'thisWeek', 'lastWeek', 'thisMonth', 'custom'] as const
export type Period = (typeof PERIODS)[number]

export type ReportRow = Record<string, unknown>
export interface ReportAnswer {
  rows: ReportRow[]
  totals: ReportRow | null
  generated_at: number
  period: { from: number; to: number }
  tz: string
}

export const browserZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'

/** the user's own zone (GET /me `timezone`): undefined until read, null when they chose none */
export const ownZone = signal<string | null | undefined>(undefined)
let zoneAsked = false
export async function loadOwnZone(): Promise<void> {
  if (zoneAsked) return
  zoneAsked = true
  try {
    ownZone.value = (await getJson<{ timezone?: string | null }>('me')).timezone ?? null
  } catch {
    zoneAsked = false
    ownZone.value = null
  }
}
/** at sign-out: the next person's zone is read again */
export function forgetOwnZone() {
  zoneAsked = false
  ownZone.value = undefined
}
export const reportZone = (): string => ownZone.value ?? browserZone()

/** every zone the browser knows, for the setting */
export function zoneNames(): string[] {
  const supported = (Intl as { supportedValuesOf?: (key: string) => string[] }).supportedValuesOf
  return supported ? supported('timeZone') : [browserZone(), 'UTC']
}

const partsFormat = new Map<string, Intl.DateTimeFormat>()
function localParts(ms: number, zone: string) {
  let format = partsFormat.get(zone)
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' })
    partsFormat.set(zone, format)
  }
  const parts = Object.fromEntries(format.formatToParts(new Date(ms)).map((p) => [p.type, p.value]))
  return { year: +parts.year, month: +parts.month, day: +parts.day, hour: +parts.hour, minute: +parts.minute, second: +parts.second }
}

/** the zone's offset from UTC at that moment, in ms */
function offsetMs(ms: number, zone: string): number {
  const p = localParts(ms, zone)
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(ms / 1000) * 1000
}

/** Unix seconds of a local day's midnight in the zone (twice: the offset may change between the guess and the answer) */
export function localMidnight(day: string, zone: string): number {
  const [year, month, date] = day.split('-').map(Number)
  const guess = Date.UTC(year, month - 1, date)
  const first = guess - offsetMs(guess, zone)
  return (guess - offsetMs(first, zone)) / 1000
}

const dayString = (ms: number) => new Date(ms).toISOString().slice(0, 10)
/** a calendar day moved by whole days */
export function addDays(day: string, days: number): string {
  const [year, month, date] = day.split('-').map(Number)
  return dayString(Date.UTC(year, month - 1, date + days))
}
export function todayIn(zone: string, nowMs: number): string {
  const p = localParts(nowMs, zone)
  return dayString(Date.UTC(p.year, p.month - 1, p.day))
}

/** the first and last local day of a period (weeks begin on Monday) */
export function periodDays(period: Exclude<Period, 'custom'>, zone: string, nowMs: number): { first: string; last: string } {
  const today = todayIn(zone, nowMs)
  const weekday = (new Date(`${today}T00:00:00Z`).getUTCDay() + 6) % 7 // Monday 0
  const monday = addDays(today, -weekday)
  switch (period) {
    case 'today':
      return { first: today, last: today }
    case 'yesterday':
      return { first: addDays(today, -1), last: addDays(today, -1) }
    case 'thisWeek':
      return { first: monday, last: addDays(monday, 6) }
    case 'lastWeek':
      return { first: addDays(monday, -7), last: addDays(monday, -1) }
    case 'thisMonth': {
      const first = `${today.slice(0, 8)}01`
      const [year, month] = today.split('-').map(Number)
      return { first, last: dayString(Date.UTC(year, month, 0)) }
    }
  }
}

/** from the first day's midnight to the last second of the last day (the API's `to` is inclusive) */
export const periodSeconds = (first: string, last: string, zone: string) => ({ from: localMidnight(first, zone), to: localMidnight(addDays(last, 1), zone) - 1 })

export interface ReportQuery {
  kind: ReportKind
  daily: boolean
  devices: string[]
  groups: string[]
  from: number
  to: number
  tz: string
}

/** the path of a report, relative to the page; `format` makes it a file */
export function reportPath(query: ReportQuery, format?: string): string {
  const params = new URLSearchParams({ from: String(query.from), to: String(query.to), tz: query.tz })
  if (query.devices.length > 0) params.set('devices', query.devices.join(','))
  if (query.groups.length > 0) params.set('groups', query.groups.join(','))
  if (query.kind === 'summary' && query.daily) params.set('daily', 'true')
  if (format) params.set('format', format)
  return `reports/${query.kind}?${params}`
}

/** the columns the page shows, by kind (ids, coordinates and JSON stay in the files) */
export function shownColumns(kind: ReportKind, daily: boolean): string[] {
  switch (kind) {
    case 'trips':
      return ['alias', 'start', 'end', 'duration_s', 'distance_m', 'max_speed_kmh', 'avg_speed_kmh', 'start_address', 'end_address']
    case 'stops':
      return ['alias', 'start', 'end', 'duration_s', 'address']
    case 'summary':
      return ['alias', ...(daily ? ['day'] : []), 'distance_m', 'driving_s', 'stopped_s', 'max_speed_kmh', 'avg_speed_kmh', 'trips', 'stops', 'events', 'first_fix', 'last_fix']
    case 'events':
      return ['alias', 'timestamp', 'code', 'address']
    case 'route':
      return ['alias', 'timestamp', 'latitude', 'longitude', 'speed_kmh', 'course', 'altitude_m', 'satellites']
  }
}

const TIME_KEYS = new Set(['start', 'end', 'first_fix', 'last_fix', 'timestamp'])
/** columns whose values are numbers, right-aligned */
export const isNumeric = (key: string) => /_(m|s|kmh)$/.test(key) || ['trips', 'stops', 'events', 'latitude', 'longitude', 'course', 'satellites'].includes(key)

/**
 * h:mm:ss of a duration in seconds, exactly: the API sums the totals from the rows' seconds, so a
 * column shown to the second adds up to its total as shown (rounded minutes did not: 1:15 + 1:15
 * over 2:29), and reads as the files' seconds do.
 */
export function hoursMinutesSeconds(seconds: number): string {
  const whole = Math.round(seconds)
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${Math.floor(whole / 3600)}:${pad(Math.floor(whole / 60) % 60)}:${pad(whole % 60)}`
}
export const kilometres = (metres: number) => `${(metres / 1000).toLocaleString(undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1 })} km`

const timeFormats = new Map<string, Intl.DateTimeFormat>()
/** a moment as the day and time in the report's zone */
export function localTime(seconds: number, zone: string): string {
  let format = timeFormats.get(zone)
  if (!format) {
    format = new Intl.DateTimeFormat([], { timeZone: zone, dateStyle: 'short', timeStyle: 'short' })
    timeFormats.set(zone, format)
  }
  return format.format(new Date(seconds * 1000))
}
/** a local day YYYY-MM-DD in words */
export const dayInWords = (day: string) => new Date(`${day}T12:00:00Z`).toLocaleDateString([], { timeZone: 'UTC', weekday: 'short', day: 'numeric', month: 'short', year: 'numeric' })

/** a cell as a person reads it; '' for no value */
export function cellText(key: string, value: unknown, zone: string, row: ReportRow, eventName: (code: string, context?: Record<string, unknown>) => string): string {
  if (key === 'address' && (value === null || value === undefined)) {
    const location = row.location as [number, number] | null | undefined
    return location ? `${location[0].toFixed(5)}, ${location[1].toFixed(5)}` : ''
  }
  if (value === null || value === undefined) return ''
  if (TIME_KEYS.has(key)) return localTime(value as number, zone)
  if (key === 'day') return dayInWords(value as string)
  if (key === 'code') return eventName(value as string, (row.context as Record<string, unknown> | null) ?? undefined)
  if (key === 'distance_m') return kilometres(value as number)
  if (key === 'altitude_m') return `${Math.round(value as number)} m`
  if (key.endsWith('_s')) return hoursMinutesSeconds(value as number)
  if (key.endsWith('_kmh')) return `${Math.round(value as number)} km/h`
  if (key === 'course') return `${value}°`
  if (key === 'latitude' || key === 'longitude') return (value as number).toFixed(5)
  if (typeof value === 'number') return value.toLocaleString()
  return String(value)
}

/** distance per local day, every device together (summary with daily=true) */
export function distancePerDay(rows: ReportRow[]): { days: string[]; km: number[] } {
  const byDay = new Map<string, number>()
  for (const row of rows) byDay.set(row.day as string, (byDay.get(row.day as string) ?? 0) + ((row.distance_m as number | null) ?? 0))
  const days = [...byDay.keys()].sort()
  return { days, km: days.map((day) => Math.round(byDay.get(day)! / 100) / 10) }
}
