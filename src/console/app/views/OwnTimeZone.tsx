import { useEffect, useState } from 'preact/hooks'
import { write } from '../admin'
import { browserZone, loadOwnZone, ownZone, zoneNames } from '../reports'
import { strings } from '../strings'
import { AccountAction, Dialog, FormAlert, FormButtons, SelectField, useSave } from './AdminParts'

const s = strings.ownZone

/** "Time zone" in the header: the signed-in person's own zone (PATCH /me timezone), the zone of their reports' days and times. */
export function OwnTimeZone() {
  useEffect(() => void loadOwnZone(), [])
  return <AccountAction label={s.open} savedNote={s.saved} id="own-zone-open" title={s.current(ownZone.value ?? browserZone())} form={(onClose) => <OwnTimeZoneForm onClose={onClose} />} />
}

function OwnTimeZoneForm({ onClose }: { onClose: (saved: boolean) => void }) {
  const save = useSave()
  // '' is none of their own: the browser's
  const [zone, setZone] = useState(ownZone.value ?? '')

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    const chosen = zone === '' ? null : zone
    const ok = await save.run(() => write('PATCH', 'me', { timezone: chosen }))
    if (ok) {
      ownZone.value = chosen
      onClose(true)
    }
  }

  return (
    <Dialog title={s.title} onClose={() => onClose(false)}>
      <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form">
        <FormAlert failure={save.failure.value} shown={(key) => key === 'timezone'} />
        <p class="note">{s.note}</p>
        <SelectField
          id="own-zone"
          label={s.label}
          value={zone}
          onChange={setZone}
          options={[{ value: '', label: s.browser(browserZone()) }, ...zoneNames().map((name) => ({ value: name, label: name }))]}
          error={save.error('timezone')}
          autofocus
        />
        <FormButtons busy={save.busy.value} save={s.save} onCancel={() => onClose(false)} />
      </form>
    </Dialog>
  )
}
