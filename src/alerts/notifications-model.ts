/** /notifications request and response schemas: validation and OpenAPI from one source. */
import { t } from 'elysia'
import { MAX_NAME_LENGTH } from '../admin/model'
import { FleetEvent } from '../events/model'
import { DateTime, pageFields, Uuid } from '../http/model'
import { MAX_URL_LENGTH } from './ssrf'

/** alarm codes a channel may list */
export const MAX_EVENT_CODES = 100
export const MAX_GROUPS = 1000
export const MAX_SECRET_LENGTH = 1024
/**
 * A new secret's least length in UTF-8 bytes: one signed delivery lets anyone who sees it try
 * guesses offline, so a short secret is as good as none. Secrets set before the rule keep working.
 */
export const MIN_SECRET_BYTES = 16
/** an alarm code as events carry it (src/store/events.ts keeps 64 characters), or "*" for every event */
export const EVENT_CODE_PATTERN = '^(\\*|[A-Za-z0-9_]{1,64})$'

const name = t.String({
  minLength: 1,
  maxLength: MAX_NAME_LENGTH,
  description: `1 to ${MAX_NAME_LENGTH} characters, no control characters, not beginning or ending with a space`,
  examples: ['Night yard exit'],
})
const events = t.Array(t.String({ pattern: EVENT_CODE_PATTERN, examples: ['geofence_exit'] }), {
  maxItems: MAX_EVENT_CODES,
  description: 'Alarm codes (as events carry them: `sos`, `geofence_exit`, `overspeed`…), each once; `["*"]` for every event. Required, not empty, for an events channel; empty or absent for a positions channel',
  examples: [['geofence_exit', 'sos']],
})
const groups = t.Array(Uuid, {
  maxItems: MAX_GROUPS,
  description: "Only devices of these groups of your account (another account's or an unknown group is 404); empty or absent: every device of the account",
})
const url = t.String({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  description:
    'http:// or https://, no user name or password. Private, loopback, link-local and other special-purpose addresses are refused (400), also when the host name resolves to one, unless the server runs with WEBHOOK_ALLOW_PRIVATE=1',
  examples: ['https://hooks.example.com/fleet'],
})
const secret = t.String({
  minLength: 1,
  maxLength: MAX_SECRET_LENGTH,
  description: `Write-only: the HMAC-SHA256 key of \`X-Tracker-Signature\` (answers say \`secret_set\`). At least ${MIN_SECRET_BYTES} bytes in UTF-8 (shorter is 400); use 32 random bytes or more. A shorter secret set before this rule keeps working until replaced. Without one, deliveries are not signed`,
  examples: ['whsec_5f2b8c0e9d7a4b1c'],
})
const positions = t.Boolean({
  description: 'true: every stored fix of the chosen devices, in batches of up to 500, instead of events (and no `events`). Default false',
})
const enabled = t.Boolean({ description: 'false: nothing new is written for it, and its pending deliveries wait. Default true' })

/** addresses of an email channel */
export const MAX_EMAIL_ADDRESSES = 20
export const MAX_EMAIL_LENGTH = 254
export const MAX_BOT_TOKEN_LENGTH = 200
const to = t.Array(t.String({ minLength: 1, maxLength: MAX_EMAIL_LENGTH, examples: ['ops@example.com'] }), {
  minItems: 1,
  maxItems: MAX_EMAIL_ADDRESSES,
  description: `1 to ${MAX_EMAIL_ADDRESSES} addresses (name@domain, each once), in the To of each mail. Sent through the server's SMTP_URL from SMTP_FROM; without SMTP_URL an email channel is 400`,
  examples: [['ops@example.com']],
})
const chatId = t.String({
  minLength: 1,
  maxLength: 64,
  description: "The chat's id (an integer, negative for groups: `-1001234567890`) or a public channel's `@username`",
  examples: ['-1001234567890'],
})
const botToken = t.String({
  minLength: 1,
  maxLength: MAX_BOT_TOKEN_LENGTH,
  description: "Write-only: the bot's token from @BotFather (`123456:ABC-…`); answers say `bot_token_set`",
  examples: ['123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw'],
})

const channelType = t.Union([t.Literal('webhook'), t.Literal('email'), t.Literal('telegram')], {
  description: '`webhook` (`url`, `secret`, `positions`), `email` (`to`) or `telegram` (`chat_id`, `bot_token`); a field of another type is 400',
})

/** One shape for the three types, so a bad field is named by its own path; notifications-service.ts checks which fields each type takes. */
export const ChannelBody = t.Object(
  {
    type: channelType,
    url: t.Optional(url),
    secret: t.Optional(secret),
    positions: t.Optional(positions),
    to: t.Optional(to),
    chat_id: t.Optional(chatId),
    bot_token: t.Optional(botToken),
  },
  {
    additionalProperties: false,
    description:
      'Where deliveries go. `webhook`: each delivery POSTed as JSON to `url` (required). `email`: each event as a mail, text and HTML, naming the vehicle, the event, the time (UTC), the place and a console link, to `to` (required; the server needs SMTP_URL, else 400). ' +
      '`telegram`: each event as a message to `chat_id` through the bot whose `bot_token` (required, write-only) is given. Only a webhook takes positions',
  },
)

export const CreateNotificationBody = t.Object(
  {
    name,
    events: t.Optional(events),
    groups: t.Optional(groups),
    channel: ChannelBody,
    positions: t.Optional(t.Boolean({ description: 'The same as `channel.positions` (either may be sent; they must agree)' })),
    enabled: t.Optional(enabled),
  },
  { additionalProperties: false },
)

export const UpdateNotificationBody = t.Object(
  {
    name: t.Optional(name),
    events: t.Optional(events),
    groups: t.Optional(groups),
    channel: t.Optional(
      t.Object(
        {
          type: t.Optional(t.Union([t.Literal('webhook'), t.Literal('email'), t.Literal('telegram')], { description: "The channel's type, which cannot change (another is 400): make a new channel instead" })),
          url: t.Optional(url),
          secret: t.Optional(t.Union([secret, t.Null()], { description: 'A new secret; null removes it (unsigned deliveries); absent keeps it' })),
          positions: t.Optional(positions),
          to: t.Optional(to),
          chat_id: t.Optional(chatId),
          bot_token: t.Optional(botToken),
        },
        { additionalProperties: false, description: "Only the fields sent change, and only fields of the channel's type (else 400); the secret and the bot token stay unless sent" },
      ),
    ),
    positions: t.Optional(t.Boolean({ description: 'The same as `channel.positions`' })),
    enabled: t.Optional(enabled),
  },
  { additionalProperties: false },
)

export const Notification = t.Object(
  {
    id: Uuid,
    name: t.String(),
    events: t.Array(t.String(), { description: 'Alarm codes, or `["*"]`; `[]` for a positions channel' }),
    groups: t.Array(Uuid, { description: 'Only devices of these groups; `[]`: every device of the account. A deleted group stays listed and matches no device' }),
    channel: t.Union([
      t.Object({
        type: t.Literal('webhook'),
        url: t.String(),
        secret_set: t.Boolean({ description: 'Whether deliveries are signed; the secret itself is never shown' }),
        positions: t.Boolean(),
      }),
      t.Object({ type: t.Literal('email'), to: t.Array(t.String()) }),
      t.Object({
        type: t.Literal('telegram'),
        chat_id: t.String(),
        bot_token_set: t.Boolean({ description: 'Always true: the bot token itself is never shown' }),
      }),
    ]),
    enabled: t.Boolean(),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false },
)

const nullableDateTime = (description: string) => t.Union([DateTime, t.Null()], { description })

export const Delivery = t.Object(
  {
    id: t.String({ format: 'uuid', description: 'The delivery id: `X-Tracker-Delivery`, the same on every retry, and `id` in the body' }),
    type: t.Union([t.Literal('event'), t.Literal('positions'), t.Literal('test')]),
    event: t.Union([FleetEvent, t.Null()], { description: 'The event as delivered (as GET /events shows it); null for positions and tests' }),
    positions: t.Union([t.Integer(), t.Null()], { description: 'How many fixes the batch holds; null for events and tests' }),
    status: t.Union([t.Literal('pending'), t.Literal('delivered'), t.Literal('dead')]),
    attempts: t.Integer({ minimum: 0 }),
    last_status_code: t.Union([t.Integer(), t.Null()], {
      description: "The receiver's HTTP status at the last attempt (the Telegram API's for a Telegram channel; the SMTP server's reply code, such as 451, when an email channel's mail was refused); null when none came, and for a mail accepted",
    }),
    last_error: t.Union([t.String(), t.Null()], { description: 'Why the last attempt failed; null when none failed last' }),
    next_attempt_at: nullableDateTime('When it is tried next; null once delivered or dead'),
    delivered_at: nullableDateTime('When a 2xx came; null until then'),
    created_at: DateTime,
  },
  { additionalProperties: false },
)

export const DeliveriesQuery = t.Object(
  {
    ...pageFields('deliveries'),
  },
  { additionalProperties: true },
)

export type CreateNotificationInput = typeof CreateNotificationBody.static
export type UpdateNotificationInput = typeof UpdateNotificationBody.static
export type NotificationBody = typeof Notification.static
export type DeliveryBody = typeof Delivery.static
