/**
 * The events table read across many devices at once (GET /events): the newest first, within a
 * window. The devices come from the access function; this only reads what it is given. The keys
 * go as one JSON array (json_each) rather than one bound parameter each: an admin's account may
 * hold more devices than SQLite binds parameters, and the statement stays one prepared statement.
 * SQLite walks events_device_ts_code once per device over the window, then sorts what it found.
 */
import { and, between, desc, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { events } from '../../db/schema'

export interface StoredEvent {
  id: number
  device: number
  ts: number
  alarm_code: string
  context: string
  speed: number | null
  satellite: number | null
  latitude: number | null
  longitude: number | null
  mcc: number | null
  mnc: number | null
  dbm: number | null
}

export interface EventWindow {
  /** Unix seconds, both inclusive */
  from: number
  to: number
  limit: number
  offset: number
}

export function createEventStore(db: Db) {
  const newestFirst = db
    .select({
      id: events.id,
      device: events.device,
      ts: events.ts,
      alarm_code: events.alarmCode,
      context: events.context,
      speed: events.speed,
      satellite: events.satellite,
      latitude: events.latitude,
      longitude: events.longitude,
      mcc: events.mcc,
      mnc: events.mnc,
      dbm: events.dbm,
    })
    .from(events)
    .where(
      and(
        sql`${events.device} IN (SELECT value FROM json_each(${sql.placeholder('keys')}))`,
        between(events.ts, sql.placeholder('from'), sql.placeholder('to')),
      ),
    )
    // id breaks ties within a second: the order is stable from page to page
    .orderBy(desc(events.ts), desc(events.id))
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'))
    .prepare()

  return {
    /** the events of these devices in the window, newest first, one page */
    newestFirst(deviceKeys: readonly number[], window: EventWindow): StoredEvent[] {
      if (deviceKeys.length === 0) return []
      return newestFirst.all({ keys: JSON.stringify(deviceKeys), ...window })
    },
  }
}

export type EventStore = ReturnType<typeof createEventStore>
