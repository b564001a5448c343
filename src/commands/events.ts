/**
 * The events a sent command's status changes write (`command_answered`, `command_failed`,
 * `command_expired`), through the events store, in the transaction of the change: no position,
 * `context` `{ id, command, name }`. The events table keeps one event per device, second and code;
 * a second already taken by the same code (two commands expiring in one sweep) moves the event to
 * the newest free second before it, so every change has its event and none lands after the change
 * (GET /events reads up to now).
 */
import type { Db } from '../../db/client'
import { createEventStore, encodeEvent } from '../store/events'

/** how far back a taken second is moved at most: a day of such events of one device at once */
const MAX_SHIFT_SECONDS = 86_400

export function createCommandEvents(db: Db) {
  const store = createEventStore(db)
  return {
    /** Writes the event at `second` (Unix seconds) or the newest free second before it; returns the second used. */
    append(deviceKey: number, alarmCode: string, context: Record<string, unknown>, second: number): number {
      const event = { alarmCode, context, latitude: null, longitude: null, speed: null, satellites: null, mcc: null, mnc: null, dbm: null }
      for (let timestamp = second; timestamp > second - MAX_SHIFT_SECONDS; timestamp--) {
        if (store.insert(deviceKey, encodeEvent({ ...event, timestamp }, false))) return timestamp
      }
      throw new Error(`no free second for a ${alarmCode} event of device ${deviceKey}`)
    },
  }
}
