import { useEffect, useState } from 'preact/hooks'
import { write } from '../admin'
import { ApiError, getJson } from '../api'
import { alarmName } from '../eventNames'
import { knownCodes } from '../notifications'
import { strings } from '../strings'
import { AccountAction, Dialog, FormAlert, FormButtons, TextField, useSave } from './AdminParts'

const s = strings.emailAlerts

/** GET /me/email-alerts */
interface EmailAlertsState {
  enabled: boolean
  events: string[]
  address: string | null
  /** the server has SMTP_URL: without it, alerts cannot be turned on */
  email_configured: boolean
}

/** as the server checks an address (src/alerts/notifications-service.ts EMAIL_ADDRESS), roughly: the server says the rest */
const ADDRESS = /^[^\s@,;<>()[\]\\"':]+@[^\s@,;<>]+\.[^\s@,;<>]+$/

/** "My email alerts" in the header, beside "Change password": which events the signed-in person is told of by email (PUT /me/email-alerts). */
export function EmailAlerts() {
  return <AccountAction label={s.open} savedNote={s.saved} form={(onClose) => <EmailAlertsForm onClose={onClose} />} />
}

function EmailAlertsForm({ onClose }: { onClose: (saved: boolean) => void }) {
  const [state, setState] = useState<{ status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; value: EmailAlertsState }>({ status: 'loading' })
  useEffect(() => {
    const abort = new AbortController()
    getJson<EmailAlertsState>('me/email-alerts', abort.signal)
      .then((value) => setState({ status: 'ready', value }))
      .catch((error: unknown) => {
        if (!abort.signal.aborted) setState({ status: 'error', message: error instanceof ApiError ? error.message : strings.networkDown })
      })
    return () => abort.abort()
  }, [])

  return (
    <Dialog title={s.title} onClose={() => onClose(false)}>
      {state.status === 'loading' && (
        <p class="hint" role="status">
          {s.loading}
        </p>
      )}
      {state.status === 'error' && (
        <p class="alert" role="alert">
          {state.message}
        </p>
      )}
      {state.status === 'ready' && <Choices current={state.value} onClose={onClose} />}
    </Dialog>
  )
}

function Choices({ current, onClose }: { current: EmailAlertsState; onClose: (saved: boolean) => void }) {
  const save = useSave()
  const [enabled, setEnabled] = useState(current.enabled)
  const [address, setAddress] = useState(current.address ?? '')
  const [events, setEvents] = useState<string[]>(current.events)
  // the console's list, then any code chosen through the API that it does not name
  const codes = [...knownCodes(), ...current.events.filter((code) => !knownCodes().includes(code))]
  // without SMTP_URL alerts cannot be turned on (turning them off still can)
  const canEnable = current.email_configured || current.enabled

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    const invalid: Record<string, string> = {}
    const typed = address.trim()
    if (typed === '' && (enabled || current.address === null)) invalid.address = s.addressRequired
    else if (typed !== '' && !ADDRESS.test(typed)) invalid.address = s.addressBad
    if (enabled && events.length === 0) invalid.events = s.eventsRequired
    if (save.invalid(invalid)) return
    const ok = await save.run(() => write('PUT', 'me/email-alerts', { events, enabled, ...(typed === '' ? {} : { address: typed }) }))
    if (ok) onClose(true)
  }

  return (
    <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form email-alerts">
      <FormAlert failure={save.failure.value} shown={(key) => key === 'address' || key === 'events' || key.startsWith('events/')} />
      {current.email_configured ? (
        <p class="note">{s.note}</p>
      ) : (
        <p class="alert" role="status" id="email-alerts-unconfigured">
          {s.notConfigured}
        </p>
      )}
      <label class="check ea-enabled">
        <input
          type="checkbox"
          id="ea-enabled"
          checked={enabled}
          disabled={!canEnable}
          aria-describedby={canEnable ? undefined : 'email-alerts-unconfigured'}
          onChange={(e) => {
            setEnabled(e.currentTarget.checked)
            save.edited('enabled')
            save.edited('events')
          }}
        />
        <span>{s.enabled}</span>
      </label>
      <TextField
        id="ea-address"
        label={s.address}
        type="email"
        value={address}
        onInput={(value) => {
          setAddress(value)
          save.edited('address')
        }}
        error={save.error('address')}
        hint={s.addressHint}
        autocomplete="email"
        maxLength={254}
        required={enabled}
      />
      <fieldset class={save.error('events') ? 'pick invalid' : 'pick'} aria-describedby={save.error('events') ? 'ea-events-error' : undefined}>
        <legend>{s.events}</legend>
        <div class="nf-codes">
          {codes.map((code) => (
            <label key={code} class="pick-item">
              <input
                type="checkbox"
                value={code}
                checked={events.includes(code)}
                onChange={(e) => {
                  const checked = e.currentTarget.checked
                  setEvents((now) => (checked ? [...now, code] : now.filter((c) => c !== code)))
                  save.edited('events')
                }}
              />
              <span class="pick-text">
                <span>{alarmName(code)}</span>
              </span>
            </label>
          ))}
        </div>
        {save.error('events') && (
          <p id="ea-events-error" class="field-error">
            {save.error('events')}
          </p>
        )}
      </fieldset>
      <FormButtons busy={save.busy.value} save={s.save} onCancel={() => onClose(false)} />
    </form>
  )
}
