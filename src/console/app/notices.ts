/**
 * The notices' rules, as pure state (no Preact, no DOM, time passed in), so that they can be
 * tried without a browser; the board (noticeBoard.ts) holds the state in a signal and runs the
 * timers, the stack (noticesView.tsx) draws it.
 *
 * - What the server derives from fixes and commands (geofence crossings, overspeed, ignition,
 *   online/offline, a command's answer) is passing news: its notice fades FADE_AFTER_MS after it came.
 * - What a device raised itself (SOS, tampering, a power cut, any other alarm code) is an alarm:
 *   its notice stays until someone acknowledges it, and the acknowledgement is remembered for the
 *   signed-in session, so the same event (device, code, second) never comes back.
 * - The stack shows at most a handful: alarms first, newest first within each, then a count of the rest.
 */
import type { AlarmEvent } from './types'

/** How long a passing notice (a derived event) stays: long enough to read two lines. */
export const FADE_AFTER_MS = 8_000
/** Notices stacked at once on a desktop; on a phone fewer (noticesView.tsx). */
export const STACKED = 4
/** Notices kept at most; older ones are still on the Events page. */
export const MAX_NOTICES = 50
/** Acknowledged events remembered at most (the newest), so the memory stays small. */
export const MAX_ACKNOWLEDGED = 500

/** The events the server derives (src/http/description.ts): they fade. Every other code is a device's alarm: it stays. */
const PASSING = new Set([
  'geofence_enter',
  'geofence_exit',
  'overspeed',
  'ignition_on',
  'ignition_off',
  'device_online',
  'device_offline',
  'command_answered',
  'command_failed',
  'command_expired',
])
export type NoticeKind = 'alarm' | 'passing'
export const kindOf = (code: string): NoticeKind => (PASSING.has(code) ? 'passing' : 'alarm')

/** Alarms that call for someone to act now, shown in the alert colour; the rest are told plainly. */
const URGENT = new Set(['sos', 'power_cut', 'tamper', 'collision', 'crash', 'towing', 'jamming', 'gnss_jamming'])
export const isUrgent = (code: string) => URGENT.has(code)

/** One event's identity: the server stores one event per device, code and second. */
export const eventId = (event: Pick<AlarmEvent, 'id' | 'alarm_code' | 'timestamp'>) => `${event.id}|${event.alarm_code}|${event.timestamp}`

export interface Notice {
  /** unique within the board, for keys and focus */
  key: number
  alarm: AlarmEvent
  kind: NoticeKind
  /** when a passing notice goes (epoch ms); null for an alarm, which waits for its acknowledgement */
  fadesAtMs: number | null
}

export interface NoticeState {
  /** newest first */
  notices: Notice[]
  /** eventIds of the alarms acknowledged this session, oldest first */
  acknowledged: string[]
  nextKey: number
}

export const emptyNotices = (acknowledged: string[] = []): NoticeState => ({ notices: [], acknowledged: acknowledged.slice(-MAX_ACKNOWLEDGED), nextKey: 1 })

/** An event came: a new notice, unless it is on the stack already or was acknowledged. */
export function arrive(state: NoticeState, alarm: AlarmEvent, nowMs: number): NoticeState {
  const id = eventId(alarm)
  if (state.acknowledged.includes(id) || state.notices.some((n) => eventId(n.alarm) === id)) return state
  const kind = kindOf(alarm.alarm_code)
  const notice: Notice = { key: state.nextKey, alarm, kind, fadesAtMs: kind === 'passing' ? nowMs + FADE_AFTER_MS : null }
  // the oldest passing news goes first when the board is full; an alarm only when nothing else is left
  let notices = [notice, ...state.notices]
  while (notices.length > MAX_NOTICES) {
    const oldestPassing = notices.findLastIndex((n) => n.kind === 'passing')
    notices = notices.filter((_, i) => i !== (oldestPassing === -1 ? notices.length - 1 : oldestPassing))
  }
  return { ...state, notices, nextKey: state.nextKey + 1 }
}

/** The notice is acknowledged (an alarm: remembered) or dismissed (passing news: just gone). */
export function acknowledge(state: NoticeState, key: number): NoticeState {
  const notice = state.notices.find((n) => n.key === key)
  if (!notice) return state
  return {
    ...state,
    notices: state.notices.filter((n) => n !== notice),
    acknowledged: notice.kind === 'alarm' ? [...state.acknowledged, eventId(notice.alarm)].slice(-MAX_ACKNOWLEDGED) : state.acknowledged,
  }
}

/** Every notice acknowledged at once. */
export function acknowledgeAll(state: NoticeState): NoticeState {
  return state.notices.reduce((s, n) => acknowledge(s, n.key), state)
}

/** Passing notices whose time is up are gone; alarms stay. */
export function expire(state: NoticeState, nowMs: number): NoticeState {
  const notices = state.notices.filter((n) => n.fadesAtMs === null || n.fadesAtMs > nowMs)
  return notices.length === state.notices.length ? state : { ...state, notices }
}

/** When the next passing notice fades (epoch ms), or null when none waits to. */
export function nextFadeMs(state: NoticeState): number | null {
  const times = state.notices.flatMap((n) => (n.fadesAtMs === null ? [] : [n.fadesAtMs]))
  return times.length === 0 ? null : Math.min(...times)
}

/** The notices in the order they are stacked: alarms first, then passing news, newest first within each. */
export function ordered(notices: readonly Notice[]): Notice[] {
  return [...notices].sort((a, b) => (a.kind === b.kind ? b.key - a.key : a.kind === 'alarm' ? -1 : 1))
}

/** What the stack shows: the first `limit` in stacking order, and how many more there are. */
export function stack(notices: readonly Notice[], limit = STACKED): { shown: Notice[]; more: number } {
  const all = ordered(notices)
  return { shown: all.slice(0, limit), more: Math.max(0, all.length - limit) }
}
