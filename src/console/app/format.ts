/** Times, ages and numbers as the console shows them (words from strings.ts). */
import { strings } from './strings'

/** "3 min ago" for a Unix time in seconds, against `nowMs` */
export function ago(seconds: number, nowMs: number): string {
  const s = Math.max(0, Math.round(nowMs / 1000 - seconds))
  if (s < 60) return strings.justNow
  if (s < 3600) return strings.minutesAgo(Math.floor(s / 60))
  if (s < 86_400) return strings.hoursAgo(Math.floor(s / 3600))
  return strings.daysAgo(Math.floor(s / 86_400))
}

/** today: the time; another day: the date and time */
export function when(ms: number, nowMs: number): string {
  const date = new Date(ms)
  const today = date.toDateString() === new Date(nowMs).toDateString()
  return today
    ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' })
    : date.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' })
}

export const iso = (seconds: number) => new Date(seconds * 1000).toISOString()

export const coordinates = (latitude: number, longitude: number) => `${latitude.toFixed(5)}, ${longitude.toFixed(5)}`

/** 0–359 → N, NE, … */
export function compass(degrees: number): string {
  const points = ['N', 'NE', 'E', 'SE', 'S', 'SW', 'W', 'NW']
  return points[Math.round((((degrees % 360) + 360) % 360) / 45) % 8]
}
