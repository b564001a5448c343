/**
 * Who is asking. The principal is the only source of which devices a request may touch
 * (see devices/access.ts); it is derived on the server from the bearer token, never from
 * headers a client sends (the spec's X-ACT / X-Dev are this object, not request headers).
 */

export type Role = 'admin' | 'member'

export interface UserPrincipal {
  kind: 'user'
  userId: string
  accountId: string
  /** 'admin' reaches every device of the account and manages it; 'member' the devices of their groups */
  role: Role
  /** how the user proved who they are: a session cookie's writes must pass the Origin check (CSRF) */
  via: 'key' | 'session'
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
  /** the user who made the link: its requests spend their stream and history budget */
  creatorId: string
}

export type Principal = UserPrincipal | SharePrincipal

/**
 * Whose budget a request spends (live streams, history in flight): a user's own, whatever key or
 * session; a share link's creator's, however many links they made or people hold the token. A
 * link therefore never adds to what its creator may hold at once.
 */
export function budgetHolder(principal: Principal): string {
  return principal.kind === 'user' ? principal.userId : principal.creatorId
}
