/**
 * The History view's data: which window a pick of days means in the browser's time zone, the three
 * requests that fill the view (route, travels, events), and the playback's arithmetic over the
 * route's fixes. The server lets one person have two route or travels requests in flight; a third
 * (another tab, the device panel) is a 429 with Retry-After, and is asked again after that wait, as
 * is a 503 (the server's history memory stayed taken while the request waited).
 */
import { ApiError, getJson } from './api'
import { strings } from './strings'
import type { DeviceEvent, HistoryGap, HistoryRoute, HistoryTravels } from './types'

/** The longest window the API answers (31 days). */
export const MAX_RANGE_DAYS = 31
const MAX_RANGE_SECONDS = MAX_RANGE_DAYS * 86_400
/** `stop_threshold_time` choices, seconds; the API's default is 300. */
export const STOP_THRESHOLDS_S = [60, 120, 300, 600, 900, 1800] as const
export const DEFAULT_STOP_THRESHOLD_S = 300
/** How often a 429 or 503 is asked again before the view says it failed. */
const BUSY_RETRIES = 8

// ---- days in the browser's time zone

const pad = (n: number) => String(n).padStart(2, '0')

/** YYYY-MM-DD of a moment, in the browser's time zone */
export function dayKey(ms: number): string {
  const d = new Date(ms)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`
}

/** local midnight of a YYYY-MM-DD, or null when it is no date */
export function dayStart(key: string | null | undefined): Date | null {
  const match = key ? /^(\d{4})-(\d{2})-(\d{2})$/.exec(key) : null
  if (!match) return null
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(year, month - 1, day)
  // 2019-02-31 rolls over to March: not a day
  return date.getFullYear() === year && date.getMonth() === month - 1 && date.getDate() === day ? date : null
}

export function shiftDay(key: string, days: number): string {
  const start = dayStart(key)!
  return dayKey(new Date(start.getFullYear(), start.getMonth(), start.getDate() + days).getTime())
}

export type HistoryWindow = { ok: true; from: number; to: number; days: number } | { ok: false; message: string }

/**
 * The window, Unix seconds, from the first day's midnight to the last moment of the last day.
 * 31 days that include a change from summer time are an hour longer than the API allows: the
 * window then ends an hour early rather than being refused.
 */
export function historyWindow(fromKey: string, toKey: string): HistoryWindow {
  const first = dayStart(fromKey)
  const last = dayStart(toKey)
  if (!first || !last) return { ok: false, message: strings.historyBadDay }
  if (first > last) return { ok: false, message: strings.historyFromAfterTo }
  const end = new Date(last.getFullYear(), last.getMonth(), last.getDate() + 1)
  const days = Math.round((end.getTime() - first.getTime()) / 86_400_000)
  if (days > MAX_RANGE_DAYS) return { ok: false, message: strings.historyTooLong(days) }
  const from = Math.floor(first.getTime() / 1000)
  const to = Math.min(Math.floor(end.getTime() / 1000) - 1, from + MAX_RANGE_SECONDS)
  return { ok: true, from, to, days }
}

/** "Europe/Paris (GMT+1)": the zone the view's times are in, named */
export function zoneName(atMs: number): string {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone
  const short = new Intl.DateTimeFormat([], { timeZoneName: 'short' }).formatToParts(new Date(atMs)).find((p) => p.type === 'timeZoneName')?.value
  return short && short !== zone ? `${zone} (${short})` : zone
}

// ---- what the view shows

export const formatDay = (ms: number) => new Date(ms).toLocaleDateString([], { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric' })

/** the time; with the date when the window spans more than a day */
export function formatTime(seconds: number, withDate: boolean): string {
  const date = new Date(seconds * 1000)
  return withDate
    ? date.toLocaleString([], { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' })
    : date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
}

export const formatTimeSeconds = (seconds: number, withDate: boolean) => {
  const date = new Date(seconds * 1000)
  const time = date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' })
  return withDate ? `${date.toLocaleDateString([], { day: 'numeric', month: 'short' })} ${time}` : time
}

/** "1 h 12 min", "4 min 30 s", "45 s" */
export function formatDuration(totalSeconds: number): string {
  const s = Math.max(0, Math.round(totalSeconds))
  if (s < 60) return strings.durationSeconds(s)
  if (s < 3600) return strings.durationMinutes(Math.floor(s / 60), s % 60)
  if (s < 86_400) return strings.durationHours(Math.floor(s / 3600), Math.floor((s % 3600) / 60))
  return strings.durationDays(Math.floor(s / 86_400), Math.floor((s % 86_400) / 3600))
}

export const formatKm = (metres: number) => strings.km(metres / 1000)

// ---- loading

export interface HistoryData {
  route: HistoryRoute
  travels: HistoryTravels
  events: DeviceEvent[]
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true })
  })
}

/** GET, asked again after Retry-After (a little more each time, spread) while the server says 429 (the user's own budget) or 503 (its history memory) */
async function getPolitely<T>(path: string, signal: AbortSignal, onBusy: (seconds: number) => void): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await getJson<T>(path, signal)
    } catch (error) {
      if (!(error instanceof ApiError) || (error.status !== 429 && error.status !== 503) || attempt >= BUSY_RETRIES) throw error
      const seconds = Math.min(10, (error.retryAfterSeconds ?? 1) * (1 + attempt / 2))
      onBusy(Math.ceil(seconds))
      await sleep(seconds * 1000 + Math.random() * 250, signal)
    }
  }
}

export async function loadHistory(
  deviceId: string,
  window: { from: number; to: number },
  stopThresholdS: number,
  signal: AbortSignal,
  onBusy: (seconds: number) => void,
): Promise<HistoryData> {
  const base = `devices/${encodeURIComponent(deviceId)}/history`
  const range = `from=${window.from}&to=${window.to}`
  const withStops = `${range}&stop_threshold_time=${stopThresholdS}`
  // two of the person's two slots: the events request is not counted
  const [route, travels, events] = await Promise.all([
    getPolitely<HistoryRoute>(`${base}/route?${withStops}`, signal, onBusy),
    getPolitely<HistoryTravels>(`${base}/travels?${withStops}`, signal, onBusy),
    getPolitely<DeviceEvent[]>(`${base}/events?${range}`, signal, onBusy),
  ])
  return { route, travels, events }
}

/** what to tell the person about a failed load */
export function failureMessage(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 404) return strings.historyNotFound
    if (error.status === 429) return strings.historyBusy(error.retryAfterSeconds ?? 1)
    return error.problem?.detail ? `${strings.historyFailed} ${error.problem.detail}` : `${strings.historyFailed} (HTTP ${error.status})`
  }
  return strings.networkDown
}

// ---- playback

/** The route's fixes as columns: the playback and the chart read them many times a second. */
export interface Track {
  time: Float64Array
  latitude: Float64Array
  longitude: Float64Array
  speed: Float64Array
  /** the server's reporting gaps, in time order: no line is drawn across one */
  gaps: HistoryGap[]
}

export function toTrack(route: HistoryRoute): Track {
  const n = route.points.length
  const track: Track = { time: new Float64Array(n), latitude: new Float64Array(n), longitude: new Float64Array(n), speed: new Float64Array(n), gaps: route.gaps ?? [] }
  route.points.forEach((p, i) => {
    track.time[i] = p.timestamp
    track.latitude[i] = p.latitude
    track.longitude[i] = p.longitude
    track.speed[i] = p.speed
  })
  return track
}

/**
 * The stretches of fixes the route's line joins, as [first, last] indices: every fix, split where
 * the server found a reporting gap (two consecutive points both within one gap's start..end are
 * never joined: nothing is known of the way between them).
 */
export function lineRuns(track: Track): [number, number][] {
  const { time, gaps } = track
  const n = time.length
  if (n === 0) return []
  const runs: [number, number][] = []
  let from = 0
  let g = 0
  for (let i = 1; i < n; i++) {
    while (g < gaps.length && gaps[g].end < time[i]) g++
    if (g < gaps.length && time[i - 1] >= gaps[g].start && time[i] <= gaps[g].end) {
      runs.push([from, i - 1])
      from = i
    }
  }
  runs.push([from, n - 1])
  return runs
}

/** the last fix at or before `t` (0 before the first) */
export function indexAt(track: Track, t: number): number {
  const { time } = track
  let lo = 0
  let hi = time.length - 1
  if (hi < 0 || t <= time[0]) return 0
  if (t >= time[hi]) return hi
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (time[mid] <= t) lo = mid
    else hi = mid - 1
  }
  return lo
}

/** Reporting gaps longer than this are skipped while playing: the marker would only stand still. */
export const PLAYBACK_SKIP_GAP_S = 120

export interface PlaybackPosition {
  index: number
  latitude: number
  longitude: number
  speed: number
  /** degrees from north towards the next place the device went to, null when it did not move */
  course: number | null
}

function bearing(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const rad = Math.PI / 180
  const y = Math.sin((lon2 - lon1) * rad) * Math.cos(lat2 * rad)
  const x = Math.cos(lat1 * rad) * Math.sin(lat2 * rad) - Math.sin(lat1 * rad) * Math.cos(lat2 * rad) * Math.cos((lon2 - lon1) * rad)
  return (Math.atan2(y, x) / rad + 360) % 360
}

/** where the device was at `t`: between two fixes, on the straight line between them */
export function positionAt(track: Track, t: number): PlaybackPosition {
  const i = indexAt(track, t)
  const { time, latitude, longitude, speed } = track
  const j = Math.min(i + 1, time.length - 1)
  const span = time[j] - time[i]
  const f = span > 0 && span <= PLAYBACK_SKIP_GAP_S ? Math.min(1, Math.max(0, (t - time[i]) / span)) : 0
  // heading: towards the next fix that is somewhere else (a parked device's fixes repeat its place)
  let course: number | null = null
  for (let k = i + 1; k < Math.min(time.length, i + 30); k++) {
    if (latitude[k] !== latitude[i] || longitude[k] !== longitude[i]) {
      course = bearing(latitude[i], longitude[i], latitude[k], longitude[k])
      break
    }
  }
  return {
    index: i,
    latitude: latitude[i] + (latitude[j] - latitude[i]) * f,
    longitude: longitude[i] + (longitude[j] - longitude[i]) * f,
    speed: speed[i] + (speed[j] - speed[i]) * f,
    course,
  }
}

/** the next moment of a playback `elapsedS` of track time after `t`, past long gaps */
export function advance(track: Track, t: number, elapsedS: number): number {
  const { time } = track
  let next = t + elapsedS
  const i = indexAt(track, t)
  if (i + 1 < time.length && time[i + 1] - time[i] > PLAYBACK_SKIP_GAP_S && next > time[i]) next = Math.max(next, time[i + 1])
  return Math.min(next, time[time.length - 1])
}
