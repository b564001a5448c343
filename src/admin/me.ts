/**
 * GET /me: who the credential is. A user (key or session): their id, name, role and account,
 * read afresh. A share token: what the link lets its holder read, its devices listed through the
 * access function (as GET /devices lists them), and when it ends.
 */
import { eq } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { accounts, users } from '../../db/schema'
import type { DeviceAccess } from '../devices/access'
import { NotFound } from '../errors'
import { iso } from '../http/model'
import type { Principal } from '../principal'
import type { MeBody } from './model'

/** a link holds at most this many devices (share/model.ts) */
const MAX_LINK_DEVICES = 1000

export interface MeDeps {
  db: Db
  access: DeviceAccess
  /** when a share link expires (Unix ms), null when there is no such link */
  linkExpiresAt(linkId: string): number | null
}

export function describePrincipal(deps: MeDeps, principal: Principal): MeBody {
  if (principal.kind === 'share') {
    const devices = deps.access.list(principal, { groups: null, limit: MAX_LINK_DEVICES, offset: 0 })
    const expiresAt = deps.linkExpiresAt(principal.linkId)
    // the link was deleted between authentication and here (its account went)
    if (expiresAt === null) throw new NotFound('No such share link')
    return { kind: 'share', devices: devices.map((d) => d.id), expires_at: iso(expiresAt), acl: [...principal.acl] }
  }
  const row = deps.db
    .select({ id: users.id, name: users.name, role: users.role, accountId: accounts.id, accountName: accounts.name })
    .from(users)
    .innerJoin(accounts, eq(accounts.id, users.accountId))
    .where(eq(users.id, principal.userId))
    .get()
  // deleted by another process after authentication
  if (!row) throw new NotFound('No such user')
  return { kind: 'user', id: row.id, name: row.name, role: row.role === 'admin' ? 'admin' : 'member', account: { id: row.accountId, name: row.accountName } }
}
