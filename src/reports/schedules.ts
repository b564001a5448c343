/**
 * Scheduled reports (contracts/reports.md, "Scheduled reports"): who may see and change which
 * schedule, and what a schedule may say. Admins manage every schedule of their account; members
 * their own (another's is 404 to them). A schedule's report is produced as its owner, the user who
 * made it (src/reports/scheduler.ts).
 */
import { randomUUID } from 'node:crypto'
import { EMAIL_ADDRESS } from '../alerts/notifications-service'
import type { Clock } from '../clock'
import { type DeviceAccess, isAccountAdmin } from '../devices/access'
import { type FieldError, Invalid, NotFound } from '../errors'
import type { UserPrincipal } from '../principal'
import type { NotificationStore } from '../store/notifications'
import type { PeopleStore } from '../store/people'
import { decodeList, encodeList, type ReportScheduleStore, type RunRow, type ScheduleRow } from '../store/reportSchedules'
import { checkZone } from '../timezone'
import { formatsOf } from './formats'
import { SCHEDULE_PERIODS, type SchedulePeriod } from './periods'
import { MAX_REPORT_DEVICES } from './service'
import { REPORT_KINDS, type ReportKind } from './types'

export const MAX_SCHEDULE_RECIPIENTS = 20
export const MAX_SCHEDULE_NAME_LENGTH = 100
export const MAX_SCHEDULES_PER_ACCOUNT = 500
const AT = /^([01][0-9]|2[0-3]):[0-5][0-9]$/
const ID = /^[0-9a-fA-F-]{36}$/

export const SMTP_NOT_CONFIGURED = 'the server cannot send email: its operator has not set SMTP_URL (and SMTP_FROM); use a webhook instead'

/** A schedule as the API shows it. */
export interface ScheduleView {
  id: string
  name: string
  kind: ReportKind
  devices: string[]
  groups: string[]
  period: SchedulePeriod
  at: string
  tz: string
  format: string
  to: string[]
  webhook: string | null
  enabled: boolean
  /** the user the report is produced as */
  owner: string
  created_at: number
  updated_at: number
  /** its newest run (scheduled or asked for), null before the first */
  last_run: RunView | null
}

export interface RunView {
  id: string
  period: { from: number; to: number }
  status: string
  attempts: number
  error: string | null
  /** Unix seconds */
  created_at: number
  sent_at: number | null
  next_attempt_at: number | null
  /** POST …/run rather than the schedule's own time */
  manual: boolean
}

export const scheduleView = (row: ScheduleRow, lastRun: RunRow | null): ScheduleView => ({
  id: row.id,
  name: row.name,
  kind: row.kind as ReportKind,
  devices: decodeList(row.devices),
  groups: decodeList(row.groups),
  period: row.period as SchedulePeriod,
  at: row.at,
  tz: row.tz,
  format: row.format,
  to: decodeList(row.recipients),
  webhook: row.webhookId,
  enabled: row.enabled,
  owner: row.userId,
  created_at: Math.floor(row.createdAt / 1000),
  updated_at: Math.floor(row.updatedAt / 1000),
  last_run: lastRun === null ? null : runView(lastRun),
})

const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000))
export const runView = (row: RunRow): RunView => ({
  id: row.id,
  period: { from: row.periodFrom, to: row.periodTo },
  status: row.status,
  attempts: row.attempts,
  error: row.error,
  created_at: Math.floor(row.createdAt / 1000),
  sent_at: seconds(row.sentAt),
  next_attempt_at: row.status === 'queued' ? seconds(row.nextAttemptAt) : null,
  manual: row.periodKey === null,
})

/** What a POST or PATCH may say (the route's schema takes any JSON object: every check is here, with its path). */
export type ScheduleInput = Record<string, unknown>

export interface ScheduleServiceDeps {
  store: ReportScheduleStore
  notifications: Pick<NotificationStore, 'find'>
  people: Pick<PeopleStore, 'timezoneOf' | 'findGroup'>
  access: Pick<DeviceAccess, 'reachableKeys'>
  clock: Clock
  /** SMTP_URL is set: without it an email schedule is refused */
  smtpConfigured: boolean
  /** sends the last period's report now (the scheduler) */
  runNow(schedule: ScheduleRow): Promise<RunRow>
}

const FIELDS = ['name', 'kind', 'devices', 'groups', 'period', 'at', 'tz', 'format', 'to', 'webhook', 'enabled'] as const

export function createScheduleService(deps: ScheduleServiceDeps) {
  const { store } = deps

  /** the schedule if the user may see it: an admin any of the account's, a member their own */
  async function visible(user: UserPrincipal, id: string): Promise<ScheduleRow> {
    const row = ID.test(id) ? await store.find(user.accountId, id.toLowerCase()) : null
    if (!row || (!isAccountAdmin(user) && row.userId !== user.userId)) throw new NotFound(`No report schedule ${id}`)
    return row
  }

  function idList(value: unknown, path: string, errors: FieldError[]): string[] {
    if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || !ID.test(v))) {
      errors.push({ path, message: 'must be an array of ids' })
      return []
    }
    if (value.length > MAX_REPORT_DEVICES) errors.push({ path, message: `names at most ${MAX_REPORT_DEVICES}; got ${value.length}` })
    return [...new Set((value as string[]).map((v) => v.toLowerCase()))]
  }

  /**
   * The row as it will be after `input` over `base` (every field checked, every error at once, as
   * 400 with their paths); the webhook checked last (404 when not a channel the user may use).
   */
  async function checked(user: UserPrincipal, base: ScheduleRow, input: ScheduleInput, creating: boolean): Promise<ScheduleRow> {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new Invalid('The body must be a JSON object')
    const errors: FieldError[] = []
    for (const key of Object.keys(input)) if (!(FIELDS as readonly string[]).includes(key)) errors.push({ path: `/${key}`, message: `is not a field of a schedule (${FIELDS.join(', ')})` })
    const row = { ...base }
    const has = (key: string) => key in input && input[key] !== undefined
    if (creating) for (const key of ['name', 'kind', 'period', 'at', 'format']) if (!has(key)) errors.push({ path: `/${key}`, message: 'is required' })
    if (has('name')) {
      const name = input.name
      if (typeof name !== 'string' || name.trim().length === 0 || name.length > MAX_SCHEDULE_NAME_LENGTH) errors.push({ path: '/name', message: `must be a text of 1 to ${MAX_SCHEDULE_NAME_LENGTH} characters` })
      else row.name = name.trim()
    }
    if (has('kind')) {
      if (!(REPORT_KINDS as readonly unknown[]).includes(input.kind)) errors.push({ path: '/kind', message: `must be one of ${REPORT_KINDS.join(', ')}` })
      else row.kind = input.kind as string
    }
    if (has('devices')) row.devices = encodeList(idList(input.devices, '/devices', errors))
    if (has('groups')) row.groups = encodeList(idList(input.groups, '/groups', errors))
    if (has('period')) {
      if (!(SCHEDULE_PERIODS as readonly unknown[]).includes(input.period)) errors.push({ path: '/period', message: `must be one of ${SCHEDULE_PERIODS.join(', ')}` })
      else row.period = input.period as string
    }
    if (has('at')) {
      if (typeof input.at !== 'string' || !AT.test(input.at)) errors.push({ path: '/at', message: 'must be a local time HH:MM (00:00 to 23:59)' })
      else row.at = input.at
    }
    if (has('tz')) {
      try {
        row.tz = typeof input.tz === 'string' ? checkZone(input.tz, '/tz') : checkZone('', '/tz')
      } catch (error) {
        errors.push(...((error as Invalid).errors ?? [{ path: '/tz', message: 'must be an IANA time zone' }]))
      }
    }
    if (has('format')) {
      if (typeof input.format !== 'string') errors.push({ path: '/format', message: 'must be csv, xlsx, gpx or kml' })
      else row.format = input.format.toLowerCase()
    }
    if (has('to')) {
      const to = input.to
      if (!Array.isArray(to) || to.length > MAX_SCHEDULE_RECIPIENTS || to.some((a) => typeof a !== 'string' || a.length > 254 || !EMAIL_ADDRESS.test(a))) {
        errors.push({ path: '/to', message: `must be an array of at most ${MAX_SCHEDULE_RECIPIENTS} email addresses (name@domain)` })
      } else row.recipients = encodeList([...new Set(to as string[])])
    }
    if (has('webhook') || ('webhook' in input && input.webhook === null)) {
      const webhook = input.webhook
      if (webhook !== null && (typeof webhook !== 'string' || !ID.test(webhook))) errors.push({ path: '/webhook', message: 'must be the id of a webhook notification channel, or null' })
      else row.webhookId = webhook === null ? null : (webhook as string).toLowerCase()
    }
    if (has('enabled')) {
      if (typeof input.enabled !== 'boolean') errors.push({ path: '/enabled', message: 'must be true or false' })
      else row.enabled = input.enabled
    }
    if (errors.length === 0) {
      const files: readonly string[] = formatsOf(row.kind as ReportKind)
      if (!files.includes(row.format)) errors.push({ path: '/format', message: `a ${row.kind} report is sent as ${files.join(' or ')}; got ${JSON.stringify(row.format)}` })
      const recipients = decodeList(row.recipients)
      if (recipients.length === 0 && row.webhookId === null) errors.push({ path: '/to', message: 'a schedule sends to at least one address in `to` or to a `webhook` channel' })
      if (recipients.length > 0 && !deps.smtpConfigured) errors.push({ path: '/to', message: SMTP_NOT_CONFIGURED })
    }
    if (errors.length > 0) throw new Invalid(errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors)
    // devices and groups newly named must be the user's to name (404, as GET /reports/{kind} answers)
    const before = { devices: new Set(decodeList(base.devices)), groups: new Set(decodeList(base.groups)) }
    const newDevices = decodeList(row.devices).filter((id) => !before.devices.has(id))
    if (newDevices.length > 0) {
      const reached = await deps.access.reachableKeys(user, newDevices)
      const missing = newDevices.find((id) => !reached.has(id))
      if (missing !== undefined) throw new NotFound(`No device ${missing}`)
    }
    const viewer = { accountId: user.accountId, userId: user.userId, admin: isAccountAdmin(user) }
    for (const id of decodeList(row.groups).filter((id) => !before.groups.has(id))) {
      if (!(await deps.people.findGroup(viewer, id))) throw new NotFound(`No group ${id}`)
    }
    if (row.webhookId !== null && row.webhookId !== base.webhookId) {
      const channel = await deps.notifications.find(user.accountId, row.webhookId)
      // an account channel of type webhook (not a user's own email alerts, not email or Telegram)
      if (!channel || channel.userId !== null || channel.channelType !== 'webhook') throw new NotFound(`No webhook notification channel ${row.webhookId}`)
    }
    return row
  }

  /** the schedules as the API shows them, each with its last run (one read for all) */
  async function viewed(rows: ScheduleRow[]): Promise<ScheduleView[]> {
    const last = new Map((await store.lastRuns(rows.map((row) => row.id))).map((run) => [run.scheduleId, run]))
    return rows.map((row) => scheduleView(row, last.get(row.id) ?? null))
  }

  return {
    async list(user: UserPrincipal): Promise<ScheduleView[]> {
      return viewed(await store.list(user.accountId, isAccountAdmin(user) ? null : user.userId))
    },
    async get(user: UserPrincipal, id: string): Promise<ScheduleView> {
      return (await viewed([await visible(user, id)]))[0]!
    },
    async create(user: UserPrincipal, input: ScheduleInput): Promise<ScheduleView> {
      const nowMs = deps.clock.now()
      const own = await deps.people.timezoneOf(user.userId)
      const base: ScheduleRow = {
        id: randomUUID(),
        accountId: user.accountId,
        userId: user.userId,
        name: '',
        kind: '',
        devices: '[]',
        groups: '[]',
        period: '',
        at: '',
        tz: own?.timezone ?? 'UTC',
        format: '',
        recipients: '[]',
        webhookId: null,
        enabled: true,
        createdAt: nowMs,
        updatedAt: nowMs,
      }
      const row = await checked(user, base, input, true)
      if ((await store.list(user.accountId, null)).length >= MAX_SCHEDULES_PER_ACCOUNT) throw new Invalid(`An account has at most ${MAX_SCHEDULES_PER_ACCOUNT} report schedules`)
      await store.create(row)
      return scheduleView(row, null)
    },
    async update(user: UserPrincipal, id: string, input: ScheduleInput): Promise<ScheduleView> {
      const current = await visible(user, id)
      const row = await checked(user, current, input, false)
      const { id: _, accountId: __, userId: ___, createdAt: ____, ...fields } = row
      const updated = await store.update(current.accountId, current.id, { ...fields, updatedAt: deps.clock.now() })
      if (!updated) throw new NotFound(`No report schedule ${id}`)
      return (await viewed([updated]))[0]!
    },
    async remove(user: UserPrincipal, id: string): Promise<void> {
      const current = await visible(user, id)
      if (!(await store.remove(current.accountId, current.id))) throw new NotFound(`No report schedule ${id}`)
    },
    async runs(user: UserPrincipal, id: string, limit: number): Promise<RunView[]> {
      const current = await visible(user, id)
      return (await store.runs(current.id, limit)).map(runView)
    },
    async runNow(user: UserPrincipal, id: string): Promise<RunView> {
      return runView(await deps.runNow(await visible(user, id)))
    },
  }
}

export type ScheduleService = ReturnType<typeof createScheduleService>
