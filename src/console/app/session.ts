/**
 * Who is signed in: GET /session at each visit (it also slides the cookie's 14 days, and gives
 * the user with their role and account, as GET /me would), POST /session to sign in, DELETE
 * /session to sign out. A 401 from any call (the session expired, the password changed, an admin
 * removed the user) brings the sign-in page back with a note.
 */
import { signal } from '@preact/signals'
import { ApiError, failure, getJson, request, whenUnauthorized } from './api'
import { strings } from './strings'
import type { Me } from './types'

/** undefined: still asking; null: signed out */
export const me = signal<Me | null | undefined>(undefined)
/** a note for the sign-in page (signed out, session ended) */
export const signInNote = signal<string | null>(null)

whenUnauthorized(() => {
  if (me.value) {
    signInNote.value = strings.sessionEnded
    me.value = null
  }
})

export async function loadMe(): Promise<void> {
  try {
    const { user } = await getJson<{ user: Omit<Me, 'kind'> }>('session')
    me.value = { kind: 'user', ...user }
  } catch (error) {
    if (error instanceof ApiError) me.value = null
    else {
      signInNote.value = strings.networkDown
      me.value = null
    }
  }
}

/** null when signed in, else what to tell the person */
export async function signIn(name: string, password: string): Promise<string | null> {
  let response: Response
  try {
    response = await request('session', { method: 'POST', body: { name, password }, quiet401: true })
  } catch {
    return strings.networkDown
  }
  if (response.ok) {
    const { user } = (await response.json()) as { user: Omit<Me, 'kind'> }
    signInNote.value = null
    me.value = { kind: 'user', ...user }
    return null
  }
  const error = await failure(response)
  if (error.status === 401) return strings.signInWrong
  if (error.status === 429) return strings.signInThrottled(error.retryAfterSeconds ?? 60)
  if (error.status === 400) return strings.signInMissing
  // a 403 says why (another origin: where to open the console); never "try again later" for it
  return strings.signInFailed(error.status, error.problem?.detail ?? null)
}

export async function signOut(): Promise<void> {
  try {
    await request('session', { method: 'DELETE', quiet401: true })
  } catch {
    // the cookie stays until it expires; the page forgets the person all the same
  }
  signInNote.value = strings.signedOut
  me.value = null
}
