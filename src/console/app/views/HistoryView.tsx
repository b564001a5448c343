/**
 * History: a device's route over a day or a range of days (the address says which:
 * #/history/{id}/{from}/{to}), its stops, travels and events beside the map, a playback marker
 * moved by a slider (or played), and the speed over time under the map.
 */
import 'uplot/dist/uPlot.min.css'
import { effect, signal, useComputed, useSignal, type Signal } from '@preact/signals'
import { useEffect, useRef } from 'preact/hooks'
import { now } from '../clock'
import type { Fleet } from '../fleet'
import {
  advance,
  dayKey,
  dayStart,
  DEFAULT_STOP_THRESHOLD_S,
  failureMessage,
  formatDay,
  formatDuration,
  formatKm,
  formatTime,
  formatTimeSeconds,
  historyWindow,
  indexAt,
  loadHistory,
  positionAt,
  shiftDay,
  STOP_THRESHOLDS_S,
  toTrack,
  zoneName,
  type HistoryData,
  type Track,
} from '../history'
import { drawSpeedChart, type SpeedChart } from '../historyChart'
import { HistoryMap } from '../historyMap'
import { alarmName } from '../eventNames'
import { go, historyHref, type Route } from '../router'
import { strings } from '../strings'
import type { HistoryGap, HistoryStop, HistoryTravel } from '../types'

type HistoryRouteState = Extract<Route, { view: 'history' }>

type Loaded =
  | { status: 'idle' }
  | { status: 'loading'; busySeconds: number | null }
  | { status: 'error'; message: string }
  | { status: 'ready'; data: HistoryData; track: Track; withDate: boolean; from: number; to: number }

/** kept across visits, as the person last chose it */
const stopThreshold = signal<number>(DEFAULT_STOP_THRESHOLD_S)
const PLAYBACK_RATES = [10, 60, 300, 1200] as const

/** Arrow keys move between the rows' buttons of one table or list. */
function rowKeys(event: KeyboardEvent) {
  if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return
  const buttons = Array.from((event.currentTarget as HTMLElement).querySelectorAll<HTMLElement>('[data-row]'))
  const at = buttons.indexOf(event.target as HTMLElement)
  if (at < 0) return
  event.preventDefault()
  buttons[Math.max(0, Math.min(buttons.length - 1, at + (event.key === 'ArrowDown' ? 1 : -1)))].focus()
}

export function HistoryView({ fleet, route }: { fleet: Fleet; route: HistoryRouteState }) {
  fleet.version.value // the picker follows the list; the default day follows the newest fix
  const deviceId = route.device
  const device = deviceId ? fleet.devices.get(deviceId) : undefined
  const nowMs = now.value
  const today = dayKey(nowMs)
  // no day in the address: the day of the device's newest fix (once the stream has told it), else today
  const waitingForFix = deviceId !== null && !route.from && !device?.fix && (fleet.loading.value || fleet.live.value === 'connecting')
  const defaultDay = device?.fix ? dayKey(device.fix.timestamp * 1000) : today
  const fromKey = route.from ?? defaultDay
  const toKey = route.to ?? fromKey
  const range = historyWindow(fromKey, toKey)
  const threshold = stopThreshold.value

  const loaded = useSignal<Loaded>({ status: 'idle' })
  const playT = useSignal(0)
  const playing = useSignal(false)
  const selected = useSignal<string | null>(null)
  const mapBox = useRef<HTMLDivElement>(null)
  const chartBox = useRef<HTMLDivElement>(null)
  const historyMap = useRef<HistoryMap | null>(null)
  const chart = useRef<SpeedChart | null>(null)
  const chartFailed = useSignal(false)

  // the map lives as long as the view
  useEffect(() => {
    const body = document.body.dataset
    const map = new HistoryMap(mapBox.current!, {
      tileUrl: body.tileUrl ?? '',
      attribution: body.tileAttribution ?? '',
      onPick: (t) => {
        playing.value = false
        playT.value = t
      },
    })
    historyMap.current = map
    const observer = new ResizeObserver(() => map.resize())
    observer.observe(mapBox.current!)
    return () => {
      observer.disconnect()
      map.destroy()
      historyMap.current = null
    }
  }, [])

  // load what the address and the stop threshold ask for
  const key = deviceId && range.ok && !waitingForFix ? `${deviceId} ${range.from} ${range.to} ${threshold}` : null
  useEffect(() => {
    playing.value = false
    selected.value = null
    if (!key || !deviceId || !range.ok) {
      loaded.value = { status: 'idle' }
      historyMap.current?.show(null, [], [], false)
      return
    }
    const abort = new AbortController()
    loaded.value = { status: 'loading', busySeconds: null }
    const withDate = range.days > 1
    loadHistory(deviceId, range, threshold, abort.signal, (busySeconds) => (loaded.value = { status: 'loading', busySeconds })).then(
      (data) => {
        const track = toTrack(data.route)
        playT.value = track.time.length > 0 ? track.time[0] : 0
        loaded.value = { status: 'ready', data, track, withDate, from: range.from, to: range.to }
        historyMap.current?.show(track, data.route.stops, data.events, withDate)
      },
      (error) => {
        if (abort.signal.aborted) return
        loaded.value = { status: 'error', message: failureMessage(error) }
        historyMap.current?.show(null, [], [], false)
      },
    )
    return () => abort.abort()
  }, [key])

  // the chart, drawn once the data is here (uPlot arrives with the first one)
  const ready = loaded.value.status === 'ready' ? loaded.value : null
  const track = ready && ready.track.time.length > 0 ? ready.track : null
  useEffect(() => {
    chartFailed.value = false
    if (!track || !chartBox.current) return
    let cancelled = false
    let drawn: SpeedChart | null = null
    const box = chartBox.current
    drawSpeedChart(box, track, (t) => {
      playing.value = false
      playT.value = Math.max(track.time[0], Math.min(track.time[track.time.length - 1], t))
    }).then(
      (c) => {
        if (cancelled) return c.destroy()
        drawn = c
        chart.current = c
        c.setPlayback(playT.peek())
      },
      () => !cancelled && (chartFailed.value = true),
    )
    const observer = new ResizeObserver(() => drawn?.resize(box.clientWidth))
    observer.observe(box)
    return () => {
      cancelled = true
      observer.disconnect()
      drawn?.destroy()
      chart.current = null
    }
  }, [track])

  // the playback's moment moves the marker and the chart's line (no render of the view)
  useEffect(
    () =>
      effect(() => {
        const t = playT.value
        if (!track) return
        const at = positionAt(track, t)
        historyMap.current?.setPlayback(at.latitude, at.longitude, at.course, playing.peek())
        chart.current?.setPlayback(t)
      }),
    [track],
  )

  // playing: track time runs `rate` times faster than the clock, past long gaps
  const rate = useSignal<number>(60)
  useEffect(
    () =>
      effect(() => {
        if (!playing.value || !track) return
        let frame = 0
        let last = performance.now()
        const end = track.time[track.time.length - 1]
        if (playT.peek() >= end) playT.value = track.time[0]
        const tick = (nowFrame: number) => {
          const next = advance(track, playT.peek(), ((nowFrame - last) / 1000) * rate.peek())
          last = nowFrame
          playT.value = next
          if (next >= end) playing.value = false
          else frame = requestAnimationFrame(tick)
        }
        frame = requestAnimationFrame(tick)
        return () => cancelAnimationFrame(frame)
      }),
    [track],
  )

  const pick = (t: number, id: string) => {
    playing.value = false
    selected.value = id
    playT.value = t
  }

  const data = ready?.data
  const stops = data?.route.stops ?? []
  const gaps = data?.route.gaps ?? []
  const travels = data?.travels.travels ?? []
  const events = data?.events ?? []
  const withDate = ready?.withDate ?? false
  const deviceName = device?.body.alias ?? deviceId ?? ''
  const what = range.ok && fromKey === toKey ? strings.historyOnDay(formatDay(dayStart(fromKey)!.getTime())) : strings.historyBetween(fromKey, toKey)

  return (
    <main id="content" class="history" tabIndex={-1}>
      <HistoryControls fleet={fleet} deviceId={deviceId} fromKey={fromKey} toKey={toKey} today={today} range={range} />

      <div class="history-main">
        <div class="history-map-wrap">
          <div ref={mapBox} class="map history-map" role="region" aria-label={strings.historyMapLabel} />
          {track && (
            <div class="map-tools">
              <button type="button" onClick={() => ((selected.value = null), historyMap.current?.fit())}>
                {strings.historyFitRoute}
              </button>
            </div>
          )}
        </div>
        {track && <PlaybackBar track={track} playT={playT} playing={playing} rate={rate} withDate={withDate} />}
        <div class={track ? 'speed-chart' : 'speed-chart empty-chart'} hidden={!track}>
          <div
            ref={chartBox}
            class="speed-chart-canvas"
            role="img"
            aria-label={track ? strings.historyChartLabel(strings.speedKmh(Math.max(0, ...travels.map((t) => t.max_speed)))) : undefined}
          />
          {chartFailed.value && <p class="alert">{strings.historyChartFailed}</p>}
        </div>
      </div>

      <div class="history-lists">
        {!deviceId && <p class="empty">{strings.historyPickPrompt}</p>}
        {!range.ok && deviceId && (
          <p class="alert" role="alert">
            {range.message}
          </p>
        )}
        {(loaded.value.status === 'loading' || waitingForFix) && (
          <p class="muted history-status" role="status">
            {loaded.value.status === 'loading' && loaded.value.busySeconds !== null ? strings.historyBusy(loaded.value.busySeconds) : strings.historyLoading}
          </p>
        )}
        {loaded.value.status === 'error' && (
          <p class="alert" role="alert">
            {loaded.value.message}
          </p>
        )}
        {ready && !track && (
          <div class="empty history-empty" role="status">
            <p>
              <strong>{deviceName}</strong>: {strings.historyEmpty(what)}
            </p>
            {device?.fix && dayKey(device.fix.timestamp * 1000) !== fromKey && (
              <p>
                {strings.historyNewestFixOn(formatDay(device.fix.timestamp * 1000))}{' '}
                <a href={historyHref(device.id, dayKey(device.fix.timestamp * 1000))}>{strings.historyGoToNewest}</a>
              </p>
            )}
          </div>
        )}
        {ready && track && data && (
          <>
            <dl class="history-summary" aria-label={strings.historySummary}>
              <div>
                <dt>{strings.historyDistance}</dt>
                <dd class="sum-distance">{formatKm(data.route.total_distance)}</dd>
              </div>
              <div>
                <dt>{strings.historyMovingTime}</dt>
                <dd class="sum-moving">{formatDuration(data.travels.total_duration)}</dd>
              </div>
              <div>
                <dt>{strings.historyMaxSpeed}</dt>
                <dd class="sum-max">{travels.length > 0 ? strings.speedKmh(Math.max(...travels.map((t) => t.max_speed))) : strings.unknown}</dd>
              </div>
              <div>
                <dt>{strings.historyDuration}</dt>
                <dd class="sum-span">{formatDuration(data.route.total_duration)}</dd>
              </div>
              {gaps.length > 0 && (
                <div>
                  <dt>{strings.historyNoDataTotal}</dt>
                  <dd class="sum-gaps">{formatDuration(gaps.reduce((sum, gap) => sum + gap.duration, 0))}</dd>
                </div>
              )}
            </dl>
            <TravelsTable travels={travels} withDate={withDate} selected={selected} onPick={(travel, i) => {
              pick(travel.start.timestamp, `travel-${i + 1}`)
              historyMap.current?.highlightSpan(travel.start.timestamp, travel.end.timestamp)
            }} />
            <StopsList stops={stops} gaps={gaps} travels={travels} withDate={withDate} threshold={threshold} selected={selected} onPick={(stop, i) => {
              pick(stop.start, `stop-${i + 1}`)
              historyMap.current?.focusPoint(stop.latitude, stop.longitude)
            }} onPickGap={(gap, i) => {
              pick(gap.end, `gap-${i + 1}`)
              historyMap.current?.focusGap(gap.start, gap.end)
            }} />
            <section class="history-section" aria-labelledby="hist-events-h">
              <h2 id="hist-events-h">
                {strings.historyEvents} <span class="count-badge">{events.length}</span>
              </h2>
              {events.length === 0 ? (
                <p class="muted">{strings.historyNoEvents}</p>
              ) : (
                <ul class="history-rows" onKeyDown={rowKeys}>
                  {events.map((event, i) => (
                    <li key={`${event.timestamp}-${i}`} class={selected.value === `event-${i + 1}` ? 'selected' : undefined}>
                      <button
                        type="button"
                        class="row-button"
                        data-row
                        aria-current={selected.value === `event-${i + 1}` ? 'true' : undefined}
                        onClick={() => {
                          pick(event.timestamp, `event-${i + 1}`)
                          if (event.coordinates) historyMap.current?.focusPoint(event.coordinates[0], event.coordinates[1])
                        }}
                      >
                        <time dateTime={new Date(event.timestamp * 1000).toISOString()}>{formatTime(event.timestamp, withDate)}</time>
                        <span class="row-what">{alarmName(event.alarm_code)}</span>
                        {event.speed !== null && <span class="muted">{strings.speedKmh(event.speed)}</span>}
                      </button>
                    </li>
                  ))}
                </ul>
              )}
            </section>
          </>
        )}
      </div>
    </main>
  )
}

/** The device, the days and the minimum stop; the days go into the address, so that Back works and a view can be shared. */
function HistoryControls({ fleet, deviceId, fromKey, toKey, today, range }: { fleet: Fleet; deviceId: string | null; fromKey: string; toKey: string; today: string; range: ReturnType<typeof historyWindow> }) {
  const device = useSignal(deviceId ?? '')
  const from = useSignal(fromKey)
  const to = useSignal(toKey)
  const problem = useSignal<string | null>(null)
  useEffect(() => {
    device.value = deviceId ?? ''
    from.value = fromKey
    to.value = toKey
    problem.value = null
  }, [deviceId, fromKey, toKey])

  const devices = useComputed(() => {
    fleet.version.value
    return fleet.order.slice()
  })
  const known = deviceId === null || devices.value.some((d) => d.id === deviceId)

  function show(event: Event) {
    event.preventDefault()
    if (!device.value) {
      problem.value = strings.historyChooseDevice
      return
    }
    const checked = historyWindow(from.value, to.value)
    if (!checked.ok) {
      problem.value = checked.message
      return
    }
    problem.value = null
    go(historyHref(device.value, from.value, to.value))
  }

  const oneDay = range.ok && fromKey === toKey
  const step = (days: number) => deviceId && go(historyHref(deviceId, shiftDay(fromKey, days)))

  return (
    <section class="history-controls" aria-labelledby="history-h">
      <h1 id="history-h">{strings.historyTitle}</h1>
      <form class="history-form" onSubmit={show} noValidate>
        <div class="field hf-device">
          <label for="history-device">{strings.historyDevice}</label>
          <select
            id="history-device"
            value={device.value}
            onChange={(e) => {
              device.value = e.currentTarget.value
              // a device chosen: show it at once, on the days already picked
              if (device.value) go(historyHref(device.value, from.value, to.value))
            }}
          >
            <option value="">{strings.historyChooseDevice}</option>
            {!known && deviceId && <option value={deviceId}>{deviceId}</option>}
            {devices.value.map((d) => (
              <option key={d.id} value={d.id}>
                {d.body.alias}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="history-from">{strings.historyFrom}</label>
          <input
            id="history-from"
            type="date"
            required
            max={today}
            value={from.value}
            onInput={(e) => {
              from.value = e.currentTarget.value
              if (to.value < from.value) to.value = from.value
            }}
          />
        </div>
        <div class="field">
          <label for="history-to">{strings.historyTo}</label>
          <input id="history-to" type="date" required min={from.value} value={to.value} onInput={(e) => (to.value = e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="history-stop">{strings.historyMinStop}</label>
          <select id="history-stop" value={String(stopThreshold.value)} onChange={(e) => (stopThreshold.value = Number(e.currentTarget.value))}>
            {STOP_THRESHOLDS_S.map((s) => (
              <option key={s} value={String(s)}>
                {formatDuration(s)}
              </option>
            ))}
          </select>
        </div>
        <div class="hf-actions">
          <button type="submit" class="primary">
            {strings.historyShow}
          </button>
          <button type="button" disabled={!deviceId || !range.ok} onClick={() => step(-1)} aria-label={strings.historyPreviousDay} title={strings.historyPreviousDay}>
            ‹
          </button>
          <button type="button" disabled={!deviceId || !range.ok || (oneDay && fromKey >= today)} onClick={() => step(1)} aria-label={strings.historyNextDay} title={strings.historyNextDay}>
            ›
          </button>
        </div>
      </form>
      {problem.value && (
        <p class="alert" role="alert">
          {problem.value}
        </p>
      )}
      <p class="history-zone muted small">{strings.historyZone(zoneName(range.ok ? range.from * 1000 : Date.now()))}</p>
    </section>
  )
}

function PlaybackBar({ track, playT, playing, rate, withDate }: { track: Track; playT: Signal<number>; playing: Signal<boolean>; rate: Signal<number>; withDate: boolean }) {
  const t = playT.value
  const index = indexAt(track, t)
  const at = positionAt(track, t)
  const readout = strings.historyAt(formatTimeSeconds(Math.round(t), withDate), strings.speedKmh(at.speed))
  return (
    <div class="playback" role="group" aria-label={strings.historyPlayback}>
      <button type="button" class="play" aria-pressed={playing.value} onClick={() => (playing.value = !playing.value)}>
        {playing.value ? `❚❚ ${strings.historyPause}` : `▶ ${strings.historyPlay}`}
      </button>
      <label class="sr-only" for="history-slider">
        {strings.historyPlaybackPosition}
      </label>
      <input
        id="history-slider"
        class="slider"
        type="range"
        min={0}
        max={track.time.length - 1}
        step={1}
        value={index}
        aria-valuetext={readout}
        onInput={(e) => {
          playing.value = false
          playT.value = track.time[Number(e.currentTarget.value)]
        }}
      />
      <output class="playback-at" for="history-slider">
        {readout}
      </output>
      <label class="sr-only" for="history-rate">
        {strings.historyPlaybackSpeed}
      </label>
      <select id="history-rate" class="rate" title={strings.historyPlaybackSpeed} value={String(rate.value)} onChange={(e) => (rate.value = Number(e.currentTarget.value))}>
        {PLAYBACK_RATES.map((r) => (
          <option key={r} value={String(r)}>
            {strings.historyPlaybackRate(r)}
          </option>
        ))}
      </select>
    </div>
  )
}

function TravelsTable({ travels, withDate, selected, onPick }: { travels: HistoryTravel[]; withDate: boolean; selected: Signal<string | null>; onPick: (travel: HistoryTravel, i: number) => void }) {
  return (
    <section class="history-section" aria-labelledby="hist-travels-h">
      <h2 id="hist-travels-h">
        {strings.historyTravels} <span class="count-badge">{travels.length}</span>
      </h2>
      {travels.length === 0 ? (
        <p class="muted">{strings.historyNoTravels}</p>
      ) : (
        <div class="table-scroll">
          <table class="travels">
            <caption class="sr-only">{strings.historyTravelsCaption}</caption>
            <thead>
              <tr>
                <th scope="col">{strings.historyTravelFrom}</th>
                <th scope="col">{strings.historyTravelTo}</th>
                <th scope="col" class="num">
                  {strings.historyTravelDistance}
                </th>
                <th scope="col" class="num">
                  {strings.historyTravelDuration}
                </th>
                <th scope="col" class="num">
                  {strings.historyAvgSpeed}
                  <span class="unit">{strings.kmh}</span>
                </th>
                <th scope="col" class="num">
                  {strings.historyMaxSpeedShort}
                  <span class="unit">{strings.kmh}</span>
                </th>
              </tr>
            </thead>
            <tbody onKeyDown={rowKeys}>
              {travels.map((travel, i) => {
                const id = `travel-${i + 1}`
                const current = selected.value === id
                return (
                  <tr key={travel.start.timestamp} class={current ? 'selected' : undefined} onClick={(e) => (e.target as HTMLElement).closest('button') || onPick(travel, i)}>
                    <td>
                      <button
                        type="button"
                        class="row-button place"
                        data-row
                        aria-current={current ? 'true' : undefined}
                        aria-label={strings.historyTravelLabel(i + 1, `${formatTime(travel.start.timestamp, withDate)} ${travel.start.address}`, `${formatTime(travel.end.timestamp, withDate)} ${travel.end.address}`)}
                        onClick={() => onPick(travel, i)}
                      >
                        <time dateTime={new Date(travel.start.timestamp * 1000).toISOString()}>{formatTime(travel.start.timestamp, withDate)}</time>
                        <span class="address">{travel.start.address}</span>
                      </button>
                    </td>
                    <td class="place">
                      <time dateTime={new Date(travel.end.timestamp * 1000).toISOString()}>{formatTime(travel.end.timestamp, withDate)}</time>
                      <span class="address">{travel.end.address}</span>
                    </td>
                    <td class="num">{formatKm(travel.distance)}</td>
                    <td class="num">{formatDuration(travel.duration)}</td>
                    <td class="num">{Math.round(travel.avg_speed)}</td>
                    <td class="num">{Math.round(travel.max_speed)}</td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}

/** A stop's place, named as the travel that ends there (or leaves from there) names it. */
function stopAddress(stop: HistoryStop, travels: HistoryTravel[]): string | null {
  return travels.find((t) => t.end.timestamp === stop.start)?.end.address ?? travels.find((t) => t.start.timestamp === stop.end)?.start.address ?? null
}

/** "15.2 km", "350 m" */
const formatAway = (metres: number) => (metres < 1000 ? `${Math.round(metres / 10) * 10} m` : formatKm(metres))

/** The stops, and between them in time the reporting gaps (no data: neither stopped nor driving, as far as anyone knows). */
function StopsList({
  stops,
  gaps,
  travels,
  withDate,
  threshold,
  selected,
  onPick,
  onPickGap,
}: {
  stops: HistoryStop[]
  gaps: HistoryGap[]
  travels: HistoryTravel[]
  withDate: boolean
  threshold: number
  selected: Signal<string | null>
  onPick: (stop: HistoryStop, i: number) => void
  onPickGap: (gap: HistoryGap, i: number) => void
}) {
  const rows = [...stops.map((stop, i) => ({ stop, i, at: stop.start })), ...gaps.map((gap, i) => ({ gap, i, at: gap.start }))].sort((a, b) => a.at - b.at)
  return (
    <section class="history-section" aria-labelledby="hist-stops-h">
      <h2 id="hist-stops-h">
        {strings.historyStops} <span class="count-badge">{stops.length}</span>
      </h2>
      {stops.length === 0 && <p class="muted">{strings.historyNoStops(formatDuration(threshold))}</p>}
      {rows.length > 0 && (
        <ol class="history-rows stops" onKeyDown={rowKeys}>
          {rows.map((row) => {
            if ('gap' in row) {
              const { gap, i } = row
              const id = `gap-${i + 1}`
              const current = selected.value === id
              const [from, to, away] = [formatTime(gap.start, withDate), formatTime(gap.end, withDate), formatAway(gap.displacement)]
              return (
                <li key={`gap-${gap.start}`} class={current ? 'gap-row selected' : 'gap-row'}>
                  <button
                    type="button"
                    class="row-button"
                    data-row
                    aria-current={current ? 'true' : undefined}
                    aria-label={strings.historyGapTitle(from, to, formatDuration(gap.duration), away)}
                    onClick={() => onPickGap(gap, i)}
                  >
                    <span class="gap-mark" aria-hidden="true">
                      ⋯
                    </span>
                    <span class="row-main">
                      <span>
                        <strong>{strings.historyNoData}</strong> {from} – {to}
                      </span>
                      <span class="muted small">{strings.historyGapAway(away)}</span>
                    </span>
                    <span class="stop-duration">{formatDuration(gap.duration)}</span>
                  </button>
                </li>
              )
            }
            const { stop, i } = row
            const id = `stop-${i + 1}`
            const current = selected.value === id
            const address = stopAddress(stop, travels)
            return (
              <li key={stop.start} class={current ? 'selected' : undefined}>
                <button
                  type="button"
                  class="row-button"
                  data-row
                  aria-current={current ? 'true' : undefined}
                  aria-label={strings.historyStopTitle(i + 1, formatTime(stop.start, withDate), formatTime(stop.end, withDate), formatDuration(stop.duration))}
                  onClick={() => onPick(stop, i)}
                >
                  <span class="stop-number" aria-hidden="true">
                    {i + 1}
                  </span>
                  <span class="row-main">
                    <span>
                      {formatTime(stop.start, withDate)} – {formatTime(stop.end, withDate)}
                    </span>
                    {address && <span class="muted small address">{address}</span>}
                  </span>
                  <span class="stop-duration">{formatDuration(stop.duration)}</span>
                </button>
              </li>
            )
          })}
        </ol>
      )}
    </section>
  )
}
