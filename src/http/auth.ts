/**
 * Authentication as a named plugin with one macro. A route opts in with `{ auth: 'admin' }`
 * (an account admin; a member or a share token gets 403), `{ auth: 'user' }` (account users; a
 * share token gets 403) or `{ auth: 'any' }` (users and share-link holders). A user proves who
 * they are with `Authorization: Bearer <API key>` or the console's session cookie; a share-link
 * holder with `Bearer <share token>`. The resolved principal is the only thing routes and
 * services use to decide access; headers such as X-ACT or X-Dev are never read.
 */
import { Elysia } from 'elysia'
import { Forbidden, TooManyRequests, Unauthorized } from '../errors'
import type { Principal, SharePrincipal, UserPrincipal } from '../principal'
import { readJsonBody, type BodyLimits } from './body'
import type { ClientAddress, PeerSource, RequestOrigin } from './client'
import type { AuthThrottle } from './limits'

/** what a lookup answers: a store's promise, or a value at once */
type Answer<T> = T | Promise<T>

export interface ShareTokenResolver {
  /** the link's principal; 'inactive' for a revoked or expired link; null for no such token */
  (token: string, request: Request, client: string): Answer<SharePrincipal | 'inactive' | null>
}

export type AuthMode = 'admin' | 'user' | 'any'

/** the console's session cookie (session/ sets it at sign-in) */
export const SESSION_COOKIE = 'tracker_session'

export interface AuthDeps {
  findUserByKey(key: string): Answer<UserPrincipal | null>
  /** the user behind a session id from the cookie, or null (unknown, expired, ended) */
  findUserBySession?(sessionId: string): Answer<UserPrincipal | null>
  /**
   * A request that changes something with a session cookie must come from the origin it was sent
   * to (`requestOrigin`, CSRF) or, when APP_URL is set, from APP_URL's origin (`appOrigin`)
   */
  appOrigin?: string | null
  requestOrigin?: RequestOrigin
  resolveShareToken?: ShareTokenResolver
  throttle: AuthThrottle
  /** the address the throttle counts against (http/client.ts) */
  clientAddress: ClientAddress
  bodyLimits?: BodyLimits
}

const BEARER = /^Bearer[ ]+([\x21-\x7e]{1,512})[ ]*$/i

export function bearerToken(request: Request): string | null {
  const header = request.headers.get('authorization')
  if (header === null) return null
  return BEARER.exec(header)?.[1] ?? ''
}

const SESSION_ID = /(?:^|;\s*)tracker_session=([A-Za-z0-9_-]{1,128})(?:;|$)/

/** the session id of the console's cookie, or null */
export function sessionCookie(request: Request): string | null {
  const header = request.headers.get('cookie')
  return header === null ? null : (SESSION_ID.exec(header)?.[1] ?? null)
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * A cookie is sent by the browser whoever made the page: a request that changes something with
 * one must say it comes from the page of the server it was sent to (Origin, else Referer, equal
 * to the request's own scheme and Host), or from APP_URL when that is set. A bearer key is never
 * sent by a browser on its own, so it needs no such check.
 */
function checkOrigin(request: Request, deps: AuthDeps, ownOrigin: () => string | null): void {
  if (SAFE_METHODS.has(request.method)) return
  const origin = request.headers.get('origin') ?? originOf(request.headers.get('referer'))
  if (origin === null) {
    throw new Forbidden('A change made with the session cookie must say where its page is (an Origin or Referer header, as browsers send); from a script, use an API key')
  }
  if (deps.appOrigin && origin === deps.appOrigin) return
  const own = deps.requestOrigin ? ownOrigin() : null
  if (own !== null && origin === own) return
  throw new Forbidden(crossOrigin(origin, own, deps.appOrigin ?? null))
}

/** what a refused origin is told: where to open the console instead */
export function crossOrigin(origin: string, own: string | null, appOrigin: string | null): string {
  const at = appOrigin ?? own
  return `This page (${origin}) is not the console of the server it wrote to${at ? `: open the console at ${at}` : ''}` +
    ' and sign in there (from a script, use an API key)'
}

function originOf(url: string | null): string | null {
  if (url === null) return null
  try {
    return new URL(url).origin
  } catch {
    return null
  }
}

/**
 * `clientOf` is asked only when needed (a failure, a share token): reading the peer address
 * costs 2 µs, a tenth of a whole authenticated request.
 *
 * The credential is checked before the throttle: a valid key or token is always served, so
 * nobody is locked out by someone else's failures (behind a proxy every client may share one
 * address). Keys and tokens are 256-bit random, so the throttle is not what stops guessing; it
 * slows and then refuses the failures of one client, and a success erases nothing.
 */
export async function authenticate(deps: AuthDeps, request: Request, clientOf: () => string, ownOriginOf: () => string | null = () => null): Promise<Principal> {
  let address: string | undefined
  const client = () => (address ??= clientOf())

  const token = bearerToken(request)
  const principal = token ? ((await deps.findUserByKey(token)) ?? (await deps.resolveShareToken?.(token, request, client())) ?? null) : null
  if (principal !== null && principal !== 'inactive') return principal

  // no Authorization header at all: the console's session cookie, if there is one
  const sessionId = token === null && deps.findUserBySession ? sessionCookie(request) : null
  if (sessionId !== null) {
    const user = await deps.findUserBySession!(sessionId)
    if (user !== null) {
      checkOrigin(request, deps, ownOriginOf)
      return user
    }
  }

  if (deps.throttle.active) {
    const wait = deps.throttle.retryAfter(client())
    if (wait > 0) throw new TooManyRequests('Too many failed authentications from this client; try again later', wait)
  }
  if (sessionId !== null) {
    deps.throttle.fail(client())
    throw new Unauthorized('The session has ended or expired; sign in again', false)
  }
  if (token === null) throw new Unauthorized('Send Authorization: Bearer <API key or share token>', false)
  if (token === '') throw new Unauthorized('The Authorization header must be "Bearer <token>"', false)
  if (principal === 'inactive') throw new Unauthorized('This share link has expired or was revoked', true)
  const delay = deps.throttle.fail(client())
  if (delay > 0) await Bun.sleep(delay)
  throw new Unauthorized('Unknown API key or share token', true)
}

interface AuthContext {
  request: Request
  server: PeerSource | null
}

/**
 * A route opts in with `auth`; the principal is decided before anything of the request is
 * validated or its body read (Elysia validates before `resolve`, so authentication runs in the
 * `parse` hook for a request with a body and in `transform` for one without; both come first).
 * The body is then read with its bounds (http/body.ts): JSON only, at most 1 MiB, 16 levels deep.
 */
export function authPlugin(deps: AuthDeps) {
  const principals = new WeakMap<Request, Principal>()
  // The lookups answer promises (the stores' boundary); the SQLite stores' are settled already
  // (a cache hit, or one prepared read run to completion), so a request pays a few microtasks, no I/O wait.
  function decide({ request, server }: AuthContext, mode: AuthMode): Principal | Promise<Principal> {
    const known = principals.get(request)
    if (known !== undefined) return known
    return authenticate(deps, request, () => deps.clientAddress(request, server), () => deps.requestOrigin?.(request, server) ?? null).then((principal) =>
      remember(request, principal, mode),
    )
  }
  function remember(request: Request, principal: Principal, mode: AuthMode): Principal {
    if (mode !== 'any' && principal.kind !== 'user') throw new Forbidden('A share token cannot do this; use an API key')
    if (mode === 'admin' && principal.kind === 'user' && principal.role !== 'admin') throw new Forbidden("Only an account admin can do this")
    principals.set(request, principal)
    return principal
  }
  return new Elysia({ name: 'auth' }).macro({
    auth: (mode: AuthMode) => ({
      async parse(context) {
        await decide(context, mode)
        return readJsonBody(context.request, deps.bodyLimits)
      },
      transform(context) {
        const decided = decide(context, mode)
        if (decided instanceof Promise) return decided.then(ignore)
      },
      // parse or transform has decided by now (both run first, for every method)
      resolve(context) {
        const principal = principals.get(context.request)
        if (principal === undefined) throw new Error('auth: resolve ran before transform')
        return { principal }
      },
    }),
  })
}

const ignore = () => {}

/** Narrows the principal on routes declared `{ auth: 'user' }`. */
export function asUser(principal: Principal): UserPrincipal {
  if (principal.kind !== 'user') throw new Forbidden('A share token cannot do this; use an API key')
  return principal
}
