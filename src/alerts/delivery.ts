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
 * - Bounded and fair (tenants apart): at most MAX_IN_FLIGHT attempts at once. While several
 *   accounts have deliveries due, each gets an equal share of the slots (a free slot goes to the
 *   account with the fewest under way); an account alone may borrow idle slots up to
 *   MAX_IN_FLIGHT_PER_ACCOUNT, so the rest stay free for another account's first delivery. Within
 *   an account, the channel with the fewest under way goes first, at most
 *   MAX_IN_FLIGHT_PER_CHANNEL each. Event deliveries of a channel start in the order of their next
 *   attempt, then of writing, as they always did.
 * - A channel whose receiver lets an attempt time out is backed off: it holds one slot at most (a
 *   probe) until it answers again, channels in that state hold half of the slots at most together,
 *   and after its n-th timeout in a row its pending deliveries wait retryDelayMs(n) (10 s, 20 s…
 *   1 h), written to their next_attempt_at so the deliveries list says when they go. Attempts
 *   already under way that time out together count once. Any other outcome (an answer, a refused
 *   connection) ends it. The count lives in the worker's memory: a restart forgets it, not the
 *   waits already written.
 * - A look (after each commit, each attempt's end, and each poll) reads only the channels that
 *   deliveries were written to since the last one (told by their keys) and those whose next
 *   delivery falls due; every channel once a minute besides.
 * - Positions go one batch at a time per channel, the oldest first, and the next waits until it is
 *   delivered or dead: in order per device.
 * - Before its first attempt, a channel's oldest batch of fixes takes in the batches written
 *   after it (up to 500 fixes): a batch never changes once it has been sent.
 * - Due-ness and the backoff come from the injected clock; the poll itself is a real timer.
 *   Tests call `deliverDue()` and move the clock instead of sleeping.
 * - Many nodes on one database: before each attempt the worker claims the delivery from the store
 *   (DeliveryStore.claim: one node at a time, the row as it is now, given back once settled). One
 *   it cannot claim (under way on another node, or changed since it was read) is left alone for an
 *   attempt's length, then read again; a node that dies lets go of its claims with its connection.
 * - A disabled channel's deliveries wait (and may die) until it is enabled again; a deleted
 *   channel's are deleted with it. Delivered and dead rows are deleted after 7 days.
 */
import { createHmac } from 'node:crypto'
import type { Clock } from '../clock'
import type { Config } from '../config'
import type { Logger } from '../log'
import type { ServerMetrics } from '../ops/server-metrics'
import { type DeliveryStore, mergeableBatches, type QueuedDelivery, type SendingChannel } from '../store/notifications'
import { createWebhookGuard, TargetRefused, type WebhookGuard } from './ssrf'
import { createTransport, type Transporter } from 'nodemailer'
import type SMTPTransport from 'nodemailer/lib/smtp-transport'
import { defaultCities } from '../geocode'
import { messageOf } from './message'
import { MAX_FIXES_PER_BATCH } from './outbox'
import pkg from '../../package.json'

/** where Telegram's Bot API is, unless TELEGRAM_API_URL says otherwise */
export const DEFAULT_TELEGRAM_API_URL = 'https://api.telegram.org'
/** a receiver has this long to answer an attempt (DNS included) */
export const ATTEMPT_TIMEOUT_MS = 10_000
/** the first retry waits this long; each next one twice as long, up to MAX_RETRY_DELAY_MS */
export const FIRST_RETRY_DELAY_MS = 10_000
export const MAX_RETRY_DELAY_MS = 3_600_000
/** retried for this long after the delivery was written; a failure after that is `dead` */
export const GIVE_UP_AFTER_MS = 24 * 3_600_000
/** attempts in flight at once, all accounts */
export const MAX_IN_FLIGHT = 10
/**
 * attempts in flight at once for one account when no other account has a delivery due (borrowed
 * idle slots); the rest stay free, so another account's delivery starts at once even when these
 * all hang. While others wait, an account gets its share: MAX_IN_FLIGHT / accounts, rounded up.
 */
export const MAX_IN_FLIGHT_PER_ACCOUNT = 8
/** attempts in flight at once to one channel; one to a channel whose last attempt timed out */
export const MAX_IN_FLIGHT_PER_CHANNEL = 4
/** how often the worker looks for due deliveries when nobody wakes it */
const POLL_MS = 1000
/** delivered and dead deliveries are kept this long (the deliveries list), then deleted */
export const KEEP_FINISHED_MS = 7 * 86_400_000
const PRUNE_EVERY_MS = 3_600_000
/**
 * A channel is read again when new deliveries are written to it (seen by their keys), when its
 * next one falls due, or when the channels change; and every channel at least this often, in case
 * a row was changed by hand.
 */
const READ_EVERY_CHANNEL_MS = 60_000
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
  /** no answer came within the timeout (the attempt held its slot all that time) */
  timedOut?: boolean
}

/**
 * A channel as stored: a webhook (`url`, `secret` its HMAC key); an email channel (`url` is
 * `mailto:` and its addresses, comma-separated); a Telegram chat (`url` is the chat id, `secret`
 * the bot token).
 */
export interface Channel {
  type?: string
  url: string
  secret: string | null
  /** the account's name, in the words people get (email, Telegram) */
  account?: string
}

/** Where email and Telegram channels send, from the operator's configuration (not checked by the SSRF guard: the operator chose them). */
export interface MessagingSettings {
  /** SMTP_URL; null: email channels cannot be made */
  smtpUrl: string | null
  smtpFrom: string | null
  /** TELEGRAM_API_URL, without a trailing slash */
  telegramApiUrl: string
  /**
   * the console links in messages: APP_URL; when it is not set, the server's first console
   * address once it listens (server.ts), as the setup link names it, never localhost's default
   */
  appUrl: string
}

export const DEFAULT_MESSAGING: MessagingSettings = { smtpUrl: null, smtpFrom: null, telegramApiUrl: DEFAULT_TELEGRAM_API_URL, appUrl: 'http://localhost:3000' }

/** the messaging settings of a loaded config */
export function messagingOf(config: Pick<Config, 'smtpUrl' | 'smtpFrom' | 'telegramApiUrl' | 'appUrl'>): MessagingSettings {
  return { smtpUrl: config.smtpUrl, smtpFrom: config.smtpFrom, telegramApiUrl: config.telegramApiUrl, appUrl: config.appUrl }
}

export interface SenderOptions {
  guard: WebhookGuard
  timeoutMs?: number
  /** default: the global fetch */
  fetch?: typeof fetch
  /** email and Telegram; default: no SMTP, the public Telegram API */
  messaging?: MessagingSettings
  /** "City, CC" of a point, for messages; default: the offline geocoder */
  place?: (latitude: number, longitude: number) => string
}

/** the addresses of an email channel's stored `url` */
export const mailtoAddresses = (url: string) => url.replace(/^mailto:/, '').split(',').filter((a) => a !== '')

const bounded = (text: string) => (text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text)

/**
 * Sends one body to one channel now and says how it went. Never throws: every failure is an
 * outcome. `signal` cuts it short (the worker stopping); the outcome is then not to be recorded.
 */
export function createSender(options: SenderOptions) {
  const timeoutMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS
  const send = options.fetch ?? fetch
  const messaging = options.messaging ?? DEFAULT_MESSAGING
  const place = options.place ?? ((latitude: number, longitude: number) => defaultCities().label(latitude, longitude))
  let mailer: Transporter | null = null
  const messageFor = (channel: Channel, body: string) => messageOf(body, { account: channel.account ?? '', appUrl: messaging.appUrl, place })

  /** One mail to the channel's addresses; an SMTP 4xx or 5xx answer is a failure (retried), with its code. */
  async function mail(channel: Channel, deliveryId: string, body: string, signal: AbortSignal, timeout: AbortSignal): Promise<AttemptOutcome> {
    if (messaging.smtpUrl === null) return { delivered: false, statusCode: null, error: 'SMTP_URL is not set: the server cannot send email' }
    mailer ??= createTransport(messaging.smtpUrl, {
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
    } as SMTPTransport.Options)
    const message = messageFor(channel, body)
    const sending = mailer.sendMail({
      from: messaging.smtpFrom ?? undefined,
      to: mailtoAddresses(channel.url),
      subject: message.subject,
      text: message.text,
      html: message.html,
      messageId: `<${deliveryId}@tracker>`,
      headers: { [DELIVERY_HEADER]: deliveryId },
    })
    const aborted = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason)
      signal.addEventListener('abort', () => reject(signal.reason), { once: true })
    })
    try {
      await Promise.race([sending, aborted])
      return { delivered: true, statusCode: null, error: null }
    } catch (error) {
      sending.catch(() => {})
      if (timeout.aborted) return { delivered: false, statusCode: null, error: `no answer within ${timeoutMs / 1000} s`, timedOut: true }
      const smtp = error as { responseCode?: unknown; response?: unknown; code?: unknown; message?: unknown }
      if (typeof smtp.responseCode === 'number') return { delivered: false, statusCode: smtp.responseCode, error: bounded(`SMTP ${typeof smtp.response === 'string' ? smtp.response : smtp.responseCode}`) }
      return { delivered: false, statusCode: null, error: bounded(typeof smtp.code === 'string' ? `${smtp.code}: ${String(smtp.message)}` : String(smtp.message ?? error)) }
    }
  }

  /** sendMessage to the chat; a 2xx with `"ok": true` is delivered. The bot token never reaches an outcome. */
  async function telegram(channel: Channel, body: string, signal: AbortSignal, timeout: AbortSignal): Promise<AttemptOutcome> {
    const token = channel.secret ?? ''
    const hide = (text: string) => (token === '' ? text : text.split(token).join('<bot token>'))
    const message = messageFor(channel, body)
    try {
      const response = await send(`${messaging.telegramApiUrl}/bot${token}/sendMessage`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': `tracker/${pkg.version} (notifications)` },
        body: JSON.stringify({ chat_id: channel.url, text: message.text, link_preview_options: { is_disabled: true } }),
        redirect: 'manual',
        signal,
      })
      const status = response.status
      const answer = (await response.json().catch(() => null)) as { ok?: unknown; description?: unknown } | null
      if (status >= 200 && status < 300 && answer?.ok === true) return { delivered: true, statusCode: status, error: null }
      const why = typeof answer?.description === 'string' ? `: ${answer.description}` : status < 300 ? ': the answer did not say "ok": true' : ''
      return { delivered: false, statusCode: status, error: bounded(hide(`HTTP ${status}${why}`)) }
    } catch (error) {
      if (timeout.aborted) return { delivered: false, statusCode: null, error: `no answer within ${timeoutMs / 1000} s`, timedOut: true }
      const code = (error as { code?: unknown }).code
      return { delivered: false, statusCode: null, error: bounded(hide(typeof code === 'string' ? `${code}: ${(error as Error).message}` : String((error as Error).message ?? error))) }
    }
  }

  return async function attempt(channel: Channel, deliveryId: string, body: string, nowMs: number, stop?: AbortSignal): Promise<AttemptOutcome> {
    const timeout = AbortSignal.timeout(timeoutMs)
    const signal = stop ? AbortSignal.any([stop, timeout]) : timeout
    if (channel.type === 'email' || channel.type === 'telegram') {
      const outcome = channel.type === 'email' ? await mail(channel, deliveryId, body, signal, timeout) : await telegram(channel, body, signal, timeout)
      if (!outcome.delivered && !outcome.timedOut && stop?.aborted) return { delivered: false, statusCode: null, error: 'stopped' }
      return outcome
    }
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
      if (timeout.aborted) return { delivered: false, statusCode: null, error: `no answer within ${timeoutMs / 1000} s`, timedOut: true }
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
  /** the outbox and its deliveries (src/store/notifications.ts createDeliveryStore) */
  store: DeliveryStore
  clock: Clock
  log: Logger
  /** WEBHOOK_ALLOW_PRIVATE */
  allowPrivate: boolean
  /** counts outcomes, reports the outbox's depth and oldest pending age */
  metrics?: ServerMetrics
  /** tests: a guard with a narrower or wider address rule */
  guard?: WebhookGuard
  /** email and Telegram channels (SMTP_URL, SMTP_FROM, TELEGRAM_API_URL, APP_URL) */
  messaging?: MessagingSettings
  timeoutMs?: number
  pollMs?: number
  /** tests: told at the end of each look, its attempts started (a look reads the store, promises, before it starts any) */
  onLook?: (started: number) => void
  maxInFlight?: number
  maxInFlightPerAccount?: number
  maxInFlightPerChannel?: number
}

/** A delivery to start, with its channel. */
type Due = QueuedDelivery & Pick<SendingChannel, 'accountId' | 'type' | 'account' | 'url' | 'secret'>

/** An enabled channel, as the worker needs it. */
type ChannelRow = SendingChannel

/** What the worker remembers of a channel between looks (memory only: a restart starts afresh). */
interface ChannelState {
  /** attempts in a row that got no answer within the timeout */
  timeouts: number
  /** launches before this one were under way when the last timeout was counted: theirs count with it */
  countedAtLaunch: number
  /** its deliveries wait until then (Unix ms, the injected clock); 0 when not backed off */
  pausedUntil: number
  /** the pause last written to its pending deliveries' next_attempt_at */
  writtenPause: number
  /** next_attempt_at of its earliest pending event delivery not under way, as last read (Infinity: none; -Infinity: read it) */
  nextDueAt: number
}

/** oldest first: by next attempt, then by writing */
const older = (a: Due, b: Due) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0) || a.key - b.key

export function createDeliveryWorker(options: DeliveryWorkerOptions) {
  const { store, clock, log, metrics } = options
  const guard = options.guard ?? createWebhookGuard({ allowPrivate: options.allowPrivate })
  const attempt = createSender({ guard, timeoutMs: options.timeoutMs, messaging: options.messaging })
  const maxInFlight = options.maxInFlight ?? MAX_IN_FLIGHT
  const maxPerAccount = Math.min(maxInFlight, options.maxInFlightPerAccount ?? MAX_IN_FLIGHT_PER_ACCOUNT)
  const maxPerChannel = options.maxInFlightPerChannel ?? MAX_IN_FLIGHT_PER_CHANNEL
  /** channels backed off (after a timeout) hold at most this many slots together */
  const maxBackedOff = Math.max(1, Math.floor(maxInFlight / 2))
  const pollMs = options.pollMs ?? POLL_MS

  /** attempts under way, by delivery key */
  const inFlight = new Map<number, Promise<void>>()
  const perChannel = new Map<string, number>()
  const perAccount = new Map<string, number>()
  /** channels with a batch of fixes under way */
  const positionsBusy = new Set<string>()
  const channelStates = new Map<string, ChannelState>()
  let launches = 0
  const stopSending = new AbortController()
  let timer: ReturnType<typeof setTimeout> | null = null
  let running = false
  let stopped = false
  let lastPruneAt = -Infinity
  /** the newest delivery key seen: rows written after it tell which channels to read again */
  let seenKey = 0
  let lastFullReadMs = -Infinity

  metrics?.bind({
    notificationOutbox: () => {
      const { pending, oldestCreatedAt } = store.pendingStatsNow()
      return { pending, oldestAgeSeconds: oldestCreatedAt === null ? 0 : Math.max(0, (clock.now() - oldestCreatedAt) / 1000) }
    },
  })

  let channels: { version: number; rows: ChannelRow[] } | null = null
  /** the enabled channels, read again only when access_version row 6 moved (any change to a channel, by any process) */
  async function enabled(): Promise<ChannelRow[]> {
    const version = await store.channelsVersion()
    if (channels?.version !== version) {
      channels = { version, rows: await store.enabledChannels() }
      // a channel disabled or deleted is forgotten (enabled again, it starts afresh); the others are read again
      const ids = new Set(channels.rows.map((row) => row.id))
      for (const [id, state] of channelStates) {
        if (!ids.has(id) && !perChannel.has(id)) channelStates.delete(id)
        else state.nextDueAt = -Infinity
      }
    }
    return channels.rows
  }

  function stateOf(channelId: string): ChannelState {
    let state = channelStates.get(channelId)
    if (!state) {
      state = { timeouts: 0, countedAtLaunch: 0, pausedUntil: 0, writtenPause: 0, nextDueAt: -Infinity }
      channelStates.set(channelId, state)
    }
    return state
  }

  const backedOff = (channelId: string) => (channelStates.get(channelId)?.timeouts ?? 0) > 0
  const channelCap = (channelId: string) => (backedOff(channelId) ? 1 : maxPerChannel)
  function backedOffInFlight(): number {
    let count = 0
    for (const [channelId, n] of perChannel) if (backedOff(channelId)) count += n
    return count
  }

  /**
   * The channel's oldest pending batch of fixes, if due. Before its first attempt it takes in the
   * batches written after it (a read first: the write transaction only when there is a merge to make).
   */
  async function positionsHead(channel: ChannelRow, now: number): Promise<Due | null> {
    const peek = await store.pendingBatches(channel.id, 2)
    const head = peek[0]
    if (!head || (head.nextAttemptAt ?? 0) > now) return null
    const due = (row: QueuedDelivery): Due => ({ ...row, accountId: channel.accountId, type: channel.type, account: channel.account, url: channel.url, secret: channel.secret })
    if (head.attempts > 0 || mergeableBatches(peek, MAX_FIXES_PER_BATCH) === 0) return due(head)
    return due(await store.mergeBatches(channel.id, head.key, MAX_FIXES_PER_BATCH))
  }

  /** the channels that deliveries were written to since the last look are read again */
  async function readNew(): Promise<void> {
    const newest = await store.newestKey()
    if (performance.now() - lastFullReadMs >= READ_EVERY_CHANNEL_MS) {
      lastFullReadMs = performance.now()
      for (const state of channelStates.values()) state.nextDueAt = -Infinity
    } else if (newest > seenKey) {
      for (const channel of await store.channelsWrittenAfter(seenKey)) {
        const state = channelStates.get(channel)
        if (state) state.nextDueAt = -Infinity
      }
    }
    seenKey = newest
  }

  /**
   * Up to `room` of the channel's event deliveries due now and not under way, oldest first. Reads
   * one more than that, so the state learns when the next one is due (a channel with nothing due
   * is not read again until then, or until new deliveries are written).
   */
  async function dueEvents(channel: ChannelRow, state: ChannelState, room: number, now: number): Promise<Due[]> {
    const under = perChannel.get(channel.id) ?? 0
    const rows = await store.pendingEvents(channel.id, under + room + 1)
    const due: Due[] = []
    let next = Infinity
    for (const row of rows) {
      if (underWay(row.key)) {
        next = Math.min(next, takenElsewhere.get(row.key) ?? Infinity)
        continue
      }
      if ((row.nextAttemptAt ?? 0) > now || due.length === room) {
        next = Math.min(next, row.nextAttemptAt ?? 0)
        break
      }
      due.push({ ...row, accountId: channel.accountId, type: channel.type, account: channel.account, url: channel.url, secret: channel.secret })
    }
    // one found now, left unstarted (its account's share), is looked at again at the next look
    state.nextDueAt = due.length > 0 ? (due[0]!.nextAttemptAt ?? 0) : next
    return due
  }

  /**
   * A backed-off channel: its pending deliveries due before the end of its pause (those written
   * meanwhile too) have their next_attempt_at moved to it, so the deliveries list tells the truth.
   * A read first: the write only when there is one to move.
   */
  async function holdBack(channelId: string, state: ChannelState): Promise<void> {
    if (state.writtenPause === state.pausedUntil && state.nextDueAt >= state.pausedUntil) return
    const under = perChannel.get(channelId) ?? 0
    const waiting = await store.dueBefore(channelId, state.pausedUntil, under + 1)
    if (waiting.some((key) => !underWay(key))) await store.holdUntil(channelId, state.pausedUntil)
    state.writtenPause = state.pausedUntil
    state.nextDueAt = state.pausedUntil
  }

  /**
   * Attempts that ended during the look under way: a row it read before their outcome was written
   * may still say pending, so they are not started again from it.
   */
  let endedDuringLook: Set<number> | null = null
  /**
   * Deliveries this node could not claim (another node had them under way, or they changed since
   * they were read): left alone until then (the clock's ms), the longest another node's attempt lasts.
   */
  const takenElsewhere = new Map<number, number>()
  const elsewhereWaitMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS
  /** under way (here or on another node), or ended since the look under way read its rows */
  const underWay = (key: number) => inFlight.has(key) || (endedDuringLook?.has(key) ?? false) || takenElsewhere.has(key)

  /** looks run one at a time (each reads the store, then starts what it found) */
  let looking: Promise<unknown> = Promise.resolve()
  /** One look: start every due delivery there is room for, fairly. Returns how many it started. */
  function pass(): Promise<number> {
    const next = looking.then(look)
    looking = next.catch(() => {})
    return next
  }

  async function look(): Promise<number> {
    if (stopped) return 0
    endedDuringLook = new Set()
    try {
      return await lookOnce()
    } finally {
      endedDuringLook = null
    }
  }

  async function lookOnce(): Promise<number> {
    const now = clock.now()
    let started = 0
    for (const [key, until] of takenElsewhere) if (until <= now) takenElsewhere.delete(key)
    try {
      // what each account could start now, by channel
      const due = new Map<string, Map<string, Due[]>>()
      if (inFlight.size < maxInFlight) {
        const list = await enabled()
        await readNew()
        for (const channel of list) {
          const state = stateOf(channel.id)
          if (state.pausedUntil > now) {
            try {
              await holdBack(channel.id, state)
            } catch (error) {
              // another process's write lock: the next look writes it; the channel waits meanwhile
              log.debug('notification delivery: a pause could not be written', { notification: channel.id, error: (error as Error).message })
            }
            continue
          }
          const room = channelCap(channel.id) - (perChannel.get(channel.id) ?? 0)
          if (room <= 0) continue
          const found: Due[] = []
          if (channel.positions && !positionsBusy.has(channel.id)) {
            const head = await positionsHead(channel, now)
            if (head && !underWay(head.key)) found.push(head)
          }
          if (found.length < room && state.nextDueAt <= now) found.push(...(await dueEvents(channel, state, room - found.length, now)))
          if (found.length === 0) continue
          const ofAccount = due.get(channel.accountId)
          if (ofAccount) ofAccount.set(channel.id, found)
          else due.set(channel.accountId, new Map([[channel.id, found]]))
        }
      }
      // stopped while reading: nothing more starts
      if (stopped) return 0
      started = startFairly(due)
      options.onLook?.(started)
      if (now - lastPruneAt >= PRUNE_EVERY_MS) {
        lastPruneAt = now
        await prune(now)
      }
    } catch (error) {
      // another process's write lock (an import) or a closed database: the next look tries again
      lastFullReadMs = -Infinity
      log.warn('notification delivery: the outbox could not be read', { error: (error as Error).message })
    }
    return started
  }

  /**
   * Fills free slots one at a time: the account with the fewest attempts under way (ties: the
   * oldest due delivery), within it the channel with the fewest under way (ties: the same). While
   * another account has one due that it could start, an account stops at its share; alone, it may
   * borrow idle slots up to maxPerAccount.
   */
  function startFairly(due: Map<string, Map<string, Due[]>>): number {
    if (due.size === 0) return 0
    const wanting = new Set([...due.keys(), ...perAccount.keys()]).size
    const share = Math.min(maxPerAccount, Math.ceil(maxInFlight / wanting))
    /** accounts at their share while others wait: they may borrow once no one else can start one */
    const atShare = new Map<string, Map<string, Due[]>>()
    let backedOffUnder = backedOffInFlight()
    let started = 0
    const oldestOf = (lists: Map<string, Due[]>) => [...lists.values()].map((list) => list[0]!).sort(older)[0]!
    while (inFlight.size < maxInFlight) {
      if (due.size === 0) {
        // the others have nothing more they can start: the one left borrows
        if (atShare.size !== 1) break
        const [[accountId, lists]] = atShare
        atShare.clear()
        due.set(accountId, lists)
      }
      let account = ''
      let best: Due | null = null
      for (const [accountId, lists] of due) {
        const candidate = oldestOf(lists)
        const diff = best === null ? -1 : (perAccount.get(accountId) ?? 0) - (perAccount.get(account) ?? 0)
        if (diff < 0 || (diff === 0 && older(candidate, best!) < 0)) {
          account = accountId
          best = candidate
        }
      }
      const lists = due.get(account)!
      const othersWait = due.size > 1 || atShare.size > 0
      if ((perAccount.get(account) ?? 0) >= (othersWait ? share : maxPerAccount)) {
        due.delete(account)
        if (othersWait) atShare.set(account, lists)
        continue
      }
      let channelId: string | null = null
      for (const [id, list] of lists) {
        if (backedOff(id) && backedOffUnder >= maxBackedOff) continue
        const diff = channelId === null ? -1 : (perChannel.get(id) ?? 0) - (perChannel.get(channelId) ?? 0)
        if (diff < 0 || (diff === 0 && older(list[0]!, lists.get(channelId!)![0]!) < 0)) channelId = id
      }
      if (channelId === null) {
        due.delete(account)
        continue
      }
      const list = lists.get(channelId)!
      const delivery = list.shift()!
      // read before an attempt at it ended during this look: its row may not say so yet
      if (!underWay(delivery.key)) {
        if (backedOff(channelId)) backedOffUnder++
        launch(delivery)
        started++
      }
      if (list.length === 0 || (perChannel.get(channelId) ?? 0) >= channelCap(channelId)) lists.delete(channelId)
      if (lists.size === 0) due.delete(account)
    }
    return started
  }

  async function prune(now: number): Promise<void> {
    if ((await store.prune(now - KEEP_FINISHED_MS, PRUNE_BATCH)) === PRUNE_BATCH) lastPruneAt = -Infinity
  }

  const increment = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)
  function decrement(map: Map<string, number>, key: string): void {
    const left = (map.get(key) ?? 1) - 1
    if (left > 0) map.set(key, left)
    else map.delete(key)
  }

  function launch(delivery: Due): void {
    increment(perChannel, delivery.notificationId)
    increment(perAccount, delivery.accountId)
    if (delivery.kind === 'positions') positionsBusy.add(delivery.notificationId)
    const work = run(delivery, ++launches).finally(() => {
      inFlight.delete(delivery.key)
      endedDuringLook?.add(delivery.key)
      decrement(perChannel, delivery.notificationId)
      decrement(perAccount, delivery.accountId)
      if (delivery.kind === 'positions') positionsBusy.delete(delivery.notificationId)
      // a slot is free: look again soon, unless a test drives the passes itself
      if (running && !stopped) schedule(0)
    })
    inFlight.set(delivery.key, work)
  }

  /**
   * What an attempt's outcome says of its channel: a timeout counts (once for attempts that were
   * under way together) and backs the channel off for retryDelayMs(count); anything else ends it.
   */
  function judge(channelId: string, outcome: AttemptOutcome, sequence: number, now: number): void {
    const state = stateOf(channelId)
    if (!outcome.timedOut) {
      state.timeouts = 0
      state.pausedUntil = 0
      return
    }
    if (sequence <= state.countedAtLaunch) return
    state.timeouts++
    state.countedAtLaunch = launches
    const waitMs = retryDelayMs(state.timeouts)
    state.pausedUntil = now + waitMs
    log.warn('notification channel not answering: backed off', { notification: channelId, timeouts: state.timeouts, waitSeconds: waitMs / 1000 })
  }

  /** `sequence`: the launch's number, which tells whether it was under way when a timeout was counted */
  async function run(read: Due, sequence: number): Promise<void> {
    // taken for this attempt (one node at a time), as the row is now
    let claimed: QueuedDelivery | null
    try {
      claimed = await store.claim(read.key, read.attempts)
    } catch (error) {
      stateOf(read.notificationId).nextDueAt = -Infinity
      log.warn('notification delivery: it could not be taken', { delivery: read.id, error: (error as Error).message })
      return
    }
    if (claimed === null) {
      takenElsewhere.set(read.key, clock.now() + elsewhereWaitMs)
      return
    }
    try {
      await attemptClaimed({ ...read, ...claimed }, sequence)
    } finally {
      await store.release(read.key).catch((error) => log.warn('notification delivery: it could not be given back', { delivery: read.id, error: (error as Error).message }))
    }
  }

  async function attemptClaimed(delivery: Due, sequence: number): Promise<void> {
    const sentAt = clock.now()
    const outcome = await attempt({ type: delivery.type, account: delivery.account, url: delivery.url, secret: delivery.secret }, delivery.id, deliveryBody(delivery, sentAt), sentAt, stopSending.signal)
    // cut off by stop(): not recorded, so the next worker sends it again (same id)
    if (stopSending.signal.aborted) return
    const now = clock.now()
    judge(delivery.notificationId, outcome, sequence, now)
    const state = stateOf(delivery.notificationId)
    const attempts = delivery.attempts + 1
    const deadline = delivery.createdAt + GIVE_UP_AFTER_MS
    const dead = !outcome.delivered && now >= deadline
    const status = outcome.delivered ? 'delivered' : dead ? 'dead' : 'pending'
    // a backed-off channel's pause holds its retries too (it may take the last try past 24 h)
    const nextAttemptAt = status === 'pending' ? Math.max(Math.min(now + retryDelayMs(attempts), deadline), state.pausedUntil) : null
    try {
      await store.settle(delivery.key, {
        status,
        attempts,
        lastStatusCode: outcome.statusCode,
        lastError: outcome.error,
        nextAttemptAt,
        deliveredAt: outcome.delivered ? now : null,
        // a batch of fixes is not kept once it is settled; its count stays
        clearPayload: status !== 'pending' && delivery.kind === 'positions',
      })
    } catch (error) {
      // left pending as it was: sent again later (the receiver deduplicates by X-Tracker-Delivery)
      state.nextDueAt = -Infinity
      log.warn('notification delivery: the outcome could not be written', { delivery: delivery.id, error: (error as Error).message })
      return
    }
    if (nextAttemptAt !== null && delivery.kind === 'event') state.nextDueAt = Math.min(state.nextDueAt, nextAttemptAt)
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
      void pass().finally(() => schedule(pollMs))
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
        lastFullReadMs = -Infinity
        const started = await pass()
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
