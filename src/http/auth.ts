/**
 * Bearer authentication as a named plugin with one macro. A route opts in with
 * `{ auth: 'user' }` (account users only; a share token gets 403) or `{ auth: 'any' }`
 * (users and share-link holders). The resolved principal is the only thing routes and services
 * use to decide access; headers such as X-ACT or X-Dev are never read.
 */
import { Elysia } from 'elysia'
import { Forbidden, TooManyRequests, Unauthorized } from '../errors'
import type { Principal, SharePrincipal, UserPrincipal } from '../principal'
import type { AuthThrottle } from './limits'

export interface ShareTokenResolver {
  /** the link's principal; 'inactive' for a revoked or expired link; null for no such token */
  (token: string, request: Request, client: string): SharePrincipal | 'inactive' | null
}

export interface AuthDeps {
  findUserByKey(key: string): UserPrincipal | null
  resolveShareToken?: ShareTokenResolver
  throttle: AuthThrottle
}

const BEARER = /^Bearer[ ]+([\x21-\x7e]{1,512})[ ]*$/i

export function bearerToken(request: Request): string | null {
  const header = request.headers.get('authorization')
  if (header === null) return null
  return BEARER.exec(header)?.[1] ?? ''
}

/** The client address the throttle counts against: the socket's peer when there is one. */
export function clientAddress(request: Request, server: { requestIP(r: Request): { address: string } | null } | null): string {
  return server?.requestIP(request)?.address ?? 'local'
}

/**
 * `clientOf` is asked only when needed (a throttled client, a share token, a failure): reading
 * the peer address costs 2 µs, a tenth of a whole authenticated request.
 */
export function authenticate(deps: AuthDeps, request: Request, clientOf: () => string): Principal | Promise<Principal> {
  let address: string | undefined
  const client = () => (address ??= clientOf())
  if (deps.throttle.active) {
    const wait = deps.throttle.retryAfter(client())
    if (wait > 0) throw new TooManyRequests('Too many failed authentications from this client; try again later', wait)
  }

  const token = bearerToken(request)
  if (token === null) throw new Unauthorized('Send Authorization: Bearer <API key or share token>', false)
  if (token === '') throw new Unauthorized('The Authorization header must be "Bearer <token>"', false)

  const principal = deps.findUserByKey(token) ?? deps.resolveShareToken?.(token, request, client()) ?? null
  if (principal !== null && principal !== 'inactive') {
    if (deps.throttle.active) deps.throttle.succeed(client())
    return principal
  }
  if (principal === 'inactive') throw new Unauthorized('This share link has expired or was revoked', true)
  const delay = deps.throttle.fail(client())
  const refuse = () => {
    throw new Unauthorized('Unknown API key or share token', true)
  }
  return delay > 0 ? Bun.sleep(delay).then(refuse) : refuse()
}

export function authPlugin(deps: AuthDeps) {
  return new Elysia({ name: 'auth' }).macro({
    auth: (mode: 'user' | 'any') => ({
      async resolve({ request, server }) {
        const principal = await authenticate(deps, request, () => clientAddress(request, server))
        if (mode === 'user' && principal.kind !== 'user') throw new Forbidden('A share token cannot do this; use an API key')
        return { principal }
      },
    }),
  })
}

/** Narrows the principal on routes declared `{ auth: 'user' }`. */
export function asUser(principal: Principal): UserPrincipal {
  if (principal.kind !== 'user') throw new Forbidden('A share token cannot do this; use an API key')
  return principal
}
