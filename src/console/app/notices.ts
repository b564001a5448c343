/**
 * Device alarms as notices: each `event: alarm` the fleet's stream brings becomes a notice that
 * stays until it is dismissed (an SOS must not slip away on a timer), a sentence for screen
 * readers, and one more on the Events navigation item's count, unless the Events page is open.
 * One board per signed-in session (the Shell makes it), so nothing outlives a sign-out.
 */
import { batch, signal } from '@preact/signals'
import type { Fleet } from './fleet'
import { when } from './format'
import { route } from './router'
import { strings } from './strings'
import type { AlarmEvent } from './types'

export interface Notice {
  /** unique within the board, for keys and focus */
  key: number
  alarm: AlarmEvent
}

/** Notices kept at most; older ones are still on the Events page. */
const MAX_NOTICES = 50

const finite = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value)

/**
 * An event in words: a derived event told from its context ("Entered Yard", "Overspeed 112 km/h
 * (limit 90)"), an `alarm` by the device's own code ("Alarm 0x1f"), else its alarm's name.
 */
export function eventName(code: string, context?: Record<string, unknown>): string {
  const name = typeof context?.name === 'string' && context.name !== '' ? context.name : null
  if (code === 'geofence_enter' && name) return strings.geofenceEntered(name)
  if (code === 'geofence_exit' && name) return strings.geofenceLeft(name)
  if (code === 'overspeed' && finite(context?.speed)) {
    const speed = Math.round(context.speed)
    return finite(context.limit) ? strings.overspeedOver(speed, Math.round(context.limit)) : strings.overspeedAt(speed)
  }
  if (code === 'alarm' && typeof context?.raw_alarm === 'string' && context.raw_alarm !== '') return strings.alarmRaw(context.raw_alarm)
  return alarmName(code)
}

/** The alarm's name in words: a known code's own, a GT06 alarm byte's number, else the code itself as words. */
export function alarmName(code: string): string {
  const known = strings.alarmNames[code]
  if (known) return known
  if (/^alarm_0x[0-9a-f]+$/i.test(code)) return strings.alarmByte(code.slice(6))
  return strings.alarmOther(code.replace(/[_-]+/g, ' ').trim() || code)
}

/** Alarms that call for someone to act now, shown in the alert colour; the rest are told plainly. */
const URGENT = new Set(['sos', 'power_cut', 'tamper', 'collision', 'crash', 'towing', 'jamming', 'gnss_jamming'])
export const isUrgent = (code: string) => URGENT.has(code)

export class NoticeBoard {
  /** newest first */
  readonly notices = signal<Notice[]>([])
  /** alarms that came while the Events page was not open */
  readonly unseen = signal(0)
  /** the latest sentence for the live region */
  readonly announcement = signal('')
  private nextKey = 1
  private unsubscribe: () => void = () => {}

  constructor(readonly fleet: Fleet) {}

  start(): void {
    this.unsubscribe = this.fleet.onAlarm((alarm) => this.arrive(alarm))
  }

  stop(): void {
    this.unsubscribe()
  }

  /** the device's name as the fleet knows it now (the list may still be loading) */
  aliasOf(id: string): string {
    return this.fleet.devices.get(id)?.body.alias ?? strings.unknownDevice
  }

  arrive(alarm: AlarmEvent): void {
    const notice = { key: this.nextKey++, alarm }
    batch(() => {
      this.notices.value = [notice, ...this.notices.value].slice(0, MAX_NOTICES)
      if (route.value.view !== 'events') this.unseen.value++
      const sentence = strings.noticeAnnounce(eventName(alarm.alarm_code, alarm.context), this.aliasOf(alarm.id), when(alarm.timestamp * 1000, Date.now()))
      // the same words again would change nothing, and a live region speaks only on a change
      this.announcement.value = sentence === this.announcement.value ? `${sentence}\u00a0` : sentence
    })
  }

  dismiss(key: number): void {
    this.notices.value = this.notices.value.filter((n) => n.key !== key)
  }

  dismissAll(): void {
    this.notices.value = []
  }

  /** the Events page is open: what came is seen */
  seen(): void {
    this.unseen.value = 0
  }
}
