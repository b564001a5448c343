import { type Signal, useSignal } from '@preact/signals'
import { Fragment } from 'preact'
import { useEffect, useRef } from 'preact/hooks'
import { ApiError, failure, getJson, request } from '../api'
import { now } from '../clock'
import type { Fleet } from '../fleet'
import { ago, compass, coordinates, statusFacts, when } from '../format'
import { strings } from '../strings'
import type { Command, Device, DeviceEvent, DeviceStatus, RoutePoint } from '../types'
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
  const status = useSignal<DeviceStatus | null>(null)
  const heading = useRef<HTMLHeadingElement>(null)
  const sent = useSentCommands(fleet, id)

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

  // what the device said of itself and the place it is at: read again with each newer fix
  const newestFixAt = device?.fix?.timestamp ?? null
  useEffect(() => {
    const abort = new AbortController()
    getJson<DeviceStatus>(`devices/${encodeURIComponent(id)}/status`, abort.signal).then(
      (value) => (status.value = value),
      // the panel shows the rest without it
      () => {},
    )
    return () => abort.abort()
  }, [id, newestFixAt])
  useEffect(() => {
    status.value = null
    // a status packet without a fix (a heartbeat) comes by the stream: merged as the server merges it
    return fleet.onStatus((change) => {
      const current = status.value
      if (change.id === id && current?.id === id) {
        status.value = { ...current, attributes: { ...current.attributes, ...change.attributes }, updated_at: change.updated_at }
      }
    })
  }, [id])

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
              <dd class="position">
                {status.value?.address && <span class="address">{status.value.address}</span>}
                <span class="coordinates">{coordinates(device.latitude, device.longitude!)}</span>
              </dd>
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
          {status.value?.id === id &&
            statusFacts(status.value.attributes).map((fact) => (
              <Fragment key={fact.key}>
                <dt>{fact.label}</dt>
                <dd class={`status-${fact.key}`}>{fact.value}</dd>
              </Fragment>
            ))}
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
            <ul class="commands">
              {commands.value.value.map((command) => (
                <li key={command.id}>
                  <CommandWidget command={command} deviceId={id} onSent={sent.added} />
                </li>
              ))}
            </ul>
          ))}
        {commands.value.status === 'ready' && commands.value.value.length > 0 && <SentCommandList sent={sent} nowMs={nowMs} />}
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
                <dt>{key === 'speed_limit' ? strings.fieldSpeedLimit : key === 'plate' ? strings.fieldPlate : key}</dt>
                <dd>{key === 'speed_limit' && typeof value === 'number' ? strings.speedKmh(value) : String(value)}</dd>
              </Fragment>
            ))}
          <dt>{strings.fieldCreated}</dt>
          <dd>{when(Date.parse(body.created_at), nowMs)}</dd>
        </dl>
      </section>
    </div>
  )
}

// ---- sending commands and their answers

/** A sent command (GET /devices/{id}/commands/sent): `text` shows passwords as *** */
interface SentCommand {
  id: string
  command: string
  name: string
  text: string
  status: 'queued' | 'sent' | 'answered' | 'expired' | 'cancelled' | 'failed'
  created_at: string
  sent_at: string | null
  answered_at: string | null
  expires_at: string
  response: string | null
}

/** the device's newest sent commands shown */
const SENT_SHOWN = 10
/**
 * How often the list is read again while a command is queued. The stream tells of answers,
 * failures and expiries (`event: alarm`, command_*), but a command going out is no event: a queued
 * one is the only state the stream cannot move on.
 */
const QUEUED_POLL_MS = 5000

interface SentCommands {
  list: Signal<Loaded<SentCommand[]>>
  /** what screen readers hear: a command answered, failed, expired */
  announcement: Signal<string>
  /** a command the API just queued */
  added(sent: SentCommand): void
  cancel(sent: SentCommand): Promise<void>
}

/** The device's sent commands, kept current by the fleet's stream (and a slow read while one is queued). */
function useSentCommands(fleet: Fleet, id: string): SentCommands {
  const list = useSignal<Loaded<SentCommand[]>>({ status: 'loading' })
  const announcement = useSignal('')
  const path = `devices/${encodeURIComponent(id)}/commands/sent`

  function merge(fresh: SentCommand[]) {
    const before = new Map((list.value.status === 'ready' ? list.value.value : []).map((s) => [s.id, s.status]))
    for (const sent of fresh) {
      const was = before.get(sent.id)
      if (was !== undefined && was !== sent.status && sent.status !== 'sent') {
        announcement.value = strings.sentAnnounce(sent.name, strings.sentStatus[sent.status] ?? sent.status, sent.response)
      }
    }
    list.value = { status: 'ready', value: fresh }
  }

  async function reload(signal?: AbortSignal) {
    try {
      merge(await getJson<SentCommand[]>(`${path}?limit=${SENT_SHOWN}`, signal))
    } catch (error) {
      if (signal?.aborted) return
      if (list.value.status !== 'ready') list.value = { status: 'error', message: message(error) }
    }
  }

  useEffect(() => {
    const abort = new AbortController()
    list.value = { status: 'loading' }
    announcement.value = ''
    void reload(abort.signal)
    const unsubscribe = fleet.onAlarm((alarm) => {
      if (alarm.id === id && alarm.alarm_code.startsWith('command_')) void reload(abort.signal)
    })
    return () => {
      abort.abort()
      unsubscribe()
    }
  }, [id])

  const queued = list.value.status === 'ready' && list.value.value.some((s) => s.status === 'queued')
  useEffect(() => {
    if (!queued) return
    const abort = new AbortController()
    const timer = setInterval(() => void reload(abort.signal), QUEUED_POLL_MS)
    return () => {
      clearInterval(timer)
      abort.abort()
    }
  }, [id, queued])

  return {
    list,
    announcement,
    added(sent) {
      const shown = list.value.status === 'ready' ? list.value.value.filter((s) => s.id !== sent.id) : []
      list.value = { status: 'ready', value: [sent, ...shown].slice(0, SENT_SHOWN) }
      announcement.value = strings.sentQueued(sent.name)
    },
    async cancel(sent) {
      const response = await request(`${path}/${encodeURIComponent(sent.id)}`, { method: 'DELETE' })
      // 409: it went out meanwhile; either way the list says what it is now
      if (!response.ok && response.status !== 409) throw await failure(response)
      await reload()
    },
  }
}

/** POST the command with the form's values: the sent command, or the API's problem. */
async function sendCommand(deviceId: string, commandId: string, values: Record<string, string | number>): Promise<SentCommand> {
  const response = await request(`devices/${encodeURIComponent(deviceId)}/commands/${encodeURIComponent(commandId)}`, { method: 'POST', body: values })
  if (!response.ok) throw await failure(response)
  return (await response.json()) as SentCommand
}

/** The API's words for what went wrong, and each field's (`/apn` → "is required"). */
function problemOf(error: unknown): { message: string; fields: Record<string, string> } {
  const fields: Record<string, string> = {}
  if (error instanceof ApiError) {
    for (const item of error.problem?.errors ?? []) {
      const name = item.path.replace(/^\//, '').replace(/~1/g, '/').replace(/~0/g, '~')
      if (name) fields[name] = item.message
    }
    return { message: error.problem?.detail ?? strings.sendFailed, fields }
  }
  return { message: strings.sendFailed, fields }
}

/**
 * A command as its model's widget describes it: a button (with its confirmation, asked in place),
 * or a form with its fields. What it sends is queued; the list below shows it go and its answer.
 */
function CommandWidget({ command, deviceId, onSent }: { command: Command; deviceId: string; onSent: (sent: SentCommand) => void }) {
  const widget = command.widget
  const busy = useSignal(false)
  const error = useSignal<string | null>(null)
  const fieldErrors = useSignal<Record<string, string>>({})
  const confirming = useSignal(false)
  const trigger = useRef<HTMLButtonElement>(null)
  const confirmButton = useRef<HTMLButtonElement>(null)
  const fieldId = (name: string) => `cmd-${command.id}-${name}`

  useEffect(() => {
    if (confirming.value) confirmButton.current?.focus()
  }, [confirming.value])

  async function send(values: Record<string, string | number>): Promise<boolean> {
    busy.value = true
    error.value = null
    fieldErrors.value = {}
    try {
      onSent(await sendCommand(deviceId, command.id, values))
      return true
    } catch (failure) {
      const problem = problemOf(failure)
      // a field's problem is told at the field; the API's sentence would say it again
      error.value = Object.keys(problem.fields).length > 0 ? null : problem.message
      fieldErrors.value = problem.fields
      return false
    } finally {
      busy.value = false
    }
  }

  if (widget.type === 'button') {
    const button = widget as { label?: string; confirm?: boolean; confirm_message?: string }
    const label = button.label || command.name
    const questionId = `cmd-${command.id}-question`
    const stopConfirming = () => {
      confirming.value = false
      // focus goes back where it came from (the button is rendered again first)
      requestAnimationFrame(() => trigger.current?.focus())
    }
    return (
      <div class="command">
        <span class="command-name">{command.name}</span>
        {!confirming.value && (
          <button ref={trigger} type="button" disabled={busy.value} onClick={() => (button.confirm ? (confirming.value = true) : void send({}))}>
            {label}
          </button>
        )}
        {confirming.value && (
          <div class="command-confirm" role="group" aria-labelledby={questionId} onKeyDown={(e) => e.key === 'Escape' && stopConfirming()}>
            <p id={questionId}>{button.confirm_message || strings.confirmPlain(label)}</p>
            <div class="command-confirm-actions">
              <button
                ref={confirmButton}
                type="button"
                class="primary"
                disabled={busy.value}
                onClick={async () => {
                  if (await send({})) stopConfirming()
                }}
              >
                {strings.confirmSend(label)}
              </button>
              <button type="button" onClick={stopConfirming} disabled={busy.value}>
                {strings.confirmCancel}
              </button>
            </div>
          </div>
        )}
        {error.value && (
          <p class="alert" role="alert">
            {error.value}
          </p>
        )}
      </div>
    )
  }
  if (widget.type === 'form' && Array.isArray(widget.fields)) {
    const fields = widget.fields as { name: string; type: string; label: string; required?: boolean }[]
    const submit = async (event: Event) => {
      event.preventDefault()
      const form = event.currentTarget as HTMLFormElement
      const values: Record<string, string | number> = {}
      for (const field of fields) {
        const input = form.elements.namedItem(field.name) as HTMLInputElement | null
        const raw = input?.value ?? ''
        // a number field sends a JSON number; anything else as typed, for the API to name the field
        values[field.name] = field.type === 'number' && raw.trim() !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw
      }
      if (await send(values)) form.reset()
    }
    return (
      <form class="command" onSubmit={submit} noValidate>
        <fieldset disabled={busy.value}>
          <legend class="command-name">{command.name}</legend>
          {fields.map((field) => {
            const problem = fieldErrors.value[field.name]
            return (
              <div class="field" key={field.name}>
                <label for={fieldId(field.name)}>
                  {field.label || field.name}
                  {/* left empty, an optional field is not sent at all */}
                  {field.required === false && <span class="muted"> {strings.optionalField}</span>}
                </label>
                <input
                  id={fieldId(field.name)}
                  name={field.name}
                  type={(field.type === 'password' || field.type === 'number' ? field.type : 'text') as 'text'}
                  // never the browser's saved sign-in password in a device's field
                  autocomplete={field.type === 'password' ? 'new-password' : 'off'}
                  inputMode={field.type === 'number' ? 'decimal' : undefined}
                  aria-invalid={problem ? 'true' : undefined}
                  aria-describedby={problem ? `${fieldId(field.name)}-error` : undefined}
                />
                {problem && (
                  <p class="field-error small" id={`${fieldId(field.name)}-error`}>
                    {strings.fieldProblem(field.label || field.name, problem)}
                  </p>
                )}
              </div>
            )
          })}
          <button type="submit" class="primary">
            {strings.send}
          </button>
        </fieldset>
        {error.value && (
          <p class="alert" role="alert">
            {error.value}
          </p>
        )}
      </form>
    )
  }
  return (
    <div class="command">
      <span class="command-name">{command.name}</span>
    </div>
  )
}

/** The device's sent commands, newest first: each one's state, its times and the device's answer. */
function SentCommandList({ sent, nowMs }: { sent: SentCommands; nowMs: number }) {
  const list = sent.list.value
  const cancelling = useSignal<string | null>(null)
  const error = useSignal<string | null>(null)
  const time = (iso: string) => <time dateTime={iso}>{when(Date.parse(iso), nowMs)}</time>
  return (
    <div class="sent-commands">
      <h4 id="sent-h">{strings.sentTitle}</h4>
      <p class="visually-hidden" role="status">
        {sent.announcement.value}
      </p>
      {list.status === 'loading' && <p class="muted">{strings.loading}</p>}
      {list.status === 'error' && <p class="alert">{list.message}</p>}
      {list.status === 'ready' && list.value.length === 0 && <p class="muted">{strings.sentNone}</p>}
      {error.value && (
        <p class="alert" role="alert">
          {error.value}
        </p>
      )}
      {list.status === 'ready' && list.value.length > 0 && (
        <ol class="sent-list" aria-labelledby="sent-h">
          {list.value.map((s) => (
            <li key={s.id} class="sent" data-sent={s.id} data-status={s.status}>
              <div class="sent-head">
                <span class="sent-name">{s.name}</span>
                <span class={`sent-status sent-${s.status}`}>{strings.sentStatus[s.status] ?? s.status}</span>
              </div>
              <code class="sent-text">{s.text}</code>
              <p class="sent-times small muted">
                {strings.sentQueuedAt} {time(s.created_at)}
                {s.sent_at && (
                  <>
                    {' · '}
                    {strings.sentSentAt} {time(s.sent_at)}
                  </>
                )}
                {s.answered_at && (
                  <>
                    {' · '}
                    {strings.sentAnsweredAt} {time(s.answered_at)}
                  </>
                )}
                {s.status === 'queued' && (
                  <>
                    {' · '}
                    {strings.sentExpiresAt} {time(s.expires_at)}
                  </>
                )}
              </p>
              {s.response !== null && (
                <p class="sent-response">
                  <span class="muted">{strings.sentAnswer}</span> {s.response}
                </p>
              )}
              {s.status === 'queued' && (
                <button
                  type="button"
                  class="small-button"
                  disabled={cancelling.value === s.id}
                  aria-label={strings.sentCancelLabel(s.name)}
                  onClick={async () => {
                    cancelling.value = s.id
                    error.value = null
                    try {
                      await sent.cancel(s)
                    } catch (failure) {
                      error.value = problemOf(failure).message
                    } finally {
                      cancelling.value = null
                    }
                  }}
                >
                  {strings.sentCancel}
                </button>
              )}
            </li>
          ))}
        </ol>
      )}
    </div>
  )
}
