/**
 * The durable command queue: the `sent_commands` table, the rules of delivery, and the interface
 * the protocol units deliver through. Every decision is a pure function of a device's open
 * commands and the time (`nextStep`, `reconnectStep`, `lapse`); the rest reads and writes rows.
 *
 * Rules (the contract's "Delivery"):
 * - per device, in the order they were made, one at a time: the next goes once the previous is
 *   answered or has waited ANSWER_WAIT_MS for its answer (it stays `sent`, and may still be
 *   answered; answers complete the oldest `sent` command);
 * - a command still `queued` at `expires_at` (created_at + COMMAND_TTL) is `expired`; one `sent`
 *   but unanswered by then, its answer wait over, is `failed` (so no real text waits forever);
 * - a reconnection while a command is `sent` and unanswered has it sent once more, first; a
 *   reconnection after that second sending is its second miss: `failed`.
 *
 * How a protocol unit uses it (src/ingest/protocols/<name>/):
 *
 *   queue.onReady((deviceKey) => connectionOf(deviceKey)?.deliver())   // a command may go now
 *   // at each login of a device:   await queue.onReconnect(key, clock.now()); deliver()
 *   // deliver():  const next = await queue.nextToSend(key, clock.now())
 *   //             if (next && (await queue.markSent(next.id, clock.now()))) socket.write(encode(next.text))
 *   // an answer:  await queue.markAnswered(key, answerText, clock.now()); deliver()
 *   // a text the protocol cannot carry:  await queue.markFailed(next.id, clock.now()); deliver()
 *
 * nextToSend hands a command out once: until markSent (or onReconnect, or CLAIM_MS) it answers
 * null for that device, so two deliveries racing on one device do not send it twice. markSent
 * answers false when the command was cancelled or expired meanwhile: send nothing then.
 *
 * The real text (with passwords) is only in `payload`, read by nextToSend, and set to null when
 * the command reaches a final status (answered, failed, expired, cancelled); answers, events and
 * logs carry the masked text or nothing. Each change to answered, failed or expired writes an
 * event (`command_answered`, …, context `{ id, command, name }`, see events.ts) in the same
 * transaction, and is told to live streams after the commit as device alarms are.
 */
import type { Database } from 'bun:sqlite'
import { and, asc, desc, eq, gt, inArray, lte, or, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { sentCommands } from '../../db/schema'
import type { Clock } from '../clock'
import { iso, isoOrNull } from '../http/model'
import type { LivePositions } from '../ingest/live'
import { type Logger, silentLogger } from '../log'
import { retryWhileBusy } from '../store/busy'
import type { SentCommandBody, SentStatus } from './model'
import { maskSecrets } from './sending'
import { createCommandEvents } from './events'

/** how long a sent command holds back the next one while it waits for its answer */
export const ANSWER_WAIT_MS = 60_000
/** how long a command handed out by nextToSend is held for its markSent */
export const CLAIM_MS = 10_000
/** the longest device answer kept, in UTF-16 units */
export const MAX_RESPONSE_LENGTH = 2048
/** how often the sweep expires old commands (and tells of answer waits that ended) */
export const SWEEP_INTERVAL_MS = 5_000
/** COMMAND_TTL's default: a day */
export const DEFAULT_COMMAND_TTL_SECONDS = 86_400

type Row = typeof sentCommands.$inferSelect

/** A queued or sent command, as the rules see it. */
export interface OpenCommand {
  key: number
  status: 'queued' | 'sent'
  /** Unix ms of its last sending; null while queued */
  sentAt: number | null
  expiresAt: number
  /** times it went out */
  attempts: number
  /** the device reconnected while it waited for its answer: it goes out once more */
  resendDue: boolean
}

/**
 * When an open command lapses if nothing else happens to it: a queued one at its expiry, a sent
 * one at its expiry or the end of its answer wait, whichever is later. Its event carries this time,
 * not the time a sweep noticed (after a restart, the sweep notices a night's expiries at once).
 */
export function lapsesAt(command: OpenCommand): number {
  if (command.status === 'queued' || command.resendDue || command.sentAt === null) return command.expiresAt
  return Math.max(command.expiresAt, command.sentAt + ANSWER_WAIT_MS)
}

/** What has become of an open command by `now` if nothing else happens to it. */
export function lapse(command: OpenCommand, now: number): 'expired' | 'failed' | null {
  if (now < lapsesAt(command)) return null
  return command.status === 'queued' ? 'expired' : 'failed'
}

export interface Step<C extends OpenCommand> {
  expire: C[]
  fail: C[]
  /** the command to send now, or null (nothing queued, or the previous one still waits for its answer) */
  send: C | null
}

/** What is due for a device whose open commands are `open` (oldest first) at `now`. */
export function nextStep<C extends OpenCommand>(open: readonly C[], now: number): Step<C> {
  const expire: C[] = []
  const fail: C[] = []
  const standing: C[] = []
  for (const command of open) {
    const verdict = lapse(command, now)
    if (verdict === 'expired') expire.push(command)
    else if (verdict === 'failed') fail.push(command)
    else standing.push(command)
  }
  // a re-send is older than anything queued (commands go out in order): it goes first
  const resend = standing.find((c) => c.status === 'sent' && c.resendDue)
  if (resend) return { expire, fail, send: resend }
  const waiting = standing.some((c) => c.status === 'sent' && c.sentAt !== null && now < c.sentAt + ANSWER_WAIT_MS)
  return { expire, fail, send: waiting ? null : (standing.find((c) => c.status === 'queued') ?? null) }
}

/** What a reconnection does to a device's open commands: each sent, unanswered one is sent again once; after that, failed. */
export function reconnectStep<C extends OpenCommand>(open: readonly C[]): { resend: C[]; fail: C[] } {
  const resend: C[] = []
  const fail: C[] = []
  for (const command of open) {
    // not yet sent again since the last reconnection: this is not a second miss
    if (command.status !== 'sent' || command.resendDue) continue
    if (command.attempts >= 2) fail.push(command)
    else resend.push(command)
  }
  return { resend, fail }
}

/** A command to put on the wire: the real text, never logged. */
export interface OutgoingCommand {
  id: string
  deviceKey: number
  text: string
  /** 1 the first time, 2 for the re-send after a reconnection */
  attempt: number
}

export interface NewSentCommand {
  deviceKey: number
  commandId: string
  name: string
  /** what the device receives */
  text: string
  /** what is shown (passwords as ***) */
  shown: string
  /** password values, masked in the device's answer */
  secrets: string[]
  userId: string | null
}

interface Payload {
  text: string
  secrets: string[]
}

export interface CommandQueueDeps {
  db: Db
  sqlite: Database
  clock: Clock
  /** where status changes are told to live streams (the app's and ingest's one LivePositions) */
  live: LivePositions
  log?: Logger
  /** COMMAND_TTL: seconds a command may wait to be sent */
  ttlSeconds?: number
  sweepIntervalMs?: number
}

export type ReadyListener = (deviceKey: number) => void

function toBody(row: Row): SentCommandBody {
  return {
    id: row.id,
    command: row.commandId,
    name: row.name,
    text: row.text,
    status: row.status as SentStatus,
    created_at: iso(row.createdAt),
    sent_at: isoOrNull(row.sentAt),
    answered_at: isoOrNull(row.answeredAt),
    expires_at: iso(row.expiresAt),
    response: row.response,
    user: row.userId,
  }
}

const toOpen = (row: Row): OpenCommand & { row: Row } => ({
  key: row.key,
  status: row.status as 'queued' | 'sent',
  sentAt: row.sentAt,
  expiresAt: row.expiresAt,
  attempts: row.attempts,
  resendDue: row.resendDue,
  row,
})

function payloadOf(row: Row): Payload | null {
  if (row.payload === null) return null
  try {
    return JSON.parse(row.payload) as Payload
  } catch {
    return null
  }
}

/** a final status change, told to live streams after its commit */
interface Change {
  deviceKey: number
  id: string
  code: string
  second: number
  /** the event's context, as stored */
  context: Record<string, unknown>
}

export function createCommandQueue(deps: CommandQueueDeps) {
  const { db, sqlite, clock, live } = deps
  const log = deps.log ?? silentLogger
  const ttlMs = (deps.ttlSeconds ?? DEFAULT_COMMAND_TTL_SECONDS) * 1000
  const sweepIntervalMs = deps.sweepIntervalMs ?? SWEEP_INTERVAL_MS
  const events = createCommandEvents(db)
  const write = <T>(work: () => T) => retryWhileBusy(sqlite, work, { clock })
  const transaction = <T>(work: () => T) => write(() => db.transaction(work, { behavior: 'immediate' }))
  const listeners = new Set<ReadyListener>()
  /** device → the command nextToSend handed out, until its markSent */
  const claims = new Map<number, { id: string; until: number }>()
  let lastSweepAt = clock.now()
  let sweeping = false
  let timer: ReturnType<typeof setInterval> | null = null

  const OPEN: SentStatus[] = ['queued', 'sent']
  const openOf = db
    .select()
    .from(sentCommands)
    .where(and(eq(sentCommands.deviceKey, sql.placeholder('device')), inArray(sentCommands.status, OPEN)))
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
    .where(and(inArray(sentCommands.status, OPEN), lte(sentCommands.expiresAt, sql.placeholder('now'))))
    .orderBy(asc(sentCommands.key))
    .limit(1000)
    .prepare()
  // devices whose sent command's answer wait ended between two sweeps: their next command may go
  const waitsEnded = db
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

  function notify(deviceKey: number): void {
    for (const listener of listeners) {
      try {
        listener(deviceKey)
      } catch (error) {
        log.error('command ready listener failed', { error: (error as Error)?.message })
      }
    }
  }

  /**
   * Inside a transaction: the command reaches a final status with its event (at `atMs`), unless it
   * has left `row.status` meanwhile.
   */
  function finish(row: Row, status: 'answered' | 'failed' | 'expired', atMs: number, extra: Partial<Row> = {}): Change | null {
    const updated = db
      .update(sentCommands)
      .set({ status, payload: null, ...extra })
      .where(and(eq(sentCommands.key, row.key), eq(sentCommands.status, row.status)))
      .returning({ key: sentCommands.key })
      .all()
    if (updated.length === 0) return null
    const code = `command_${status}`
    const context = { id: row.id, command: row.commandId, name: row.name }
    const second = Math.floor(atMs / 1000)
    events.append(row.deviceKey, code, context, second)
    return { deviceKey: row.deviceKey, id: row.id, code, second, context }
  }

  /** After the commit: live streams hear of each change as of a device alarm. */
  function publish(changes: readonly (Change | null)[]): void {
    for (const change of changes) {
      if (change === null) continue
      log.info(change.code.replace('_', ' '), { id: change.id, device: change.deviceKey })
      try {
        live.publishAlarm({ deviceKey: change.deviceKey, alarmCode: change.code, timestamp: change.second, latitude: null, longitude: null, speed: null, context: change.context })
      } catch (error) {
        log.error('live alarm subscriber failed', { error: (error as Error)?.message })
      }
    }
  }

  /** expires and fails what `nextStep`/`sweep` found lapsed, in one transaction, each at the time it lapsed */
  async function settle(expire: readonly Row[], fail: readonly Row[]): Promise<void> {
    if (expire.length === 0 && fail.length === 0) return
    const at = (row: Row) => lapsesAt(toOpen(row))
    const changes = await transaction(() => [...expire.map((row) => finish(row, 'expired', at(row))), ...fail.map((row) => finish(row, 'failed', at(row)))])
    publish(changes)
  }

  const open = (deviceKey: number) => openOf.all({ device: deviceKey }).map(toOpen)

  /**
   * Expires queued commands past their expiry and fails sent ones past it (their answer wait
   * over), then tells of devices whose answer wait ended since the last sweep. The timer calls it
   * every SWEEP_INTERVAL_MS; tests call it with their clock's time.
   */
  async function sweep(now: number = clock.now()): Promise<{ expired: number; failed: number }> {
    if (sweeping) return { expired: 0, failed: 0 }
    sweeping = true
    try {
      const due = pastExpiry.all({ now }).map(toOpen)
      const expire = due.filter((c) => lapse(c, now) === 'expired').map((c) => c.row)
      const fail = due.filter((c) => lapse(c, now) === 'failed').map((c) => c.row)
      await settle(expire, fail)
      const ended = waitsEnded.all({ after: lastSweepAt - ANSWER_WAIT_MS, upTo: now - ANSWER_WAIT_MS })
      lastSweepAt = Math.max(lastSweepAt, now)
      for (const { deviceKey } of ended) notify(deviceKey)
      return { expired: expire.length, failed: fail.length }
    } finally {
      sweeping = false
    }
  }

  return {
    ttlSeconds: ttlMs / 1000,

    /** Stores a command to send (before the API answers 202) and tells the delivery side at once. */
    async enqueue(input: NewSentCommand): Promise<SentCommandBody> {
      const now = clock.now()
      const payload: Payload = { text: input.text, secrets: input.secrets }
      const row = await write(() =>
        db
          .insert(sentCommands)
          .values({
            id: crypto.randomUUID(),
            deviceKey: input.deviceKey,
            commandId: input.commandId,
            name: input.name,
            text: input.shown,
            payload: JSON.stringify(payload),
            status: 'queued',
            userId: input.userId,
            createdAt: now,
            expiresAt: now + ttlMs,
          })
          .returning()
          .get(),
      )
      log.info('command queued', { id: row.id, device: input.deviceKey, command: input.commandId })
      notify(input.deviceKey)
      return toBody(row)
    },

    /** a device's sent commands, newest first */
    list(deviceKey: number, page: { limit: number; offset: number }): SentCommandBody[] {
      return pageOf.all({ device: deviceKey, limit: page.limit, offset: page.offset }).map(toBody)
    },

    /** one sent command of this device, or null */
    get(deviceKey: number, id: string): SentCommandBody | null {
      const row = byId.get({ id: id.toLowerCase() })
      return row && row.deviceKey === deviceKey ? toBody(row) : null
    },

    /** Cancels a queued command: whether it was cancelled now and the status it has, or null when the device has no such command. */
    async cancel(deviceKey: number, id: string): Promise<{ cancelled: boolean; status: SentStatus } | null> {
      return write(() => {
        const updated = db
          .update(sentCommands)
          .set({ status: 'cancelled', payload: null })
          .where(and(eq(sentCommands.id, id.toLowerCase()), eq(sentCommands.deviceKey, deviceKey), eq(sentCommands.status, 'queued')))
          .returning({ key: sentCommands.key })
          .all()
        if (updated.length > 0) return { cancelled: true, status: 'cancelled' as const }
        const row = byId.get({ id: id.toLowerCase() })
        return row && row.deviceKey === deviceKey ? { cancelled: false, status: row.status as SentStatus } : null
      })
    },

    // ---- the delivery interface (the protocol units) ----

    /**
     * The command to send to the device now, with its real text, or null: nothing queued, the
     * previous one still waits for its answer, or one was handed out and not yet marked sent.
     * Lapsed commands of the device are expired or failed on the way.
     */
    async nextToSend(deviceKey: number, now: number = clock.now()): Promise<OutgoingCommand | null> {
      const claim = claims.get(deviceKey)
      if (claim && now < claim.until) return null
      claims.delete(deviceKey)
      let step = nextStep(open(deviceKey), now)
      if (step.expire.length > 0 || step.fail.length > 0) {
        await settle(step.expire.map((c) => c.row), step.fail.map((c) => c.row))
        step = nextStep(open(deviceKey), now)
      }
      if (step.send === null) return null
      const row = step.send.row
      const payload = payloadOf(row)
      if (payload === null) return null
      claims.set(deviceKey, { id: row.id, until: now + CLAIM_MS })
      return { id: row.id, deviceKey, text: payload.text, attempt: row.attempts + 1 }
    },

    /** The command went out (call it as the bytes are written): false when it was cancelled or expired meanwhile (send nothing). */
    async markSent(id: string, now: number = clock.now()): Promise<boolean> {
      for (const [deviceKey, claim] of claims) if (claim.id === id) claims.delete(deviceKey)
      const updated = await write(() =>
        db
          .update(sentCommands)
          .set({ status: 'sent', sentAt: now, attempts: sql`${sentCommands.attempts} + 1`, resendDue: false })
          .where(
            and(
              eq(sentCommands.id, id),
              gt(sentCommands.expiresAt, now),
              or(eq(sentCommands.status, 'queued'), and(eq(sentCommands.status, 'sent'), eq(sentCommands.resendDue, true))),
            ),
          )
          .returning({ key: sentCommands.key, deviceKey: sentCommands.deviceKey, attempts: sentCommands.attempts })
          .all(),
      )
      if (updated.length > 0) log.info('command sent', { id, device: updated[0]!.deviceKey, attempt: updated[0]!.attempts })
      return updated.length > 0
    },

    /**
     * The device answered: the oldest `sent` command of the device (or the one `id` names, when the
     * protocol says which, as GT06's server flag can) is `answered` with `responseText` (password
     * values masked, cut at MAX_RESPONSE_LENGTH). Null when no command waits for an answer.
     */
    async markAnswered(deviceKey: number, responseText: string, now: number = clock.now(), id?: string): Promise<SentCommandBody | null> {
      const result = await transaction(() => {
        const row = id === undefined ? oldestSent.get({ device: deviceKey }) : byId.get({ id: id.toLowerCase() })
        if (!row || row.deviceKey !== deviceKey || row.status !== 'sent') return null
        const response = maskSecrets(String(responseText), payloadOf(row)?.secrets ?? []).slice(0, MAX_RESPONSE_LENGTH)
        const change = finish(row, 'answered', now, { answeredAt: now, response, resendDue: false })
        return change && { change, body: toBody({ ...row, status: 'answered', payload: null, answeredAt: now, response, resendDue: false }) }
      })
      if (result === null) return null
      publish([result.change])
      // the next command need not wait any longer
      notify(deviceKey)
      return result.body
    },

    /**
     * The protocol cannot carry this command (a text too long for its frame): it is `failed` at
     * once, with its event, and the next one may go. False when it was no longer queued or sent.
     */
    async markFailed(id: string, now: number = clock.now()): Promise<boolean> {
      for (const [deviceKey, claim] of claims) if (claim.id === id) claims.delete(deviceKey)
      const change = await transaction(() => {
        const row = byId.get({ id })
        return row && (row.status === 'queued' || row.status === 'sent') ? finish(row, 'failed', now) : null
      })
      if (change === null) return false
      publish([change])
      notify(change.deviceKey)
      return true
    },

    /** The device logged in again: its sent, unanswered commands go out once more, or fail at their second miss. */
    async onReconnect(deviceKey: number, now: number = clock.now()): Promise<void> {
      claims.delete(deviceKey)
      const { resend, fail } = reconnectStep(open(deviceKey))
      if (resend.length === 0 && fail.length === 0) return
      const changes = await transaction(() => {
        for (const command of resend) {
          db.update(sentCommands)
            .set({ resendDue: true })
            .where(and(eq(sentCommands.key, command.key), eq(sentCommands.status, 'sent')))
            .run()
        }
        return fail.map((command) => finish(command.row, 'failed', now))
      })
      publish(changes)
    },

    /** Calls `listener` with a device's key whenever a command may go to it now (queued, or the previous one done). */
    onReady(listener: ReadyListener): () => void {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },

    sweep,

    /** Starts the sweep's timer (it does not keep the process alive). */
    start(): void {
      if (timer !== null) return
      timer = setInterval(() => {
        sweep().catch((error) => log.warn('command sweep failed', { error: (error as Error)?.message }))
      }, sweepIntervalMs)
      ;(timer as { unref?: () => void }).unref?.()
    },

    stop(): void {
      if (timer !== null) clearInterval(timer)
      timer = null
    },
  }
}

export type CommandQueue = ReturnType<typeof createCommandQueue>
