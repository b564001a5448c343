/**
 * Groups of an account: which users reach which devices. A change of membership bumps the access
 * version (migration 0001's triggers), so every member's reach follows it on the next request.
 * Device ids named in a body are looked up through the access function, as the account's admin
 * reaches them; user ids among the account's users. Anything not of the account is 404 naming
 * its place in the body (`/devices/2`).
 */
import { and, eq, inArray } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { deviceGroups, devices, groups, userGroups, users } from '../../db/schema'
import { Forbidden, NotFound } from '../errors'
import { endLinksBeyondCreatorsReach } from '../share/creators'
import { accountScope, type Actor, type AdminDeps, checkName, distinctIds, type Page, requireKnown } from './actor'
import type { GroupBody } from './model'

export type { GroupBody }

export interface NewGroup {
  name: string
  devices?: readonly string[]
  users?: readonly string[]
}

export interface GroupChanges {
  name?: string
  /** replaces the group's devices */
  devices?: readonly string[]
  /** replaces the group's users */
  users?: readonly string[]
}

type GroupRow = typeof groups.$inferSelect

function requireAdmin(by: Actor): void {
  if (!by.admin) throw new Forbidden('Only an account admin can do this')
}

/** What an actor may see: an admin the account's groups, a member their own. */
function visible(db: Db, by: Actor) {
  const ofAccount = eq(groups.accountId, by.accountId)
  if (by.admin) return ofAccount
  return and(ofAccount, inArray(groups.id, db.select({ id: userGroups.groupId }).from(userGroups).where(eq(userGroups.userId, by.id))))
}

function requireGroup(db: Db, by: Actor, groupId: string): GroupRow {
  const row = db.select().from(groups).where(and(eq(groups.id, groupId.toLowerCase()), visible(db, by))).get()
  if (!row) throw new NotFound(`No group ${groupId}`)
  return row
}

/** device ids → keys, each a device of the actor's account (else 404 naming it) */
function deviceKeys(deps: AdminDeps, by: Actor, ids: string[]): number[] {
  const keys = deps.access.reachableKeys(accountScope(by), ids)
  requireKnown(ids, new Set(keys.keys()), '/devices', 'device')
  return ids.map((id) => keys.get(id)!)
}

function requireUsers(db: Db, by: Actor, ids: string[]): void {
  if (ids.length === 0) return
  const found = db.select({ id: users.id }).from(users).where(and(eq(users.accountId, by.accountId), inArray(users.id, ids))).all()
  requireKnown(ids, new Set(found.map((u) => u.id)), '/users', 'user')
}

function replaceDevices(db: Db, groupId: string, keys: number[]): void {
  db.delete(deviceGroups).where(eq(deviceGroups.groupId, groupId)).run()
  if (keys.length > 0) db.insert(deviceGroups).values(keys.map((deviceKey) => ({ groupId, deviceKey }))).run()
}

function replaceUsers(db: Db, groupId: string, userIds: string[]): void {
  db.delete(userGroups).where(eq(userGroups.groupId, groupId)).run()
  if (userIds.length > 0) db.insert(userGroups).values(userIds.map((userId) => ({ groupId, userId }))).run()
}

function toBodies(db: Db, rows: GroupRow[]): GroupBody[] {
  const bodies = new Map<string, GroupBody>(rows.map((row) => [row.id, { id: row.id, name: row.name, devices: [], users: [] }]))
  if (rows.length === 0) return []
  const groupIds = [...bodies.keys()]
  // the group's account bounds its members too: nothing crosses accounts, whatever an import left
  const memberDevices = db
    .select({ groupId: deviceGroups.groupId, id: devices.id })
    .from(deviceGroups)
    .innerJoin(devices, eq(devices.key, deviceGroups.deviceKey))
    .innerJoin(groups, and(eq(groups.id, deviceGroups.groupId), eq(groups.accountId, devices.accountId)))
    .where(inArray(deviceGroups.groupId, groupIds))
    .orderBy(devices.alias, devices.id)
    .all()
  for (const { groupId, id } of memberDevices) bodies.get(groupId)!.devices.push(id)
  const memberUsers = db
    .select({ groupId: userGroups.groupId, id: users.id })
    .from(userGroups)
    .innerJoin(users, eq(users.id, userGroups.userId))
    .innerJoin(groups, and(eq(groups.id, userGroups.groupId), eq(groups.accountId, users.accountId)))
    .where(inArray(userGroups.groupId, groupIds))
    .orderBy(users.name, users.id)
    .all()
  for (const { groupId, id } of memberUsers) bodies.get(groupId)!.users.push(id)
  return [...bodies.values()]
}

/** The groups the actor sees (an admin: the account's; a member: their own), by name then id. */
export function listGroups(deps: AdminDeps, by: Actor, page: Page): GroupBody[] {
  const rows = deps.db.select().from(groups).where(visible(deps.db, by)).orderBy(groups.name, groups.id).limit(page.limit).offset(page.offset).all()
  return toBodies(deps.db, rows)
}

export function getGroup(deps: AdminDeps, by: Actor, groupId: string): GroupBody {
  return toBodies(deps.db, [requireGroup(deps.db, by, groupId)])[0]!
}

export function createGroup(deps: AdminDeps, by: Actor, input: NewGroup): GroupBody {
  requireAdmin(by)
  const name = checkName(input.name)
  const deviceIds = distinctIds(input.devices ?? [], '/devices')
  const userIds = distinctIds(input.users ?? [], '/users')
  const id = crypto.randomUUID()
  const now = deps.clock.now()
  // one connection: the statements below, through deps.db, are inside this transaction
  deps.db.transaction(
    () => {
      const keys = deviceKeys(deps, by, deviceIds)
      requireUsers(deps.db, by, userIds)
      deps.db.insert(groups).values({ id, accountId: by.accountId, name }).run()
      replaceDevices(deps.db, id, keys)
      replaceUsers(deps.db, id, userIds)
      deps.audit.record({ accountId: by.accountId, actor: by.id, action: 'create', objectType: 'group', objectId: id, requestId: by.requestId }, now)
    },
    { behavior: 'immediate' },
  )
  return getGroup(deps, by, id)
}

/** Changes what is given (`devices` and `users` replace the lists); an empty change changes nothing. */
export function updateGroup(deps: AdminDeps, by: Actor, groupId: string, changes: GroupChanges): GroupBody {
  requireAdmin(by)
  const name = changes.name === undefined ? undefined : checkName(changes.name)
  const deviceIds = changes.devices === undefined ? undefined : distinctIds(changes.devices, '/devices')
  const userIds = changes.users === undefined ? undefined : distinctIds(changes.users, '/users')
  const now = deps.clock.now()
  const id = deps.db.transaction(
    () => {
      const group = requireGroup(deps.db, by, groupId)
      const keys = deviceIds === undefined ? undefined : deviceKeys(deps, by, deviceIds)
      if (userIds !== undefined) requireUsers(deps.db, by, userIds)
      if (name !== undefined) deps.db.update(groups).set({ name }).where(eq(groups.id, group.id)).run()
      if (keys !== undefined) replaceDevices(deps.db, group.id, keys)
      if (userIds !== undefined) replaceUsers(deps.db, group.id, userIds)
      // after both lists: share links keep only what their creators reach once the whole change is made
      if (keys !== undefined || userIds !== undefined) endLinksBeyondCreatorsReach(deps.db, by.accountId, now)
      if (name !== undefined || keys !== undefined || userIds !== undefined) {
        deps.audit.record({ accountId: by.accountId, actor: by.id, action: 'update', objectType: 'group', objectId: group.id, requestId: by.requestId }, now)
      }
      return group.id
    },
    { behavior: 'immediate' },
  )
  return getGroup(deps, by, id)
}

/** Deletes the group; its devices and users stay, without it. */
export function deleteGroup(deps: AdminDeps, by: Actor, groupId: string): void {
  requireAdmin(by)
  const now = deps.clock.now()
  deps.db.transaction(
    () => {
      const group = requireGroup(deps.db, by, groupId)
      deps.db.delete(groups).where(eq(groups.id, group.id)).run()
      endLinksBeyondCreatorsReach(deps.db, by.accountId, now)
      deps.audit.record({ accountId: by.accountId, actor: by.id, action: 'delete', objectType: 'group', objectId: group.id, requestId: by.requestId }, now)
    },
    { behavior: 'immediate' },
  )
}
