/**
 * The delivery worker: it reads the outbox (notification_deliveries, written by outbox.ts in the
 * transactions of the events and fixes) and POSTs each delivery to its channel's webhook, until
 * delivered or dead. Everything it knows is in the database, so a new worker on the same database
 * (after a restart, or a crash between commit and delivery) carries on where the last one stopped;
 * a delivery cut off by a stop or a crash is sent again with the same id: at least once.
 *
 * - One attempt: `POST` of `application/json` with `X-Tracker-Delivery: <delivery id>` (the same
 *   on every retry) and, when the channel has a secret, `X-Tracker-Signature: t=<unix s>,v1=<hex
 *   HMAC-SHA256 of "t.body">`. 2xx within 10 s is delivered. A 3xx is a failure: redirects are
 *   not followed (no hop escapes the SSRF guard; a receiver that moved gets a new URL).
 * - Failures are retried after 10 s, doubling, at most 1 h apart, for 24 h from the delivery's
 *   creation (a last attempt at 24 h); a failure after that is `dead`.
 * - Bounded: at most MAX_IN_FLIGHT attempts at once, MAX_IN_FLIGHT_PER_CHANNEL for one channel
 *   (a slow receiver cannot take every slot). Positions go one batch at a time per channel, the
 *   oldest first, and the next waits until it is delivered or dead: in order per device.
 * - Before its first attempt, a channel's oldest batch of fixes takes in the batches written
 *   after it (up to 500 fixes): a batch never changes once it has been sent.
 * - Due-ness and the backoff come from the injected clock; the poll itself is a real timer.
 *   Tests call `deliverDue()` and move the clock instead of sleeping.
 * - A disabled channel's deliveries wait (and may die) until it is enabled again; a deleted
 *   channel's are deleted with it. Delivered and dead rows are deleted after 7 days.
 */
import { createHmac } from 'node:crypto'
import { and, asc, eq, inArray, lt, lte, sql } from 'drizzle-orm'
import type { DatabaseHandle, Db } from '../../db/client'
import { notificationDeliveries, notifications } from '../../db/schema'
import type { Clock } from '../clock'
import type { Logger } from '../log'
import type { ServerMetrics } from '../ops/server-metrics'
import { retryWhileBusy } from '../store/busy'
import { createWebhookGuard, TargetRefused, type WebhookGuard } from './ssrf'
import { MAX_FIXES_PER_BATCH, type PositionPayload } from './outbox'
import pkg from '../../package.json'

/** a receiver has this long to answer an attempt (DNS included) */
export const ATTEMPT_TIMEOUT_MS = 10_000
/** the first retry waits this long; each next one twice as long, up to MAX_RETRY_DELAY_MS */
export const FIRST_RETRY_DELAY_MS = 10_000
export const MAX_RETRY_DELAY_MS = 3_600_000
/** retried for this long after the delivery was written; a failure after that is `dead` */
export const GIVE_UP_AFTER_MS = 24 * 3_600_000
/** attempts in flight at once, all channels */
export const MAX_IN_FLIGHT = 8
/** attempts in flight at once to one channel */
export const MAX_IN_FLIGHT_PER_CHANNEL = 4
/** how often the worker looks for due deliveries when nobody wakes it */
const POLL_MS = 1000
/** delivered and dead deliveries are kept this long (the deliveries list), then deleted */
export const KEEP_FINISHED_MS = 7 * 86_400_000
const PRUNE_EVERY_MS = 3_600_000
/** rows deleted by one prune statement: a short write lock */
const PRUNE_BATCH = 1000
const MAX_ERROR_LENGTH = 300

export const SIGNATURE_HEADER = 'X-Tracker-Signature'
export const DELIVERY_HEADER = 'X-Tracker-Delivery'

/** The wait after the `attempts`-th failed attempt: 10 s, 20 s, 40 s… at most 1 h. */
export function retryDelayMs(attempts: number): number {
  return Math.min(FIRST_RETRY_DELAY_MS * 2 ** Math.max(0, attempts - 1), MAX_RETRY_DELAY_MS)
}

/** `t=<unix s>,v1=<hex HMAC-SHA256 of "t.body">`: what a receiver recomputes with its copy of the secret. */
export function signature(secret: string, unixSeconds: number, body: string): string {
  return `t=${unixSeconds},v1=${createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')}`
}

/** What one attempt came to. */
export interface AttemptOutcome {
  delivered: boolean
  /** the receiver's HTTP status; null when none came (refused, unreachable, timed out) */
  statusCode: number | null
  /** why it failed, for the deliveries list; null when delivered */
  error: string | null
}

export interface Channel {
  url: string
  secret: string | null
}

export interface SenderOptions {
  guard: WebhookGuard
  timeoutMs?: number
  /** default: the global fetch */
  fetch?: typeof fetch
}

const bounded = (text: string) => (text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text)

/**
 * Sends one body to one channel now and says how it went. Never throws: every failure is an
 * outcome. `signal` cuts it short (the worker stopping); the outcome is then not to be recorded.
 */
export function createSender(options: SenderOptions) {
  const timeoutMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS
  const send = options.fetch ?? fetch
  return async function attempt(channel: Channel, deliveryId: string, body: string, nowMs: number, stop?: AbortSignal): Promise<AttemptOutcome> {
    const timeout = AbortSignal.timeout(timeoutMs)
    const signal = stop ? AbortSignal.any([stop, timeout]) : timeout
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': `tracker/${pkg.version} (webhooks)`,
      [DELIVERY_HEADER]: deliveryId,
    }
    if (channel.secret !== null) headers[SIGNATURE_HEADER] = signature(channel.secret, Math.floor(nowMs / 1000), body)
    try {
      const target = await options.guard.target(channel.url, signal)
      if (target.host !== null) headers.host = target.host
      const response = await send(target.url, { method: 'POST', headers, body, redirect: 'manual', signal })
      // nothing of the answer is kept: its body is not read
      await response.body?.cancel().catch(() => {})
      const status = response.status
      if (status >= 200 && status < 300) return { delivered: true, statusCode: status, error: null }
      if (status >= 300 && status < 400) {
        const location = response.headers.get('location')
        return { delivered: false, statusCode: status, error: bounded(`HTTP ${status}: redirects are not followed${location ? ` (Location: ${location})` : ''}`) }
      }
      return { delivered: false, statusCode: status, error: `HTTP ${status}` }
    } catch (error) {
      if (error instanceof TargetRefused) return { delivered: false, statusCode: null, error: bounded(`refused: ${error.message}`) }
      if (timeout.aborted) return { delivered: false, statusCode: null, error: `no answer within ${timeoutMs / 1000} s` }
      if (stop?.aborted) return { delivered: false, statusCode: null, error: 'stopped' }
      const code = (error as { code?: unknown }).code
      return { delivered: false, statusCode: null, error: bounded(typeof code === 'string' ? `${code}: ${(error as Error).message}` : String((error as Error).message ?? error)) }
    }
  }
}

export type Sender = ReturnType<typeof createSender>

/** The JSON body of a delivery's POST. `sent_at` is the attempt's time. */
export function deliveryBody(delivery: { id: string; kind: string; payload: string | null }, sentAtMs: number, test?: { id: string; name: string }): string {
  const sentAt = new Date(sentAtMs).toISOString()
  const payload = delivery.payload ?? 'null'
  const id = JSON.stringify(delivery.id)
  // the stored payload is JSON already: spliced in, not parsed and written again
  if (delivery.kind === 'event') return `{"id":${id},"type":"event","event":${payload},"sent_at":"${sentAt}"}`
  if (delivery.kind === 'positions') return `{"id":${id},"type":"positions","positions":${payload},"sent_at":"${sentAt}"}`
  return JSON.stringify({ id: delivery.id, type: 'test', notification: test ?? null, sent_at: sentAt })
}

export interface DeliveryWorkerOptions {
  database: DatabaseHandle
  clock: Clock
  log: Logger
  /** WEBHOOK_ALLOW_PRIVATE */
  allowPrivate: boolean
  /** counts outcomes, reports the outbox's depth and oldest pending age */
  metrics?: ServerMetrics
  /** tests: a guard with a narrower or wider address rule */
  guard?: WebhookGuard
  timeoutMs?: number
  pollMs?: number
  maxInFlight?: number
  maxInFlightPerChannel?: number
}

type Due = {
  key: number
  id: string
  notificationId: string
  kind: string
  payload: string | null
  attempts: number
  createdAt: number
  url: string
  secret: string | null
}

const dueColumns = {
  key: notificationDeliveries.key,
  id: notificationDeliveries.id,
  notificationId: notificationDeliveries.notificationId,
  kind: notificationDeliveries.kind,
  payload: notificationDeliveries.payload,
  attempts: notificationDeliveries.attempts,
  createdAt: notificationDeliveries.createdAt,
  nextAttemptAt: notificationDeliveries.nextAttemptAt,
  fixes: notificationDeliveries.fixes,
  url: notifications.url,
  secret: notifications.secret,
}

/** Pending deliveries: how many, and since when the oldest waits (Unix ms; null when none). */
export function outboxStats(db: Db): { pending: number; oldestCreatedAt: number | null } {
  const row = db
    .select({ pending: sql<number>`count(*)`, oldest: sql<number | null>`min(${notificationDeliveries.createdAt})` })
    .from(notificationDeliveries)
    .where(eq(notificationDeliveries.status, 'pending'))
    .get()
  return { pending: row?.pending ?? 0, oldestCreatedAt: row?.oldest ?? null }
}

export function createDeliveryWorker(options: DeliveryWorkerOptions) {
  const { database, clock, log, metrics } = options
  const { db, sqlite } = database
  const guard = options.guard ?? createWebhookGuard({ allowPrivate: options.allowPrivate })
  const attempt = createSender({ guard, timeoutMs: options.timeoutMs })
  const maxInFlight = options.maxInFlight ?? MAX_IN_FLIGHT
  const maxPerChannel = options.maxInFlightPerChannel ?? MAX_IN_FLIGHT_PER_CHANNEL
  const pollMs = options.pollMs ?? POLL_MS

  /** attempts under way, by delivery key */
  const inFlight = new Map<number, Promise<void>>()
  const perChannel = new Map<string, number>()
  /** channels with a batch of fixes under way */
  const positionsBusy = new Set<string>()
  const stopSending = new AbortController()
  let timer: ReturnType<typeof setTimeout> | null = null
  let running = false
  let stopped = false
  let lastPruneAt = -Infinity

  metrics?.bind({
    notificationOutbox: () => {
      const { pending, oldestCreatedAt } = outboxStats(db)
      return { pending, oldestAgeSeconds: oldestCreatedAt === null ? 0 : Math.max(0, (clock.now() - oldestCreatedAt) / 1000) }
    },
  })

  const hasRoom = (channel: string) => inFlight.size < maxInFlight && (perChannel.get(channel) ?? 0) < maxPerChannel

  /** a channel's oldest pending batches of fixes, oldest first */
  const pendingBatches = (tx: Pick<Db, 'select'>, channelId: string) =>
    tx
      .select(dueColumns)
      .from(notificationDeliveries)
      .innerJoin(notifications, eq(notifications.id, notificationDeliveries.notificationId))
      .where(and(eq(notificationDeliveries.notificationId, channelId), eq(notificationDeliveries.kind, 'positions'), eq(notificationDeliveries.status, 'pending')))
      .orderBy(asc(notificationDeliveries.key))

  /** the batches after the head, never sent either, that fit in one batch with it */
  function mergeable(heads: { attempts: number; fixes: number | null }[]): number {
    let total = heads[0]?.fixes ?? 0
    let count = 0
    for (const next of heads.slice(1)) {
      if (next.attempts > 0 || total + (next.fixes ?? 0) > MAX_FIXES_PER_BATCH) break
      total += next.fixes ?? 0
      count++
    }
    return count
  }

  /**
   * The channel's oldest pending batch of fixes, if due. Before its first attempt it takes in the
   * batches written after it (a read first: the write transaction only when there is a merge to make).
   */
  function positionsHead(channelId: string, now: number): Due | null {
    const peek = pendingBatches(db, channelId).limit(2).all()
    const head = peek[0]
    if (!head || (head.nextAttemptAt ?? 0) > now) return null
    if (head.attempts > 0 || mergeable(peek) === 0) return head
    return db.transaction(
      (tx) => {
        const heads = pendingBatches(tx, channelId).limit(MAX_FIXES_PER_BATCH).all()
        const first = heads[0]!
        const taken = heads.slice(1, 1 + mergeable(heads))
        if (first.key !== head.key || taken.length === 0) return first
        const merged = [first, ...taken].flatMap((row) => JSON.parse(row.payload ?? '[]') as PositionPayload[])
        const payload = JSON.stringify(merged)
        tx.update(notificationDeliveries).set({ payload, fixes: merged.length }).where(eq(notificationDeliveries.key, first.key)).run()
        tx.delete(notificationDeliveries).where(inArray(notificationDeliveries.key, taken.map((row) => row.key))).run()
        return { ...first, payload }
      },
      { behavior: 'immediate' },
    )
  }

  /** One look: start every due delivery there is room for. Returns how many it started. */
  function pass(): number {
    if (stopped) return 0
    const now = clock.now()
    let started = 0
    try {
      const positionChannels = db
        .select({ id: notifications.id })
        .from(notifications)
        .where(and(eq(notifications.positions, true), eq(notifications.enabled, true)))
        .all()
      for (const channel of positionChannels) {
        if (positionsBusy.has(channel.id) || !hasRoom(channel.id)) continue
        const head = positionsHead(channel.id, now)
        if (head && !inFlight.has(head.key)) {
          launch(head)
          started++
        }
      }
      if (inFlight.size < maxInFlight) {
        const due = db
          .select(dueColumns)
          .from(notificationDeliveries)
          .innerJoin(notifications, and(eq(notifications.id, notificationDeliveries.notificationId), eq(notifications.enabled, true)))
          .where(and(eq(notificationDeliveries.kind, 'event'), eq(notificationDeliveries.status, 'pending'), lte(notificationDeliveries.nextAttemptAt, now)))
          .orderBy(asc(notificationDeliveries.nextAttemptAt), asc(notificationDeliveries.key))
          .limit(maxInFlight * 4)
          .all()
        for (const delivery of due) {
          if (inFlight.size >= maxInFlight) break
          if (inFlight.has(delivery.key) || !hasRoom(delivery.notificationId)) continue
          launch(delivery)
          started++
        }
      }
      if (now - lastPruneAt >= PRUNE_EVERY_MS) {
        lastPruneAt = now
        prune(now)
      }
    } catch (error) {
      // another process's write lock (an import) or a closed database: the next look tries again
      log.warn('notification delivery: the outbox could not be read', { error: (error as Error).message })
    }
    return started
  }

  function prune(now: number): void {
    const old = db
      .select({ key: notificationDeliveries.key })
      .from(notificationDeliveries)
      .where(and(inArray(notificationDeliveries.status, ['delivered', 'dead']), lt(notificationDeliveries.createdAt, now - KEEP_FINISHED_MS)))
      .limit(PRUNE_BATCH)
    const { changes } = db.delete(notificationDeliveries).where(inArray(notificationDeliveries.key, old)).run() as unknown as { changes: number }
    if (changes === PRUNE_BATCH) lastPruneAt = -Infinity
  }

  function launch(delivery: Due): void {
    perChannel.set(delivery.notificationId, (perChannel.get(delivery.notificationId) ?? 0) + 1)
    if (delivery.kind === 'positions') positionsBusy.add(delivery.notificationId)
    const work = run(delivery).finally(() => {
      inFlight.delete(delivery.key)
      const left = (perChannel.get(delivery.notificationId) ?? 1) - 1
      if (left > 0) perChannel.set(delivery.notificationId, left)
      else perChannel.delete(delivery.notificationId)
      positionsBusy.delete(delivery.notificationId)
      // a slot is free: look again soon, unless a test drives the passes itself
      if (running && !stopped) schedule(0)
    })
    inFlight.set(delivery.key, work)
  }

  async function run(delivery: Due): Promise<void> {
    const sentAt = clock.now()
    const outcome = await attempt({ url: delivery.url, secret: delivery.secret }, delivery.id, deliveryBody(delivery, sentAt), sentAt, stopSending.signal)
    // cut off by stop(): not recorded, so the next worker sends it again (same id)
    if (stopSending.signal.aborted) return
    const now = clock.now()
    const attempts = delivery.attempts + 1
    const deadline = delivery.createdAt + GIVE_UP_AFTER_MS
    const dead = !outcome.delivered && now >= deadline
    const status = outcome.delivered ? 'delivered' : dead ? 'dead' : 'pending'
    try {
      await retryWhileBusy(
        sqlite,
        () =>
          db
            .update(notificationDeliveries)
            .set({
              status,
              attempts,
              lastStatusCode: outcome.statusCode,
              lastError: outcome.error,
              nextAttemptAt: status === 'pending' ? Math.min(now + retryDelayMs(attempts), deadline) : null,
              deliveredAt: outcome.delivered ? now : null,
              // a batch of fixes is not kept once it is settled; its count stays
              ...(status !== 'pending' && delivery.kind === 'positions' ? { payload: null } : {}),
            })
            .where(and(eq(notificationDeliveries.key, delivery.key), eq(notificationDeliveries.status, 'pending')))
            .run(),
        { clock },
      )
    } catch (error) {
      // left pending as it was: sent again later (the receiver deduplicates by X-Tracker-Delivery)
      log.warn('notification delivery: the outcome could not be written', { delivery: delivery.id, error: (error as Error).message })
      return
    }
    metrics?.notificationDeliveries.inc([outcome.delivered ? 'delivered' : dead ? 'dead' : 'failed'])
    if (!outcome.delivered) {
      log.info('notification delivery failed', { delivery: delivery.id, notification: delivery.notificationId, attempts, status, error: outcome.error })
    }
  }

  function schedule(delayMs: number): void {
    if (stopped) return
    if (timer !== null) {
      if (delayMs > 0) return
      clearTimeout(timer)
    }
    timer = setTimeout(() => {
      timer = null
      pass()
      schedule(pollMs)
    }, delayMs)
  }

  return {
    /** looks for due deliveries every poll interval, and whenever an attempt ends */
    start(): void {
      if (running || stopped) return
      running = true
      schedule(0)
    },

    /** after a commit that wrote deliveries: look now rather than at the next poll */
    wake(): void {
      if (running) schedule(0)
    },

    /**
     * Tests: start every delivery due by the clock, wait for them, and again while that frees
     * more (the next batch of a channel), until nothing is due. Returns the attempts made.
     */
    async deliverDue(): Promise<number> {
      let attempts = 0
      for (;;) {
        const started = pass()
        attempts += started
        if (started === 0 && inFlight.size === 0) return attempts
        await Promise.all(inFlight.values())
      }
    },

    /** no more attempts; those under way are cut off and left pending (sent again by the next worker) */
    async stop(): Promise<void> {
      if (stopped) return
      stopped = true
      running = false
      if (timer !== null) clearTimeout(timer)
      timer = null
      stopSending.abort()
      await Promise.all(inFlight.values())
    },

    /** attempts under way */
    get inFlight(): number {
      return inFlight.size
    },
  }
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>
