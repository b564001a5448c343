/**
 * The events a sent command's status changes write (`command_answered`, `command_failed`,
 * `command_expired`), through the events store, in the transaction of the change: no position,
 * `context` `{ id, command, name }`. Each is stored at the second of its change, however many of
 * its code that second holds already (two commands expiring in one sweep): the store numbers the
 * events of one device, second and code (store/events.ts `append`).
 */
import type { Db } from '../../db/client'
import { createEventStore, encodeEvent } from '../store/events'

export function createCommandEvents(db: Db) {
  const store = createEventStore(db)
  return {
    /** Writes the event at `second` (Unix seconds). */
    append(deviceKey: number, alarmCode: string, context: Record<string, unknown>, second: number): void {
      const event = { alarmCode, context, timestamp: second, latitude: null, longitude: null, speed: null, satellites: null, mcc: null, mnc: null, dbm: null }
      store.append(deviceKey, encodeEvent(event, false))
    },
  }
}
