import { useSignal } from '@preact/signals'
import { Fragment } from 'preact'
import { useEffect, useRef } from 'preact/hooks'
import { ApiError, getJson } from '../api'
import { now } from '../clock'
import type { Fleet } from '../fleet'
import { ago, compass, coordinates, when } from '../format'
import { strings } from '../strings'
import type { Command, Device, DeviceEvent, RoutePoint } from '../types'
import { historyHref } from '../router'
import { StateMark } from './StateMark'

const NEWEST_FIXES = 10
const DAY_S = 86_400

type Loaded<T> = { status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; value: T }

function message(error: unknown): string {
  return error instanceof ApiError && error.problem?.detail ? error.problem.detail : strings.loadFailed
}

/** A device: its latest status, its newest fixes, its commands and its details. */
export function DevicePanel({ fleet, id }: { fleet: Fleet; id: string }) {
  fleet.version.value // follow live fixes
  const device = fleet.devices.get(id)
  const detail = useSignal<Loaded<Device>>({ status: 'loading' })
  const commands = useSignal<Loaded<Command[]>>({ status: 'loading' })
  const fixes = useSignal<Loaded<RoutePoint[]>>({ status: 'loading' })
  const signalInfo = useSignal<DeviceEvent | null>(null)
  const heading = useRef<HTMLHeadingElement>(null)

  // the newest fix known when the panel opened bounds the window of fixes asked for
  const anchor = device?.fix?.timestamp ?? null
  useEffect(() => {
    const abort = new AbortController()
    const path = `devices/${encodeURIComponent(id)}`
    detail.value = { status: 'loading' }
    commands.value = { status: 'loading' }
    fixes.value = { status: 'loading' }
    signalInfo.value = null
    getJson<Device>(path, abort.signal).then(
      (value) => (detail.value = { status: 'ready', value }),
      (error) => !abort.signal.aborted && (detail.value = { status: 'error', message: message(error) }),
    )
    getJson<Command[]>(`${path}/commands`, abort.signal).then(
      (value) => (commands.value = { status: 'ready', value }),
      (error) => !abort.signal.aborted && (commands.value = { status: 'error', message: message(error) }),
    )
    return () => abort.abort()
  }, [id])

  // fixes and signal: the day before the newest fix (once the stream has told it), else before now
  useEffect(() => {
    if (!device) return
    const abort = new AbortController()
    const to = anchor ?? Math.floor(Date.now() / 1000)
    const from = to - DAY_S
    const path = `devices/${encodeURIComponent(id)}/history`
    getJson<{ points: RoutePoint[] }>(`${path}/route?from=${from}&to=${to}`, abort.signal).then(
      (route) => (fixes.value = { status: 'ready', value: route.points.slice(-NEWEST_FIXES).reverse() }),
      (error) => !abort.signal.aborted && (fixes.value = { status: 'error', message: message(error) }),
    )
    getJson<DeviceEvent[]>(`${path}/events?from=${from}&to=${to}`, abort.signal).then(
      (events) => {
        // signal and satellites, where a device reports them, come with its events
        const reported = events.filter((e) => e.dbm !== null || e.satellite !== null)
        signalInfo.value = reported.length > 0 ? reported.reduce((a, b) => (b.timestamp > a.timestamp ? b : a)) : null
      },
      () => {},
    )
    return () => abort.abort()
  }, [id, anchor === null, device !== undefined])

  useEffect(() => heading.current?.focus(), [id])

  const nowMs = now.value
  const body = detail.value.status === 'ready' ? detail.value.value : device?.body
  const fix = device?.fix ?? null
  // a fix that came live since the list was read leads the table
  let rows = fixes.value.status === 'ready' ? fixes.value.value : []
  if (fix && device?.latitude != null && (rows.length === 0 || rows[0].timestamp < fix.timestamp)) {
    rows = [{ latitude: device.latitude, longitude: device.longitude!, speed: fix.speed ?? Number.NaN, timestamp: fix.timestamp }, ...rows].slice(0, NEWEST_FIXES)
  }

  if (!body) {
    return (
      <div class="panel">
        <a class="back" href="#/">
          ← {strings.back}
        </a>
        {detail.value.status === 'error' ? (
          <p class="alert" role="alert">
            {detail.value.message}
          </p>
        ) : (
          <p class="muted">{strings.loading}</p>
        )}
      </div>
    )
  }

  const state = device?.state ?? body.state
  const plate = typeof body.properties?.plate === 'string' ? body.properties.plate : null
  const connection = body.connected
    ? body.connected_at
      ? strings.connectedSince(when(Date.parse(body.connected_at), nowMs))
      : strings.live
    : body.disconnected_at
      ? strings.disconnectedSince(when(Date.parse(body.disconnected_at), nowMs))
      : strings.neverConnected

  return (
    <div class="panel" data-device={id}>
      <a class="back" href="#/">
        ← {strings.back}
      </a>
      <h2 ref={heading} tabIndex={-1} class="panel-title">
        <StateMark state={state} course={fix?.course} />
        <span class="panel-alias">{body.alias}</span>
      </h2>
      {plate && <p class="plate">{plate}</p>}
      <a class="history-link" href={historyHref(id)}>
        {strings.historyOfDevice}
      </a>

      <section aria-labelledby="status-h">
        <h3 id="status-h">{strings.latestStatus}</h3>
        <dl class="facts">
          <dt>{strings.fieldState}</dt>
          <dd class="state-value">{strings.states[state] ?? state}</dd>
          <dt>{strings.fieldConnection}</dt>
          <dd>{connection}</dd>
          <dt>{strings.fieldNewestFix}</dt>
          <dd class="newest-fix">
            {fix ? (
              <time dateTime={new Date(fix.timestamp * 1000).toISOString()}>
                {when(fix.timestamp * 1000, nowMs)} ({ago(fix.timestamp, nowMs)})
              </time>
            ) : (
              strings.noFixTime
            )}
          </dd>
          {fix?.speed != null && (
            <>
              <dt>{strings.fieldSpeed}</dt>
              <dd class="speed">{strings.speedKmh(fix.speed)}</dd>
            </>
          )}
          {fix?.course != null && (
            <>
              <dt>{strings.fieldHeading}</dt>
              <dd>
                {Math.round(fix.course)}° {compass(fix.course)}
              </dd>
            </>
          )}
          {device?.latitude != null && (
            <>
              <dt>{strings.fieldPosition}</dt>
              <dd class="position">{coordinates(device.latitude, device.longitude!)}</dd>
            </>
          )}
          {signalInfo.value?.dbm != null && (
            <>
              <dt>{strings.fieldSignal}</dt>
              <dd>{strings.dbm(signalInfo.value.dbm)}</dd>
            </>
          )}
          {signalInfo.value?.satellite != null && (
            <>
              <dt>{strings.fieldSatellites}</dt>
              <dd>{signalInfo.value.satellite}</dd>
            </>
          )}
        </dl>
      </section>

      <section aria-labelledby="fixes-h">
        <h3 id="fixes-h">{strings.newestFixes}</h3>
        {fixes.value.status === 'error' && <p class="alert">{fixes.value.message}</p>}
        {fixes.value.status === 'loading' && rows.length === 0 && <p class="muted">{strings.loading}</p>}
        {fixes.value.status === 'ready' && rows.length === 0 && <p class="muted">{strings.noFixes}</p>}
        {rows.length > 0 && (
          <table class="fixes">
            <thead>
              <tr>
                <th scope="col">{strings.fixTime}</th>
                <th scope="col">{strings.fixSpeed}</th>
                <th scope="col">{strings.fixPlace}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((p) => (
                <tr key={p.timestamp}>
                  <td>
                    <time dateTime={new Date(p.timestamp * 1000).toISOString()}>{when(p.timestamp * 1000, nowMs)}</time>
                  </td>
                  <td>{Number.isFinite(p.speed) ? strings.speedKmh(p.speed) : strings.unknown}</td>
                  <td>{coordinates(p.latitude, p.longitude)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section aria-labelledby="commands-h">
        <h3 id="commands-h">{strings.commands}</h3>
        {commands.value.status === 'loading' && <p class="muted">{strings.loading}</p>}
        {commands.value.status === 'error' && <p class="alert">{commands.value.message}</p>}
        {commands.value.status === 'ready' &&
          (commands.value.value.length === 0 ? (
            <p class="muted">{strings.noCommands}</p>
          ) : (
            <>
              <p class="note">{strings.commandsLater}</p>
              <ul class="commands">
                {commands.value.value.map((command) => (
                  <li key={command.id}>
                    <CommandWidget command={command} />
                  </li>
                ))}
              </ul>
            </>
          ))}
      </section>

      <section aria-labelledby="details-h">
        <h3 id="details-h">{strings.details}</h3>
        <dl class="facts">
          <dt>{strings.fieldImei}</dt>
          <dd>{body.imei || strings.unknown}</dd>
          <dt>{strings.fieldSerial}</dt>
          <dd>{body.serial || strings.unknown}</dd>
          <dt>{strings.fieldIccid}</dt>
          <dd>{body.iccid || strings.unknown}</dd>
          {Object.entries(body.properties ?? {})
            .filter(([, value]) => typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
            .map(([key, value]) => (
              <Fragment key={key}>
                <dt>{key}</dt>
                <dd>{String(value)}</dd>
              </Fragment>
            ))}
          <dt>{strings.fieldCreated}</dt>
          <dd>{when(Date.parse(body.created_at), nowMs)}</dd>
        </dl>
      </section>
    </div>
  )
}

/**
 * A command as its model's widget describes it: a button (with its confirmation), or a form with
 * its fields. Sending comes with a later version: the controls are shown, disabled.
 */
function CommandWidget({ command }: { command: Command }) {
  const widget = command.widget
  const fieldId = (name: string) => `cmd-${command.id}-${name}`
  if (widget.type === 'button') {
    const button = widget as { label?: string; confirm?: boolean; confirm_message?: string }
    return (
      <div class="command">
        <span class="command-name">{command.name}</span>
        <button type="button" disabled>
          {button.label || command.name}
        </button>
        {button.confirm && <p class="muted small">{button.confirm_message ? strings.confirmsWith(button.confirm_message) : strings.confirmsPlain}</p>}
      </div>
    )
  }
  if (widget.type === 'form' && Array.isArray(widget.fields)) {
    const fields = widget.fields as { name: string; type: string; label: string }[]
    return (
      <form class="command" onSubmit={(e) => e.preventDefault()}>
        <fieldset disabled>
          <legend class="command-name">{command.name}</legend>
          {fields.map((field) => (
            <div class="field" key={field.name}>
              <label for={fieldId(field.name)}>{field.label || field.name}</label>
              <input id={fieldId(field.name)} name={field.name} type={(field.type === 'password' || field.type === 'number' ? field.type : 'text') as 'text'} autocomplete="off" />
            </div>
          ))}
          <button type="submit">{strings.send}</button>
        </fieldset>
      </form>
    )
  }
  return (
    <div class="command">
      <span class="command-name">{command.name}</span>
    </div>
  )
}
