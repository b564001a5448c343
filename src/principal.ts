/**
 * Who is asking. The principal is the only source of which devices a request may touch
 * (see devices/access.ts); it is derived on the server from the bearer token, never from
 * headers a client sends (the spec's X-ACT / X-Dev are this object, not request headers).
 */

export interface UserPrincipal {
  kind: 'user'
  userId: string
  accountId: string
}

/** The spec's request context `X-ACT: shared` with `X-Dev` = deviceKeys. */
export interface SharePrincipal {
  kind: 'share'
  linkId: string
  accountId: string
  /** the link's devices (integer keys), in the link's order */
  deviceKeys: readonly number[]
  /** permission ids the link grants (see share/permissions.ts) */
  acl: ReadonlySet<string>
}

export type Principal = UserPrincipal | SharePrincipal
