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
import type { Database, Statement } from 'bun:sqlite'
import { LRUCache } from 'lru-cache'
import type { Principal, UserPrincipal } from '../principal'

export interface DeviceRow {
  key: number
  id: string
  account_id: string
  model_id: string | null
  alias: string
  properties: string
  serial: string
  imei: string
  iccid: string
  state: string
  latitude: number | null
  longitude: number | null
  connected: number
  connected_at: number | null
  disconnected_at: number | null
  created_at: number
  updated_at: number
}

/** What a list of many devices' records names them by. */
export interface DeviceBrief {
  key: number
  id: string
  alias: string
}

export interface ListFilter {
  /** only devices in at least one of these groups */
  groups: string[] | null
  limit: number
  offset: number
}

const COLUMNS = `d.key, d.id, d.account_id, d.model_id, d.alias, d.properties, d.serial, d.imei, d.iccid, d.state,
  d.latitude, d.longitude, d.connected, d.connected_at, d.disconnected_at, d.created_at, d.updated_at`

/**
 * `$scope` is the user id for a member, the account id for an admin, the link id for a share link: a list reads the link's
 * devices as they are now, so a holder of a principal (an open live stream) that lists again
 * after a device left the link (an import moving it to another account) no longer gets it.
 * The user's test is a correlated EXISTS: with the devices_alias index SQLite walks devices in
 * list order and stops after `limit` (measured 207 µs for 99 of 1,000 devices, against 715 µs
 * for building the reachable set first and sorting it).
 */
const SCOPE = {
  // CROSS JOIN fixes the loop order: the device's few groups, each probed in the user's
  user: `EXISTS (SELECT 1 FROM device_groups dg CROSS JOIN user_groups ug ON ug.group_id = dg.group_id AND ug.user_id = $scope
                 WHERE dg.device_key = d.key)`,
  share: `d.key IN (SELECT device_key FROM share_link_devices WHERE link_id = $scope)`,
  admin: `d.account_id = $scope`,
} as const

type Kind = keyof typeof SCOPE

/** Whether the user is their account's admin, who reaches every device of the account and manages it. */
export function isAccountAdmin(user: UserPrincipal): boolean {
  return user.role === 'admin'
}

function kindOf(principal: Principal): Kind {
  return principal.kind === 'share' ? 'share' : isAccountAdmin(principal) ? 'admin' : 'user'
}

function scopeValue(principal: Principal): string {
  return principal.kind === 'share' ? principal.linkId : isAccountAdmin(principal) ? principal.accountId : principal.userId
}

export function createDeviceAccess(sqlite: Database) {
  const prepare = <Row, Params extends Record<string, string | number | null>>(build: (scope: string) => string) => {
    const byKind = {} as Record<Kind, Statement<Row, [Params]>>
    for (const kind of Object.keys(SCOPE) as Kind[]) byKind[kind] = sqlite.query<Row, [Params]>(build(SCOPE[kind]))
    return (principal: Principal) => byKind[kindOf(principal)]
  }

  // One device by id, with the access version read in the same statement (same snapshot).
  const byId = sqlite.query<DeviceRow & { access_version: number }, [string]>(
    `SELECT ${COLUMNS}, (SELECT version FROM access_version WHERE id = 1) AS access_version FROM devices d WHERE d.id = ?`,
  )
  const devicesOfUser = sqlite.query<{ key: number }, [string]>(
    'SELECT DISTINCT dg.device_key AS key FROM user_groups ug JOIN device_groups dg ON dg.group_id = ug.group_id WHERE ug.user_id = ?',
  )
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
      keys = new Set(devicesOfUser.all(userId).map((r) => r.key))
      reachableByUser.set(userId, keys)
    }
    return keys
  }
  const userReaches = (userId: string, deviceKey: number, version: number) => devicesReachedBy(userId, version).has(deviceKey)
  const currentVersion = sqlite.query<{ version: number }, []>('SELECT version FROM access_version WHERE id = 1')
  const devicesOfAccount = sqlite.query<{ key: number }, [string]>('SELECT key FROM devices WHERE account_id = ?')

  const inGroups = `EXISTS (SELECT 1 FROM device_groups g WHERE g.device_key = d.key AND g.group_id IN (SELECT value FROM json_each($groups)))`
  const listWhere = (scope: string, groupFilter: string) =>
    `SELECT ${COLUMNS} FROM devices d WHERE d.state <> 'unlink' AND ${scope} ${groupFilter} ORDER BY d.alias, d.id LIMIT $limit OFFSET $offset`
  const list = prepare<DeviceRow, { scope: string; limit: number; offset: number }>((scope) => listWhere(scope, ''))
  const listInGroups = prepare<DeviceRow, { scope: string; groups: string; limit: number; offset: number }>((scope) => listWhere(scope, `AND ${inGroups}`))
  const brief = prepare<DeviceBrief, { scope: string }>((scope) => `SELECT d.key, d.id, d.alias FROM devices d WHERE d.state <> 'unlink' AND ${scope}`)
  const many = prepare<{ id: string; key: number }, { ids: string; scope: string }>(
    (scope) => `SELECT d.id, d.key FROM devices d WHERE d.id IN (SELECT value FROM json_each($ids)) AND ${scope}`,
  )

  // Row 1 moves with group memberships, row 2 with devices added, removed or (un)linked, row 3 with
  // devices leaving share links: together, whatever can change the result of `list`. All only
  // grow, so their sum moves when any does.
  const listVersionRead = sqlite.query<{ version: number }, []>('SELECT sum(version) AS version FROM access_version WHERE id IN (1, 2, 3)')

  return {
    /**
     * A number that moves whenever the result of `list` may have changed for anyone, whichever
     * process made the change: holders of a list (open live streams) compare it to know when to
     * read the list again. One read of three rows.
     */
    listVersion(): number {
      return listVersionRead.get()?.version ?? 0
    },

    /**
     * The device, or null when it does not exist or this principal cannot reach it. UUIDs are
     * case-insensitive and stored in lower case (import, migration 0004): an upper-case id names
     * the same device, and the row answers with the stored id.
     */
    find(principal: Principal, id: string): DeviceRow | null {
      const row = byId.get(id.toLowerCase())
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
      const page = { scope: scopeValue(principal), limit: filter.limit, offset: filter.offset }
      if (!filter.groups) return list(principal).all(page)
      return listInGroups(principal).all({ ...page, groups: JSON.stringify(filter.groups.map((id) => id.toLowerCase())) })
    },

    /**
     * Every reachable device's key, id and alias, `unlink` excluded as in `list`, in no order: for
     * reading the records of a whole fleet at once (GET /events), whatever its size.
     */
    reachableDevices(principal: Principal): DeviceBrief[] {
      return brief(principal).all({ scope: scopeValue(principal) })
    },

    /** id (as given, in any case) → key, for those of `ids` this principal can reach */
    reachableKeys(principal: Principal, ids: readonly string[]): Map<string, number> {
      const rows = many(principal).all({ ids: JSON.stringify(ids.map((id) => id.toLowerCase())), scope: scopeValue(principal) })
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
        const keys = new Set(devicesOfAccount.all(user.accountId).map((r) => r.key))
        return (key) => keys.has(key)
      }
      const keys = devicesReachedBy(user.userId, currentVersion.get()?.version ?? 0)
      return (key) => keys.has(key)
    },
  }
}

export type DeviceAccess = ReturnType<typeof createDeviceAccess>
