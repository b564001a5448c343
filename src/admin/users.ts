/**
 * Users of an account: who they are (a sign-in name unique across the server in any case), their
 * role and groups, their password. Each change is one unit of work of the people store
 * (store/people.ts) with its audit entry (never the password). The credentials version (migration 0005's triggers) makes a deleted user, a
 * changed role or password apply to every cached key and session on the very next request.
 *
 * Passwords are hashed (argon2id, slow on purpose) before the transaction, by `hashPassword`:
 * a transaction must be synchronous, and must not hold the write lock while a hash is computed.
 */
import type { Clock } from '../clock'
import { Conflict, Forbidden, NotFound } from '../errors'
import { iso } from '../http/model'
import type { NameTaken, PeopleStore, StoredUser, Unknown } from '../store/people'
import { type Actor, checkName, distinctIds, type Page, requireKnown } from './actor'
import { checkPassword, hashPassword as hashChecked } from '../session/passwords'
import { type Role, type UserBody } from './model'

export type { UserBody }

/** A password checked and hashed, ready to store; only `hashPassword` makes one. */
export interface HashedPassword {
  readonly argon2id: string
}

/** Checks a password (10 to 1024 characters) and hashes it with argon2id (Bun.password). */
export async function hashPassword(password: string, path = '/password'): Promise<HashedPassword> {
  return { argon2id: await hashChecked(checkPassword(password, path)) }
}

export interface NewUser {
  name: string
  /** default member */
  role?: Role
  /** group ids of the actor's account */
  groups?: readonly string[]
  password?: HashedPassword
}

export interface UserChanges {
  name?: string
  role?: Role
  /** replaces the user's groups */
  groups?: readonly string[]
  /** also ends the user's sessions */
  password?: HashedPassword
}

/** What the users service takes: the people store and the clock. */
export interface PeopleDeps {
  people: PeopleStore
  clock: Clock
}

function requireAdmin(by: Actor): void {
  if (!by.admin) throw new Forbidden('Only an account admin can do this')
}

const noUser = (userId: string) => new NotFound(`No user ${userId}`)

/** 404 naming each group of `groupIds` (at /groups/i) the account lacks */
function unknownGroups(groupIds: string[], outcome: Unknown): never {
  requireKnown(groupIds, new Set(outcome.known), '/groups', 'group')
  throw new Error('unreachable: a group was unknown')
}

const nameTaken = (name: string) => new Conflict(`/name: a user named "${name}" already exists (names are unique across the server, in any case)`)
const lastAdmin = (name: string, doing: string) => new Conflict(`${name} is the account's last admin: make another user admin before ${doing}`)
const isObject = <T extends object>(outcome: unknown, key: keyof T): outcome is T => typeof outcome === 'object' && outcome !== null && key in outcome

function toBody(user: StoredUser): UserBody {
  return { id: user.id, name: user.name, role: user.role, groups: user.groups, created_at: iso(user.createdAt) }
}

/** The account's users, by name then id. */
export async function listUsers(deps: PeopleDeps, by: Actor, page: Page): Promise<UserBody[]> {
  requireAdmin(by)
  return (await deps.people.listUsers(by.accountId, page)).map(toBody)
}

export async function getUser(deps: PeopleDeps, by: Actor, userId: string): Promise<UserBody> {
  requireAdmin(by)
  const user = await deps.people.findUser(by.accountId, userId.toLowerCase())
  if (user === null) throw noUser(userId)
  return toBody(user)
}

/**
 * A new user of the actor's account. 409 when the name is taken (in any case, in any account);
 * 404 naming `/groups/i` for a group that is not the account's.
 */
export async function createUser(deps: PeopleDeps, by: Actor, input: NewUser): Promise<UserBody> {
  requireAdmin(by)
  const name = checkName(input.name)
  const groupIds = distinctIds(input.groups ?? [], '/groups')
  const id = crypto.randomUUID()
  const outcome = await deps.people.createUser(
    { id, accountId: by.accountId, name, role: input.role ?? 'member', passwordHash: input.password?.argon2id ?? null, groups: groupIds },
    { actor: by.id, requestId: by.requestId ?? null },
    deps.clock.now(),
  )
  if (isObject<Unknown>(outcome, 'unknown')) {
    if (outcome.unknown === 'account') throw new NotFound(`No account ${by.accountId}`)
    unknownGroups(groupIds, outcome)
  }
  if (isObject<NameTaken>(outcome, 'nameTaken')) throw nameTaken(name)
  return getUser(deps, by, id)
}

/** Changes what is given; an empty change changes nothing (and records nothing). */
export async function updateUser(deps: PeopleDeps, by: Actor, userId: string, changes: UserChanges): Promise<UserBody> {
  requireAdmin(by)
  const name = changes.name === undefined ? undefined : checkName(changes.name)
  const groupIds = changes.groups === undefined ? undefined : distinctIds(changes.groups, '/groups')
  const id = userId.toLowerCase()
  const outcome = await deps.people.updateUser(
    by.accountId,
    id,
    { name, role: changes.role, groups: groupIds, passwordHash: changes.password?.argon2id },
    { actor: by.id, requestId: by.requestId ?? null },
    deps.clock.now(),
  )
  if (outcome === 'no-user') throw noUser(userId)
  if (isObject<{ lastAdmin: string }>(outcome, 'lastAdmin')) throw lastAdmin(outcome.lastAdmin, 'demoting them')
  if (isObject<Unknown>(outcome, 'unknown')) unknownGroups(groupIds!, outcome)
  if (isObject<NameTaken>(outcome, 'nameTaken')) throw nameTaken(name!)
  return getUser(deps, by, id)
}

/** Sets the user's password (from `hashPassword`) and ends their sessions. */
export async function setPassword(deps: PeopleDeps, by: Actor, userId: string, password: HashedPassword): Promise<void> {
  requireAdmin(by)
  const outcome = await deps.people.setPassword(by.accountId, userId.toLowerCase(), password.argon2id, { actor: by.id, requestId: by.requestId ?? null }, deps.clock.now())
  if (outcome === 'no-user') throw noUser(userId)
}

/**
 * Deletes the user; their keys, sessions and memberships go with them (foreign keys cascade), and
 * the share links they made are revoked (migration 0015's trigger, whichever process deletes them).
 */
export async function deleteUser(deps: PeopleDeps, by: Actor, userId: string): Promise<void> {
  requireAdmin(by)
  const outcome = await deps.people.deleteUser(by.accountId, userId.toLowerCase(), { actor: by.id, requestId: by.requestId ?? null }, deps.clock.now())
  if (outcome === 'no-user') throw noUser(userId)
  if (isObject<{ lastAdmin: string }>(outcome, 'lastAdmin')) throw lastAdmin(outcome.lastAdmin, 'deleting them')
}
