/**
 * A user's own email alerts (PUT /me/email-alerts): which events they are told of by email, at
 * which address. Stored as a notifications row with `user_id` set: an email channel that the
 * outbox (outbox.ts) matches only against the devices the user reaches, and that the admins'
 * /notifications neither lists nor changes. Each change is one transaction with its audit entry
 * (`update` or `create` of `email_alerts`, object the user), retried while another process holds
 * the write lock.
 */
import type { Database } from 'bun:sqlite'
import { eq } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { notifications, users } from '../../db/schema'
import type { AuditLog } from '../admin/audit'
import type { Clock } from '../clock'
import { Invalid, Unauthorized, type FieldError } from '../errors'
import type { UserPrincipal } from '../principal'
import { retryWhileBusy } from '../store/busy'
import { mailtoAddresses } from './delivery'
import { type EmailAlertsAnswer, type EmailAlertsInput, KNOWN_EVENT_CODES } from './email-alerts-model'
import { EMAIL_ADDRESS } from './notifications-service'

export interface EmailAlertsDeps {
  db: Db
  sqlite: Database
  clock: Clock
  audit: AuditLog
  /** SMTP_URL is set: without it alerts cannot be enabled */
  smtpConfigured: boolean
}

/** what a personal row is called (the admins never see it; a mail's subject does not name it) */
const ROW_NAME = 'Email alerts'

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
  const { db, sqlite, clock, audit } = deps
  const rowOf = (userId: string) => db.select().from(notifications).where(eq(notifications.userId, userId)).get()

  function answer(row: typeof notifications.$inferSelect | undefined): EmailAlertsAnswer {
    return {
      enabled: row?.enabled ?? false,
      events: row ? (JSON.parse(row.events) as string[]) : [],
      address: row ? (mailtoAddresses(row.url)[0] ?? null) : null,
      email_configured: deps.smtpConfigured,
    }
  }

  return {
    get(user: UserPrincipal): EmailAlertsAnswer {
      return answer(rowOf(user.userId))
    },

    /** Replaces the user's choice: events, enabled, and the address when sent. */
    put(user: UserPrincipal, input: EmailAlertsInput, requestId: string | null): Promise<EmailAlertsAnswer> {
      const events = checkEvents(input.events)
      if (input.address !== undefined && !EMAIL_ADDRESS.test(input.address)) throw Invalid.field('/address', 'must be one email address, name@domain (no display name, spaces or commas)')
      if (input.enabled && !deps.smtpConfigured) throw Invalid.field('/enabled', EMAIL_NOT_CONFIGURED)
      if (input.enabled && events.length === 0) throw Invalid.field('/events', 'choose at least one event, or send enabled: false')
      return retryWhileBusy(
        sqlite,
        () => {
          const now = clock.now()
          db.transaction(
            () => {
              const owner = db.select({ accountId: users.accountId }).from(users).where(eq(users.id, user.userId)).get()
              if (!owner) throw new Unauthorized('The signed-in user no longer exists', false)
              const current = rowOf(user.userId)
              const address = input.address ?? (current ? mailtoAddresses(current.url)[0] : undefined)
              if (address === undefined) throw Invalid.field('/address', 'is required: the address the mails go to')
              const fields = { events: JSON.stringify(events), url: `mailto:${address}`, enabled: input.enabled, accountId: owner.accountId, updatedAt: now }
              if (current) db.update(notifications).set(fields).where(eq(notifications.id, current.id)).run()
              else {
                db.insert(notifications)
                  .values({ id: crypto.randomUUID(), name: ROW_NAME, groups: '[]', positions: false, channelType: 'email', secret: null, userId: user.userId, createdAt: now, ...fields })
                  .run()
              }
              audit.record({ accountId: owner.accountId, actor: user.userId, action: current ? 'update' : 'create', objectType: 'email_alerts', objectId: user.userId, requestId }, now)
            },
            { behavior: 'immediate' },
          )
          return answer(rowOf(user.userId))
        },
        { clock },
      )
    },
  }
}

export type EmailAlertsService = ReturnType<typeof createEmailAlerts>
