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
 * event (`command_answered`, …, context `{ id, command, name }`) in the same unit of work (the
 * store's, store/commands.ts), and is told to live streams after the commit as device alarms are.
 */
import type { Clock } from '../clock'
import { iso, isoOrNull } from '../http/model'
import type { LivePositions } from '../ingest/live'
import { type Logger, silentLogger } from '../log'
import type { CommandChange, CommandStore, Lapsed, StoredCommand } from '../store/commands'
import type { SentCommandBody, SentStatus } from './model'
import { maskSecrets } from './sending'

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

type Row = StoredCommand

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
  /** the sent commands' store (store/commands.ts) */
  commands: CommandStore
  clock: Clock
  /** where status changes are told to live streams (the app's and ingest's one LivePositions) */
  live: LivePositions
  log?: Logger
  /** COMMAND_TTL: seconds a command may wait to be sent */
  ttlSeconds?: number
  sweepIntervalMs?: number
  /**
   * Told of each command queued, after this process's own delivery side: many nodes on one
   * PostgreSQL announce it to every node (src/store/postgres/signals.ts), and the node holding the
   * device's session calls `ready` with it.
   */
  announce?: (deviceKey: number) => void
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

export function createCommandQueue(deps: CommandQueueDeps) {
  const { commands: store, clock, live } = deps
  const log = deps.log ?? silentLogger
  const ttlMs = (deps.ttlSeconds ?? DEFAULT_COMMAND_TTL_SECONDS) * 1000
  const sweepIntervalMs = deps.sweepIntervalMs ?? SWEEP_INTERVAL_MS
  const listeners = new Set<ReadyListener>()
  /** device → the command nextToSend handed out, until its markSent (id '': one being looked for) */
  const claims = new Map<number, { id: string; until: number }>()
  let lastSweepAt = clock.now()
  let sweeping = false
  let timer: ReturnType<typeof setInterval> | null = null

  function notify(deviceKey: number): void {
    for (const listener of listeners) {
      try {
        listener(deviceKey)
      } catch (error) {
        log.error('command ready listener failed', { error: (error as Error)?.message })
      }
    }
  }

  /** After the commit: live streams hear of each change as of a device alarm. */
  function publish(changes: readonly (CommandChange | null)[]): void {
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
    const lapsed: Lapsed[] = [...expire.map((row) => ({ row, status: 'expired' as const, atMs: at(row) })), ...fail.map((row) => ({ row, status: 'failed' as const, atMs: at(row) }))]
    publish(await store.lapse(lapsed))
  }

  const open = async (deviceKey: number) => (await store.open(deviceKey)).map(toOpen)

  /**
   * Expires queued commands past their expiry and fails sent ones past it (their answer wait
   * over), then tells of devices whose answer wait ended since the last sweep. The timer calls it
   * every SWEEP_INTERVAL_MS; tests call it with their clock's time.
   */
  async function sweep(now: number = clock.now()): Promise<{ expired: number; failed: number }> {
    if (sweeping) return { expired: 0, failed: 0 }
    sweeping = true
    try {
      const due = (await store.pastExpiry(now)).map(toOpen)
      const expire = due.filter((c) => lapse(c, now) === 'expired').map((c) => c.row)
      const fail = due.filter((c) => lapse(c, now) === 'failed').map((c) => c.row)
      await settle(expire, fail)
      // devices whose sent command's answer wait ended between two sweeps: their next command may go
      const ended = await store.sentBetween(lastSweepAt - ANSWER_WAIT_MS, now - ANSWER_WAIT_MS)
      lastSweepAt = Math.max(lastSweepAt, now)
      for (const deviceKey of ended) notify(deviceKey)
      return { expired: expire.length, failed: fail.length }
    } finally {
      sweeping = false
    }
  }

  return {
    ttlSeconds: ttlMs / 1000,

    /** A command may go to the device now (queued through another node): its session here, if any, delivers. */
    ready: notify,

    /** Stores a command to send (before the API answers 202) and tells the delivery side at once. */
    async enqueue(input: NewSentCommand): Promise<SentCommandBody> {
      const now = clock.now()
      const payload: Payload = { text: input.text, secrets: input.secrets }
      const row = await store.insert({
        id: crypto.randomUUID(),
        deviceKey: input.deviceKey,
        commandId: input.commandId,
        name: input.name,
        text: input.shown,
        payload: JSON.stringify(payload),
        userId: input.userId,
        createdAt: now,
        expiresAt: now + ttlMs,
      })
      log.info('command queued', { id: row.id, device: input.deviceKey, command: input.commandId })
      notify(input.deviceKey)
      deps.announce?.(input.deviceKey)
      return toBody(row)
    },

    /** a device's sent commands, newest first */
    async list(deviceKey: number, page: { limit: number; offset: number }): Promise<SentCommandBody[]> {
      return (await store.page(deviceKey, page)).map(toBody)
    },

    /** one sent command of this device, or null */
    async get(deviceKey: number, id: string): Promise<SentCommandBody | null> {
      const row = await store.byId(id.toLowerCase())
      return row && row.deviceKey === deviceKey ? toBody(row) : null
    },

    /** Cancels a queued command: whether it was cancelled now and the status it has, or null when the device has no such command. */
    async cancel(deviceKey: number, id: string): Promise<{ cancelled: boolean; status: SentStatus } | null> {
      const outcome = await store.cancel(deviceKey, id.toLowerCase())
      return outcome && { cancelled: outcome.cancelled, status: outcome.status as SentStatus }
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
      // held while the store is read (a microtask or more): another delivery to the device meanwhile gets null, not the same command
      const looking = { id: '', until: now + CLAIM_MS }
      claims.set(deviceKey, looking)
      let handedOut = false
      try {
        let step = nextStep(await open(deviceKey), now)
        if (step.expire.length > 0 || step.fail.length > 0) {
          await settle(step.expire.map((c) => c.row), step.fail.map((c) => c.row))
          step = nextStep(await open(deviceKey), now)
        }
        if (step.send === null) return null
        const row = step.send.row
        const payload = payloadOf(row)
        if (payload === null) return null
        // (a reconnection meanwhile dropped the hold: it hands the command out all the same, as before)
        claims.set(deviceKey, { id: row.id, until: now + CLAIM_MS })
        handedOut = true
        return { id: row.id, deviceKey, text: payload.text, attempt: row.attempts + 1 }
      } finally {
        if (!handedOut && claims.get(deviceKey) === looking) claims.delete(deviceKey)
      }
    },

    /** The command went out (call it as the bytes are written): false when it was cancelled or expired meanwhile (send nothing). */
    async markSent(id: string, now: number = clock.now()): Promise<boolean> {
      for (const [deviceKey, claim] of claims) if (claim.id === id) claims.delete(deviceKey)
      const sent = await store.markSent(id, now)
      if (sent !== null) log.info('command sent', { id, device: sent.deviceKey, attempt: sent.attempts })
      return sent !== null
    },

    /**
     * The device answered: the oldest `sent` command of the device (or the one `id` names, when the
     * protocol says which, as GT06's server flag can) is `answered` with `responseText` (password
     * values masked, cut at MAX_RESPONSE_LENGTH). Null when no command waits for an answer.
     */
    async markAnswered(deviceKey: number, responseText: string, now: number = clock.now(), id?: string): Promise<SentCommandBody | null> {
      const response = (row: Row) => maskSecrets(String(responseText), payloadOf(row)?.secrets ?? []).slice(0, MAX_RESPONSE_LENGTH)
      const result = await store.answer(deviceKey, id?.toLowerCase(), now, response)
      if (result === null) return null
      publish([result.change])
      // the next command need not wait any longer
      notify(deviceKey)
      return toBody(result.row)
    },

    /**
     * The protocol cannot carry this command (a text too long for its frame): it is `failed` at
     * once, with its event, and the next one may go. False when it was no longer queued or sent.
     */
    async markFailed(id: string, now: number = clock.now()): Promise<boolean> {
      for (const [deviceKey, claim] of claims) if (claim.id === id) claims.delete(deviceKey)
      const change = await store.fail(id, now)
      if (change === null) return false
      publish([change])
      notify(change.deviceKey)
      return true
    },

    /** The device logged in again: its sent, unanswered commands go out once more, or fail at their second miss. */
    async onReconnect(deviceKey: number, now: number = clock.now()): Promise<void> {
      claims.delete(deviceKey)
      const { resend, fail } = reconnectStep(await open(deviceKey))
      if (resend.length === 0 && fail.length === 0) return
      publish(await store.reconnect(resend.map((command) => command.key), fail.map((command) => command.row), now))
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
