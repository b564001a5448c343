/**
 * The outbox's writing side: what the ingest pipeline calls to have events and fixes delivered
 * to the account's notification channels (webhooks).
 *
 * How ingest uses it (src/ingest/pipeline.ts):
 *
 * - Each commit opens one `beginOutboxBatch(sqlite)` INSIDE its transaction, calls
 *   `enqueueEvent(event, nowMs)` for each event it stores and `enqueuePositions(fixes, nowMs)` once
 *   with every fix it stores (only when `forwardsPositions`), after the inserts: the deliveries
 *   commit with the event or fix, or not at all (a crash never loses one, and never delivers one
 *   that was not stored).
 * - `tx` is the Drizzle database or transaction, or the raw bun:sqlite connection: the store's
 *   statements (src/store/notifications.ts `outboxInTransaction`) run on that connection, so
 *   they join whatever transaction it has open.
 * - Only what was really stored: an event the store ignored as a re-send (same device, second
 *   and code), a duplicate fix (same device and second) must not be passed, or it is delivered twice.
 * - `nowMs` is the injected clock's now: a delivery is due at once.
 * - After the commit, `wake()` of the delivery worker (delivery.ts; src/server.ts starts it as
 *   `notificationDelivery`) makes it look at once instead of at its next poll (1 s); without it,
 *   deliveries still go out within the poll interval.
 * - Cost: the enabled channels are kept in memory and read again only when access_version row 6
 *   (migration 0010's triggers) moves, checked once a batch; a batch reads each device and its
 *   groups once; then a row insert per delivery.
 *
 * Matching: a channel of the device's account, enabled, whose `groups` is empty or shares a group
 * with the device; for events, whose `events` holds the alarm code or "*"; for fixes, a
 * `positions` channel. A user's own email alerts (`user_id` set, PUT /me/email-alerts) match only
 * the devices that user reaches, decided by the access function (devices/access.ts `reachOfInTransaction`, synchronous inside the transaction), as
 * of the event's transaction: a change of their groups counts at once (the access function's own
 * version), a change of their role or account moves row 4, which is read with row 6. One row per channel and event; for fixes, one row per channel and device
 * (at most MAX_FIXES_PER_BATCH fixes each, in timestamp order), merged into batches of up to 500
 * fixes across devices when the worker sends them.
 */
import type { Connectable } from '../../db/client'
import { createDeviceReachInTransaction } from '../devices/access'
import type { UserPrincipal } from '../principal'
import type { DecodedFix } from '../ingest/types'
import { type EncodedEvent, type EventBody, eventBody } from '../store/events'
import { deviceAccessReadsInTransaction } from '../store/devices'
import { NOTIFICATIONS_VERSION_ROW, type OutboxInTransaction, outboxInTransaction, type OutboxSource } from '../store/notifications'

/** fixes in one positions delivery at most (the contract's batch size) */
export const MAX_FIXES_PER_BATCH = 500

/** A stored event, as the events table holds it, with its device's key. */
export type EventToNotify = EncodedEvent & { device: number }

/** A stored fix, decoded (units of the API: degrees, km/h, metres, Unix seconds), with its device's key. */
export type FixToNotify = Pick<DecodedFix, 'timestamp' | 'latitude' | 'longitude' | 'speed' | 'course' | 'altitude'> & {
  device: number
  attributes?: Record<string, unknown> | null
}

/** The event as a webhook receives it: as GET /events shows it, with its device. */
export type EventPayload = EventBody & { device: { id: string; alias: string } }

/** One fix as a positions webhook receives it; `device` is the device's id. */
export type PositionPayload = Omit<FixToNotify, 'device' | 'attributes'> & { device: string; attributes: Record<string, unknown> }

/**
 * Where the outbox's statements run: a SQLite connection or transaction, or an adapter's own
 * source of them (PostgreSQL's ingest, src/store/postgres/ingest.ts, answers from what its batch
 * read ahead, with whom users reach among the batch's devices).
 */
export type OutboxTx = Connectable | OutboxSource

const isOutboxSource = (tx: OutboxTx): tx is OutboxSource => typeof (tx as Partial<OutboxSource>).enqueue === 'function'

export { NOTIFICATIONS_VERSION_ROW }

/** An enabled channel, as matching needs it. */
interface Channel {
  id: string
  /** event channels: the alarm codes it wants, or null for "*" */
  codes: ReadonlySet<string> | null
  /** empty: every device of the account */
  groups: readonly string[]
  /** a user's own email alerts: only the devices this user reaches */
  user: UserPrincipal | null
}

/** The enabled channels by account, as of `version`. */
interface Channels {
  version: number
  events: Map<string, Channel[]>
  positions: Map<string, Channel[]>
}

/** Whether a device in `deviceGroupIds` is among a channel's groups (read lazily: most channels name none). */
function inGroups(channel: Channel, deviceGroupIds: () => ReadonlySet<string>): boolean {
  if (channel.groups.length === 0) return true
  const have = deviceGroupIds()
  return channel.groups.some((id) => have.has(id))
}

/**
 * The event as JSON text, as a webhook receives it: its stored context text spliced in rather than
 * parsed and written again (this runs inside ingest's transaction, for every event).
 */
function eventPayloadText(event: EventToNotify, device: { id: string; alias: string }): string {
  // the events API's shape (eventBody), its context left out to be spliced in as stored
  const { alarm_code, context: _, ...rest } = eventBody({ ...event, context: '{}' })
  const payload: Omit<EventPayload, 'alarm_code' | 'context'> = { ...rest, device }
  return `{"alarm_code":${JSON.stringify(alarm_code)},"context":${event.context},${JSON.stringify(payload).slice(1)}`
}

interface Outbox {
  run: OutboxInTransaction
  /** whom a user's own alerts reach: the one access function's in-transaction answer, on this connection (inside the caller's transaction), or the adapter's source's */
  access: Pick<ReturnType<typeof createDeviceReachInTransaction>, 'reachOfInTransaction'>
  channels: Channels | null
}

/** by the store's statements of a connection: one a connection */
const outboxes = new WeakMap<OutboxInTransaction, Outbox>()
function outboxFor(tx: OutboxTx): Outbox {
  const run = isOutboxSource(tx) ? tx : outboxInTransaction(tx)
  let found = outboxes.get(run)
  if (!found) {
    // the access function's synchronous answer over the unit's own transaction: its reads join it
    found = { run, access: isOutboxSource(tx) ? tx : createDeviceReachInTransaction(deviceAccessReadsInTransaction(tx)), channels: null }
    outboxes.set(run, found)
  }
  return found
}

/**
 * The enabled channels, read again only when row 6 moved: one read of a row a call, instead of
 * a join of devices and notifications for every event (measured 50 µs an event inside ingest's
 * batches). Read inside the caller's transaction, so a channel committed before it is seen.
 */
function channelsOf(outbox: Outbox): Channels {
  const version = outbox.run.version()
  if (outbox.channels?.version === version) return outbox.channels
  const channels: Channels = { version, events: new Map(), positions: new Map() }
  for (const row of outbox.run.enabledChannels()) {
    const codes = JSON.parse(row.events) as string[]
    let user: UserPrincipal | null = null
    if (row.userId !== null) {
      // the user's row is gone only mid-cascade; such a channel reaches nothing
      if (row.userAccountId === null) continue
      user = { kind: 'user', userId: row.userId, accountId: row.userAccountId, role: row.userRole === 'admin' ? 'admin' : 'member', via: 'key' }
    }
    const channel: Channel = { id: row.id, codes: codes.includes('*') ? null : new Set(codes), groups: JSON.parse(row.groups) as string[], user }
    const byAccount = row.positions ? channels.positions : channels.events
    // a user's alerts are filed under the account they are in now
    const accountId = user?.accountId ?? row.accountId
    const list = byAccount.get(accountId)
    if (list) list.push(channel)
    else byAccount.set(accountId, [channel])
  }
  outbox.channels = channels
  return channels
}

type DeviceRow = { id: string; alias: string; accountId: string }

/** The outbox for one transaction: what ingest's batch writes its deliveries through. */
export interface OutboxBatch {
  /** whether any enabled channel forwards positions (the caller need not gather its fixes otherwise) */
  readonly forwardsPositions: boolean
  /**
   * Writes one delivery for each enabled channel of the event's account that wants it (its code
   * or "*", its device's groups). Returns how many were written.
   */
  enqueueEvent(event: EventToNotify, nowMs: number): number
  /**
   * Writes the fixes for each enabled positions channel of their devices' accounts (and groups):
   * one row per channel and device, in timestamp order, split at MAX_FIXES_PER_BATCH. Call once,
   * with every fix the transaction stored. Returns how many rows were written.
   */
  enqueuePositions(fixes: readonly FixToNotify[], nowMs: number): number
}

/**
 * The outbox for one transaction of many events and fixes (ingest's batch): the channels are
 * checked once, each device and its groups read once. Open it inside the transaction.
 */
export function beginOutboxBatch(tx: OutboxTx): OutboxBatch {
  const outbox = outboxFor(tx)
  const { run } = outbox
  const channels = channelsOf(outbox)
  const devices = new Map<number, DeviceRow | null>()
  const deviceOf = (key: number): DeviceRow | null => {
    let device = devices.get(key)
    if (device === undefined) {
      device = run.device(key)
      devices.set(key, device)
    }
    return device
  }
  const groups = new Map<number, ReadonlySet<string>>()
  const groupsOf = (key: number): ReadonlySet<string> => {
    let found = groups.get(key)
    if (found === undefined) {
      found = new Set(run.groupsOf(key))
      groups.set(key, found)
    }
    return found
  }

  // whom each user with alerts of their own reaches, asked once a batch and only when an event would go to them
  const reach = new Map<string, (deviceKey: number) => boolean>()
  const userReaches = (user: UserPrincipal, key: number): boolean => {
    let reaches = reach.get(user.userId)
    if (reaches === undefined) {
      reaches = outbox.access.reachOfInTransaction(user)
      reach.set(user.userId, reaches)
    }
    return reaches(key)
  }

  return {
    forwardsPositions: channels.positions.size > 0,

    enqueueEvent(event, nowMs) {
      if (channels.events.size === 0) return 0
      const device = deviceOf(event.device)
      if (device === null) return 0
      const ofDevice = () => groupsOf(event.device)
      const wanted = (channels.events.get(device.accountId) ?? []).filter(
        (c) => (c.codes === null || c.codes.has(event.alarm_code)) && inGroups(c, ofDevice) && (c.user === null || userReaches(c.user, event.device)),
      )
      if (wanted.length === 0) return 0
      const payload = eventPayloadText(event, { id: device.id, alias: device.alias })
      for (const channel of wanted) {
        run.enqueue({ id: Bun.randomUUIDv7(), notificationId: channel.id, kind: 'event', deviceKey: event.device, payload, fixes: null, now: nowMs })
      }
      return wanted.length
    },

    enqueuePositions(fixes, nowMs) {
      if (fixes.length === 0 || channels.positions.size === 0) return 0
      const byDevice = new Map<number, FixToNotify[]>()
      for (const fix of fixes) {
        const list = byDevice.get(fix.device)
        if (list) list.push(fix)
        else byDevice.set(fix.device, [fix])
      }
      let written = 0
      for (const [key, deviceFixes] of byDevice) {
        const device = deviceOf(key)
        if (device === null) continue
        const targets = (channels.positions.get(device.accountId) ?? []).filter((c) => inGroups(c, () => groupsOf(key)) && (c.user === null || userReaches(c.user, key)))
        if (targets.length === 0) continue
        const items = deviceFixes
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
          for (const channel of targets) {
            run.enqueue({ id: Bun.randomUUIDv7(), notificationId: channel.id, kind: 'positions', deviceKey: key, payload, fixes: chunk.length, now: nowMs })
            written++
          }
        }
      }
      return written
    },
  }
}
