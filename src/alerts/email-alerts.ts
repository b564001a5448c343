/**
 * /me/email-alerts (any signed-in user; a share token gets 403): which events the user is told of
 * by email. The routes parse, call the service (email-alerts-service.ts) and shape the answer.
 */
import { Elysia } from 'elysia'
import type { authPlugin } from '../http/auth'
import { asUser } from '../http/auth'
import { responses } from '../http/model'
import { loggedRequestId } from '../ops/requests'
import { EmailAlerts, EmailAlertsBody } from './email-alerts-model'
import { createEmailAlerts, type EmailAlertsDeps } from './email-alerts-service'

const TAGS = ['Notifications']
const WHO = "Any signed-in user, member or admin (API key or session cookie), for themselves only; a share token gets 403."
const REACH =
  'Mails go out for events of the devices the user reaches at the time of the event (an admin: every device of the account; a member: the devices of their groups), ' +
  'so a change of their groups or role counts from the next event; through the same outbox, retries and mail as an email channel (POST /notifications). ' +
  "These alerts are the user's own: the admins' /notifications neither lists nor changes them, and they go with the user when the user is deleted."

export function emailAlertRoutes(auth: ReturnType<typeof authPlugin>, deps: EmailAlertsDeps) {
  const alerts = createEmailAlerts(deps)
  return new Elysia({ name: 'email-alerts' })
    .use(auth)
    .get('/me/email-alerts', ({ principal }) => alerts.get(asUser(principal)), {
      auth: 'user',
      detail: {
        tags: TAGS,
        summary: 'Your email alerts',
        description:
          'Which events you are told of by email, and where: `{ enabled, events, address, email_configured }` (`enabled: false`, `events: []`, `address: null` until saved). ' +
          `\`email_configured\` says whether the server can send email at all (SMTP_URL). ${REACH} ${WHO}`,
        responses: responses({ 200: { schema: EmailAlerts, description: 'Your email alerts' } }, 401, 403, 429),
      },
    })
    .put(
      '/me/email-alerts',
      ({ principal, body, set }) => alerts.put(asUser(principal), body, loggedRequestId(set)),
      {
        auth: 'user',
        body: EmailAlertsBody,
        detail: {
          tags: TAGS,
          summary: 'Choose your email alerts',
          description:
            'Replaces your choice: `events` (known alarm codes, each once; an unknown code is 400 naming it), `enabled`, and `address` when sent (else the saved one; ' +
            'required the first time). Enabling needs the server to send email: without SMTP_URL it is 400 saying email is not configured on this server, ' +
            'and nothing changes; `enabled: false` is always accepted. Enabled with no event is 400. Recorded in the audit log (`email_alerts`, object the user). ' +
            `Answers as GET. ${REACH} ${WHO}`,
          responses: responses({ 200: { schema: EmailAlerts, description: 'Saved; your email alerts' } }, 400, 401, 403, 429, 504),
        },
      },
    )
}
