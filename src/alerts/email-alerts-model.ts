/** /me/email-alerts request and response schemas, and the event codes a person may choose. */
import { t } from 'elysia'
import { DEVICE_ALARM_CODES } from '../ingest/protocols/events'
import { MAX_EMAIL_LENGTH } from './notifications-model'

/** the events the server itself writes (connection changes, commands' outcomes), besides the devices' alarms */
export const SERVER_EVENT_CODES: readonly string[] = ['device_online', 'device_offline', 'command_answered', 'command_failed', 'command_expired']

/** every code an event can carry: what a person may choose to be told of by email */
export const KNOWN_EVENT_CODES: ReadonlySet<string> = new Set([...DEVICE_ALARM_CODES, ...SERVER_EVENT_CODES])

const events = t.Array(t.String({ minLength: 1, maxLength: 64, examples: ['sos'] }), {
  maxItems: KNOWN_EVENT_CODES.size,
  description:
    'The events to be told of, by alarm code (`sos`, `power_cut`, `geofence_exit`, `device_offline`…; README "Alarm codes"), each once. ' +
    'An unknown code is 400 naming it. At least one when `enabled`',
  examples: [['sos', 'power_cut']],
})

export const EmailAlertsBody = t.Object(
  {
    events,
    address: t.Optional(
      t.String({
        minLength: 1,
        maxLength: MAX_EMAIL_LENGTH,
        description: 'Where the mails go: one address, name@domain (no display name). Required the first time; absent keeps the one saved',
        examples: ['alice@example.com'],
      }),
    ),
    enabled: t.Boolean({ description: 'false: no mail is sent (the choice is kept). true needs the server to have SMTP_URL, else 400' }),
  },
  { additionalProperties: false },
)

export const EmailAlerts = t.Object(
  {
    enabled: t.Boolean({ description: 'Whether mails are sent' }),
    events: t.Array(t.String(), { description: 'The chosen alarm codes; `[]` when none was chosen' }),
    address: t.Union([t.String(), t.Null()], { description: 'Where the mails go; null until one is saved' }),
    email_configured: t.Boolean({ description: 'Whether this server can send email (its operator set SMTP_URL): without it, alerts cannot be enabled' }),
  },
  { additionalProperties: false },
)

export type EmailAlertsInput = typeof EmailAlertsBody.static
export type EmailAlertsAnswer = typeof EmailAlerts.static
