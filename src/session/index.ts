/**
 * Sign-in for people (`/session`) and the first-run setup page (`/setup`). The session cookie
 * then authenticates every API route as the user's key would (http/auth.ts).
 */
import { Elysia, t } from 'elysia'
import type { Clock } from '../clock'
import { describePrincipal, type MeDeps } from '../admin/me'
import { Me } from '../admin/model'
import { Conflict, Forbidden, Invalid, Unauthorized } from '../errors'
import { asUser, crossOrigin, SESSION_COOKIE, sessionCookie, type authPlugin } from '../http/auth'
import { boundedJson } from '../http/body'
import type { ClientAddress, PeerSource, RequestOrigin } from '../http/client'
import { responses } from '../http/model'
import { loggedRequestId } from '../ops/requests'
import type { PasswordGuard } from './guard'
import { ChangePasswordBody, SessionAnswer, SetupBody, SignInBody } from './model'
import { setupAssetRoute, setupPage } from './page'
import { hashPassword } from './passwords'
import { SESSION_LIFETIME_MS, type SessionService } from './service'
import type { PeopleStore } from '../store/people'
import { type FirstRun, setupFirstAccount } from './setup'
import { checkZone } from '../timezone'

/** `Set-Cookie` for a session; Max-Age 0 ends it in the browser */
export function sessionCookieHeader(sessionId: string, secure: boolean, maxAgeSeconds = SESSION_LIFETIME_MS / 1000): string {
  return `${SESSION_COOKIE}=${sessionId}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`
}

const SIGN_IN_FAILED = 'Wrong name or password'

/** whether a cookie set in answer to this request is Secure: APP_URL is https, or the browser came over https */
function secureCookie(appUrl: string, requestOrigin: RequestOrigin) {
  const always = appUrl.startsWith('https:')
  return (request: Request, server: unknown) => always || (requestOrigin(request, server as PeerSource | null)?.startsWith('https:') ?? false)
}

export interface SessionRouteOptions {
  /** every password check passes it: the failed-authentication throttle (where bad keys count too) and the caps on checks in flight */
  guard: PasswordGuard
  clientAddress: ClientAddress
  /** the origin a request was sent to (scheme and Host): a browser may sign in from it */
  requestOrigin: RequestOrigin
  /** APP_URL: https makes the cookie Secure; when set, a browser may sign in from its origin too */
  appUrl: string
  appUrlSet: boolean
  /** what GET /me reads: PATCH /me answers as it does */
  me: MeDeps
}

/** said wherever the rule applies (OpenAPI text) */
const ORIGIN_RULE =
  'an Origin (or Referer) of the address the request was sent to (its scheme and Host, as the browser shows it; behind TRUSTED_PROXIES, ' +
  'their X-Forwarded-Proto and X-Forwarded-Host), or of APP_URL when APP_URL is set'

export function sessionRoutes(auth: ReturnType<typeof authPlugin>, sessions: SessionService, { guard, clientAddress, requestOrigin, appUrl, appUrlSet, me }: SessionRouteOptions) {
  // Secure when APP_URL is https or the request came over https, or the browser reached the server over https (a TLS proxy named in TRUSTED_PROXIES)
  const secure = secureCookie(appUrl, requestOrigin)
  const appOrigin = appUrlSet ? new URL(appUrl).origin : null
  const noStore = { 'cache-control': 'no-store' }

  return new Elysia({ name: 'session' })
    .use(auth)
    .post(
      '/session',
      async ({ body, request, server, set }) => {
        // login CSRF: another site must not sign a visitor in to someone else's account
        const origin = request.headers.get('origin')
        if (origin !== null && origin !== appOrigin) {
          const own = requestOrigin(request, server as PeerSource | null)
          if (origin !== own) throw new Forbidden(crossOrigin(origin, own, appOrigin))
        }
        const client = clientAddress(request, server as PeerSource | null)
        // counted before the password is verified: passwords, unlike keys, can be guessed
        const signedIn = await guard.attempt(client, body.name, () => sessions.signIn(body.name, body.password))
        if (signedIn === null) throw new Unauthorized(SIGN_IN_FAILED, false)
        Object.assign(set.headers, noStore, { 'set-cookie': sessionCookieHeader(signedIn.sessionId, secure(request, server)) })
        return { user: signedIn.user }
      },
      {
        parse: boundedJson(),
        body: SignInBody,
        detail: {
          tags: ['Sign-in'],
          summary: 'Sign in (a person, for the console)',
          description:
            `Checks the name (any case) and password and answers the user, with a new session in the \`${SESSION_COOKIE}\` cookie ` +
            '(HttpOnly, SameSite=Strict, Path=/, Secure when APP_URL is https or the request came over https, Max-Age 14 days). The cookie then authenticates every ' +
            `route as the user's API key would; a request that changes something with it must send ${ORIGIN_RULE}, else 403 naming where to open the console. ` +
            'A wrong name and a wrong password get the same 401, after the same work (a user without a password cannot sign in). ' +
            'Each attempt is counted as a failure before its password is checked (and given back when it was right), in the throttle ' +
            'of bad keys (20 a minute from one client address or IPv6 /64) and against the name tried, whoever tries it (50 a minute); ' +
            'past either limit, 429 with Retry-After, answered at once without checking any password. A client may have 4 password ' +
            'checks in flight (429 with Retry-After: 1 beyond), and the server runs 2 at once with 32 waiting (503 with Retry-After: 1 beyond). ' +
            'A browser request from another origin (an Origin header that is neither of those) is 403, its detail naming where to open the console. ' +
            'No Authorization header is needed or read.',
          security: [],
          responses: responses({ 200: { schema: SessionAnswer, description: 'Signed in; the cookie is set' } }, 400, 401, 403, 429, 503, 504),
        },
      },
    )
    .patch(
      '/me',
      async ({ principal, body, request, server, set }) => {
        const user = asUser(principal)
        // everything is checked before anything changes
        const timezone = body.timezone === undefined || body.timezone === null ? body.timezone : checkZone(body.timezone, '/timezone')
        const changesPassword = body.current_password !== undefined || body.password !== undefined
        if (changesPassword && body.current_password === undefined) throw Invalid.field('/current_password', 'is required to change your password')
        if (changesPassword && body.password === undefined) throw Invalid.field('/password', 'is required with current_password')
        if (!changesPassword && timezone === undefined) throw new Invalid('Nothing to change: send current_password and password, or timezone')
        if (changesPassword) {
          const stored = await sessions.credentialsOf(user.userId)
          if (stored === null) throw new Unauthorized('The signed-in user no longer exists', false)
          if (stored.passwordHash === null) throw new Forbidden('You have no password to change: an admin of your account sets the first one (PATCH /users/{id})')
          const expectedHash = stored.passwordHash
          const client = clientAddress(request, server as PeerSource | null)
          // a guess at the current password is a guess like a sign-in's: the same throttle, the user's name as the name tried
          const newHash = await guard.attempt(client, stored.name, async () =>
            (await sessions.checkPassword(body.current_password!, expectedHash)) ? hashPassword(body.password!) : null,
          )
          if (newHash === null) throw new Forbidden('current_password is not your current password; nothing was changed')
          const keep = user.via === 'session' ? sessionCookie(request) : null
          await sessions.changePassword(user.userId, expectedHash, newHash, keep, loggedRequestId(set))
        }
        if (timezone !== undefined) await sessions.setTimezone(user, timezone)
        Object.assign(set.headers, noStore)
        return describePrincipal(me, principal)
      },
      {
        auth: 'user',
        body: ChangePasswordBody,
        detail: {
          tags: ['Administration'],
          summary: 'Change your own password or time zone',
          description:
            '`timezone` (an IANA zone such as `Europe/Dublin`, else 400 naming `/timezone`; null clears it) sets the default `tz` of your reports ' +
            '(GET /reports/…; without one they are in UTC); it may come alone or with a password change, and a refused request changes neither. ' +
            'An empty body is 400. `current_password` and `password` go together (either alone is 400). ' +
            'Any user (a member or an admin; by API key or session cookie) changes their own password: `current_password` must be ' +
            'the password they have, `password` the new one (10 to 1024 characters, else 400 naming `/password`). A wrong ' +
            '`current_password` is **403** and changes nothing; it counts as a failed sign-in (the same throttle, against the client ' +
            "and the user's name), so past the limit the answer is 429 with Retry-After before any password is checked. On success " +
            "every other session of the user ends; the session of this request (when it came with the cookie) lives on, and the user's " +
            'API keys are untouched. Recorded in the audit log (action `password`, object the user, by the user). A user without a ' +
            'password (keys only) has none to change: 403 (an admin sets the first one). If the password changed meanwhile (another ' +
            'request, an admin), 409 and nothing changes. A share token gets 403. Answers as GET /me. ' +
            `Like every change made with the cookie, it needs ${ORIGIN_RULE}, else 403.`,
          responses: responses({ 200: { schema: Me, description: 'Changed; who you are, as GET /me answers' } }, 400, 401, 403, 409, 429, 503, 504),
        },
      },
    )
    .get(
      '/session',
      async ({ principal, request, server, set }) => {
        const user = asUser(principal)
        Object.assign(set.headers, noStore)
        // the console asks at each visit: a day-old session gets a new id, and the cookie 14 more days
        const sessionId = user.via === 'session' ? sessionCookie(request) : null
        const renewed = sessionId === null ? null : await sessions.renew(sessionId)
        if (renewed !== null) set.headers['set-cookie'] = sessionCookieHeader(renewed, secure(request, server))
        return { user: await sessions.userOf(user) }
      },
      {
        auth: 'user',
        detail: {
          tags: ['Sign-in'],
          summary: 'Who is signed in',
          description:
            `The user of the \`${SESSION_COOKIE}\` cookie (an API key works too), 401 when the session has ended or expired. ` +
            'A session lasts 14 days from its last use. When the session is more than a day old, this answer also sets a new ' +
            'session id in the cookie (14 more days of Max-Age; the old id works one more minute, then ends): an id is never sent ' +
            'twice. A share token gets 403.',
          responses: responses({ 200: { schema: SessionAnswer, description: 'The signed-in user' } }, 401, 403, 429),
        },
      },
    )
    .delete(
      '/session',
      async ({ principal, request, server }) => {
        const user = asUser(principal)
        const sessionId = user.via === 'session' ? sessionCookie(request) : null
        if (sessionId === null) {
          throw new Invalid(`Nothing to sign out of: this request was authenticated by an API key; send the ${SESSION_COOKIE} cookie without an Authorization header`)
        }
        await sessions.end(sessionId)
        return new Response(null, {
          status: 204,
          headers: { ...noStore, 'set-cookie': sessionCookieHeader('', secure(request, server), 0) },
        })
      },
      {
        auth: 'user',
        detail: {
          tags: ['Sign-in'],
          summary: 'Sign out',
          description:
            'Ends the session of the cookie on the server (every process stops accepting it at once) and clears the cookie ' +
            `(Max-Age=0). Like every change made with the cookie, it needs ${ORIGIN_RULE}, else 403. ` +
            'A request authenticated by an API key has no session: 400. An ended or unknown session: 401.',
          responses: responses({ 204: { description: 'Signed out; the cookie is cleared' } }, 400, 401, 403, 429, 504),
        },
      },
    )
}

export interface SetupRouteOptions {
  /** the accounts' and users' store: the setup's unit of work */
  people: PeopleStore
  /** the first run, or its making (it reads whether a user exists) */
  firstRun: FirstRun | Promise<FirstRun>
  sessions: SessionService
  clock: Clock
  appUrl: string
  requestOrigin: RequestOrigin
}

export function setupRoutes({ people, firstRun: makingFirstRun, sessions, clock, appUrl, requestOrigin }: SetupRouteOptions) {
  const secure = secureCookie(appUrl, requestOrigin)

  return new Elysia({ name: 'setup' })
    .get('/setup', async ({ query }) => setupPage(await makingFirstRun, query.token ?? ''), {
      query: t.Object({ token: t.Optional(t.String()) }, { additionalProperties: true }),
      detail: {
        tags: ['Sign-in'],
        summary: 'The first-run setup page',
        description:
          'HTML: on a server with no user yet, the one-time link the server logs at start (at warn) opens a form for the first ' +
          'account, its admin and their password, which it posts to `POST /setup`. The token changes at every start until setup ' +
          'is done. A wrong or used token: 403 (a page saying so); a server that already has a user: 409 (a page saying so). ' +
          'Sends `Referrer-Policy: no-referrer` and `Cache-Control: no-store`.',
        security: [],
        responses: responses({
          200: { schema: t.String(), description: 'The form', contentType: 'text/html' },
          403: { schema: t.String(), description: 'Wrong or used token (an HTML page)', contentType: 'text/html' },
          409: { schema: t.String(), description: 'Setup is done (an HTML page)', contentType: 'text/html' },
        }),
      },
    })
    .get('/setup/assets/:name', ({ params }) => setupAssetRoute(params.name), { detail: { hide: true } })
    .post(
      '/setup',
      async ({ body, request, server, set }) => {
        const firstRun = await makingFirstRun
        const check = firstRun.check(body.token)
        if (check === 'used') throw new Forbidden('This setup link has been used; sign in with POST /session')
        if (check === 'wrong') {
          if (!(await firstRun.needed())) throw new Conflict('Setup is done: this server already has a user; sign in with POST /session')
          throw new Forbidden('This setup link is not valid; the server logs the current one at start (it changes at every start)')
        }
        let user
        try {
          user = await setupFirstAccount(people, body, clock, { requestId: loggedRequestId(set) })
        } catch (error) {
          // setup was done another way meanwhile (`tracker init`): the link is spent
          if (error instanceof Conflict) firstRun.invalidate()
          throw error
        }
        firstRun.invalidate()
        const sessionId = await sessions.open(user.id)
        Object.assign(set.headers, { 'cache-control': 'no-store', 'set-cookie': sessionCookieHeader(sessionId, secure(request, server)) })
        return { user }
      },
      {
        parse: boundedJson(),
        body: SetupBody,
        detail: {
          tags: ['Sign-in'],
          summary: 'First-run setup: the first account and its admin',
          description:
            'With the token of the setup link, creates the account and its first user (role admin, with the password) in one ' +
            "transaction, records them in the audit log (action `setup`, by the new admin), signs the person in (the session " +
            'cookie, as `POST /session` sets it) and spends the token. The account name is 1 to 200 characters (trimmed); the ' +
            "admin's name as `POST /users` takes it (1 to 100, no control characters, no space at either end); the password at least 10 " +
            '(400 naming the field). A wrong or used token: 403; a server that already has a user: 409. ' +
            '`tracker init` does the same from the command line.',
          security: [],
          responses: responses({ 200: { schema: SessionAnswer, description: 'Set up and signed in; the cookie is set' } }, 400, 403, 409, 504),
        },
      },
    )
}
