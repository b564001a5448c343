/**
 * The outbox's writing side: what the ingest pipeline calls to have events and fixes delivered
 * to the account's notification channels (webhooks).
 *
 * FOR THE ENGINEER WHO WIRES IT (src/ingest/pipeline.ts):
 *
 * - Call `enqueueEvent(tx, event, nowMs)` for each event the commit stores, and
 *   `enqueuePositions(tx, fixes, nowMs)` once with all the fixes it stores, INSIDE the same
 *   transaction as those inserts, after them: the deliveries then commit with the event or fix,
 *   or not at all (a crash never loses one, and never delivers one that was not stored).
 * - `tx` is the Drizzle database or transaction, or the raw bun:sqlite connection: statements run
 *   on that connection, so they join whatever transaction it has open.
 * - Only what was really stored: an event the store ignored as a re-send (same device, second
 *   and code), a duplicate fix (same device and second) must not be passed, or it is delivered twice.
 * - `nowMs` is the injected clock's now: a delivery is due at once.
 * - After the commit, `worker.wake()` (delivery.ts) makes the worker look at once instead of at
 *   its next poll (1 s); without it, deliveries still go out within the poll interval.
 * - Cost with no channel: one indexed read of the (small) notifications table per call.
 *
 * Matching: a channel of the device's account, enabled, whose `groups` is empty or shares a group
 * with the device; for events, whose `events` holds the alarm code or "*"; for fixes, a
 * `positions` channel. One row per channel and event; for fixes, one row per channel and device
 * (at most MAX_FIXES_PER_BATCH fixes each, in timestamp order), merged into batches of up to 500
 * fixes across devices when the worker sends them.
 */
import type { Database } from 'bun:sqlite'
import { and, eq, inArray } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { Db } from '../../db/client'
import * as schema from '../../db/schema'
import { deviceGroups, devices, notificationDeliveries, notifications } from '../../db/schema'

/** fixes in one positions delivery at most (the contract's batch size) */
export const MAX_FIXES_PER_BATCH = 500
/** rows in one INSERT: well under SQLite's bound parameters (14 columns a row) */
const ROWS_PER_INSERT = 500

/** A stored event, as the events table holds it (StoredEvent of src/store/events.ts fits). */
export interface EventToNotify {
  /** devices.key */
  device: number
  /** Unix seconds */
  ts: number
  alarm_code: string
  /** JSON text as stored, or the object */
  context: string | Record<string, unknown>
  speed: number | null
  satellite: number | null
  latitude: number | null
  longitude: number | null
  mcc: number | null
  mnc: number | null
  dbm: number | null
}

/** A stored fix, decoded (units of the API: degrees, km/h, metres, Unix seconds). */
export interface FixToNotify {
  /** devices.key */
  device: number
  timestamp: number
  latitude: number
  longitude: number
  speed: number | null
  course: number | null
  altitude: number | null
  attributes?: Record<string, unknown> | null
}

/** The event as a webhook receives it: as GET /events shows it, with its device. */
export interface EventPayload {
  alarm_code: string
  context: Record<string, unknown>
  speed: number | null
  satellite: number | null
  coordinates: [number, number] | null
  mcc: number | null
  mnc: number | null
  dbm: number | null
  timestamp: number
  device: { id: string; alias: string }
}

/** One fix as a positions webhook receives it; `device` is the device's id. */
export interface PositionPayload {
  device: string
  timestamp: number
  latitude: number
  longitude: number
  speed: number | null
  course: number | null
  altitude: number | null
  attributes: Record<string, unknown>
}

type Tx = Pick<Db, 'select' | 'insert'>
export type OutboxTx = Tx | Database

const drizzleOf = new WeakMap<Database, Db>()
function asDrizzle(tx: OutboxTx): Tx {
  if ('select' in tx) return tx
  let db = drizzleOf.get(tx)
  if (!db) {
    db = drizzle(tx, { schema })
    drizzleOf.set(tx, db)
  }
  return db
}

/** A channel's `groups` (JSON array), and whether a device in `deviceGroupIds` is among them. */
function inGroups(groupsJson: string, deviceGroupIds: () => ReadonlySet<string>): boolean {
  const wanted = JSON.parse(groupsJson) as string[]
  if (wanted.length === 0) return true
  const have = deviceGroupIds()
  return wanted.some((id) => have.has(id))
}

function eventPayload(event: EventToNotify, device: { id: string; alias: string }): EventPayload {
  return {
    alarm_code: event.alarm_code,
    context: typeof event.context === 'string' ? (JSON.parse(event.context) as Record<string, unknown>) : event.context,
    speed: event.speed,
    satellite: event.satellite,
    coordinates: event.latitude === null || event.longitude === null ? null : [event.latitude, event.longitude],
    mcc: event.mcc,
    mnc: event.mnc,
    dbm: event.dbm,
    timestamp: event.ts,
    device,
  }
}

type DeliveryRow = typeof notificationDeliveries.$inferInsert

function insertRows(db: Tx, rows: DeliveryRow[]): void {
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) db.insert(notificationDeliveries).values(rows.slice(i, i + ROWS_PER_INSERT)).run()
}

function pending(notificationId: string, kind: 'event' | 'positions', deviceKey: number, payload: string, fixes: number | null, nowMs: number): DeliveryRow {
  return { id: crypto.randomUUID(), notificationId, kind, deviceKey, payload, fixes, status: 'pending', attempts: 0, nextAttemptAt: nowMs, createdAt: nowMs }
}

/**
 * Writes one delivery for each enabled channel of the event's account that wants it (its code or
 * "*", its device's groups). Call inside the event's transaction. Returns how many were written.
 */
export function enqueueEvent(tx: OutboxTx, event: EventToNotify, nowMs: number): number {
  const db = asDrizzle(tx)
  const channels = db
    .select({ id: notifications.id, events: notifications.events, groups: notifications.groups, deviceId: devices.id, alias: devices.alias })
    .from(devices)
    .innerJoin(notifications, and(eq(notifications.accountId, devices.accountId), eq(notifications.enabled, true), eq(notifications.positions, false)))
    .where(eq(devices.key, event.device))
    .all()
  if (channels.length === 0) return 0
  let groupIds: ReadonlySet<string> | undefined
  const ofDevice = () =>
    (groupIds ??= new Set(db.select({ id: deviceGroups.groupId }).from(deviceGroups).where(eq(deviceGroups.deviceKey, event.device)).all().map((g) => g.id)))
  const wanted = channels.filter((c) => {
    const codes = JSON.parse(c.events) as string[]
    return (codes.includes('*') || codes.includes(event.alarm_code)) && inGroups(c.groups, ofDevice)
  })
  if (wanted.length === 0) return 0
  const payload = JSON.stringify(eventPayload(event, { id: wanted[0]!.deviceId, alias: wanted[0]!.alias }))
  insertRows(db, wanted.map((c) => pending(c.id, 'event', event.device, payload, null, nowMs)))
  return wanted.length
}

/**
 * Writes the fixes for each enabled positions channel of their devices' accounts (and groups):
 * one row per channel and device, in timestamp order, split at MAX_FIXES_PER_BATCH. Call once per
 * commit, inside its transaction, with every fix it stored. Returns how many rows were written.
 */
export function enqueuePositions(tx: OutboxTx, fixes: readonly FixToNotify[], nowMs: number): number {
  if (fixes.length === 0) return 0
  const db = asDrizzle(tx)
  const channels = db
    .select({ id: notifications.id, accountId: notifications.accountId, groups: notifications.groups })
    .from(notifications)
    .where(and(eq(notifications.positions, true), eq(notifications.enabled, true)))
    .all()
  if (channels.length === 0) return 0

  const byDevice = new Map<number, FixToNotify[]>()
  for (const fix of fixes) {
    const list = byDevice.get(fix.device)
    if (list) list.push(fix)
    else byDevice.set(fix.device, [fix])
  }
  const keys = [...byDevice.keys()]
  const accounts = new Set(channels.map((c) => c.accountId))
  const known = db
    .select({ key: devices.key, id: devices.id, accountId: devices.accountId })
    .from(devices)
    .where(inArray(devices.key, keys))
    .all()
    .filter((d) => accounts.has(d.accountId))
  if (known.length === 0) return 0
  let groupsByDevice: Map<number, Set<string>> | undefined
  const groupsOf = (key: number) => () => {
    if (!groupsByDevice) {
      groupsByDevice = new Map()
      const rows = db
        .select({ key: deviceGroups.deviceKey, id: deviceGroups.groupId })
        .from(deviceGroups)
        .where(inArray(deviceGroups.deviceKey, known.map((d) => d.key)))
        .all()
      for (const row of rows) {
        const set = groupsByDevice.get(row.key)
        if (set) set.add(row.id)
        else groupsByDevice.set(row.key, new Set([row.id]))
      }
    }
    return groupsByDevice.get(key) ?? new Set<string>()
  }

  const rows: DeliveryRow[] = []
  for (const device of known) {
    const targets = channels.filter((c) => c.accountId === device.accountId && inGroups(c.groups, groupsOf(device.key)))
    if (targets.length === 0) continue
    const items = byDevice
      .get(device.key)!
      .slice()
      .sort((a, b) => a.timestamp - b.timestamp)
      .map(
        (fix): PositionPayload => ({
          device: device.id,
          timestamp: fix.timestamp,
          latitude: fix.latitude,
          longitude: fix.longitude,
          speed: fix.speed,
          course: fix.course,
          altitude: fix.altitude,
          attributes: fix.attributes ?? {},
        }),
      )
    for (let i = 0; i < items.length; i += MAX_FIXES_PER_BATCH) {
      const chunk = items.slice(i, i + MAX_FIXES_PER_BATCH)
      const payload = JSON.stringify(chunk)
      for (const channel of targets) rows.push(pending(channel.id, 'positions', device.key, payload, chunk.length, nowMs))
    }
  }
  insertRows(db, rows)
  return rows.length
}
