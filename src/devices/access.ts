/**
 * The one access function: every query that reads a device goes through here, so the rule
 * "a user reaches the devices that share a group with them; a share link reaches its own
 * devices" is written once. Other modules ask for a device here and get its key back; they
 * never query `devices` themselves.
 *
 * Lists are decided in SQL. One device by id is read by its id alone and then tested in memory:
 * against the link's devices for a share link, against a cached set of the user's devices for a
 * user (kept exact by the access version, see reachableSets).
 *
 * Every answer is a promise (the store's reads are, so that a PostgreSQL adapter can answer them);
 * the caches answer most calls without a read. One answer is also given synchronously, inside a
 * unit of work: `reachOfInTransaction`, for the alert outbox within ingest's group commit.
 */
import { LRUCache } from 'lru-cache'
import type { Principal, UserPrincipal } from '../principal'
import type { DeviceAccessReads, DeviceBrief, DeviceAccessReadsInTransaction, DeviceRow, DeviceScope } from '../store/devices'

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
 * Which devices each user reaches, as of a membership version (access_version row 1). Testing a
 * device against this costs nothing, where the same test in SQL doubled the cost of GET
 * /devices/{id}; the version (bumped by triggers on any group change, by any process) keeps it
 * exact: a set read at another version is never answered.
 */
function reachableSets() {
  const byUser = new LRUCache<string, ReadonlySet<number>>({ max: 1000 })
  let membershipVersion = -1
  return {
    /** the user's set as of `version`, or undefined when none is held */
    get(userId: string, version: number): ReadonlySet<number> | undefined {
      if (version !== membershipVersion) {
        byUser.clear()
        membershipVersion = version
      }
      return byUser.get(userId)
    },
    /** keeps `keys`, read at `version` or after (a set read after a change is kept only if the change came before the version read) */
    set(userId: string, version: number, keys: ReadonlySet<number>): void {
      if (version === membershipVersion) byUser.set(userId, keys)
    },
  }
}

/** The access function over the devices store's access reads (`createDeviceAccessReads(database)`). */
export function createDeviceAccess(reads: DeviceAccessReads) {
  const reachable = reachableSets()
  async function devicesReachedBy(userId: string, version: number): Promise<ReadonlySet<number>> {
    const held = reachable.get(userId, version)
    if (held) return held
    // read after the version: a change landing between the two only makes the next version read it again
    const keys = new Set(await reads.devicesOfUser(userId))
    reachable.set(userId, version, keys)
    return keys
  }

  return {
    /**
     * A number that moves whenever the result of `list` may have changed for anyone, whichever
     * process made the change: holders of a list (open live streams) compare it to know when to
     * read the list again. One read of three rows.
     */
    listVersion(): Promise<number> {
      return reads.listVersion()
    },

    /**
     * The device, or null when it does not exist or this principal cannot reach it. UUIDs are
     * case-insensitive and stored in lower case (import, migration 0004): an upper-case id names
     * the same device, and the row answers with the stored id.
     */
    async find(principal: Principal, id: string): Promise<DeviceRow | null> {
      const row = await reads.byId(id.toLowerCase())
      if (!row) return null
      const reaches =
        principal.kind === 'share'
          ? principal.deviceKeys.includes(row.key)
          : isAccountAdmin(principal)
            ? row.account_id === principal.accountId
            : (reachable.get(principal.userId, row.access_version) ?? (await devicesReachedBy(principal.userId, row.access_version))).has(row.key)
      return reaches ? row : null
    },

    /** the reachable devices, `unlink` excluded, ordered by alias then id */
    list(principal: Principal, filter: ListFilter): Promise<DeviceRow[]> {
      const groups = filter.groups && filter.groups.map((id) => id.toLowerCase())
      return reads.list(kindOf(principal), scopeValue(principal), { groups, limit: filter.limit, offset: filter.offset })
    },

    /**
     * Every reachable device's key, id and alias, `unlink` excluded as in `list`, in no order: for
     * reading the records of a whole fleet at once (GET /events), whatever its size.
     */
    reachableDevices(principal: Principal): Promise<DeviceBrief[]> {
      return reads.brief(kindOf(principal), scopeValue(principal))
    },

    /** id (as given, in any case) → key, for those of `ids` this principal can reach */
    async reachableKeys(principal: Principal, ids: readonly string[]): Promise<Map<string, number>> {
      const rows = await reads.keysOf(kindOf(principal), scopeValue(principal), ids.map((id) => id.toLowerCase()))
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
    async reachOf(user: UserPrincipal): Promise<(deviceKey: number) => boolean> {
      const keys = isAccountAdmin(user)
        ? new Set(await reads.devicesOfAccount(user.accountId))
        : await devicesReachedBy(user.userId, await reads.membershipVersion())
      return (key) => keys.has(key)
    },
  }
}

export type DeviceAccess = ReturnType<typeof createDeviceAccess>

/**
 * `reachOf`, answered at once inside a unit of work (its reads join the transaction `reads` run
 * on): the alert outbox decides whom a user's own alerts reach within ingest's group commit,
 * which is synchronous on SQLite. Keeps its own sets, exact by the same version.
 */
export function createDeviceReachInTransaction(reads: Pick<DeviceAccessReadsInTransaction, 'devicesOfUser' | 'membershipVersion' | 'devicesOfAccount'>) {
  const reachable = reachableSets()
  return {
    reachOfInTransaction(user: UserPrincipal): (deviceKey: number) => boolean {
      if (isAccountAdmin(user)) {
        const keys = new Set(reads.devicesOfAccount(user.accountId))
        return (key) => keys.has(key)
      }
      const version = reads.membershipVersion()
      let keys = reachable.get(user.userId, version)
      if (!keys) {
        keys = new Set(reads.devicesOfUser(user.userId))
        reachable.set(user.userId, version, keys)
      }
      const found = keys
      return (key) => found.has(key)
    },
  }
}
