/**
 * /notifications routes (account admins): channels, their deliveries, a test delivery. They parse,
 * call the service (notifications-service.ts) and shape the answer.
 */
import { Elysia, t } from 'elysia'
import { actorOf } from '../admin/actor'
import { PageQuery } from '../admin/model'
import type { Clock } from '../clock'
import { asUser, type authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { loggedRequestId } from '../ops/requests'
import type { UserPrincipal } from '../principal'
import type { NotificationStore } from '../store/notifications'
import { createSender, DEFAULT_MESSAGING, type MessagingSettings } from './delivery'
import { CreateNotificationBody, DeliveriesQuery, Delivery, Notification, UpdateNotificationBody } from './notifications-model'
import { createNotificationService } from './notifications-service'
import { createWebhookGuard, type WebhookGuard } from './ssrf'

export interface NotificationRoutesDeps {
  /** the channels and their deliveries (src/store/notifications.ts) */
  store: NotificationStore
  clock: Clock
  /** WEBHOOK_ALLOW_PRIVATE */
  allowPrivate: boolean
  /** tests: another address rule or resolver */
  guard?: WebhookGuard
  /** SMTP_URL, SMTP_FROM, TELEGRAM_API_URL, APP_URL: email and Telegram channels */
  messaging?: MessagingSettings
}

const TAGS = ['Notifications']
const ADMIN_ONLY = "For account admins: a member or a share token gets 403; another account's notification is 404."
const BODIES =
  "Unknown fields are 400, and so is a bad field, named in `errors[].path`; a group that is not your account's is 404 naming its place (`/groups/1`). " +
  'The change is in the audit log (never the secret). One transaction: a refused request changes nothing.'
const DELIVERY =
  'Each delivery is a `POST` of `application/json` `{ id, type: "event", event, sent_at }` (`event` as GET /events shows it, with `device: { id, alias }`) ' +
  'or `{ id, type: "positions", positions: [{ device, timestamp, latitude, longitude, speed, course, altitude, attributes }], sent_at }` (`device`: the device id; ' +
  'up to 500 fixes, in order per device), with `X-Tracker-Delivery: <id>` (the same on retries: deduplicate by it) and, when a secret is set, ' +
  '`X-Tracker-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body" with the secret>`. A 2xx within 10 s is delivered; redirects are not followed ' +
  '(a 3xx is a failure). Failures are retried after 10 s, doubling, at most 1 h apart, for 24 h; then `dead`. ' +
  'Attempts in flight are shared fairly: at most 10 at once; while several accounts have deliveries due each gets an equal share, an account alone at most 8, ' +
  'a channel at most 4; a channel whose attempt times out holds one slot until it answers and its pending deliveries wait 10 s doubling to 1 h ' +
  '(their `next_attempt_at` says so): one account\'s hanging receivers never hold another\'s deliveries. ' +
  'An email channel sends each event as a mail (subject `[<account>] <alias>: <event in words>`, text and HTML naming the vehicle, the event as the console words it, the time in UTC, ' +
  'the place as the offline "City, CC" and a console link `APP_URL/#/devices/<id>`) through SMTP_URL from SMTP_FROM: accepted by the SMTP server is delivered, an SMTP 4xx or 5xx reply is a failure ' +
  '(its code in `last_status_code`). A Telegram channel posts the same text to `TELEGRAM_API_URL/bot<token>/sendMessage` as `{ chat_id, text }`: a 2xx with `"ok": true` is delivered. ' +
  'Both go through the same outbox, retries, fair slots and deliveries list as webhooks; the SMTP host and the Telegram API are the operator\'s and not subject to the SSRF guard.'

export function notificationRoutes(auth: ReturnType<typeof authPlugin>, deps: NotificationRoutesDeps) {
  const guard = deps.guard ?? createWebhookGuard({ allowPrivate: deps.allowPrivate })
  const messaging = deps.messaging ?? DEFAULT_MESSAGING
  const service = createNotificationService({ store: deps.store, clock: deps.clock, guard, send: createSender({ guard, messaging }), smtpConfigured: messaging.smtpUrl !== null })
  const by = (principal: UserPrincipal, set: { headers: Record<string, unknown> }) => actorOf(principal, loggedRequestId(set))

  return new Elysia({ name: 'notifications', prefix: '/notifications' })
    .use(auth)
    .get('', ({ principal, query, set }) => service.list(by(asUser(principal), set), query), {
      auth: 'admin',
      query: PageQuery,
      detail: {
        tags: TAGS,
        summary: 'Notification channels',
        description: `The account's channels, by name then id; \`limit\` 1–1000 (default 99), \`offset\`; \`[]\` when empty. ${ADMIN_ONLY}`,
        responses: responses({ 200: { schema: t.Array(Notification), description: 'The channels' } }, 400, 401, 403, 429),
      },
    })
    .get('/:id', ({ principal, params, set }) => service.get(by(asUser(principal), set), params.id), {
      auth: 'admin',
      params: IdParams,
      detail: {
        tags: TAGS,
        summary: 'One notification channel',
        description: `The secret is never shown: \`channel.secret_set\` says whether there is one. ${ADMIN_ONLY}`,
        responses: responses({ 200: { schema: Notification, description: 'The channel' } }, 400, 401, 403, 404, 429),
      },
    })
    .post(
      '',
      async ({ principal, body, set }) => {
        const created = await service.create(by(asUser(principal), set), body)
        set.status = 201
        set.headers.location = `/notifications/${created.id}`
        return created
      },
      {
        auth: 'admin',
        body: CreateNotificationBody,
        detail: {
          tags: TAGS,
          summary: 'Create a notification channel',
          description:
            '201 with the channel and its Location. An events channel lists alarm codes in `events` (or `["*"]`); a positions channel (`channel.positions: true`, ' +
            'for integrators) takes no `events` and receives every fix its devices store. `groups` narrows it to devices of those groups. ' +
            'Matching events and fixes are written to an outbox in the same transaction as they are stored, and delivered at least once. ' +
            `${DELIVERY} ${BODIES} ${ADMIN_ONLY}`,
          responses: responses({ 201: { schema: Notification, description: 'The new channel' } }, 400, 401, 403, 404, 429, 504),
        },
      },
    )
    .patch('/:id', ({ principal, params, body, set }) => service.update(by(asUser(principal), set), params.id, body), {
      auth: 'admin',
      params: IdParams,
      body: UpdateNotificationBody,
      detail: {
        tags: TAGS,
        summary: 'Change a notification channel',
        description:
          'Only the fields sent change (`groups` and `events` replace; in `channel`, each field sent; the secret stays unless sent, `null` removes it). ' +
          'Turning a channel into a positions channel drops its events. Pending deliveries go to the new URL at their next attempt; while `enabled` is false they wait. ' +
          `${BODIES} ${ADMIN_ONLY}`,
        responses: responses({ 200: { schema: Notification, description: 'The channel' } }, 400, 401, 403, 404, 429, 504),
      },
    })
    .delete(
      '/:id',
      async ({ principal, params, set }) => {
        await service.remove(by(asUser(principal), set), params.id)
        return new Response(null, { status: 204 })
      },
      {
        auth: 'admin',
        params: IdParams,
        detail: {
          tags: TAGS,
          summary: 'Delete a notification channel',
          description: `204. Its deliveries, pending ones included, go with it. ${ADMIN_ONLY}`,
          responses: responses({ 204: { description: 'Deleted' } }, 400, 401, 403, 404, 429, 504),
        },
      },
    )
    .get('/:id/deliveries', ({ principal, params, query, set }) => service.deliveries(by(asUser(principal), set), params.id, query), {
      auth: 'admin',
      params: IdParams,
      query: DeliveriesQuery,
      detail: {
        tags: TAGS,
        summary: "A channel's deliveries",
        description:
          'Newest first; `limit` 1–1000 (default 99), `offset`; `[]` when empty. `status`: `pending` (waiting for its next attempt), `delivered` or `dead`. ' +
          'A batch of fixes shows how many it held (`positions`), an event delivery the event. Delivered and dead deliveries are kept 7 days. ' +
          `${ADMIN_ONLY}`,
        responses: responses({ 200: { schema: t.Array(Delivery), description: 'The deliveries' } }, 400, 401, 403, 404, 429),
      },
    })
    .post('/:id/test', ({ principal, params, set }) => service.test(by(asUser(principal), set), params.id), {
      auth: 'admin',
      params: IdParams,
      detail: {
        tags: TAGS,
        summary: 'Send a test delivery now',
        description:
          '200 with the outcome, whatever it is: `status` `delivered` (a 2xx came) or `dead` (with `last_status_code` and `last_error`); never retried. ' +
          'The body is `{ id, type: "test", notification: { id, name }, sent_at }`, signed and checked by the SSRF guard as any delivery, sent even when the channel is disabled; ' +
          `the answer waits for the receiver (at most 10 s). It is kept in the deliveries list. ${ADMIN_ONLY}`,
        responses: responses({ 200: { schema: Delivery, description: 'The test delivery and its outcome' } }, 400, 401, 403, 404, 429, 504),
      },
    })
}
