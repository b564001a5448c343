/**
 * Administration › Notifications, apart from drawing: the alarm codes a form offers, the body a
 * form sends, the API's 400s put back beside the form's fields, a delivery in words.
 */
import type { Failure } from './admin'
import { when } from './format'
import { alarmName } from './eventNames'
import { strings } from './strings'
import type { NotificationChannel, NotificationDelivery } from './types'

const n = strings.notifications

/** `events: ["*"]`: every event */
export const EVERY_EVENT = '*'
/** as the server checks a code (src/alerts/notifications-model.ts EVENT_CODE_PATTERN) */
const CODE = /^[A-Za-z0-9_]{1,64}$/

/** as the server checks a new secret (src/alerts/notifications-model.ts MIN_SECRET_BYTES): UTF-8 bytes */
const MIN_SECRET_BYTES = 16
const utf8 = new TextEncoder()

/** the codes the console has words for, in strings.ts order: the checklist */
export const knownCodes = (): string[] => Object.keys(strings.alarmNames)

export type ChannelType = 'webhook' | 'email' | 'telegram'

export interface NotificationDraft {
  name: string
  type: ChannelType
  /** email: the addresses as typed */
  to: string
  chatId: string
  /** telegram: a new token; empty keeps the one set */
  botToken: string
  /** a saved Telegram channel has a token (kept unless one is typed) */
  tokenSet?: boolean
  positions: boolean
  every: boolean
  /** checked codes of the list */
  codes: string[]
  /** what the person typed in "Other alarm codes" */
  other: string
  groups: string[]
  url: string
  /** a new secret; empty keeps the one set (or none) */
  secret: string
  removeSecret: boolean
  enabled: boolean
}

export function draftOf(existing: NotificationChannel | null): NotificationDraft {
  const known = new Set(knownCodes())
  const events = existing?.events ?? []
  const channel = existing?.channel
  return {
    name: existing?.name ?? '',
    type: channel?.type ?? 'webhook',
    to: channel?.type === 'email' ? channel.to.join(', ') : '',
    chatId: channel?.type === 'telegram' ? channel.chat_id : '',
    botToken: '',
    tokenSet: channel?.type === 'telegram',
    positions: channel?.type === 'webhook' ? channel.positions : false,
    every: events.includes(EVERY_EVENT),
    codes: events.filter((code) => known.has(code)),
    // codes set through the API that the list does not name stay, as typed text
    other: events.filter((code) => code !== EVERY_EVENT && !known.has(code)).join(' '),
    groups: existing?.groups ?? [],
    url: channel?.type === 'webhook' ? channel.url : '',
    secret: '',
    removeSecret: false,
    enabled: existing?.enabled ?? true,
  }
}

/** the codes typed in "Other alarm codes", each once */
export const otherCodes = (text: string): string[] => [...new Set(text.split(/[\s,;]+/).filter(Boolean))]

/** the `events` a draft sends: ["*"], the checked and typed codes (each once), or [] for positions */
export function eventsOf(draft: NotificationDraft): string[] {
  if (draft.positions) return []
  if (draft.every) return [EVERY_EVENT]
  return [...new Set([...draft.codes, ...otherCodes(draft.other)])]
}

/** the addresses typed, each once */
export const addressesOf = (text: string): string[] => [...new Set(text.split(/[\s,;]+/).filter(Boolean))]

/** what the form can tell before sending: field key → message */
export function checkDraft(draft: NotificationDraft): Record<string, string> {
  const errors: Record<string, string> = {}
  if (!draft.name.trim()) errors.name = strings.admin.nameRequired
  if (draft.type === 'webhook') {
    if (!draft.url.trim()) errors['channel/url'] = n.urlRequired
    if (draft.secret && utf8.encode(draft.secret).length < MIN_SECRET_BYTES) errors['channel/secret'] = n.secretTooShort
  } else if (draft.type === 'email') {
    if (addressesOf(draft.to).length === 0) errors['channel/to'] = n.toRequired
  } else {
    if (!draft.chatId.trim()) errors['channel/chat_id'] = n.chatIdRequired
    if (!draft.botToken.trim() && !draft.tokenSet) errors['channel/bot_token'] = n.botTokenRequired
  }
  if (!draft.positions && !draft.every) {
    const bad = otherCodes(draft.other).find((code) => !CODE.test(code))
    if (bad !== undefined) errors.other = n.badCode(bad)
    else if (eventsOf(draft).length === 0) errors.events = n.eventsRequired
  }
  return errors
}

const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x) => b.includes(x))

/**
 * POST /notifications (existing null) or PATCH /notifications/{id}: every field the form shows;
 * the secret only when typed or removed. `groups` only when changed, and then only groups that
 * still exist (`known`, null while not read: groups are not sent): a deleted group stays listed
 * on the channel (matching no device), and sending it back would be refused.
 */
export function bodyOf(draft: NotificationDraft, existing: NotificationChannel | null, known: ReadonlySet<string> | null): Record<string, unknown> {
  let channel: Record<string, unknown>
  if (draft.type === 'email') channel = { type: 'email', to: addressesOf(draft.to) }
  else if (draft.type === 'telegram') {
    channel = { type: 'telegram', chat_id: draft.chatId.trim() }
    if (draft.botToken.trim()) channel.bot_token = draft.botToken.trim()
  } else {
    channel = { type: 'webhook', url: draft.url.trim(), positions: draft.positions }
    if (draft.secret) channel.secret = draft.secret
    else if (existing && draft.removeSecret) channel.secret = null
  }
  const body: Record<string, unknown> = { name: draft.name.trim(), events: eventsOf(draft), channel, enabled: draft.enabled }
  if (known && !(existing && sameSet(draft.groups, existing.groups))) body.groups = draft.groups.filter((id) => known.has(id))
  return body
}

/**
 * The API's 400 as the form shows it: an `/events/{i}` error goes beside the list or the typed
 * codes, whichever holds the code sent at i, in words that name it (the API's pattern is no
 * sentence); `/positions` and `/channel/positions` go beside the choice of what it sends.
 */
export function placeFailure(failure: Failure, sentEvents: readonly string[]): Failure {
  const known = new Set(knownCodes())
  const fields: Record<string, string> = {}
  for (const [key, message] of Object.entries(failure.fields)) {
    const at = /^events\/(\d+)$/.exec(key)
    if (at) {
      const code = sentEvents[Number(at[1])]
      const target = code !== undefined && code !== EVERY_EVENT && !known.has(code) ? 'other' : 'events'
      fields[target] ??= code !== undefined && !CODE.test(code) && code !== EVERY_EVENT ? n.badCode(code) : message
    } else if (key === 'positions' || key === 'channel/positions') fields.positions ??= message
    else if (key.startsWith('channel/to')) fields['channel/to'] ??= message
    else if (key.startsWith('groups')) fields.groups ??= message
    else fields[key] ??= message
  }
  return { ...failure, fields }
}

/** the host a webhook goes to, for the list: "hooks.example.com:8443" */
export function urlHost(url: string): string {
  try {
    return new URL(url).host || url
  } catch {
    return url
  }
}

/** where a channel sends, for the list and the log: a webhook's host, the addresses, the Telegram chat */
export function targetOf(channel: NotificationChannel['channel']): { text: string; full: string } {
  if (channel.type === 'email') return { text: channel.to.join(', '), full: channel.to.join(', ') }
  if (channel.type === 'telegram') return { text: n.telegramChat(channel.chat_id), full: n.telegramChat(channel.chat_id) }
  return { text: urlHost(channel.url), full: channel.url }
}

/** what a channel sends, for the list: "Every event", "Every position", "SOS, Power cut" */
export function sendsOf(notification: NotificationChannel): string[] {
  if (notification.channel.type === 'webhook' && notification.channel.positions) return [n.everyPosition]
  if (notification.events.includes(EVERY_EVENT)) return [n.everyEvent]
  return notification.events.map((code) => alarmName(code))
}

/** what a delivery carried: the event's alarm and device, a batch's size, or the test */
export function deliveryWhat(delivery: NotificationDelivery): string {
  if (delivery.type === 'test') return n.whatTest
  if (delivery.type === 'positions') return n.whatPositions(delivery.positions ?? 0)
  if (!delivery.event) return n.whatTest
  return `${alarmName(delivery.event.alarm_code)} · ${delivery.event.device.alias}`
}

/** a time of the log: today's as "14:03:05", another day's with its date */
export const logTime = (iso: string, nowMs = Date.now()) => when(Date.parse(iso), nowMs)

/** "Delivered 14:03:05", "Next attempt …", or nothing (dead) */
export function deliveryWhen(delivery: NotificationDelivery, nowMs = Date.now()): string | null {
  if (delivery.delivered_at) return n.deliveredAt(logTime(delivery.delivered_at, nowMs))
  if (delivery.status === 'pending' && delivery.next_attempt_at) return n.nextAttemptAt(logTime(delivery.next_attempt_at, nowMs))
  return null
}

/** the outcome of POST /notifications/{id}/test in a sentence */
export function testOutcome(delivery: NotificationDelivery): { ok: boolean; text: string } {
  if (delivery.status === 'delivered') return { ok: true, text: n.testDelivered(delivery.last_status_code) }
  const why =
    delivery.last_status_code !== null ? n.testFailedAnswer(delivery.last_status_code, delivery.last_error) : (delivery.last_error ?? n.testNoAnswer)
  return { ok: false, text: n.testFailed(why.replace(/\.$/, '')) }
}
