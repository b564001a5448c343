/**
 * The Reports page (#/reports): choose a kind, devices or groups and a period (days in the user's
 * time zone), run GET /reports/{kind}; the rows and totals as a table (cards on a phone), a chart
 * where it helps, and the files of the same query (`format=`) to download; under it, the
 * scheduled reports (ReportSchedules.tsx).
 */
import 'uplot/dist/uPlot.min.css'
import { signal, useSignal } from '@preact/signals'
import { useEffect, useRef } from 'preact/hooks'
import { ApiError, getJson } from '../api'
import { eventName } from '../eventNames'
import { loadGroups } from '../filters'
import type { Fleet } from '../fleet'
import { drawDistanceChart, drawSpeedOverTime, type ReportChart } from '../reportChart'
import {
  cellText,
  distancePerDay,
  isNumeric,
  loadOwnZone,
  PERIODS,
  periodDays,
  periodSeconds,
  REPORT_FILES,
  REPORT_KINDS,
  reportPath,
  reportZone,
  shownColumns,
  type Period,
  type ReportAnswer,
  type ReportKind,
  type ReportQuery,
} from '../reports'
import { strings } from '../strings'
import { ReportPicks } from './ReportPicks'
import { ReportSchedules } from './ReportSchedules'

const s = strings.reports
/** rows drawn on the page; a route may have 100,000: the files hold them all */
const SHOWN_ROWS = 500

/** the choices, kept while the console is open */
const chosenKind = signal<ReportKind>('trips')
const chosenDaily = signal(false)
const chosenPeriod = signal<Period>('today')
const customFrom = signal('')
const customTo = signal('')
const chosenDevices = signal<string[]>([])
const chosenGroups = signal<string[]>([])

type Result =
  | { status: 'idle' }
  | { status: 'running' }
  | { status: 'error'; message: string }
  | { status: 'ready'; query: ReportQuery; answer: ReportAnswer; first: string; last: string }

function failureText(error: unknown): string {
  if (!(error instanceof ApiError)) return strings.networkDown
  const detail = error.problem?.detail ?? null
  return s.failed(error.status, detail) + (error.retryAfterSeconds ? s.retryIn(error.retryAfterSeconds) : '')
}

export function ReportsView({ fleet }: { fleet: Fleet }) {
  fleet.version.value // the device list follows the fleet
  const result = useSignal<Result>({ status: 'idle' })
  const formError = useSignal<string | null>(null)
  const running = useRef<AbortController | null>(null)
  useEffect(() => {
    void loadGroups()
    void loadOwnZone()
    return () => running.current?.abort()
  }, [])

  const kind = chosenKind.value
  const period = chosenPeriod.value
  const zone = reportZone()

  async function run(event: SubmitEvent) {
    event.preventDefault()
    let days: { first: string; last: string }
    if (period === 'custom') {
      if (!customFrom.value || !customTo.value) return void (formError.value = s.customMissing)
      if (customTo.value < customFrom.value) return void (formError.value = s.customBackwards)
      days = { first: customFrom.value, last: customTo.value }
    } else days = periodDays(period, zone, Date.now())
    formError.value = null
    const query: ReportQuery = { kind, daily: kind === 'summary' && chosenDaily.value, devices: chosenDevices.value, groups: chosenGroups.value, tz: zone, ...periodSeconds(days.first, days.last, zone) }
    running.current?.abort()
    const abort = new AbortController()
    running.current = abort
    result.value = { status: 'running' }
    try {
      const answer = await getJson<ReportAnswer>(reportPath(query), abort.signal)
      result.value = { status: 'ready', query, answer, ...days }
    } catch (error) {
      if (!abort.signal.aborted) result.value = { status: 'error', message: failureText(error) }
    }
  }

  const state = result.value
  return (
    <main id="content" class="reports-page" tabIndex={-1}>
      <h1>{s.title}</h1>
      <p class="reports-intro">{s.intro}</p>
      <form class="reports-form" onSubmit={run} noValidate aria-busy={state.status === 'running'}>
        <div class="reports-choices">
          <div class="field">
            <label for="report-kind">{s.kind}</label>
            <select id="report-kind" value={kind} onChange={(e) => (chosenKind.value = e.currentTarget.value as ReportKind)}>
              {REPORT_KINDS.map((k) => (
                <option key={k} value={k}>
                  {s.kinds[k]}
                </option>
              ))}
            </select>
            {kind === 'summary' && (
              <label class="check">
                <input id="report-daily" type="checkbox" checked={chosenDaily.value} onChange={(e) => (chosenDaily.value = e.currentTarget.checked)} />
                {s.daily}
              </label>
            )}
          </div>
          <div class="field">
            <label for="report-period">{s.period}</label>
            <select id="report-period" value={period} onChange={(e) => (chosenPeriod.value = e.currentTarget.value as Period)}>
              {PERIODS.map((p) => (
                <option key={p} value={p}>
                  {s.periods[p]}
                </option>
              ))}
            </select>
            {period === 'custom' && (
              <div class="report-days">
                <label>
                  {s.from}
                  <input id="report-from" type="date" value={customFrom.value} onInput={(e) => (customFrom.value = e.currentTarget.value)} />
                </label>
                <label>
                  {s.to}
                  <input id="report-to" type="date" value={customTo.value} onInput={(e) => (customTo.value = e.currentTarget.value)} />
                </label>
              </div>
            )}
            <p class="note report-zone">
              {s.zoneNote(zone)} <a href="#/reports" onClick={(e) => (e.preventDefault(), document.getElementById('own-zone-open')?.click())}>{s.changeZone}</a>
            </p>
          </div>
          <ReportPicks fleet={fleet} name="report" devices={chosenDevices.value} groups={chosenGroups.value} onDevices={(next) => (chosenDevices.value = next)} onGroups={(next) => (chosenGroups.value = next)} />
        </div>
        {chosenDevices.value.length === 0 && chosenGroups.value.length === 0 && <p class="note">{s.everyDevice}</p>}
        {formError.value && (
          <p class="alert" role="alert">
            {formError.value}
          </p>
        )}
        <button type="submit" class="primary" disabled={state.status === 'running'}>
          {state.status === 'running' ? s.running : s.run}
        </button>
      </form>

      {state.status === 'error' && (
        <p class="alert report-error" role="alert">
          {state.message}
        </p>
      )}
      {state.status === 'ready' && <ReportResult key={reportPath(state.query)} query={state.query} answer={state.answer} first={state.first} last={state.last} />}

      <ReportSchedules fleet={fleet} />
    </main>
  )
}

function ReportResult({ query, answer, first, last }: { query: ReportQuery; answer: ReportAnswer; first: string; last: string }) {
  const columns = shownColumns(query.kind, query.daily)
  const zone = answer.tz
  const shown = answer.rows.slice(0, SHOWN_ROWS)
  const kindName = s.kinds[query.kind]
  const cell = (row: Record<string, unknown>, key: string) => cellText(key, row[key], zone, row, eventName)
  return (
    <section class="report-result" aria-label={s.caption(kindName, first, last)}>
      <div class="report-downloads">
        <span>{s.download}</span>
        {REPORT_FILES[query.kind].map((format) => (
          <a key={format} class="button" href={reportPath(query, format)} download aria-label={s.downloadAs(s.formats[format], kindName)} data-format={format}>
            {s.formats[format]}
          </a>
        ))}
      </div>
      {query.kind === 'summary' && query.daily && answer.rows.length > 0 && <DistanceChart rows={answer.rows} />}
      {query.kind === 'route' && answer.rows.length > 0 && <SpeedChart rows={answer.rows} zone={zone} />}
      {answer.rows.length === 0 ? (
        <p class="empty">{s.none}</p>
      ) : (
        <div class="report-table-wrap">
          <table class="report-table">
            <caption>{s.caption(kindName, first, last)}</caption>
            <thead>
              <tr>
                {columns.map((key) => (
                  <th key={key} scope="col" class={isNumeric(key) ? 'num' : undefined}>
                    {s.columns[key]}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {shown.map((row, i) => (
                <tr key={i}>
                  {columns.map((key) => (
                    <td key={key} class={isNumeric(key) ? 'num' : undefined} data-key={key} data-value={JSON.stringify(row[key] ?? null)} data-label={s.columns[key]}>
                      {cell(row, key)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
            {answer.totals && (
              <tfoot>
                <tr class="report-totals">
                  {columns.map((key, i) => (
                    <td key={key} class={isNumeric(key) ? 'num' : undefined} data-key={key} data-value={JSON.stringify(answer.totals![key] ?? null)} data-label={s.columns[key]}>
                      {i === 0 ? <strong>{s.total}</strong> : key === 'alias' ? '' : cell(answer.totals!, key)}
                    </td>
                  ))}
                </tr>
              </tfoot>
            )}
          </table>
        </div>
      )}
      {answer.rows.length > SHOWN_ROWS && <p class="note">{s.shownOf(SHOWN_ROWS, answer.rows.length)}</p>}
    </section>
  )
}

/** draws a chart into a box that follows the page's width */
function useChart(draw: (box: HTMLElement) => Promise<ReportChart>, deps: unknown[]) {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const element = box.current!
    let chart: ReportChart | null = null
    let gone = false
    void draw(element).then((drawn) => (gone ? drawn.destroy() : (chart = drawn)))
    const observer = new ResizeObserver(() => chart?.resize(element.clientWidth))
    observer.observe(element)
    return () => {
      gone = true
      observer.disconnect()
      chart?.destroy()
    }
  }, deps)
  return box
}

function DistanceChart({ rows }: { rows: Record<string, unknown>[] }) {
  const { days, km } = distancePerDay(rows)
  const box = useChart((element) => drawDistanceChart(element, days, km), [rows])
  return (
    <figure class="report-chart distance-chart">
      <figcaption>{s.chartDistance}</figcaption>
      <div ref={box} role="img" aria-label={s.chartDistanceLabel(days.length)} />
    </figure>
  )
}

function SpeedChart({ rows, zone }: { rows: Record<string, unknown>[]; zone: string }) {
  const devices = [...new Map(rows.map((r) => [r.device as string, r.alias as string])).entries()]
  const picked = useSignal(devices[0][0])
  const device = devices.some(([id]) => id === picked.value) ? picked.value : devices[0][0]
  const alias = devices.find(([id]) => id === device)![1]
  const box = useChart(
    (element) => {
      const mine = rows.filter((r) => r.device === device)
      return drawSpeedOverTime(element, mine.map((r) => r.timestamp as number), mine.map((r) => (r.speed_kmh as number | null) ?? null), zone)
    },
    [rows, device],
  )
  return (
    <figure class="report-chart speed-over-time">
      <figcaption>
        {s.chartSpeed}
        {devices.length > 1 ? (
          <label class="chart-device">
            {s.chartDevice}
            <select value={device} onChange={(e) => (picked.value = e.currentTarget.value)}>
              {devices.map(([id, name]) => (
                <option key={id} value={id}>
                  {name}
                </option>
              ))}
            </select>
          </label>
        ) : (
          ` · ${alias}`
        )}
      </figcaption>
      <div ref={box} role="img" aria-label={s.chartSpeedLabel(alias)} />
    </figure>
  )
}
