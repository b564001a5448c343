/**
 * The owner of `sent_commands`, the durable command queue's rows: their reads, and the units of
 * work that move a command on. A command reaching a final status (answered, failed, expired) is
 * written with its event (`command_answered`, …, context `{ id, command, name }`, no position) in
 * the same transaction, through the events store's writer; cancelling one writes no event.
 *
 * The rules (which command goes, when one lapses) are commands/queue.ts's; it hands this store
 * the rows its rules chose. Every change is guarded by the status the rules saw, so a change made
 * meanwhile (an answer, a cancel) wins and the guarded one writes nothing.
 *
 * Writes wait for another process's write lock asynchronously (store/busy.ts). Nothing here is
 * SQLite-only but `RETURNING` (PostgreSQL has it too).
 */
import { and, asc, type Column, desc, eq, gt, inArray, lte, or, type SQL, sql } from 'drizzle-orm'
import type { DatabaseHandle } from '../../db/client'
import { sentCommands } from '../../db/schema'
import { type Clock, systemClock } from '../clock'
import { retryWhileBusy } from './busy'
import { createEventStore, type EncodedEvent, encodeEvent } from './events'

/** A row of sent_commands. */
export type StoredCommand = typeof sentCommands.$inferSelect

/** what a new command is stored with (queued) */
export type NewStoredCommand = Pick<StoredCommand, 'id' | 'deviceKey' | 'commandId' | 'name' | 'text' | 'payload' | 'userId' | 'createdAt' | 'expiresAt'>

export type FinalStatus = 'answered' | 'failed' | 'expired'

/** a final status change and its event, as written: told to live streams after the commit */
export interface CommandChange {
  deviceKey: number
  id: string
  /** the event's code: command_answered, command_failed, command_expired */
  code: string
  /** the event's second (Unix seconds) */
  second: number
  /** the event's context, as stored */
  context: Record<string, unknown>
}

/** a command the rules found lapsed, and the time it lapsed (its event's time) */
export interface Lapsed {
  row: StoredCommand
  status: 'expired' | 'failed'
  atMs: number
}

export interface CommandStore {
  /** Stores a new command, queued. */
  insert(command: NewStoredCommand): Promise<StoredCommand>
  /** A device's commands, newest first, one page. */
  page(deviceKey: number, page: { limit: number; offset: number }): Promise<StoredCommand[]>
  /** One command by its id (lowercase), or null. */
  byId(id: string): Promise<StoredCommand | null>
  /** A device's queued and sent commands, oldest first. */
  open(deviceKey: number): Promise<StoredCommand[]>
  /** Queued and sent commands whose expiry is at or before `nowMs`, oldest first, at most 1,000. */
  pastExpiry(nowMs: number): Promise<StoredCommand[]>
  /** Devices with a sent command (not due to be re-sent) sent in (afterMs, upToMs]. */
  sentBetween(afterMs: number, upToMs: number): Promise<number[]>
  /** Cancels the device's command if queued: whether it was, and the status it has; null when the device has no such command. */
  cancel(deviceKey: number, id: string): Promise<{ cancelled: boolean; status: string } | null>
  /**
   * The command went out at `nowMs` (queued, or sent and due to be re-sent, and not past its
   * expiry): its device and how many times it went out, or null when it was not such.
   */
  markSent(id: string, nowMs: number): Promise<{ deviceKey: number; attempts: number } | null>
  /** Each lapsed command reaches its status with its event, in one unit of work; the changes made, in order. */
  lapse(lapsed: readonly Lapsed[]): Promise<CommandChange[]>
  /**
   * The device's command `id` (or, without one, its oldest `sent` one) is answered at `atMs`, if
   * it is `sent`: `response(row)` is the answer stored. The change and the row as it is now, or null.
   */
  answer(deviceKey: number, id: string | undefined, atMs: number, response: (row: StoredCommand) => string): Promise<{ change: CommandChange; row: StoredCommand } | null>
  /** The command fails at `atMs`, with its event, if it is queued or sent; null otherwise. */
  fail(id: string, atMs: number): Promise<CommandChange | null>
  /** A reconnection: `resend` (keys of sent commands) go out once more, `failed` fail at `atMs`; one unit of work. */
  reconnect(resend: readonly number[], failed: readonly StoredCommand[], atMs: number): Promise<CommandChange[]>
}

/** The change a command reaching `status` at `atMs` makes, and its event's row (both engines' adapters). */
export function finalChange(row: Pick<StoredCommand, 'deviceKey' | 'id' | 'commandId' | 'name'>, status: FinalStatus, atMs: number): { change: CommandChange; event: EncodedEvent } {
  const code = `command_${status}`
  const context = { id: row.id, command: row.commandId, name: row.name }
  const second = Math.floor(atMs / 1000)
  const event = { alarmCode: code, context, timestamp: second, latitude: null, longitude: null, speed: null, satellites: null, mcc: null, mnc: null, dbm: null }
  return { change: { deviceKey: row.deviceKey, id: row.id, code, second, context }, event: encodeEvent(event, false) }
}

/** A final status's change made, or null where a change made meanwhile won: the changes made, in order. */
export const changesMade = (changes: readonly (CommandChange | null)[]) => changes.filter((change): change is CommandChange => change !== null)

/**
 * Whether the command `id` may go out at `nowMs` (SQL, over either engine's sent_commands): queued,
 * or sent and due to be re-sent, and not past its expiry.
 */
export function mayGoOut(table: { id: Column; expiresAt: Column; status: Column; resendDue: Column }, id: string, nowMs: number): SQL | undefined {
  return and(eq(table.id, id), gt(table.expiresAt, nowMs), or(eq(table.status, 'queued'), and(eq(table.status, 'sent'), eq(table.resendDue, true))))
}

/** the statuses of a command still open: waiting to go out, or for its answer */
export const OPEN_STATUSES = ['queued', 'sent']

/**
 * Sent commands over SQLite. `clock`: where a write waiting for another process's lock reads its
 * deadline.
 */
export function createCommandStore(database: DatabaseHandle, options: { clock?: Clock } = {}): CommandStore {
  const { db, sqlite } = database
  const clock = options.clock ?? systemClock
  const events = createEventStore(db)
  const write = <T>(work: () => T) => retryWhileBusy(sqlite, work, { clock })
  const unit = <T>(work: () => T) => write(() => db.transaction(work, { behavior: 'immediate' }))

  const openOf = db
    .select()
    .from(sentCommands)
    .where(and(eq(sentCommands.deviceKey, sql.placeholder('device')), inArray(sentCommands.status, OPEN_STATUSES)))
    .orderBy(asc(sentCommands.key))
    .prepare()
  const pageOf = db
    .select()
    .from(sentCommands)
    .where(eq(sentCommands.deviceKey, sql.placeholder('device')))
    .orderBy(desc(sentCommands.key))
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'))
    .prepare()
  const byId = db.select().from(sentCommands).where(eq(sentCommands.id, sql.placeholder('id'))).prepare()
  const oldestSent = db
    .select()
    .from(sentCommands)
    .where(and(eq(sentCommands.deviceKey, sql.placeholder('device')), eq(sentCommands.status, 'sent')))
    .orderBy(asc(sentCommands.key))
    .limit(1)
    .prepare()
  const pastExpiry = db
    .select()
    .from(sentCommands)
    .where(and(inArray(sentCommands.status, OPEN_STATUSES), lte(sentCommands.expiresAt, sql.placeholder('now'))))
    .orderBy(asc(sentCommands.key))
    .limit(1000)
    .prepare()
  const sentBetween = db
    .selectDistinct({ deviceKey: sentCommands.deviceKey })
    .from(sentCommands)
    .where(
      and(
        eq(sentCommands.status, 'sent'),
        eq(sentCommands.resendDue, false),
        gt(sentCommands.sentAt, sql.placeholder('after')),
        lte(sentCommands.sentAt, sql.placeholder('upTo')),
      ),
    )
    .prepare()

  /**
   * Inside a unit of work: the command reaches a final status with its event (at `atMs`), unless
   * it has left `row.status` meanwhile.
   */
  function finish(row: StoredCommand, status: FinalStatus, atMs: number, extra: Partial<StoredCommand> = {}): CommandChange | null {
    const updated = db
      .update(sentCommands)
      .set({ status, payload: null, ...extra })
      .where(and(eq(sentCommands.key, row.key), eq(sentCommands.status, row.status)))
      .returning({ key: sentCommands.key })
      .all()
    if (updated.length === 0) return null
    const { change, event } = finalChange(row, status, atMs)
    // stored at the second of its change, however many of its code that second holds already
    // (two commands expiring in one sweep): the events store numbers them
    events.append(row.deviceKey, event)
    return change
  }

  return {
    insert(command) {
      return write(() =>
        db
          .insert(sentCommands)
          .values({ ...command, status: 'queued' })
          .returning()
          .get(),
      )
    },

    async page(deviceKey, page) {
      return pageOf.all({ device: deviceKey, limit: page.limit, offset: page.offset })
    },

    async byId(id) {
      return byId.get({ id }) ?? null
    },

    async open(deviceKey) {
      return openOf.all({ device: deviceKey })
    },

    async pastExpiry(nowMs) {
      return pastExpiry.all({ now: nowMs })
    },

    async sentBetween(afterMs, upToMs) {
      return sentBetween.all({ after: afterMs, upTo: upToMs }).map((row) => row.deviceKey)
    },

    cancel(deviceKey, id) {
      return write(() => {
        const updated = db
          .update(sentCommands)
          .set({ status: 'cancelled', payload: null })
          .where(and(eq(sentCommands.id, id), eq(sentCommands.deviceKey, deviceKey), eq(sentCommands.status, 'queued')))
          .returning({ key: sentCommands.key })
          .all()
        if (updated.length > 0) return { cancelled: true, status: 'cancelled' }
        const row = byId.get({ id })
        return row && row.deviceKey === deviceKey ? { cancelled: false, status: row.status } : null
      })
    },

    async markSent(id, nowMs) {
      const updated = await write(() =>
        db
          .update(sentCommands)
          .set({ status: 'sent', sentAt: nowMs, attempts: sql`${sentCommands.attempts} + 1`, resendDue: false })
          .where(mayGoOut(sentCommands, id, nowMs))
          .returning({ deviceKey: sentCommands.deviceKey, attempts: sentCommands.attempts })
          .all(),
      )
      return updated[0] ?? null
    },

    async lapse(lapsed) {
      if (lapsed.length === 0) return []
      return changesMade(await unit(() => lapsed.map(({ row, status, atMs }) => finish(row, status, atMs))))
    },

    async answer(deviceKey, id, atMs, response) {
      return unit(() => {
        const row = id === undefined ? oldestSent.get({ device: deviceKey }) : byId.get({ id })
        if (!row || row.deviceKey !== deviceKey || row.status !== 'sent') return null
        const answered = { answeredAt: atMs, response: response(row), resendDue: false }
        const change = finish(row, 'answered', atMs, answered)
        return change && { change, row: { ...row, ...answered, status: 'answered', payload: null } }
      })
    },

    async fail(id, atMs) {
      return unit(() => {
        const row = byId.get({ id })
        return row && (row.status === 'queued' || row.status === 'sent') ? finish(row, 'failed', atMs) : null
      })
    },

    async reconnect(resend, failed, atMs) {
      if (resend.length === 0 && failed.length === 0) return []
      const changes = await unit(() => {
        for (const key of resend) {
          db.update(sentCommands)
            .set({ resendDue: true })
            .where(and(eq(sentCommands.key, key), eq(sentCommands.status, 'sent')))
            .run()
        }
        return failed.map((row) => finish(row, 'failed', atMs))
      })
      return changesMade(changes)
    },
  }
}
