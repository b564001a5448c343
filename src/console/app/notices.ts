/**
 * Device alarms as notices: each `event: alarm` the fleet's stream brings becomes a notice that
 * stays until it is dismissed (an SOS must not slip away on a timer), a sentence for screen
 * readers, and one more on the Events navigation item's count, unless the Events page is open.
 * One board per signed-in session (the Shell makes it), so nothing outlives a sign-out.
 */
import { batch, signal } from '@preact/signals'
import { eventName } from './eventNames'
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
