/**
 * The Reports page's scheduled reports, under the report: the schedules the user sees (an admin
 * the account's, a member their own), each one's last run; schedule, edit, enable or disable,
 * send now, its runs, delete. The lists and dialogs are the Administration view's parts; every
 * refusal shows the API's words (a field's beside it).
 */
import { useSignal } from '@preact/signals'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError, getJson } from '../api'
import { describeFailure, listAll, write } from '../admin'
import type { Fleet } from '../fleet'
import { zoneNames, REPORT_KINDS, reportZone, type ReportKind } from '../reports'
import { bodyOf, checkDraft, draftOf, formatsOf, runPeriodText, runTime, SCHEDULE_PERIODS, type Schedule, type ScheduleDraft, type ScheduleRun, whatText, whenText, withKind } from '../schedules'
import { me } from '../session'
import { strings } from '../strings'
import type { NotificationChannel } from '../types'
import { AdminList, AdminTable, Cell, ConfirmDelete, Dialog, FormAlert, FormButtons, type ListState, Pending, RowActions, SectionHead, SelectField, TextField, useSave } from './AdminParts'
import { ReportPicks } from './ReportPicks'

const s = strings.schedules
const r = strings.reports

const path = (schedule: Schedule, tail = '') => `reports/schedules/${encodeURIComponent(schedule.id)}${tail}`
const messageOf = (error: unknown) => (error instanceof ApiError ? error.message : strings.networkDown)
/** an account's webhook channels (what a schedule may post to); null while not read, or for a member (they may not list them) */
type Channels = { id: string; name: string }[] | null

export function ReportSchedules({ fleet }: { fleet: Fleet }) {
  const isAdmin = me.value?.role === 'admin'
  const list = useSignal<ListState<Schedule>>({ status: 'loading' })
  const channels = useSignal<Channels>(null)
  const editing = useSignal<{ schedule: Schedule | null } | null>(null)
  const deleting = useSignal<Schedule | null>(null)
  const opened = useSignal<Schedule | null>(null)
  const notice = useSignal<{ text: string; error: boolean } | null>(null)
  const working = useSignal<string | null>(null)
  const asked = useRef(0)

  async function load() {
    const ask = ++asked.current
    if (list.value.status !== 'ready') list.value = { status: 'loading' }
    try {
      // each schedule comes with its last run
      const value = await getJson<Schedule[]>('reports/schedules')
      if (ask !== asked.current) return
      list.value = { status: 'ready', value }
    } catch (error) {
      if (ask === asked.current) list.value = { status: 'error', message: messageOf(error) }
    }
  }
  async function loadChannels() {
    try {
      const all = await listAll<NotificationChannel>('notifications')
      channels.value = all.filter((c) => c.channel.type === 'webhook').map((c) => ({ id: c.id, name: c.name }))
    } catch {
      channels.value = []
    }
  }
  useEffect(() => {
    void load()
    if (isAdmin) void loadChannels()
  }, [])

  /** a row's own action (send now, enable, disable): busy while it runs, then its notice or the API's refusal */
  async function act(item: Schedule, work: () => Promise<string>) {
    working.value = item.id
    notice.value = null
    try {
      notice.value = { text: await work(), error: false }
    } catch (error) {
      notice.value = { text: s.failed(describeFailure(error).message), error: true }
    } finally {
      working.value = null
    }
  }
  const sendNow = (item: Schedule) =>
    act(item, async () => {
      const run = (await write<ScheduleRun>('POST', path(item, '/run')))!
      void load()
      return run.status === 'sent' ? s.sentNow(item.name, runPeriodText(run, item.tz)) : s.queuedNow(item.name, run.error)
    })
  const setEnabled = (item: Schedule, enabled: boolean) =>
    act(item, async () => {
      await write('PATCH', path(item), { enabled })
      void load()
      return enabled ? s.enabledNotice(item.name) : s.disabledNotice(item.name)
    })

  const channelName = (id: string) => channels.value?.find((c) => c.id === id)?.name
  return (
    <section class="report-schedules" aria-labelledby="report-schedules-h">
      <SectionHead id="report-schedules-h" title={s.title} intro={s.intro}>
        <button type="button" class="primary" onClick={() => (editing.value = { schedule: null })}>
          {s.add}
        </button>
      </SectionHead>
      {notice.value && (
        <p class={notice.value.error ? 'alert schedule-notice' : 'admin-notice schedule-notice'} role={notice.value.error ? 'alert' : 'status'}>
          {notice.value.text}
        </p>
      )}
      <AdminList state={list.value} onRetry={() => void load()} empty={s.none}>
        {(items) => (
          <AdminTable class="schedules-table" columns={[s.colName, s.colReport, s.colWhen, s.colSendsTo, s.colEnabled, s.colLastRun]}>
            {items.map((item) => {
              const last = item.last_run
              const busy = working.value === item.id
              return (
                <tr key={item.id} data-id={item.id}>
                  <th scope="row" class="cell-name">
                    {item.name}
                  </th>
                  <Cell label={s.colReport} class="schedule-what">
                    <span>{whatText(item).kind}</span> <span class="muted">{whatText(item).format}</span>
                  </Cell>
                  <Cell label={s.colWhen}>{whenText(item)}</Cell>
                  <Cell label={s.colSendsTo} class="schedule-targets">
                    {item.to.map((address) => (
                      <span key={address} class="schedule-to">
                        {address}
                      </span>
                    ))}
                    {item.webhook && <span class="schedule-webhook">{s.webhookNamed(channelName(item.webhook) ?? s.webhookUnknown)}</span>}
                  </Cell>
                  <Cell label={s.colEnabled}>
                    <span class={item.enabled ? 'nf-enabled on' : 'nf-enabled off'}>{item.enabled ? s.enabledOn : s.enabledOff}</span>
                  </Cell>
                  <Cell label={s.colLastRun} class="schedule-last-run">
                    {last ? <RunStatus run={last} zone={item.tz} /> : <span class="muted">{s.neverRun}</span>}
                  </Cell>
                  <RowActions name={item.name} onEdit={() => (editing.value = { schedule: item })} onDelete={() => (deleting.value = item)}>
                    <button type="button" aria-label={s.sendNowNamed(item.name)} disabled={busy} onClick={() => void sendNow(item)}>
                      {busy ? s.sending : s.sendNow}
                    </button>
                    <button type="button" aria-label={s.runsNamed(item.name)} onClick={() => (opened.value = item)}>
                      {s.runs}
                    </button>
                    <button type="button" aria-label={item.enabled ? s.disableNamed(item.name) : s.enableNamed(item.name)} disabled={busy} onClick={() => void setEnabled(item, !item.enabled)}>
                      {item.enabled ? s.disable : s.enable}
                    </button>
                  </RowActions>
                </tr>
              )
            })}
          </AdminTable>
        )}
      </AdminList>

      {editing.value && (
        <ScheduleForm
          fleet={fleet}
          schedule={editing.value.schedule}
          channels={isAdmin ? channels.value : null}
          isAdmin={isAdmin}
          onSaved={(text) => {
            notice.value = { text, error: false }
            void load()
          }}
          onClose={() => (editing.value = null)}
        />
      )}
      {opened.value && <ScheduleRuns schedule={opened.value} lastRun={(list.value.status === 'ready' ? list.value.value.find((item) => item.id === opened.value!.id)?.last_run : null) ?? null} onClose={() => (opened.value = null)} />}
      <ConfirmDelete
        target={deleting}
        title={(item) => s.deleteTitle(item.name)}
        body={s.deleteBody}
        confirm={s.deleteConfirm}
        onDelete={async (item) => {
          await write('DELETE', path(item))
          notice.value = { text: s.deleted(item.name), error: false }
          void load()
        }}
      />
    </section>
  )
}

/** "Sent" over "27 Nov 2026, 07:00" (failed in red, its error on hover) */
function RunStatus({ run, zone }: { run: ScheduleRun; zone: string }) {
  return (
    <>
      <span class="schedule-run-status" data-status={run.status} title={run.error ?? undefined}>
        {s.runStatus[run.status] ?? run.status}
      </span>{' '}
      <span class="schedule-run-time">{runTime(run, zone)}</span>
    </>
  )
}

function ScheduleForm({
  fleet,
  schedule,
  channels,
  isAdmin,
  onSaved,
  onClose,
}: {
  fleet: Fleet
  schedule: Schedule | null
  channels: Channels
  isAdmin: boolean
  onSaved: (notice: string) => void
  onClose: () => void
}) {
  const save = useSave()
  const [v, setV] = useState<ScheduleDraft>(() => draftOf(schedule, reportZone()))
  const set =
    <K extends keyof ScheduleDraft>(key: K) =>
    (value: ScheduleDraft[K]) => {
      setV((old) => ({ ...old, [key]: value }))
      save.edited(key)
    }
  const zones = zoneNames()

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    if (save.invalid(checkDraft(v))) return
    const ok = await save.run(async () => {
      const saved = schedule ? await write<Schedule>('PATCH', path(schedule), bodyOf(v)) : await write<Schedule>('POST', 'reports/schedules', bodyOf(v))
      onSaved(schedule ? s.saved(saved!.name) : s.added(saved!.name))
    })
    if (ok) onClose()
  }

  const shown = (key: string) => ['name', 'kind', 'period', 'at', 'tz', 'format', 'to', 'webhook'].includes(key)
  return (
    <Dialog title={schedule ? s.editTitle(schedule.name) : s.addTitle} onClose={onClose} wide>
      <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form schedule-form">
        <FormAlert failure={save.failure.value} shown={shown} />
        <TextField id="sf-name" label={s.name} value={v.name} onInput={set('name')} error={save.error('name')} hint={s.nameHint} required autofocus maxLength={100} />
        <div class="schedule-form-row">
          <SelectField
            id="sf-kind"
            label={s.kind}
            value={v.kind}
            onChange={(kind) => {
              setV((old) => withKind(old, kind as ReportKind))
              save.edited('kind')
            }}
            error={save.error('kind')}
            options={REPORT_KINDS.map((k) => ({ value: k, label: r.kinds[k] }))}
          />
          <SelectField id="sf-format" label={s.format} value={v.format} onChange={set('format')} error={save.error('format')} options={formatsOf(v.kind).map((f) => ({ value: f, label: r.formats[f] }))} />
        </div>
        <div class="schedule-picks">
          <ReportPicks fleet={fleet} name="schedule" devices={v.devices} groups={v.groups} onDevices={set('devices')} onGroups={set('groups')} />
        </div>
        <p class="hint">{s.devicesHint}</p>
        <div class="schedule-form-row">
          <SelectField
            id="sf-period"
            label={s.period}
            value={v.period}
            onChange={(period) => set('period')(period as ScheduleDraft['period'])}
            error={save.error('period')}
            hint={s.periodDetails[v.period]}
            options={SCHEDULE_PERIODS.map((p) => ({ value: p, label: s.periods[p] }))}
          />
          <TextField id="sf-at" label={s.at} type="time" value={v.at} onInput={set('at')} error={save.error('at')} hint={s.atHint} required />
        </div>
        <SelectField
          id="sf-tz"
          label={s.zone}
          value={v.tz}
          onChange={set('tz')}
          error={save.error('tz')}
          hint={s.zoneHint}
          options={(zones.includes(v.tz) ? zones : [v.tz, ...zones]).map((zone) => ({ value: zone, label: zone }))}
        />
        <TextField id="sf-to" label={s.to} value={v.to} onInput={set('to')} error={save.error('to')} hint={s.toHint} autocomplete="email" />
        {isAdmin ? (
          channels === null ? (
            <Pending state={{ status: 'loading' }} onRetry={() => {}} />
          ) : channels.length === 0 && !v.webhook ? (
            <p class="note">{s.webhookNoChannels}</p>
          ) : (
            <SelectField
              id="sf-webhook"
              label={s.webhook}
              value={v.webhook}
              onChange={set('webhook')}
              error={save.error('webhook')}
              hint={s.webhookHint}
              options={[{ value: '', label: s.webhookNone }, ...channels.map((c) => ({ value: c.id, label: c.name })), ...(v.webhook && !channels.some((c) => c.id === v.webhook) ? [{ value: v.webhook, label: s.webhookUnknown }] : [])]}
            />
          )
        ) : (
          <p class="note schedule-email-only">{v.webhook ? s.webhookNamed(s.webhookUnknown) : s.emailOnly}</p>
        )}
        <div class="nf-enabled-field">
          <label class="check">
            <input type="checkbox" id="sf-enabled" checked={v.enabled} onChange={(e) => set('enabled')(e.currentTarget.checked)} aria-describedby="sf-enabled-hint" />
            {s.enabled}
          </label>
          <p id="sf-enabled-hint" class="hint">
            {s.enabledHint}
          </p>
        </div>
        <FormButtons busy={save.busy.value} save={schedule ? s.save : s.create} busyLabel={schedule ? undefined : strings.admin.creating} onCancel={onClose} />
      </form>
    </Dialog>
  )
}

/** a schedule's runs, newest first: read when opened, and again when a run was sent from the list meanwhile */
function ScheduleRuns({ schedule, lastRun, onClose }: { schedule: Schedule; lastRun: ScheduleRun | null; onClose: () => void }) {
  const runs = useSignal<ListState<ScheduleRun>>({ status: 'loading' })
  async function load() {
    try {
      runs.value = { status: 'ready', value: await getJson<ScheduleRun[]>(path(schedule, '/runs?limit=50')) }
    } catch (error) {
      runs.value = { status: 'error', message: messageOf(error) }
    }
  }
  useEffect(() => void load(), [schedule.id, lastRun?.id])
  return (
    <Dialog title={s.runsTitle(schedule.name)} onClose={onClose} wide>
      <AdminList state={runs.value} onRetry={() => void load()} empty={s.runsNone}>
        {(items) => (
          <ol class="schedule-runs">
            {items.map((run) => (
              <li key={run.id} class="schedule-run" data-status={run.status}>
                <div class="schedule-run-head">
                  <span class="schedule-run-status" data-status={run.status}>{s.runStatus[run.status] ?? run.status}</span>
                  <span>{runTime(run, schedule.tz)}</span>
                </div>
                <dl>
                  <dt>{s.runPeriod}</dt>
                  <dd class="schedule-run-period">{runPeriodText(run, schedule.tz)}</dd>
                  <dt>{s.runAttemptsLabel}</dt>
                  <dd class="schedule-run-attempts">
                    {run.attempts}
                    {run.manual && ` · ${s.runManual}`}
                    {run.next_attempt_at !== null && ` · ${s.runNext(runTime({ ...run, sent_at: run.next_attempt_at }, schedule.tz))}`}
                  </dd>
                  {run.error && (
                    <>
                      <dt>{s.runError}</dt>
                      <dd class="schedule-run-error">{run.error}</dd>
                    </>
                  )}
                </dl>
              </li>
            ))}
          </ol>
        )}
      </AdminList>
    </Dialog>
  )
}
