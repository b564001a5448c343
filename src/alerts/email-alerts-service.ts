/**
 * A user's own email alerts (PUT /me/email-alerts): which events they are told of by email, at
 * which address. Stored as a notifications row with `user_id` set: an email channel that the
 * outbox (outbox.ts) matches only against the devices the user reaches, and that the admins'
 * /notifications neither lists nor changes. Each change is one unit of work of the notification
 * store with its audit entry (`update` or `create` of `email_alerts`, object the user), retried
 * while another process holds the write lock.
 */
import type { Clock } from '../clock'
import { Invalid, Unauthorized, type FieldError } from '../errors'
import type { UserPrincipal } from '../principal'
import type { NotificationRow, NotificationStore } from '../store/notifications'
import { mailtoAddresses } from './delivery'
import { type EmailAlertsAnswer, type EmailAlertsInput, KNOWN_EVENT_CODES } from './email-alerts-model'
import { EMAIL_ADDRESS } from './notifications-service'

export interface EmailAlertsDeps {
  /** where a user's email alerts are kept (src/store/notifications.ts) */
  store: NotificationStore
  clock: Clock
  /** SMTP_URL is set: without it alerts cannot be enabled */
  smtpConfigured: boolean
}

export const EMAIL_NOT_CONFIGURED = 'email is not configured on this server: its operator has not set SMTP_URL (and SMTP_FROM), so no alert can be sent by email'

/** the codes as stored: each known, each once */
function checkEvents(codes: readonly string[]): string[] {
  const errors: FieldError[] = []
  const seen = new Map<string, number>()
  codes.forEach((code, i) => {
    if (!KNOWN_EVENT_CODES.has(code)) errors.push({ path: `/events/${i}`, message: `"${code.slice(0, 64)}" is not an event code the server knows (README "Alarm codes")` })
    const first = seen.get(code)
    if (first !== undefined) errors.push({ path: `/events/${i}`, message: `repeats /events/${first}; each code may appear once` })
    else seen.set(code, i)
  })
  if (errors.length > 0) throw new Invalid(errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors.slice(0, 20))
  return [...codes]
}

export function createEmailAlerts(deps: EmailAlertsDeps) {
  const { store, clock } = deps

  function answer(row: NotificationRow | null): EmailAlertsAnswer {
    return {
      enabled: row?.enabled ?? false,
      events: row ? (JSON.parse(row.events) as string[]) : [],
      address: row ? (mailtoAddresses(row.url)[0] ?? null) : null,
      email_configured: deps.smtpConfigured,
    }
  }

  return {
    async get(user: UserPrincipal): Promise<EmailAlertsAnswer> {
      return answer(await store.personal(user.userId))
    },

    /** Replaces the user's choice: events, enabled, and the address when sent. */
    async put(user: UserPrincipal, input: EmailAlertsInput, requestId: string | null): Promise<EmailAlertsAnswer> {
      const events = checkEvents(input.events)
      if (input.address !== undefined && !EMAIL_ADDRESS.test(input.address)) throw Invalid.field('/address', 'must be one email address, name@domain (no display name, spaces or commas)')
      if (input.enabled && !deps.smtpConfigured) throw Invalid.field('/enabled', EMAIL_NOT_CONFIGURED)
      if (input.enabled && events.length === 0) throw Invalid.field('/events', 'choose at least one event, or send enabled: false')
      const saved = await store.savePersonal(
        user.userId,
        { events, enabled: input.enabled, address: input.address, firstAddress: (url) => mailtoAddresses(url)[0] },
        clock.now(),
        requestId,
      )
      if (saved === 'no-user') throw new Unauthorized('The signed-in user no longer exists', false)
      if (saved === 'no-address') throw Invalid.field('/address', 'is required: the address the mails go to')
      return answer(saved)
    },
  }
}

export type EmailAlertsService = ReturnType<typeof createEmailAlerts>
