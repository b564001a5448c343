/**
 * Users of an account: who they are (a sign-in name unique across the server in any case), their
 * role and groups, their password. Each change is one transaction with its audit entry (never
 * the password). The credentials version (migration 0005's triggers) makes a deleted user, a
 * changed role or password apply to every cached key and session on the very next request.
 *
 * Passwords are hashed (argon2id, slow on purpose) before the transaction, by `hashPassword`:
 * a transaction must be synchronous, and must not hold the write lock while a hash is computed.
 */
import { and, count, eq, inArray, ne, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { accounts, groups, sessions, userGroups, users } from '../../db/schema'
import { Conflict, Forbidden, Invalid, NotFound } from '../errors'
import { iso } from '../http/model'
import { endLinksBeyondCreatorsReach } from '../share/creators'
import { type Actor, type AdminDeps, checkName, distinctIds, type Page, requireKnown } from './actor'
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

type UserRow = typeof users.$inferSelect

function requireAdmin(by: Actor): void {
  if (!by.admin) throw new Forbidden('Only an account admin can do this')
}

/** the user, of the actor's account; 404 otherwise (another account's user is not there) */
function requireUser(db: Db, by: Actor, userId: string): UserRow {
  const row = db.select().from(users).where(and(eq(users.id, userId.toLowerCase()), eq(users.accountId, by.accountId))).get()
  if (!row) throw new NotFound(`No user ${userId}`)
  return row
}

/** names are unique across the server, compared case-insensitively (as the users_name index does) */
function requireFreeName(db: Db, name: string, exceptUserId: string | null): void {
  const sameName = sql`lower(${users.name}) = lower(${name})`
  const clash = db
    .select({ id: users.id })
    .from(users)
    .where(exceptUserId === null ? sameName : and(sameName, ne(users.id, exceptUserId)))
    .get()
  if (clash) throw new Conflict(`/name: a user named "${name}" already exists (names are unique across the server, in any case)`)
}

function requireGroups(db: Db, by: Actor, groupIds: string[]): void {
  if (groupIds.length === 0) return
  const found = db.select({ id: groups.id }).from(groups).where(and(eq(groups.accountId, by.accountId), inArray(groups.id, groupIds))).all()
  requireKnown(groupIds, new Set(found.map((g) => g.id)), '/groups', 'group')
}

/** an account keeps at least one admin: demoting or deleting the last one is refused */
function requireAnotherAdmin(db: Db, user: UserRow, doing: string): void {
  if (user.role !== 'admin') return
  const others = db
    .select({ n: count() })
    .from(users)
    .where(and(eq(users.accountId, user.accountId), eq(users.role, 'admin'), ne(users.id, user.id)))
    .get()
  if ((others?.n ?? 0) === 0) throw new Conflict(`${user.name} is the account's last admin: make another user admin before ${doing}`)
}

function replaceGroups(db: Db, userId: string, groupIds: string[]): void {
  db.delete(userGroups).where(eq(userGroups.userId, userId)).run()
  if (groupIds.length > 0) db.insert(userGroups).values(groupIds.map((groupId) => ({ userId, groupId }))).run()
}

function setHash(deps: AdminDeps, by: Actor, user: UserRow, password: HashedPassword, now: number): void {
  deps.db.update(users).set({ passwordHash: password.argon2id }).where(eq(users.id, user.id)).run()
  // a new password ends every session of the user (their keys stay)
  deps.db.delete(sessions).where(eq(sessions.userId, user.id)).run()
  deps.audit.record({ accountId: user.accountId, actor: by.id, action: 'password', objectType: 'user', objectId: user.id, requestId: by.requestId }, now)
}

function toBodies(db: Db, rows: UserRow[]): UserBody[] {
  const groupsOf = new Map<string, string[]>(rows.map((row) => [row.id, []]))
  if (rows.length > 0) {
    const memberships = db
      .select({ userId: userGroups.userId, groupId: groups.id })
      .from(userGroups)
      .innerJoin(groups, eq(groups.id, userGroups.groupId))
      .where(inArray(userGroups.userId, [...groupsOf.keys()]))
      .orderBy(groups.name, groups.id)
      .all()
    for (const { userId, groupId } of memberships) groupsOf.get(userId)!.push(groupId)
  }
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    role: row.role === 'admin' ? 'admin' : 'member',
    groups: groupsOf.get(row.id)!,
    created_at: iso(row.createdAt),
  }))
}

/** The account's users, by name then id. */
export function listUsers(deps: AdminDeps, by: Actor, page: Page): UserBody[] {
  requireAdmin(by)
  const rows = deps.db.select().from(users).where(eq(users.accountId, by.accountId)).orderBy(users.name, users.id).limit(page.limit).offset(page.offset).all()
  return toBodies(deps.db, rows)
}

export function getUser(deps: AdminDeps, by: Actor, userId: string): UserBody {
  requireAdmin(by)
  return toBodies(deps.db, [requireUser(deps.db, by, userId)])[0]!
}

/**
 * A new user of the actor's account. 409 when the name is taken (in any case, in any account);
 * 404 naming `/groups/i` for a group that is not the account's.
 */
export function createUser(deps: AdminDeps, by: Actor, input: NewUser): UserBody {
  requireAdmin(by)
  const name = checkName(input.name)
  const groupIds = distinctIds(input.groups ?? [], '/groups')
  const id = crypto.randomUUID()
  const now = deps.clock.now()
  // one connection: the statements below, through deps.db, are inside this transaction
  deps.db.transaction(
    () => {
      if (!deps.db.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, by.accountId)).get()) throw new NotFound(`No account ${by.accountId}`)
      requireGroups(deps.db, by, groupIds)
      requireFreeName(deps.db, name, null)
      deps.db
        .insert(users)
        .values({ id, accountId: by.accountId, name, role: input.role ?? 'member', passwordHash: input.password?.argon2id ?? null, createdAt: now })
        .run()
      replaceGroups(deps.db, id, groupIds)
      deps.audit.record({ accountId: by.accountId, actor: by.id, action: 'create', objectType: 'user', objectId: id, requestId: by.requestId }, now)
    },
    { behavior: 'immediate' },
  )
  return getUser(deps, by, id)
}

/** Changes what is given; an empty change changes nothing (and records nothing). */
export function updateUser(deps: AdminDeps, by: Actor, userId: string, changes: UserChanges): UserBody {
  requireAdmin(by)
  const name = changes.name === undefined ? undefined : checkName(changes.name)
  const groupIds = changes.groups === undefined ? undefined : distinctIds(changes.groups, '/groups')
  const now = deps.clock.now()
  const id = deps.db.transaction(
    () => {
      const user = requireUser(deps.db, by, userId)
      if (changes.role === 'member') requireAnotherAdmin(deps.db, user, 'demoting them')
      if (groupIds !== undefined) requireGroups(deps.db, by, groupIds)
      if (name !== undefined && name !== user.name) requireFreeName(deps.db, name, user.id)
      if (name !== undefined || changes.role !== undefined) {
        deps.db.update(users).set({ name, role: changes.role }).where(eq(users.id, user.id)).run()
      }
      if (groupIds !== undefined) replaceGroups(deps.db, user.id, groupIds)
      // after both: the links they made keep only what they reach once the whole change is made
      if (changes.role !== undefined || groupIds !== undefined) endLinksBeyondCreatorsReach(deps.db, user.accountId, now)
      if (name !== undefined || changes.role !== undefined || groupIds !== undefined) {
        deps.audit.record({ accountId: user.accountId, actor: by.id, action: 'update', objectType: 'user', objectId: user.id, requestId: by.requestId }, now)
      }
      if (changes.password !== undefined) setHash(deps, by, user, changes.password, now)
      return user.id
    },
    { behavior: 'immediate' },
  )
  return getUser(deps, by, id)
}

/** Sets the user's password (from `hashPassword`) and ends their sessions. */
export function setPassword(deps: AdminDeps, by: Actor, userId: string, password: HashedPassword): void {
  requireAdmin(by)
  const now = deps.clock.now()
  deps.db.transaction(() => setHash(deps, by, requireUser(deps.db, by, userId), password, now), { behavior: 'immediate' })
}

/**
 * Deletes the user; their keys, sessions and memberships go with them (foreign keys cascade), and
 * the share links they made are revoked (migration 0015's trigger, whichever process deletes them).
 */
export function deleteUser(deps: AdminDeps, by: Actor, userId: string): void {
  requireAdmin(by)
  const now = deps.clock.now()
  deps.db.transaction(
    () => {
      const user = requireUser(deps.db, by, userId)
      requireAnotherAdmin(deps.db, user, 'deleting them')
      deps.db.delete(users).where(eq(users.id, user.id)).run()
      deps.audit.record({ accountId: user.accountId, actor: by.id, action: 'delete', objectType: 'user', objectId: user.id, requestId: by.requestId }, now)
    },
    { behavior: 'immediate' },
  )
}
