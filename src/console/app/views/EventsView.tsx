/**
 * The Events page (#/events): the newest alarms and events of every device the user reaches
 * (GET /events), today or over the last 7 days, a page at a time. The first page follows the
 * live stream: an alarm that arrives reloads it, so the page never needs a refresh.
 */
import { signal, useSignal } from '@preact/signals'
import { useEffect } from 'preact/hooks'
import { ApiError, getJson } from '../api'
import { now } from '../clock'
import type { Fleet } from '../fleet'
import { coordinates, iso, when } from '../format'
import { eventName } from '../eventNames'
import type { NoticeBoard } from '../noticeBoard'
import { isUrgent } from '../notices'
import { deviceHref } from '../router'
import { strings } from '../strings'
import type { FleetEvent } from '../types'

const PAGE = 50
/** an alarm burst (a device resending its buffer) reloads the page once */
const RELOAD_AFTER_MS = 300

type Range = 'today' | 'week'
const RANGES: { value: Range; label: string }[] = [
  { value: 'today', label: strings.eventsToday },
  { value: 'week', label: strings.eventsWeek },
]

/** the range and filters chosen last, kept while the console is open; '' is every device, every type */
const chosenRange = signal<Range>('today')
const chosenDevice = signal('')
const chosenCode = signal('')

/** Unix seconds: from the start of today (or of the day 6 days before) to the end of today, in the browser's time zone */
export function eventsWindow(range: Range, nowMs: number): { from: number; to: number } {
  const start = new Date(nowMs)
  start.setHours(0, 0, 0, 0)
  if (range === 'week') start.setDate(start.getDate() - 6)
  const end = new Date(nowMs)
  end.setHours(23, 59, 59, 0)
  return { from: Math.floor(start.getTime() / 1000), to: Math.floor(end.getTime() / 1000) }
}

type Loaded = { status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; items: FleetEvent[]; more: boolean }

export function EventsView({ fleet, board }: { fleet: Fleet; board: NoticeBoard }) {
  const offset = useSignal(0)
  const reloads = useSignal(0)
  const loaded = useSignal<Loaded>({ status: 'loading' })
  fleet.version.value // the device filter follows the list
  const range = chosenRange.value
  const deviceFilter = chosenDevice.value
  const codeFilter = chosenCode.value
  const filtered = deviceFilter !== '' || codeFilter !== ''

  useEffect(() => board.seen(), [])

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const unsubscribe = fleet.onAlarm(() => {
      if (offset.value !== 0) return
      clearTimeout(timer)
      timer = setTimeout(() => reloads.value++, RELOAD_AFTER_MS)
    })
    return () => {
      unsubscribe()
      clearTimeout(timer)
    }
  }, [fleet])

  useEffect(() => {
    const abort = new AbortController()
    const { from, to } = eventsWindow(range, Date.now())
    // a reload keeps the rows on screen until the new ones are in
    if (loaded.value.status !== 'ready') loaded.value = { status: 'loading' }
    const params = new URLSearchParams({ from: String(from), to: String(to), limit: String(PAGE + 1), offset: String(offset.value) })
    if (deviceFilter) params.set('device', deviceFilter)
    if (codeFilter) params.set('alarm_code', codeFilter)
    getJson<FleetEvent[]>(`events?${params}`, abort.signal).then(
      (page) => (loaded.value = { status: 'ready', items: page.slice(0, PAGE), more: page.length > PAGE }),
      (error) => {
        if (abort.signal.aborted) return
        loaded.value = { status: 'error', message: error instanceof ApiError && error.problem?.detail ? error.problem.detail : strings.loadFailed }
      },
    )
    return () => abort.abort()
  }, [range, deviceFilter, codeFilter, offset.value, reloads.value])

  const choose = (value: Range) => {
    chosenRange.value = value
    offset.value = 0
    loaded.value = { status: 'loading' }
  }
  const filter = (which: typeof chosenDevice, value: string) => {
    which.value = value
    offset.value = 0
    loaded.value = { status: 'loading' }
  }
  const turn = (to: number) => {
    offset.value = Math.max(0, to)
    loaded.value = { status: 'loading' }
    document.getElementById('content')?.focus()
  }

  const state = loaded.value
  const items = state.status === 'ready' ? state.items : []
  const nowMs = now.value
  const rangeLabel = RANGES.find((r) => r.value === range)!.label

  return (
    <main id="content" class="events-page" tabIndex={-1}>
      <div class="events-head">
        <h1>{strings.eventsTitle}</h1>
        <fieldset class="range-picker">
          <legend class="sr-only">{strings.eventsRange}</legend>
          {RANGES.map((r) => (
            <label key={r.value} class={r.value === range ? 'on' : undefined}>
              <input type="radio" name="events-range" value={r.value} checked={r.value === range} onChange={() => choose(r.value)} />
              {r.label}
            </label>
          ))}
        </fieldset>
      </div>
      <p class="events-intro">{strings.eventsIntro}</p>
      <div class="events-filters">
        <div class="field">
          <label for="events-device">{strings.eventsFilterDevice}</label>
          <select id="events-device" value={deviceFilter} onChange={(e) => filter(chosenDevice, e.currentTarget.value)}>
            <option value="">{strings.eventsAllDevices}</option>
            {fleet.order.map((d) => (
              <option key={d.id} value={d.id}>
                {d.body.alias}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="events-type">{strings.eventsFilterType}</label>
          <select id="events-type" value={codeFilter} onChange={(e) => filter(chosenCode, e.currentTarget.value)}>
            <option value="">{strings.eventsAllTypes}</option>
            {Object.entries(strings.alarmNames).map(([code, name]) => (
              <option key={code} value={code}>
                {name}
              </option>
            ))}
          </select>
        </div>
      </div>

      {state.status === 'error' && (
        <p class="alert" role="alert">
          {state.message}
        </p>
      )}
      {state.status === 'loading' && <p class="empty">{strings.loading}</p>}
      {state.status === 'ready' && items.length === 0 && <p class="empty">{offset.value !== 0 ? strings.eventsNoMore : filtered ? strings.eventsNoneFiltered : strings.eventsNone(range === 'week')}</p>}

      {items.length > 0 && (
        <table class="events-table">
          <caption class="sr-only">{strings.eventsCaption(rangeLabel)}</caption>
          <thead>
            <tr>
              <th scope="col">{strings.eventsTime}</th>
              <th scope="col">{strings.eventsAlarm}</th>
              <th scope="col">{strings.eventsDevice}</th>
              <th scope="col">{strings.eventsPlace}</th>
            </tr>
          </thead>
          <tbody>
            {items.map((e) => {
              // the city, not raw coordinates; the coordinates stay in the link's tooltip
              const exact = e.coordinates ? coordinates(e.coordinates[0], e.coordinates[1]) : null
              const place = e.address ?? exact
              return (
                <tr key={`${e.device.id}:${e.timestamp}:${e.alarm_code}`} data-device={e.device.id} data-alarm={e.alarm_code}>
                  <td class="ev-time">
                    <time dateTime={iso(e.timestamp)}>{when(e.timestamp * 1000, nowMs)}</time>
                  </td>
                  <td class="ev-alarm">
                    <span class={isUrgent(e.alarm_code) ? 'ev-alarm-name urgent' : 'ev-alarm-name'}>{eventName(e.alarm_code, e.context)}</span>
                  </td>
                  <td class="ev-device">
                    <a href={deviceHref(e.device.id)}>{e.device.alias}</a>
                  </td>
                  <td class="ev-place">
                    {place ? (
                      <a href={deviceHref(e.device.id)} title={exact ?? undefined} aria-label={strings.eventsPlaceLink(e.device.alias, place)}>
                        {place}
                      </a>
                    ) : (
                      <span class="muted">{strings.eventsNoPlace}</span>
                    )}
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}

      {(offset.value > 0 || (state.status === 'ready' && state.more)) && (
        <nav class="pager" aria-label={strings.eventsPaging}>
          <button type="button" disabled={offset.value === 0} onClick={() => turn(offset.value - PAGE)}>
            {strings.eventsNewer}
          </button>
          <span class="pager-where">{items.length > 0 ? strings.eventsShown(offset.value + 1, offset.value + items.length) : ''}</span>
          <button type="button" disabled={!(state.status === 'ready' && state.more)} onClick={() => turn(offset.value + PAGE)}>
            {strings.eventsOlder}
          </button>
        </nav>
      )}
    </main>
  )
}
