/**
 * /reports/schedules: scheduled reports' CRUD, their runs, and a run now (src/reports/schedules.ts
 * decides; src/reports/scheduler.ts sends). Every check is the service's, so a bad field is a 400
 * naming its path (never 422).
 */
import { Elysia, t } from 'elysia'
import { asUser, type authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { SCHEDULE_PERIODS } from './periods'
import { MAX_SCHEDULE_NAME_LENGTH, MAX_SCHEDULE_RECIPIENTS, MAX_SCHEDULES_PER_ACCOUNT, type ScheduleService } from './schedules'
import { LOOK_EVERY_MS } from './scheduler'
import { REPORT_KINDS } from './types'

const TAGS = ['Reports']

const Run = t.Object({
  id: t.String({ format: 'uuid', description: 'Also the X-Tracker-Delivery header of every attempt' }),
  period: t.Object({ from: t.Integer(), to: t.Integer() }, { description: 'The period reported, Unix seconds: its first second and the first second after it' }),
  status: t.String({ description: 'queued (not sent yet, or retrying), sent, or failed (still failing 24 h after the run was written)' }),
  attempts: t.Integer(),
  error: t.Union([t.String(), t.Null()], { description: 'Why the last attempt failed; null when none did' }),
  created_at: t.Integer({ description: 'Unix seconds' }),
  sent_at: t.Union([t.Integer(), t.Null()], { description: 'Unix seconds' }),
  next_attempt_at: t.Union([t.Integer(), t.Null()], { description: 'Unix seconds, while queued' }),
  manual: t.Boolean({ description: 'true: asked for with POST …/run' }),
})

const Schedule = t.Object({
  id: t.String({ format: 'uuid' }),
  name: t.String({ description: `1 to ${MAX_SCHEDULE_NAME_LENGTH} characters; names the mail's subject` }),
  kind: t.String({ description: REPORT_KINDS.join(', ') }),
  devices: t.Array(t.String(), { description: 'Device ids (as GET /reports/{kind} takes them); with `groups` empty too: every device the owner reaches when it is sent' }),
  groups: t.Array(t.String(), { description: 'Group ids: their devices the owner reaches when it is sent' }),
  period: t.String({ description: `${SCHEDULE_PERIODS.join(', ')}: the previous local day, the previous week (Monday to Sunday) or the previous month, in \`tz\`` }),
  at: t.String({ description: 'HH:MM, local time in `tz`, on the first day after the period', examples: ['07:00'] }),
  tz: t.String({ description: "An IANA zone (default: the creator's own timezone, else UTC): the periods' boundaries, the time `at` and the local times in the file" }),
  format: t.String({ description: 'csv or xlsx; gpx or kml too for route' }),
  to: t.Array(t.String(), { description: `Up to ${MAX_SCHEDULE_RECIPIENTS} email addresses: one mail to all of them with the file attached (needs SMTP_URL)` }),
  webhook: t.Union([t.String(), t.Null()], { description: 'A webhook notification channel of the account: the file is POSTed to it; null: none' }),
  enabled: t.Boolean(),
  owner: t.String({ description: 'The user the report is produced as (who made the schedule): their reach when it is sent' }),
  created_at: t.Integer({ description: 'Unix seconds' }),
  updated_at: t.Integer({ description: 'Unix seconds' }),
  last_run: t.Union([Run, t.Null()], { description: 'Its newest run, scheduled or asked for (as GET …/runs lists them); null before the first' }),
})


/** any JSON object: the service checks each field and answers 400 with its path */
const Body = t.Record(t.String(), t.Unknown(), {
  description:
    '`name`, `kind`, `period`, `at` and `format` are required at creation; `devices`, `groups` (default []), `tz`, `to` (default []), `webhook` (default null), `enabled` (default true). ' +
    'A PATCH changes what it names. At least one address in `to` or a `webhook`.',
})

const WHO =
  'Admins see and manage every schedule of their account; a member sees and manages only their own (another\'s is 404). A share token gets 403. '
const SENDING =
  `At \`at\` in \`tz\` on the first day after each period, the report of that period is produced once (the run is written before it is sent, unique per schedule and period, ` +
  `so a restart or another node never sends it again; the scheduler looks every ${LOOK_EVERY_MS / 1000} s, on one node at a time) as the schedule's owner: devices and groups they no longer reach are left out. ` +
  'Only the latest period due is sent, and none whose time had passed before the schedule was made. By email: one mail to every address of `to`, from SMTP_FROM, ' +
  'subject `<name>: <kind> report, <period>`, the file attached under its report name (`trips-2026-11-02-2026-11-08.xlsx`). To a webhook: a POST whose body is the file itself ' +
  '(its Content-Type, `Content-Disposition: attachment; filename=…`, `X-Tracker-Delivery: <run id>`, and, when the channel has a secret, `X-Tracker-Signature: t=<unix s>,v1=<hex HMAC-SHA256 of "t." followed by the file\'s bytes>`), ' +
  'through the webhooks\' SSRF guard; a 2xx is sent. A failure is retried after 10 s, doubling, at most 1 h apart, for 24 h; then the run is `failed` (GET …/runs). A schedule with both retries both.'

export function scheduleRoutes(auth: ReturnType<typeof authPlugin>, service: ScheduleService) {
  return new Elysia({ name: 'report-schedules', prefix: '/reports/schedules' })
    .use(auth)
    .get('', ({ principal }) => service.list(asUser(principal)), {
      auth: 'user',
      detail: { tags: TAGS, summary: 'Scheduled reports', description: `The schedules you see, by name then id. ${WHO}`, responses: responses({ 200: { schema: t.Array(Schedule), description: 'The schedules' } }, 401, 403, 429) },
    })
    .post(
      '',
      async ({ principal, body, set }) => {
        const created = await service.create(asUser(principal), body)
        set.status = 201
        set.headers.location = `/reports/schedules/${created.id}`
        return created
      },
      {
        auth: 'user',
        body: Body,
        detail: {
          tags: TAGS,
          summary: 'Schedule a report',
          description:
            `201 with the schedule and its Location. You are its owner: it is produced with your reach. Every field is checked, every fault a 400 naming its path; ` +
            'without SMTP_URL on the server, a schedule with addresses in `to` is 400 naming SMTP_URL. Devices and groups named must be ones you reach (404 otherwise). `webhook` must be a webhook notification channel of your account ' +
            `(404 otherwise; an admin makes them with POST /notifications). At most ${MAX_SCHEDULES_PER_ACCOUNT} schedules an account. ${SENDING} ${WHO}`,
          responses: responses({ 201: { schema: Schedule, description: 'The new schedule' } }, 400, 401, 403, 404, 429),
        },
      },
    )
    .get('/:id', ({ principal, params }) => service.get(asUser(principal), params.id), {
      auth: 'user',
      params: IdParams,
      detail: { tags: TAGS, summary: 'One scheduled report', description: WHO, responses: responses({ 200: { schema: Schedule, description: 'The schedule' } }, 400, 401, 403, 404, 429) },
    })
    .patch('/:id', ({ principal, params, body }) => service.update(asUser(principal), params.id, body), {
      auth: 'user',
      params: IdParams,
      body: Body,
      detail: {
        tags: TAGS,
        summary: 'Change a scheduled report',
        description: `What is given, checked as at creation (the whole schedule must still hold: a format its kind has, an address or a webhook). The owner stays who made it. ${WHO}`,
        responses: responses({ 200: { schema: Schedule, description: 'The schedule as it is now' } }, 400, 401, 403, 404, 429),
      },
    })
    .delete(
      '/:id',
      async ({ principal, params }) => {
        await service.remove(asUser(principal), params.id)
        return new Response(null, { status: 204 })
      },
      {
        auth: 'user',
        params: IdParams,
        detail: { tags: TAGS, summary: 'Delete a scheduled report', description: `204; its runs go with it. ${WHO}`, responses: responses({ 204: { description: 'Deleted' } }, 400, 401, 403, 404, 429) },
      },
    )
    .get('/:id/runs', ({ principal, params, query }) => service.runs(asUser(principal), params.id, query.limit), {
      auth: 'user',
      params: IdParams,
      query: t.Object({ limit: t.Integer({ title: 'limit', minimum: 1, maximum: 1000, default: 99, description: 'Maximum number of runs (1–1000)' }) }),
      detail: {
        tags: TAGS,
        summary: "A scheduled report's runs",
        description: `Newest first: each period sent (or being sent), its status, attempts, last error and when it was sent. ${WHO}`,
        responses: responses({ 200: { schema: t.Array(Run), description: 'The runs' } }, 400, 401, 403, 404, 429),
      },
    })
    .post(
      '/:id/run',
      async ({ principal, params, set }) => {
        const run = await service.runNow(asUser(principal), params.id)
        set.status = 201
        return run
      },
      {
        auth: 'user',
        params: IdParams,
        detail: {
          tags: TAGS,
          summary: 'Send a scheduled report now',
          description:
            'For testing a schedule: the report of the last period that has ended (yesterday, last week, last month in `tz`, whatever `at`) is produced and sent now, ' +
            'as a run of its own (`manual: true`; it does not stand for the scheduled one). 201 with the run once the first attempt is over: `sent`, or `queued` with its error, ' +
            `retried as the scheduled runs are. ${WHO}`,
          responses: responses({ 201: { schema: Run, description: 'The run' } }, 400, 401, 403, 404, 429),
        },
      },
    )
}
