/**
 * The newest fix of each device, in memory: what a `moving` device's `location` reads, and what
 * live streams subscribe to. The pipeline writes it after a batch commits; readers never wait.
 * Device alarms (events) pass through here too, after their commit, for the streams' `event: alarm`,
 * and what status packets said, for `event: status`.
 */
import type { EncodedEvent } from '../store/events'
import { LRUCache } from 'lru-cache'

export interface LiveFix {
  deviceKey: number
  timestamp: number
  latitude: number
  longitude: number
  /** km/h, or null when the device sent none */
  speed: number | null
  course: number | null
}

export type LiveListener = (fix: LiveFix) => void

/** A committed device event (an alarm), as the stream tells it. */
export interface LiveAlarm {
  deviceKey: number
  alarmCode: string
  /** Unix seconds */
  timestamp: number
  /** null when the event came without a usable position */
  latitude: number | null
  longitude: number | null
  /** km/h, null when the device sent none */
  speed: number | null
  /** the event's context as stored (a geofence's name, an overspeed's limit…) */
  context: Record<string, unknown>
}

export type AlarmListener = (alarm: LiveAlarm) => void

/** A committed status report: the attributes it merged into the device's status. */
export interface LiveStatus {
  deviceKey: number
  /** only what this report said; the rest of the device's status is unchanged */
  attributes: Record<string, unknown>
  /** when it was committed, Unix ms */
  updatedAt: number
}

/** A stored event as the live stream tells it. */
export function liveAlarmOf(deviceKey: number, event: EncodedEvent): LiveAlarm {
  return {
    deviceKey,
    alarmCode: event.alarm_code,
    timestamp: event.ts,
    latitude: event.latitude,
    longitude: event.longitude,
    speed: event.speed,
    context: JSON.parse(event.context) as Record<string, unknown>,
  }
}

export type StatusListener = (status: LiveStatus) => void

export class LivePositions {
  private readonly newest: LRUCache<number, LiveFix>
  private readonly listeners = new Set<LiveListener>()
  private readonly alarmListeners = new Set<AlarmListener>()
  private readonly statusListeners = new Set<StatusListener>()

  constructor(max = 100_000) {
    this.newest = new LRUCache({ max })
  }

  get(deviceKey: number): LiveFix | undefined {
    return this.newest.get(deviceKey)
  }

  /** Records a committed fix; an older fix than the one held (a re-sent buffer) does not replace it. */
  publish(fix: LiveFix): void {
    const held = this.newest.get(fix.deviceKey)
    if (!held || held.timestamp <= fix.timestamp) this.newest.set(fix.deviceKey, fix)
    for (const listener of this.listeners) listener(fix)
  }

  subscribe(listener: LiveListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Tells subscribers of a committed event; nothing is held (a stream does not replay alarms). */
  publishAlarm(alarm: LiveAlarm): void {
    for (const listener of this.alarmListeners) listener(alarm)
  }

  subscribeAlarms(listener: AlarmListener): () => void {
    this.alarmListeners.add(listener)
    return () => this.alarmListeners.delete(listener)
  }

  /** Tells subscribers of a committed status report; nothing is held (GET /devices/{id}/status has the whole status). */
  publishStatus(status: LiveStatus): void {
    for (const listener of this.statusListeners) listener(status)
  }

  subscribeStatus(listener: StatusListener): () => void {
    this.statusListeners.add(listener)
    return () => this.statusListeners.delete(listener)
  }
}
