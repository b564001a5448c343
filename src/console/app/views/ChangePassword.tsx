import { useState } from 'preact/hooks'
import { write } from '../admin'
import { strings } from '../strings'
import { AccountAction, Dialog, FormAlert, FormButtons, TextField, useSave } from './AdminParts'

const s = strings.ownPassword
const MIN_PASSWORD = 10

/** "Change password" in the header: the signed-in person's own password (PATCH /me), for members and admins alike. */
export function ChangePassword() {
  return <AccountAction label={s.open} savedNote={s.changed} form={(onClose) => <ChangePasswordForm onClose={onClose} />} />
}

function ChangePasswordForm({ onClose }: { onClose: (changed: boolean) => void }) {
  const save = useSave()
  const [current, setCurrent] = useState('')
  const [password, setPassword] = useState('')

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    const invalid: Record<string, string> = {}
    if (current === '') invalid.current_password = s.currentRequired
    if (password.length < MIN_PASSWORD) invalid.password = strings.admin.passwordShort(MIN_PASSWORD)
    if (save.invalid(invalid)) return
    const ok = await save.run(() => write('PATCH', 'me', { current_password: current, password }))
    // 403: the current password was wrong (the API's 401 would mean the session is gone)
    if (!ok && save.failure.value?.status === 403) save.failure.value = { ...save.failure.value, fields: { current_password: s.wrongCurrent } }
    if (ok) onClose(true)
  }

  return (
    <Dialog title={s.title} onClose={() => onClose(false)}>
      <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form">
        <FormAlert failure={save.failure.value} shown={(key) => key === 'password' || key === 'current_password'} />
        <p class="note">{s.note}</p>
        <TextField
          id="own-current-password"
          label={s.current}
          type="password"
          value={current}
          onInput={(value) => {
            setCurrent(value)
            save.edited('current_password')
          }}
          error={save.error('current_password')}
          autocomplete="current-password"
          required
          autofocus
        />
        <TextField
          id="own-new-password"
          label={strings.admin.newPassword}
          type="password"
          value={password}
          onInput={(value) => {
            setPassword(value)
            save.edited('password')
          }}
          error={save.error('password')}
          hint={strings.admin.passwordHint(MIN_PASSWORD)}
          autocomplete="new-password"
          required
        />
        <FormButtons busy={save.busy.value} save={s.save} onCancel={() => onClose(false)} />
      </form>
    </Dialog>
  )
}
