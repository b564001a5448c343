/**
 * The one access function: every query that reads a device goes through here, so the rule
 * "a user reaches the devices that share a group with them; a share link reaches its own
 * devices" is written once. Other modules ask for a device here and get its key back; they
 * never query `devices` themselves.
 *
 * Lists are decided in SQL. One device by id is read by its id alone and then tested in memory:
 * against the link's devices for a share link, against a cached set of the user's devices for a
 * user (kept exact by the access version, see userReaches).
 */
import type { Connectable } from '../../db/client'
import { LRUCache } from 'lru-cache'
import type { Principal, UserPrincipal } from '../principal'
import { createDeviceAccessReads, type DeviceBrief, type DeviceRow, type DeviceScope } from '../store/devices'

export type { DeviceBrief, DeviceRow } from '../store/devices'

export interface ListFilter {
  /** only devices in at least one of these groups */
  groups: string[] | null
  limit: number
  offset: number
}

/*
 * The scope of a list is the user id for a member, the account id for an admin, the link id for a
 * share link (src/store/devices.ts writes each test): a list reads the link's devices as they are
 * now, so a holder of a principal (an open live stream) that lists again after a device left the
 * link (an import moving it to another account) no longer gets it.
 */

/** Whether the user is their account's admin, who reaches every device of the account and manages it. */
export function isAccountAdmin(user: UserPrincipal): boolean {
  return user.role === 'admin'
}

function kindOf(principal: Principal): DeviceScope {
  return principal.kind === 'share' ? 'share' : isAccountAdmin(principal) ? 'admin' : 'user'
}

function scopeValue(principal: Principal): string {
  return principal.kind === 'share' ? principal.linkId : isAccountAdmin(principal) ? principal.accountId : principal.userId
}

/**
 * The access function over `connection` (a database, or a transaction's, whose open unit of work
 * its reads join): its statements are src/store/devices.ts's.
 */
export function createDeviceAccess(connection: Connectable) {
  const reads = createDeviceAccessReads(connection)

  /**
   * Which devices each user reaches, as of `membershipVersion`. Testing a device against this
   * costs nothing, where the same test in SQL doubled the cost of GET /devices/{id}; the
   * version (bumped by triggers on any group change, by any process) keeps it exact.
   */
  const reachableByUser = new LRUCache<string, ReadonlySet<number>>({ max: 1000 })
  let membershipVersion = -1
  function devicesReachedBy(userId: string, version: number): ReadonlySet<number> {
    if (version !== membershipVersion) {
      reachableByUser.clear()
      membershipVersion = version
    }
    let keys = reachableByUser.get(userId)
    if (!keys) {
      keys = new Set(reads.devicesOfUser(userId))
      reachableByUser.set(userId, keys)
    }
    return keys
  }
  const userReaches = (userId: string, deviceKey: number, version: number) => devicesReachedBy(userId, version).has(deviceKey)

  return {
    /**
     * A number that moves whenever the result of `list` may have changed for anyone, whichever
     * process made the change: holders of a list (open live streams) compare it to know when to
     * read the list again. One read of three rows.
     */
    listVersion(): number {
      return reads.listVersion()
    },

    /**
     * The device, or null when it does not exist or this principal cannot reach it. UUIDs are
     * case-insensitive and stored in lower case (import, migration 0004): an upper-case id names
     * the same device, and the row answers with the stored id.
     */
    find(principal: Principal, id: string): DeviceRow | null {
      const row = reads.byId(id.toLowerCase())
      if (!row) return null
      const reachable =
        principal.kind === 'share'
          ? principal.deviceKeys.includes(row.key)
          : isAccountAdmin(principal)
            ? row.account_id === principal.accountId
            : userReaches(principal.userId, row.key, row.access_version)
      return reachable ? row : null
    },

    /** the reachable devices, `unlink` excluded, ordered by alias then id */
    list(principal: Principal, filter: ListFilter): DeviceRow[] {
      const groups = filter.groups && filter.groups.map((id) => id.toLowerCase())
      return reads.list(kindOf(principal), scopeValue(principal), { groups, limit: filter.limit, offset: filter.offset })
    },

    /**
     * Every reachable device's key, id and alias, `unlink` excluded as in `list`, in no order: for
     * reading the records of a whole fleet at once (GET /events), whatever its size.
     */
    reachableDevices(principal: Principal): DeviceBrief[] {
      return reads.brief(kindOf(principal), scopeValue(principal))
    },

    /** id (as given, in any case) → key, for those of `ids` this principal can reach */
    reachableKeys(principal: Principal, ids: readonly string[]): Map<string, number> {
      const rows = reads.keysOf(kindOf(principal), scopeValue(principal), ids.map((id) => id.toLowerCase()))
      const keyOf = new Map(rows.map((r) => [r.id, r.key]))
      const reachable = new Map<string, number>()
      for (const id of ids) {
        const key = keyOf.get(id.toLowerCase())
        if (key !== undefined) reachable.set(id, key)
      }
      return reachable
    },

    /**
     * Which device keys `user` reaches, as of this call (one version read), for deciding many
     * devices at once: the share links a user may see are those whose every device passes.
     */
    reachOf(user: UserPrincipal): (deviceKey: number) => boolean {
      if (isAccountAdmin(user)) {
        const keys = new Set(reads.devicesOfAccount(user.accountId))
        return (key) => keys.has(key)
      }
      const keys = devicesReachedBy(user.userId, reads.membershipVersion())
      return (key) => keys.has(key)
    },
  }
}

export type DeviceAccess = ReturnType<typeof createDeviceAccess>
