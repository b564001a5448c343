/**
 * Notification channels of an account (the admin's): which events, or every fix, go to which
 * webhook, for which devices; their deliveries; a test delivery. Plain functions over the
 * notification store (src/store/notifications.ts): each change is one unit of work there with its
 * audit entry (never the secret), retried while another process holds the write lock. A URL is
 * checked by the SSRF guard (ssrf.ts) before its unit of work, as DNS takes time.
 */
import { type Actor, checkName, distinctIds, type Page, requireKnown } from '../admin/actor'
import type { Clock } from '../clock'
import { Forbidden, Invalid, NotFound, type FieldError } from '../errors'
import { iso, isoOrNull } from '../http/model'
import type { DeliveryRow, GroupsRefused, NotificationAudit, NotificationRow, NotificationStore } from '../store/notifications'
import { deliveryBody, mailtoAddresses, type Sender } from './delivery'
import { type CreateNotificationInput, type DeliveryBody, MIN_SECRET_BYTES, type NotificationBody, type UpdateNotificationInput } from './notifications-model'
import { TargetRefused, type WebhookGuard } from './ssrf'

export interface NotificationServiceDeps {
  store: NotificationStore
  clock: Clock
  guard: WebhookGuard
  /** sends a test delivery (delivery.ts createSender) */
  send: Sender
  /** SMTP_URL: without it an email channel is refused */
  smtpConfigured: boolean
}

type Row = NotificationRow

function channelOf(row: Row): NotificationBody['channel'] {
  if (row.channelType === 'email') return { type: 'email', to: mailtoAddresses(row.url) }
  if (row.channelType === 'telegram') return { type: 'telegram', chat_id: row.url, bot_token_set: true }
  return { type: 'webhook', url: row.url, secret_set: row.secret !== null, positions: row.positions }
}

function toBody(row: Row): NotificationBody {
  return {
    id: row.id,
    name: row.name,
    events: JSON.parse(row.events) as string[],
    groups: JSON.parse(row.groups) as string[],
    channel: channelOf(row),
    enabled: row.enabled,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  }
}

export function deliveryItem(row: DeliveryRow): DeliveryBody {
  return {
    id: row.id,
    type: row.kind as DeliveryBody['type'],
    event: row.kind === 'event' && row.payload !== null ? (JSON.parse(row.payload) as DeliveryBody['event']) : null,
    positions: row.kind === 'positions' ? (row.fixes ?? 0) : null,
    status: row.status as DeliveryBody['status'],
    attempts: row.attempts,
    last_status_code: row.lastStatusCode,
    last_error: row.lastError,
    next_attempt_at: row.status === 'pending' ? isoOrNull(row.nextAttemptAt) : null,
    delivered_at: isoOrNull(row.deliveredAt),
    created_at: iso(row.createdAt),
  }
}

function requireAdmin(by: Actor): void {
  if (!by.admin) throw new Forbidden('Only an account admin can manage notifications')
}

/** `events` as stored: each code once, "*" alone. */
function checkEvents(codes: readonly string[]): string[] {
  const errors: FieldError[] = []
  const seen = new Map<string, number>()
  codes.forEach((code, i) => {
    const first = seen.get(code)
    if (first !== undefined) errors.push({ path: `/events/${i}`, message: `repeats /events/${first}; each code may appear once` })
    else seen.set(code, i)
    if (code === '*' && codes.length > 1) errors.push({ path: `/events/${i}`, message: '"*" (every event) stands alone' })
  })
  if (errors.length > 0) throw new Invalid(errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors.slice(0, 20))
  return [...codes]
}

/** The events and positions a channel ends up with, or 400 naming what clashes. */
function checkKind(events: string[], positions: boolean): string[] {
  if (positions && events.length > 0) throw Invalid.field('/events', 'a positions channel (positions: true) receives every fix and takes no events')
  if (!positions && events.length === 0) throw Invalid.field('/events', 'an events channel needs at least one alarm code, or ["*"] for every event')
  return events
}

/** A secret sent (a string): at least MIN_SECRET_BYTES in UTF-8, or 400. null (remove) and absent (keep) pass. */
function checkSecret(secret: string | null | undefined): void {
  if (typeof secret !== 'string') return
  const bytes = Buffer.byteLength(secret, 'utf8')
  if (bytes < MIN_SECRET_BYTES) {
    throw Invalid.field('/channel/secret', `must be at least ${MIN_SECRET_BYTES} bytes (UTF-8), this one has ${bytes}; use 32 random bytes or more`)
  }
}

/**
 * name@domain: no spaces, commas, angle brackets or quotes (one address, nothing a mail header
 * could read as more), a dot in the domain. What the SMTP server then accepts is its own say.
 */
export const EMAIL_ADDRESS = /^[^\s@,;<>()[\]\\"':]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/
/** an integer chat id (negative for groups and channels) or a public channel's @username */
const CHAT_ID = /^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$/
/** what @BotFather hands out: the bot's number, a colon, the secret part */
const BOT_TOKEN = /^[0-9]{1,20}:[A-Za-z0-9_-]{20,150}$/

const CHANNEL_FIELDS = ['url', 'secret', 'positions', 'to', 'chat_id', 'bot_token'] as const
/** the fields each type of channel takes; the first ones are required at creation */
const FIELDS_OF: Record<string, { required: string[]; optional: string[] }> = {
  webhook: { required: ['url'], optional: ['secret', 'positions'] },
  email: { required: ['to'], optional: [] },
  telegram: { required: ['chat_id', 'bot_token'], optional: [] },
}
const article = (type: string) => (type === 'email' ? 'an' : 'a')

/** 400 for a field of another type of channel, and (at creation) for a required one left out */
function checkFieldsOf(type: string, sent: Partial<Record<(typeof CHANNEL_FIELDS)[number], unknown>>, creating: boolean): void {
  const fields = FIELDS_OF[type] ?? { required: [], optional: [] }
  const errors: FieldError[] = []
  for (const field of CHANNEL_FIELDS) {
    const known = fields.required.includes(field) || fields.optional.includes(field)
    if (sent[field] !== undefined && !known) errors.push({ path: `/channel/${field}`, message: `is not a field of ${article(type)} ${type} channel` })
    if (creating && sent[field] === undefined && fields.required.includes(field)) errors.push({ path: `/channel/${field}`, message: `is required for ${article(type)} ${type} channel` })
  }
  if (errors.length > 0) throw new Invalid(errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors)
}

/** An email channel's addresses, each once (case aside), as its stored `mailto:` URL. */
function checkAddresses(addresses: readonly string[]): string {
  const errors: FieldError[] = []
  const seen = new Map<string, number>()
  addresses.forEach((address, i) => {
    if (!EMAIL_ADDRESS.test(address)) errors.push({ path: `/channel/to/${i}`, message: 'must be one email address, name@domain (no display name, spaces or commas)' })
    const first = seen.get(address.toLowerCase())
    if (first !== undefined) errors.push({ path: `/channel/to/${i}`, message: `repeats /channel/to/${first}` })
    else seen.set(address.toLowerCase(), i)
  })
  if (errors.length > 0) throw new Invalid(errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors.slice(0, 20))
  return `mailto:${addresses.join(',')}`
}

function checkChatId(chatId: string): string {
  if (!CHAT_ID.test(chatId)) throw Invalid.field('/channel/chat_id', 'must be a chat id (an integer, negative for groups: -1001234567890) or a public channel\'s @username')
  return chatId
}

/** the token is never echoed: a 400 says what is wrong with it, not what it is */
function checkBotToken(token: string): string {
  if (!BOT_TOKEN.test(token)) throw Invalid.field('/channel/bot_token', "must be a bot token as @BotFather gives it: the bot's number, a colon, then 20 or more letters, digits, - or _")
  return token
}

/** `channel.positions` and the top-level `positions`, which must agree when both are sent */
function positionsOf(top: boolean | undefined, inChannel: boolean | undefined): boolean | undefined {
  if (top !== undefined && inChannel !== undefined && top !== inChannel) throw Invalid.field('/positions', 'says otherwise than /channel/positions; send one of them')
  return top ?? inChannel
}

export function createNotificationService(deps: NotificationServiceDeps) {
  const { store, clock, guard } = deps

  async function requireRow(by: Actor, id: string): Promise<Row> {
    const row = await store.find(by.accountId, id)
    if (!row) throw new NotFound(`No notification ${id}`)
    return row
  }

  /** the store's refusal of groups: 404 naming the place of the first that is not the account's */
  function refusedGroups(refused: GroupsRefused, ids: readonly string[]): Error {
    try {
      requireKnown(ids, refused.groupsFound, '/groups', 'group')
    } catch (error) {
      return error as Error
    }
    return new Error('notification store: groups refused, yet all found')
  }

  async function checkUrl(raw: string): Promise<string> {
    try {
      return await guard.checkNew(raw)
    } catch (error) {
      if (error instanceof TargetRefused) throw Invalid.field('/channel/url', error.message)
      throw error
    }
  }

  const auditOf = (by: Actor): NotificationAudit => ({ actor: by.id, requestId: by.requestId ?? null })

  return {
    /** the account's channels, by name then id */
    async list(by: Actor, page: Page): Promise<NotificationBody[]> {
      requireAdmin(by)
      return (await store.list(by.accountId, page)).map(toBody)
    },

    async get(by: Actor, id: string): Promise<NotificationBody> {
      requireAdmin(by)
      return toBody(await requireRow(by, id))
    },

    async create(by: Actor, input: CreateNotificationInput): Promise<NotificationBody> {
      requireAdmin(by)
      const name = checkName(input.name)
      const channel = input.channel
      checkFieldsOf(channel.type, channel, true)
      const positions = positionsOf(input.positions, channel.type === 'webhook' ? channel.positions : undefined) ?? false
      if (positions && channel.type !== 'webhook') throw Invalid.field('/positions', `only a webhook takes positions; ${article(channel.type)} ${channel.type} channel is told of events`)
      const events = checkKind(checkEvents(input.events ?? []), positions)
      let url: string
      let secret: string | null
      if (channel.type === 'email') {
        if (!deps.smtpConfigured) throw Invalid.field('/channel/type', 'the server cannot send email: its operator has not set SMTP_URL (and SMTP_FROM)')
        url = checkAddresses(channel.to!)
        secret = null
      } else if (channel.type === 'telegram') {
        url = checkChatId(channel.chat_id!)
        secret = checkBotToken(channel.bot_token!)
      } else {
        checkSecret(channel.secret)
        url = await checkUrl(channel.url!)
        secret = channel.secret ?? null
      }
      const groupIds = distinctIds(input.groups ?? [], '/groups')
      const now = clock.now()
      const row: Row = {
        id: crypto.randomUUID(),
        accountId: by.accountId,
        name,
        events: JSON.stringify(events),
        groups: JSON.stringify(groupIds),
        positions,
        channelType: channel.type,
        url,
        secret,
        enabled: input.enabled ?? true,
        createdAt: now,
        updatedAt: now,
        userId: null,
      }
      const created = await store.create(row, groupIds, auditOf(by))
      if ('groupsFound' in created) throw refusedGroups(created, groupIds)
      return toBody(created)
    },

    /** Only what is sent changes; the secret stays unless sent (null removes it). */
    async update(by: Actor, id: string, input: UpdateNotificationInput): Promise<NotificationBody> {
      requireAdmin(by)
      const current = await requireRow(by, id)
      const name = input.name === undefined ? undefined : checkName(input.name)
      const sent = input.channel ?? {}
      const type = current.channelType
      if (sent.type !== undefined && sent.type !== type) throw Invalid.field('/channel/type', `a channel's type cannot change (this one is ${type}): make a new channel instead`)
      checkFieldsOf(type, sent, false)
      if (type !== 'webhook' && input.positions === true) throw Invalid.field('/positions', `only a webhook takes positions; ${article(type)} ${type} channel is told of events`)
      const target =
        sent.to !== undefined ? checkAddresses(sent.to) : sent.chat_id !== undefined ? checkChatId(sent.chat_id) : undefined
      const botToken = sent.bot_token === undefined ? undefined : checkBotToken(sent.bot_token)
      const sentPositions = positionsOf(input.positions, input.channel?.positions)
      const positions = sentPositions ?? current.positions
      // turning a channel into a positions channel drops the events it had, unless new ones are sent
      const events = checkKind(
        input.events !== undefined ? checkEvents(input.events) : positions && !current.positions ? [] : (JSON.parse(current.events) as string[]),
        positions,
      )
      // a secret set before the rule stays as it is unless a new one is sent
      checkSecret(input.channel?.secret)
      const url = input.channel?.url === undefined || input.channel.url === current.url ? undefined : await checkUrl(input.channel.url)
      const groupIds = input.groups === undefined ? undefined : distinctIds(input.groups, '/groups')
      const fields: Partial<Row> = {
        ...(name !== undefined ? { name } : {}),
        events: JSON.stringify(events),
        positions,
        ...(url !== undefined ? { url } : {}),
        ...(target !== undefined ? { url: target } : {}),
        ...(input.channel?.secret !== undefined ? { secret: input.channel.secret } : {}),
        ...(botToken !== undefined ? { secret: botToken } : {}),
        ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      }
      const updated = await store.update(by.accountId, id, fields, groupIds, clock.now(), auditOf(by))
      if (updated === null) throw new NotFound(`No notification ${id}`)
      if ('groupsFound' in updated) throw refusedGroups(updated, groupIds ?? [])
      return toBody(updated)
    },

    /** Deletes the channel and its deliveries, pending ones included. */
    async remove(by: Actor, id: string): Promise<void> {
      requireAdmin(by)
      if (!(await store.remove(by.accountId, id, clock.now(), auditOf(by)))) throw new NotFound(`No notification ${id}`)
    },

    /** the channel's deliveries, newest first */
    async deliveries(by: Actor, id: string, page: Page): Promise<DeliveryBody[]> {
      requireAdmin(by)
      const row = await requireRow(by, id)
      return (await store.deliveries(row.id, page)).map(deliveryItem)
    },

    /**
     * One delivery of type "test" sent now, whatever `enabled` says, with the channel's URL,
     * guard and secret; never retried. Recorded in the deliveries list: delivered, or dead.
     */
    async test(by: Actor, id: string): Promise<DeliveryBody> {
      requireAdmin(by)
      const row = await requireRow(by, id)
      const deliveryId = crypto.randomUUID()
      const sentAt = clock.now()
      const body = deliveryBody({ id: deliveryId, kind: 'test', payload: null }, sentAt, { id: row.id, name: row.name })
      const account = await store.accountName(row.accountId)
      const outcome = await deps.send({ type: row.channelType, account, url: row.url, secret: row.secret }, deliveryId, body, sentAt)
      {
        const now = clock.now()
        const delivery = {
          id: deliveryId,
          notificationId: row.id,
          kind: 'test',
          status: outcome.delivered ? 'delivered' : 'dead',
          attempts: 1,
          lastStatusCode: outcome.statusCode,
          lastError: outcome.error,
          nextAttemptAt: null,
          createdAt: sentAt,
          deliveredAt: outcome.delivered ? now : null,
        }
        // kept only while the channel is (it may have been deleted meanwhile: then there is no log to write it in)
        await store.recordTest(delivery)
        return deliveryItem({ key: 0, deviceKey: null, payload: null, fixes: null, ...delivery } as DeliveryRow)
      }
    },
  }
}

export type NotificationService = ReturnType<typeof createNotificationService>
