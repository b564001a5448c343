import { useSignal } from '@preact/signals'
import { useEffect, useRef } from 'preact/hooks'
import { signIn, signInNote } from '../session'
import { strings } from '../strings'

/** POST /session with a name and a password; the cookie it sets signs every later call. */
export function SignIn() {
  const error = useSignal<string | null>(null)
  const busy = useSignal(false)
  const nameRef = useRef<HTMLInputElement>(null)
  useEffect(() => nameRef.current?.focus(), [])

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    const form = event.currentTarget as HTMLFormElement
    const name = (form.elements.namedItem('name') as HTMLInputElement).value.trim()
    const password = (form.elements.namedItem('password') as HTMLInputElement).value
    if (!name || !password) {
      error.value = strings.signInMissing
      return
    }
    busy.value = true
    error.value = null
    const problem = await signIn(name, password)
    busy.value = false
    if (problem) {
      error.value = problem
      ;(form.elements.namedItem('password') as HTMLInputElement).select()
    }
  }

  const note = error.value ?? signInNote.value
  return (
    <main id="content" class="signin">
      <form class="signin-card" onSubmit={submit} noValidate aria-describedby={note ? 'signin-note' : undefined}>
        <h1>
          <span class="brand-mark" aria-hidden="true" />
          {strings.product}
        </h1>
        <h2>{strings.signInTitle}</h2>
        <p class="muted">{strings.signInIntro}</p>
        {note && (
          <p id="signin-note" class={error.value ? 'alert' : 'note'} role={error.value ? 'alert' : 'status'}>
            {note}
          </p>
        )}
        <label for="signin-name">{strings.signInName}</label>
        <input ref={nameRef} id="signin-name" name="name" autocomplete="username" autocapitalize="none" spellcheck={false} required />
        <label for="signin-password">{strings.signInPassword}</label>
        <input id="signin-password" name="password" type="password" autocomplete="current-password" required />
        <button type="submit" class="primary" disabled={busy.value}>
          {busy.value ? strings.signingIn : strings.signInButton}
        </button>
      </form>
    </main>
  )
}
