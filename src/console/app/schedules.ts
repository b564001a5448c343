/**
 * Scheduled reports as the Reports page holds them (GET/POST /reports/schedules, PATCH/DELETE
 * /reports/schedules/{id}, GET …/runs, POST …/run): the form's draft, what it sends, and how a
 * schedule and its runs read. Every check that matters is the API's (a 400 naming its path); the
 * form checks only what it can say better beside the field before sending.
 */
import type { RunView, ScheduleView } from '../../reports/schedules'
import { addressesOf } from './notifications'
import { REPORT_FILES, type ReportKind } from './reports'
import { strings } from './strings'

const s = strings.schedules

export { SCHEDULE_PERIODS } from '../../reports/periods'
/** an item of GET /reports/schedules (the API's own type) */
export type Schedule = ScheduleView
/** an item of GET /reports/schedules/{id}/runs, and the answer of POST …/run */
export type ScheduleRun = RunView

/** the form's fields: the schedule's, with the addresses as typed and '' for no webhook */
export type ScheduleDraft = Omit<Schedule, 'id' | 'owner' | 'created_at' | 'updated_at' | 'last_run' | 'to' | 'webhook'> & {
  /** addresses as typed: commas, spaces or semicolons between them */
  to: string
  /** a webhook channel's id, '' for none */
  webhook: string
}

export function draftOf(schedule: Schedule | null, zone: string): ScheduleDraft {
  if (!schedule) return { name: '', kind: 'trips', devices: [], groups: [], period: 'week', at: '07:00', tz: zone, format: 'xlsx', to: '', webhook: '', enabled: true }
  const { id: _id, owner: _owner, created_at: _created, updated_at: _updated, last_run: _last, ...fields } = schedule
  return { ...fields, to: schedule.to.join(', '), webhook: schedule.webhook ?? '' }
}

/** the files a kind is sent as (gpx and kml for a route only) */
export const formatsOf = (kind: ReportKind): string[] => REPORT_FILES[kind]

/** a kind chosen: its format stays if that kind has it, else the first it has */
export const withKind = (draft: ScheduleDraft, kind: ReportKind): ScheduleDraft => ({ ...draft, kind, format: formatsOf(kind).includes(draft.format) ? draft.format : formatsOf(kind)[0] })

const AT = /^([01][0-9]|2[0-3]):[0-5][0-9]$/

/** what the form says before sending (field key → message); the API checks the rest */
export function checkDraft(draft: ScheduleDraft): Record<string, string> {
  const errors: Record<string, string> = {}
  if (!draft.name.trim()) errors.name = s.nameRequired
  if (!AT.test(draft.at)) errors.at = s.atInvalid
  if (addressesOf(draft.to).length === 0 && !draft.webhook) errors.to = s.recipientRequired
  return errors
}

/** the body of a POST or PATCH: the whole schedule (a PATCH of every field is checked as at creation) */
export const bodyOf = (draft: ScheduleDraft) => ({
  name: draft.name.trim(),
  kind: draft.kind,
  devices: draft.devices,
  groups: draft.groups,
  period: draft.period,
  at: draft.at,
  tz: draft.tz,
  format: draft.format,
  to: addressesOf(draft.to),
  webhook: draft.webhook || null,
  enabled: draft.enabled,
})

/** "Every week, Monday 07:00 (Europe/Dublin)" */
export const whenText = (schedule: Pick<Schedule, 'period' | 'at' | 'tz'>) => s.when(schedule.period, schedule.at, schedule.tz)

/** "Trips" and "Excel (XLSX)" */
export const whatText = (schedule: Pick<Schedule, 'kind' | 'format'>) => ({ kind: strings.reports.kinds[schedule.kind] ?? schedule.kind, format: strings.reports.formats[schedule.format] ?? schedule.format })

/** the period a run reported, as local days in the schedule's zone ("18 Feb 2019", or "9 Nov 2026 to 15 Nov 2026") */
export function runPeriodText(run: ScheduleRun, zone: string): string {
  const day = (seconds: number) => new Date(seconds * 1000).toLocaleDateString([], { timeZone: zone, dateStyle: 'medium' })
  const first = day(run.period.from)
  const last = day(run.period.to - 1)
  return first === last ? first : s.periodSpan(first, last)
}

/** a moment in the schedule's zone, as the runs' periods read: "27 Nov 2026, 08:51" */
export const momentText = (seconds: number, zone: string) => new Date(seconds * 1000).toLocaleString([], { timeZone: zone, dateStyle: 'medium', timeStyle: 'short' })

/** a run's time: when it was sent, else when it was written */
export const runTime = (run: ScheduleRun, zone: string) => momentText(run.sent_at ?? run.created_at, zone)
