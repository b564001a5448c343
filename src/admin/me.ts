/**
 * GET /me: who the credential is. A user (key or session): their id, name, role and account,
 * read afresh. A share token: what the link lets its holder read, its devices listed through the
 * access function (as GET /devices lists them), and when it ends.
 */
import type { DeviceAccess } from '../devices/access'
import { NotFound } from '../errors'
import { iso } from '../http/model'
import type { Principal } from '../principal'
import type { PeopleStore } from '../store/people'
import type { MeBody } from './model'

/** a link holds at most this many devices (share/model.ts) */
const MAX_LINK_DEVICES = 1000

export interface MeDeps {
  people: Pick<PeopleStore, 'userWithAccount' | 'timezoneOf'>
  access: DeviceAccess
  /** when a share link expires (Unix ms), null when there is no such link */
  linkExpiresAt(linkId: string): number | null | Promise<number | null>
}

export async function describePrincipal(deps: MeDeps, principal: Principal): Promise<MeBody> {
  if (principal.kind === 'share') {
    const devices = await deps.access.list(principal, { groups: null, limit: MAX_LINK_DEVICES, offset: 0 })
    const expiresAt = await deps.linkExpiresAt(principal.linkId)
    // the link was deleted between authentication and here (its account went)
    if (expiresAt === null) throw new NotFound('No such share link')
    return { kind: 'share', devices: devices.map((d) => d.id), expires_at: iso(expiresAt), acl: [...principal.acl] }
  }
  const [user, zone] = await Promise.all([deps.people.userWithAccount(principal.userId), deps.people.timezoneOf(principal.userId)])
  // deleted by another process after authentication
  if (!user) throw new NotFound('No such user')
  return { kind: 'user', ...user, timezone: zone?.timezone ?? null }
}
