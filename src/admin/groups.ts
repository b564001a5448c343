/**
 * Groups of an account: which users reach which devices. A change of membership bumps the access
 * version (migration 0001's triggers), so every member's reach follows it on the next request.
 * Device ids named in a body are looked up through the access function, as the account's admin
 * reaches them; user ids among the account's users. Anything not of the account is 404 naming
 * its place in the body (`/devices/2`).
 */
import type { Clock } from '../clock'
import type { DeviceAccess } from '../devices/access'
import { Forbidden, NotFound } from '../errors'
import type { PeopleStore, Unknown } from '../store/people'
import { accountScope, type Actor, checkName, distinctIds, type Page, requireKnown } from './actor'
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

/** What the groups service takes: the people store, the clock, and the one access function (device ids named in a body). */
export interface GroupDeps {
  people: PeopleStore
  clock: Clock
  access: DeviceAccess
}

function requireAdmin(by: Actor): void {
  if (!by.admin) throw new Forbidden('Only an account admin can do this')
}

const viewerOf = (by: Actor) => ({ accountId: by.accountId, userId: by.id, admin: by.admin })
const noGroup = (groupId: string) => new NotFound(`No group ${groupId}`)
const changeBy = (by: Actor) => ({ actor: by.id, requestId: by.requestId ?? null })

/** device ids → keys, each a device of the actor's account (else 404 naming it) */
async function deviceKeys(deps: GroupDeps, by: Actor, ids: string[]): Promise<number[]> {
  if (ids.length === 0) return []
  const keys = await deps.access.reachableKeys(accountScope(by), ids)
  requireKnown(ids, new Set(keys.keys()), '/devices', 'device')
  return ids.map((id) => keys.get(id)!)
}

/** 404 naming each user of `userIds` (at /users/i) the account lacks */
function unknownUsers(userIds: string[], outcome: Unknown): never {
  requireKnown(userIds, new Set(outcome.known), '/users', 'user')
  throw new Error('unreachable: a user was unknown')
}

const isUnknown = (outcome: unknown): outcome is Unknown => typeof outcome === 'object' && outcome !== null && 'unknown' in outcome

/** The groups the actor sees (an admin: the account's; a member: their own), by name then id. */
export function listGroups(deps: GroupDeps, by: Actor, page: Page): Promise<GroupBody[]> {
  return deps.people.listGroups(viewerOf(by), page)
}

export async function getGroup(deps: GroupDeps, by: Actor, groupId: string): Promise<GroupBody> {
  const group = await deps.people.findGroup(viewerOf(by), groupId.toLowerCase())
  if (group === null) throw noGroup(groupId)
  return group
}

export async function createGroup(deps: GroupDeps, by: Actor, input: NewGroup): Promise<GroupBody> {
  requireAdmin(by)
  const name = checkName(input.name)
  const deviceIds = distinctIds(input.devices ?? [], '/devices')
  const userIds = distinctIds(input.users ?? [], '/users')
  const id = crypto.randomUUID()
  const keys = await deviceKeys(deps, by, deviceIds)
  const outcome = await deps.people.createGroup({ id, accountId: by.accountId, name, deviceKeys: keys, users: userIds }, changeBy(by), deps.clock.now())
  if (isUnknown(outcome)) unknownUsers(userIds, outcome)
  return getGroup(deps, by, id)
}

/** Changes what is given (`devices` and `users` replace the lists); an empty change changes nothing. */
export async function updateGroup(deps: GroupDeps, by: Actor, groupId: string, changes: GroupChanges): Promise<GroupBody> {
  requireAdmin(by)
  const name = changes.name === undefined ? undefined : checkName(changes.name)
  const deviceIds = changes.devices === undefined ? undefined : distinctIds(changes.devices, '/devices')
  const userIds = changes.users === undefined ? undefined : distinctIds(changes.users, '/users')
  const id = groupId.toLowerCase()
  // an unknown group is 404 before what the body names is looked at
  if ((await deps.people.findGroup(viewerOf(by), id)) === null) throw noGroup(groupId)
  const keys = deviceIds === undefined ? undefined : await deviceKeys(deps, by, deviceIds)
  const outcome = await deps.people.updateGroup(by.accountId, id, { name, deviceKeys: keys, users: userIds }, changeBy(by), deps.clock.now())
  if (outcome === 'no-group') throw noGroup(groupId)
  if (isUnknown(outcome)) unknownUsers(userIds!, outcome)
  return getGroup(deps, by, id)
}

/** Deletes the group; its devices and users stay, without it. */
export async function deleteGroup(deps: GroupDeps, by: Actor, groupId: string): Promise<void> {
  requireAdmin(by)
  const outcome = await deps.people.deleteGroup(by.accountId, groupId.toLowerCase(), changeBy(by), deps.clock.now())
  if (outcome === 'no-group') throw noGroup(groupId)
}
