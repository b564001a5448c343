/**
 * The fixed permission table a share link's `acl` draws from. The ids are seeded by migration
 * 0000_init.sql and never change: clients may store them. Routes reachable with a share token
 * call `requirePermission` before reading; a user principal is never limited by an acl.
 */
import { Forbidden } from '../errors'
import type { Principal } from '../principal'

export const PERMISSION = {
  /** list and detail of the shared devices, their live stream */
  location: 'a3c1f6d0-2b7e-4f5a-8c9d-000000000001',
  /** route (with stops) and travels */
  history: 'a3c1f6d0-2b7e-4f5a-8c9d-000000000002',
  /** events and alarms */
  events: 'a3c1f6d0-2b7e-4f5a-8c9d-000000000003',
} as const

export type PermissionName = keyof typeof PERMISSION
export type PermissionId = (typeof PERMISSION)[PermissionName]

export const PERMISSION_IDS: readonly string[] = Object.values(PERMISSION)

/** What a link grants when it is created without an `acl`: everything a shared caller can read. */
export const DEFAULT_ACL: readonly PermissionId[] = [PERMISSION.location, PERMISSION.history, PERMISSION.events]

const NAME_OF = new Map<string, PermissionName>(Object.entries(PERMISSION).map(([name, id]) => [id, name as PermissionName]))

export function isPermission(id: string): id is PermissionId {
  return NAME_OF.has(id.toLowerCase())
}

/**
 * Throws 403 when a share principal's acl lacks `permission`. 403 rather than 404: the holder
 * already knows which devices the link names, so nothing is revealed by saying why.
 */
export function requirePermission(principal: Principal, permission: PermissionId): void {
  if (principal.kind === 'share' && !principal.acl.has(permission)) {
    throw new Forbidden(`This share link does not grant the "${NAME_OF.get(permission)}" permission (${permission})`)
  }
}
