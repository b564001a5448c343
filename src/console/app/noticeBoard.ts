/**
 * The notices of one signed-in session: each `event: alarm` the fleet's stream brings is put on
 * the board by the rules of notices.ts (passing news fades, a device's alarm stays until it is
 * acknowledged), read out as a sentence for screen readers, and counted on the Events navigation
 * item unless the Events page is open. The acknowledged alarms and those still waiting are kept in
 * sessionStorage under the user's id, so a reload neither brings back an acknowledged alarm nor
 * drops one nobody acknowledged; signing out forgets them.
 */
import { batch, signal } from '@preact/signals'
import { eventName } from './eventNames'
import type { Fleet } from './fleet'
import { when } from './format'
import { acknowledge, acknowledgeAll, arrive, emptyNotices, expire, kindOf, nextFadeMs, type NoticeState } from './notices'
import { route } from './router'
import { strings } from './strings'
import type { AlarmEvent } from './types'

const isAlarmEvent = (value: unknown): value is AlarmEvent => {
  const v = value as Partial<AlarmEvent> | null
  return typeof v === 'object' && v !== null && typeof v.id === 'string' && typeof v.alarm_code === 'string' && typeof v.timestamp === 'number'
}

interface Kept {
  acknowledged: string[]
  waiting: AlarmEvent[]
}

export class NoticeBoard {
  readonly state = signal<NoticeState>(emptyNotices())
  /** alarms that came while the Events page was not open */
  readonly unseen = signal(0)
  /** the latest sentence for the live region */
  readonly announcement = signal('')
  private unsubscribe: () => void = () => {}
  private fadeTimer: ReturnType<typeof setTimeout> | null = null

  constructor(
    readonly fleet: Fleet,
    private readonly userId: string,
  ) {}

  private get storageKey() {
    return `notices:${this.userId}`
  }

  start(): void {
    this.state.value = this.restore()
    this.unsubscribe = this.fleet.onAlarm((alarm) => this.arrive(alarm))
  }

  /** signed out: nothing outlives it */
  stop(): void {
    this.unsubscribe()
    if (this.fadeTimer !== null) clearTimeout(this.fadeTimer)
    try {
      sessionStorage.removeItem(this.storageKey)
    } catch {
      // storage refused (private mode): there was nothing kept
    }
  }

  /** the device's name as the fleet knows it now (the list may still be loading) */
  aliasOf(id: string): string {
    return this.fleet.devices.get(id)?.body.alias ?? strings.unknownDevice
  }

  arrive(alarm: AlarmEvent): void {
    const before = this.state.value
    const after = arrive(before, alarm, Date.now())
    if (after === before) return
    batch(() => {
      this.change(after)
      if (route.value.view !== 'events') this.unseen.value++
      const say = kindOf(alarm.alarm_code) === 'alarm' ? strings.noticeAnnounce : strings.noticeAnnouncePassing
      const sentence = say(eventName(alarm.alarm_code, alarm.context), this.aliasOf(alarm.id), when(alarm.timestamp * 1000, Date.now()))
      // the same words again would change nothing, and a live region speaks only on a change
      this.announcement.value = sentence === this.announcement.value ? `${sentence}\u00a0` : sentence
    })
  }

  /** an alarm acknowledged, or passing news dismissed */
  dismiss(key: number): void {
    this.change(acknowledge(this.state.value, key))
  }

  dismissAll(): void {
    this.change(acknowledgeAll(this.state.value))
  }

  /** the Events page is open: what came is seen */
  seen(): void {
    this.unseen.value = 0
  }

  private change(state: NoticeState): void {
    this.state.value = state
    this.keep(state)
    this.scheduleFade()
  }

  /** one timer, for the next passing notice to fade */
  private scheduleFade(): void {
    if (this.fadeTimer !== null) clearTimeout(this.fadeTimer)
    this.fadeTimer = null
    const at = nextFadeMs(this.state.value)
    if (at === null) return
    this.fadeTimer = setTimeout(() => {
      this.fadeTimer = null
      this.change(expire(this.state.value, Date.now()))
    }, Math.max(0, at - Date.now()))
  }

  private keep(state: NoticeState): void {
    const kept: Kept = { acknowledged: state.acknowledged, waiting: state.notices.filter((n) => n.kind === 'alarm').map((n) => n.alarm) }
    try {
      sessionStorage.setItem(this.storageKey, JSON.stringify(kept))
    } catch {
      // storage full or refused: the board still works, it is only not kept over a reload
    }
  }

  private restore(): NoticeState {
    let kept: Partial<Kept> = {}
    try {
      kept = JSON.parse(sessionStorage.getItem(this.storageKey) ?? '{}') as Partial<Kept>
    } catch {
      kept = {}
    }
    const acknowledged = Array.isArray(kept.acknowledged) ? kept.acknowledged.filter((id) => typeof id === 'string') : []
    const waiting = Array.isArray(kept.waiting) ? kept.waiting.filter(isAlarmEvent) : []
    // oldest first, so the newest ends on top as it was
    return [...waiting].reverse().reduce((state, alarm) => arrive(state, alarm, Date.now()), emptyNotices(acknowledged))
  }
}
