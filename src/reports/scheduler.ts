/**
 * The report scheduler (contracts/reports.md, "Scheduled reports"). Each look (every
 * LOOK_EVERY_MS, and `tick()` in tests, which move the injected clock instead of sleeping):
 *
 * 1. For each enabled schedule, the latest period whose time has come (src/reports/periods.ts:
 *    `at` in `tz` on the day after the period) and that ended after the schedule was made: its run
 *    is written, `queued`, with the unique key `<schedule>/<period start>`. The row is written
 *    BEFORE anything is sent, so a restart, or another node, never sends a period twice (at most
 *    once: a crash between writing and sending leaves the run queued, and it is sent on the next
 *    look). Only the latest due period: a server down for days sends the last one, not each missed.
 * 2. Every queued run that is due is attempted: the report is produced as the schedule's owner
 *    (their reach now: a device or group they no longer reach is left out; when nothing named is
 *    left, the attempt fails saying so; a removed user's schedules went with them), rendered in
 *    the schedule's format, and sent: one mail to every address in `to` with the file attached
 *    (through SMTP_URL, as the alerts' mail), and/or one POST of the file itself to the webhook
 *    channel. A failure is retried after 10 s, doubling, at most 1 h apart (the alerts' backoff),
 *    for 24 h from the run's writing; a failure after that marks the run `failed`.
 *
 * Many nodes on one PostgreSQL: the whole look runs under the lease `report-schedules` (one node
 * at a time); on SQLite the lease is this process's own.
 */
import { createHmac, randomUUID } from 'node:crypto'
import { createTransport, type Transporter } from 'nodemailer'
import type SMTPTransport from 'nodemailer/lib/smtp-transport'
import pkg from '../../package.json'
import { ATTEMPT_TIMEOUT_MS, DELIVERY_HEADER, GIVE_UP_AFTER_MS, type MessagingSettings, retryDelayMs, SIGNATURE_HEADER } from '../alerts/delivery'
import { createWebhookGuard, type WebhookGuard } from '../alerts/ssrf'
import type { Clock } from '../clock'
import { isAccountAdmin, type DeviceAccess } from '../devices/access'
import type { Logger } from '../log'
import type { UserPrincipal } from '../principal'
import type { Leases } from '../store/leases'
import type { NotificationStore } from '../store/notifications'
import type { PeopleStore } from '../store/people'
import { decodeList, type ReportScheduleStore, type RunRow, type ScheduleRow } from '../store/reportSchedules'
import { type FileFormat, renderReport } from './formats'
import { lastDuePeriod, lastEndedPeriod, type SchedulePeriod } from './periods'
import type { ReportService } from './service'
import type { ReportKind } from './types'

/** how often the scheduler looks for due periods and runs when nobody asks it */
export const LOOK_EVERY_MS = 30_000
/** runs attempted by one look */
const RUNS_PER_LOOK = 20
const MAX_ERROR_LENGTH = 300
export const SCHEDULER_LEASE = 'report-schedules'
/** a run asked for by hand is attempted at once by its own node; another node's look waits this long first */
const MANUAL_HOLD_MS = 10 * 60_000

export interface ReportSchedulerDeps {
  store: ReportScheduleStore
  reports: Pick<ReportService, 'report'>
  access: Pick<DeviceAccess, 'reachableKeys'>
  people: Pick<PeopleStore, 'findUser' | 'findGroup'>
  notifications: Pick<NotificationStore, 'find'>
  clock: Clock
  leases: Leases
  log: Logger
  messaging: MessagingSettings
  /** WEBHOOK_ALLOW_PRIVATE */
  allowPrivate: boolean
  /** tests: a guard with another address rule */
  guard?: WebhookGuard
  timeoutMs?: number
}

/** a report file, whole in memory (a mail's attachment; a scheduled report is one period's) */
interface ReportAttachment {
  filename: string
  contentType: string
  bytes: Uint8Array<ArrayBuffer>
}

const bounded = (text: string) => (text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text)
const day = (seconds: number, tz: string) => new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' }).format(seconds * 1000)

/** "2026-11-02" for a day, "2026-11-02 to 2026-11-08" for a week, "2026-11" for a month: the subject's period */
export function periodLabel(period: SchedulePeriod, from: number, to: number, tz: string): string {
  const first = day(from, tz)
  if (period === 'day') return first
  if (period === 'month') return first.slice(0, 7)
  return `${first} to ${day(to - 1, tz)}`
}

export function createReportScheduler(deps: ReportSchedulerDeps) {
  const { store, clock, log } = deps
  const timeoutMs = deps.timeoutMs ?? ATTEMPT_TIMEOUT_MS
  const guard = deps.guard ?? createWebhookGuard({ allowPrivate: deps.allowPrivate })
  let mailer: Transporter | null = null
  let timer: ReturnType<typeof setInterval> | null = null
  /** each schedule's period key this scheduler has written (or found written) last */
  const written = new Map<string, string>()
  /** looks and run-now attempts, one after the other in this process */
  let queue: Promise<unknown> = Promise.resolve()
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work)
    queue = next.catch(() => undefined)
    return next
  }

  /** the report as a file, produced as the owner; throws with the reason it cannot be */
  async function produce(schedule: ScheduleRow, run: RunRow): Promise<ReportAttachment> {
    const owner = await deps.people.findUser(schedule.accountId, schedule.userId)
    if (!owner) throw new Error('the schedule\'s owner is gone')
    const principal: UserPrincipal = { kind: 'user', userId: owner.id, accountId: owner.accountId, role: owner.role, via: 'key' }
    const namedDevices = decodeList(schedule.devices)
    const namedGroups = decodeList(schedule.groups)
    // what the owner still reaches of what the schedule names; the rest is left out
    const devices = namedDevices.length ? [...(await deps.access.reachableKeys(principal, namedDevices)).keys()] : []
    const viewer = { accountId: owner.accountId, userId: owner.id, admin: isAccountAdmin(principal) }
    const groups: string[] = []
    for (const id of namedGroups) if (await deps.people.findGroup(viewer, id)) groups.push(id)
    if (namedDevices.length + namedGroups.length > 0 && devices.length + groups.length === 0) {
      throw new Error('none of the devices or groups the schedule names is reachable by its owner any more')
    }
    const document = await deps.reports.report(principal, {
      kind: schedule.kind as ReportKind,
      devices,
      groups,
      from: run.periodFrom,
      to: run.periodTo - 1,
      tz: schedule.tz,
      codes: [],
    })
    const file = renderReport(document, schedule.format as FileFormat)
    return { filename: file.filename, contentType: file.contentType, bytes: new Uint8Array(await new Response(file.body).arrayBuffer()) }
  }

  async function mail(schedule: ScheduleRow, run: RunRow, file: ReportAttachment): Promise<void> {
    const { smtpUrl, smtpFrom } = deps.messaging
    if (smtpUrl === null) throw new Error('SMTP_URL is not set: the server cannot send email')
    mailer ??= createTransport(smtpUrl, { connectionTimeout: timeoutMs, greetingTimeout: timeoutMs, socketTimeout: timeoutMs } as SMTPTransport.Options)
    const label = periodLabel(schedule.period as SchedulePeriod, run.periodFrom, run.periodTo, schedule.tz)
    try {
      await mailer.sendMail({
        from: smtpFrom ?? undefined,
        to: decodeList(schedule.recipients),
        subject: `${schedule.name}: ${schedule.kind} report, ${label}`,
        text: `${schedule.name}: the ${schedule.kind} report for ${label} (${schedule.tz}) is attached (${file.filename}).\n\n${deps.messaging.appUrl}/#/reports`,
        attachments: [{ filename: file.filename, content: Buffer.from(file.bytes), contentType: file.contentType }],
        messageId: `<${run.id}.${run.attempts + 1}@tracker>`,
        headers: { [DELIVERY_HEADER]: run.id },
      })
    } catch (error) {
      const smtp = error as { responseCode?: unknown; response?: unknown; code?: unknown; message?: unknown }
      if (typeof smtp.responseCode === 'number') throw new Error(`SMTP ${typeof smtp.response === 'string' ? smtp.response : smtp.responseCode}`)
      throw new Error(typeof smtp.code === 'string' ? `${smtp.code}: ${String(smtp.message)}` : String(smtp.message ?? error))
    }
  }

  /** the file itself as the body, named by Content-Disposition, signed as the channel's deliveries are (over `t.` and the bytes) */
  async function post(schedule: ScheduleRow, run: RunRow, file: ReportAttachment): Promise<void> {
    const channel = await deps.notifications.find(schedule.accountId, schedule.webhookId!)
    if (!channel || channel.channelType !== 'webhook') throw new Error('the webhook channel is gone')
    if (!channel.enabled) throw new Error('the webhook channel is disabled')
    const signal = AbortSignal.timeout(timeoutMs)
    const headers: Record<string, string> = {
      'content-type': file.contentType,
      'content-disposition': `attachment; filename="${file.filename}"`,
      'user-agent': `tracker/${pkg.version} (reports)`,
      [DELIVERY_HEADER]: run.id,
      'x-tracker-schedule': schedule.id,
      'x-tracker-period': `${run.periodFrom}/${run.periodTo}`,
    }
    if (channel.secret !== null) {
      const t = Math.floor(clock.now() / 1000)
      headers[SIGNATURE_HEADER] = `t=${t},v1=${createHmac('sha256', channel.secret).update(`${t}.`).update(file.bytes).digest('hex')}`
    }
    try {
      const target = await guard.target(channel.url, signal)
      if (target.host !== null) headers.host = target.host
      const response = await fetch(target.url, { method: 'POST', headers, body: file.bytes, redirect: 'manual', signal })
      await response.body?.cancel().catch(() => {})
      if (response.status < 200 || response.status >= 300) throw new Error(`HTTP ${response.status}`)
    } catch (error) {
      if (signal.aborted) throw new Error(`no answer within ${timeoutMs / 1000} s`)
      throw error
    }
  }

  /** one attempt at a run: sent, or queued again after the backoff, or failed after 24 h */
  async function attempt(run: RunRow): Promise<RunRow> {
    const schedule = await store.schedule(run.scheduleId)
    const attempts = run.attempts + 1
    let error: string | null = null
    if (!schedule) error = 'the schedule is gone'
    else {
      try {
        const file = await produce(schedule, run)
        if (decodeList(schedule.recipients).length > 0) await mail(schedule, run, file)
        if (schedule.webhookId !== null) await post(schedule, run, file)
      } catch (failure) {
        error = bounded(failure instanceof Error ? failure.message : String(failure))
      }
    }
    const nowMs = clock.now()
    const settled =
      error === null
        ? { status: 'sent' as const, attempts, error: null, nextAttemptAt: null, sentAt: nowMs }
        : nowMs - run.createdAt >= GIVE_UP_AFTER_MS || !schedule
          ? { status: 'failed' as const, attempts, error, nextAttemptAt: null, sentAt: null }
          : { status: 'queued' as const, attempts, error, nextAttemptAt: Math.min(nowMs + retryDelayMs(attempts), run.createdAt + GIVE_UP_AFTER_MS), sentAt: null }
    if (error !== null) log.warn('a scheduled report was not sent', { schedule: run.scheduleId, run: run.id, attempts, error, status: settled.status })
    await store.settleRun(run.id, settled)
    return { ...run, ...settled }
  }

  const newRun = (schedule: ScheduleRow, window: { from: number; to: number }, periodKey: string | null, nowMs: number): RunRow => ({
    id: randomUUID(),
    scheduleId: schedule.id,
    periodKey,
    periodFrom: window.from,
    periodTo: window.to,
    status: 'queued',
    attempts: 0,
    error: null,
    nextAttemptAt: nowMs,
    createdAt: nowMs,
    sentAt: null,
  })

  /** writes the runs of the periods that fell due; attempts what is due */
  async function look(): Promise<void> {
    const nowMs = clock.now()
    const now = Math.floor(nowMs / 1000)
    const schedules = await store.enabled()
    for (const schedule of schedules) {
      const window = lastDuePeriod(now, schedule.period as SchedulePeriod, schedule.at, schedule.tz)
      // a period whose time had passed before the schedule existed is not sent
      if (window.sendAt * 1000 < schedule.createdAt) continue
      const key = `${schedule.id}/${window.from}`
      // written once: later looks within the same period skip the write (one per schedule and period, not one a look)
      if (written.get(schedule.id) === key) continue
      await store.claimRun(newRun(schedule, window, key, nowMs))
      written.set(schedule.id, key)
    }
    // schedules deleted or disabled are forgotten
    if (written.size > schedules.length) for (const id of [...written.keys()]) if (!schedules.some((s) => s.id === id)) written.delete(id)
    for (const run of await store.dueRuns(nowMs, RUNS_PER_LOOK)) await attempt(run)
  }

  return {
    /** one look, under the lease (null when another node holds it) */
    tick: () => serial(() => deps.leases.run(SCHEDULER_LEASE, look)),
    /** POST …/run: the last ended period's report, recorded as a run of its own (no period key) and attempted now */
    runNow: (schedule: ScheduleRow) =>
      serial(async () => {
        const nowMs = clock.now()
        const window = lastEndedPeriod(Math.floor(nowMs / 1000), schedule.period as SchedulePeriod, schedule.at, schedule.tz)
        // written with its next attempt 10 min on, so another node's look leaves it to this attempt
        // (and takes it over if this node dies before settling it)
        const run = { ...newRun(schedule, window, null, nowMs), nextAttemptAt: nowMs + MANUAL_HOLD_MS }
        await store.claimRun(run)
        return attempt(run)
      }),
    start() {
      timer ??= setInterval(() => {
        void (async () => {
          try {
            await serial(() => deps.leases.run(SCHEDULER_LEASE, look))
          } catch (error) {
            log.error('the report scheduler failed', { error: (error as Error).message })
          }
        })()
      }, LOOK_EVERY_MS)
    },
    async stop() {
      if (timer) clearInterval(timer)
      timer = null
      await queue
      mailer?.close()
      mailer = null
    },
  }
}

export type ReportScheduler = ReturnType<typeof createReportScheduler>
