/**
 * The owner of people: accounts, users, groups and their memberships (user_groups, device_groups),
 * and sign-in sessions. Its units of work, each one function with its transaction inside and its
 * audit row (store/audit.ts's writer):
 *
 * - the first account created with its admin (setup), an account alone (`account create`);
 * - a user created with their groups, changed (name, role, groups, password), deleted (their
 *   keys, sessions and memberships go by ON DELETE CASCADE; the share links they made are revoked
 *   by migration 0015's trigger);
 * - a password changed with the sessions it ends (by an admin, or the user's own, which keeps the
 *   request's session);
 * - a group created, changed or deleted with its members;
 * - a session opened (sweeping the expired), renewed, ended; sessions' last uses in the background.
 *
 * A change of who reaches what (a role, memberships, a group deleted) also ends what share links
 * their creators no longer reach, in the same unit of work, with the share-link store's
 * in-transaction writer (`endLinksBeyondCreatorsReachInTransaction`).
 *
 * The decisions (who may do what, what a name may be, which error) are the services'
 * (admin/users.ts, admin/groups.ts, session/*); this answers what it found, as outcomes.
 * Writes wait for another process's write lock asynchronously (store/busy.ts: Timeout after 5 s),
 * unless `retryWhileBusy` is false (the command line, alone, waits in SQLite's busy timeout).
 *
 * SQLite-only: none (`lower(name)` is served by the partial unique index users_name, which
 * PostgreSQL keeps as a unique index on lower(name) WHERE name <> '').
 */
import { and, count, eq, inArray, isNotNull, lte, ne, sql } from 'drizzle-orm'
import type { DatabaseHandle, Db } from '../../db/client'
import { accessVersion, accounts, deviceGroups, devices, groups, sessions, userGroups, users } from '../../db/schema'
import { type Clock, systemClock } from '../clock'
import type { Logger } from '../log'
import { recordAuditInTransaction } from './audit'
import { storeWriter } from './busy'
import { createDeferredWrites, type DeferredWrites } from './deferred'
import { endLinksBeyondCreatorsReachInTransaction as endLinks } from './shareLinks'

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

/** Who makes a change, for its audit row: a user id or `cli`, and the request's id. */
export interface ChangeBy {
  actor: string
  requestId: string | null
}

export type StoredRole = 'admin' | 'member'

export interface StoredAccount {
  id: string
  name: string
}

/** A user with the ids of their groups (by group name, then id). */
export interface StoredUser {
  id: string
  accountId: string
  name: string
  role: StoredRole
  createdAt: number
  groups: string[]
}

/** A group with its devices' ids (by alias, then id) and its users' ids (by name, then id). */
export interface StoredGroup {
  id: string
  name: string
  devices: string[]
  users: string[]
}

/** A user with their account, as the console and GET /me show them. */
export interface UserWithAccount {
  id: string
  name: string
  role: StoredRole
  account: { id: string; name: string }
}

/** A session's row with its user, for the lookup of a presented session id. */
export interface SessionOfHash {
  idHash: string
  userId: string
  accountId: string
  role: StoredRole
  createdAt: number
  expiresAt: number
  lastUsedAt: number
}

/** A session's row to write. */
export interface NewSession {
  idHash: string
  userId: string
  createdAt: number
  expiresAt: number
}

/** Whose groups a reader sees: an admin every group of the account, a member their own. */
export interface GroupViewer {
  accountId: string
  userId: string
  admin: boolean
}

export interface Page {
  limit: number
  offset: number
}

/** ids named that are not of the account: `known` holds those that are */
export interface Unknown {
  unknown: 'groups' | 'users' | 'account'
  known: string[]
}
/** the user is the account's last admin (their name) */
export interface LastAdmin {
  lastAdmin: string
}
/** the name is another user's (in any case) */
export interface NameTaken {
  nameTaken: true
}

export interface NewUserRow {
  id: string
  accountId: string
  name: string
  role: StoredRole
  passwordHash: string | null
  /** group ids, each once */
  groups: readonly string[]
}

export interface UserChange {
  name?: string
  role?: StoredRole
  /** replaces the user's groups */
  groups?: readonly string[]
  /** also ends the user's sessions */
  passwordHash?: string
}

export interface NewGroupRow {
  id: string
  accountId: string
  name: string
  /** device keys (from the access function), each once */
  deviceKeys: readonly number[]
  /** user ids, each once */
  users: readonly string[]
}

export interface GroupChange {
  name?: string
  deviceKeys?: readonly number[]
  users?: readonly string[]
}

export interface FirstAccountRows {
  accountId: string
  accountName: string
  userId: string
  userName: string
  passwordHash: string
}

export interface DeferredUsesOptions {
  delayMs: number
  /** what waits: session id hash → the use (Unix ms), written in one transaction */
  pending(): Iterable<[string, number]>
  hasPending(): boolean
  /** called once what `pending()` gave has committed */
  written(): void
  log: Logger
  failure: string
  context?(): Record<string, unknown>
}

export interface PeopleStore {
  // ---- accounts and the first run
  /** whether any user exists (no user: the first run offers its setup link) */
  hasUsers(): Promise<boolean>
  /** the account, or null */
  account(id: string): Promise<StoredAccount | null>
  /** accounts whose id is `id`, or whose name is `name` in any case (the command line's names) */
  accountsNamed(match: { id: string } | { name: string }): Promise<StoredAccount[]>
  /** every account that has a user, by id */
  accountsWithUsers(): Promise<StoredAccount[]>
  /** a new account with its audit row */
  createAccount(account: StoredAccount, by: ChangeBy, nowMs: number): Promise<void>
  /** the first account and its admin with their audit rows (actor: `by.actor`, or the new admin); false when a user exists */
  setupFirstAccount(rows: FirstAccountRows, by: { actor: string | null; requestId: string | null }, nowMs: number): Promise<boolean>

  // ---- users
  /** the account's users, by name then id */
  listUsers(accountId: string, page: Page): Promise<StoredUser[]>
  /** the user of the account, or null */
  findUser(accountId: string, userId: string): Promise<StoredUser | null>
  /** users whose id is `id`, or whose name is `name` in any case, of any account */
  usersNamed(match: { id: string } | { name: string }): Promise<{ id: string; name: string; accountId: string }[]>
  /** the user with their account, or null */
  userWithAccount(userId: string): Promise<UserWithAccount | null>
  /** the user's sign-in name and password hash (null: none), or null when the user is gone */
  credentialsOf(userId: string): Promise<{ name: string; passwordHash: string | null } | null>
  /** the user's own IANA zone (`{ timezone: null }`: none set), or null when the user is gone */
  timezoneOf(userId: string): Promise<{ timezone: string | null } | null>
  /** sets (null: clears) the user's zone; false when the user is gone */
  setTimezone(userId: string, timezone: string | null): Promise<boolean>
  /** the user who signs in with `name` (any case; never the empty name), with their hash */
  userByName(name: string): Promise<{ id: string; passwordHash: string | null } | null>
  /** the user, their groups and audit row in one unit of work */
  createUser(user: NewUserRow, by: ChangeBy, nowMs: number): Promise<'created' | Unknown | NameTaken>
  /**
   * What is given, in one unit of work: the name, role and groups (one `update` audit row, when
   * any is given), then the password (ending the user's sessions; a `password` row).
   */
  updateUser(accountId: string, userId: string, change: UserChange, by: ChangeBy, nowMs: number): Promise<'updated' | 'no-user' | Unknown | NameTaken | LastAdmin>
  /** the user's password, ending their sessions, with its audit row */
  setPassword(accountId: string, userId: string, passwordHash: string, by: ChangeBy, nowMs: number): Promise<'set' | 'no-user'>
  /**
   * The demo's own user's new password at every `tracker demo`, ending the last run's sessions,
   * in one unit of work and with no audit row (the demo never wrote one: nobody changed it)
   */
  replaceDemoPassword(userId: string, passwordHash: string): Promise<void>
  /** the user (their keys, sessions, memberships with them) with its audit row */
  deleteUser(accountId: string, userId: string, by: ChangeBy, nowMs: number): Promise<'deleted' | 'no-user' | LastAdmin>

  // ---- groups
  /** the groups the viewer sees, by name then id */
  listGroups(viewer: GroupViewer, page: Page): Promise<StoredGroup[]>
  /** the group, when the viewer sees it */
  findGroup(viewer: GroupViewer, groupId: string): Promise<StoredGroup | null>
  /** groups of the account whose id is `id` or whose name is `name` in any case */
  groupsNamed(accountId: string, match: { id: string } | { name: string }): Promise<{ id: string; name: string }[]>
  /** the group with its members and audit row; devices no longer of the account (deleted meanwhile) are left out */
  createGroup(group: NewGroupRow, by: ChangeBy, nowMs: number): Promise<'created' | Unknown>
  /** what is given (`deviceKeys`, `users` replace the lists) with its audit row, when anything is */
  updateGroup(accountId: string, groupId: string, change: GroupChange, by: ChangeBy, nowMs: number): Promise<'updated' | 'no-group' | Unknown>
  /** the group (its memberships with it) with its audit row */
  deleteGroup(accountId: string, groupId: string, by: ChangeBy, nowMs: number): Promise<'deleted' | 'no-group'>

  // ---- sessions
  /** row 4 of access_version: moves whenever a key, session, role or password changes, in any process */
  credentialsVersion(): Promise<number>
  /** the session of the hash, with its user, unless the user has no password */
  sessionByHash(idHash: string): Promise<SessionOfHash | null>
  /**
   * Writes the session, first deleting those expired before `sweepBeforeMs`; with
   * `expectedPasswordHash`, only while the user's hash is still that one (false otherwise).
   */
  openSession(session: NewSession, expectedPasswordHash: string | null, sweepBeforeMs: number): Promise<boolean>
  /**
   * The user's own change of password from `expectedHash`: every other session of theirs ends
   * (`keepIdHash`'s lives on), with its audit row (by the user). 'changed-meanwhile' when the
   * hash is not `expectedHash` any more.
   */
  changeOwnPassword(userId: string, expectedHash: string, newHash: string, keepIdHash: string | null, requestId: string | null, nowMs: number): Promise<'changed' | 'changed-meanwhile' | 'no-user'>
  /** the old session ends at `endsAtMs`; the new one is written */
  renewSession(oldIdHash: string, nowMs: number, endsAtMs: number, fresh: NewSession): Promise<void>
  /** the session's row goes */
  endSession(idHash: string): Promise<void>
  /** the background writer of sessions' last uses (store/deferred.ts); `lifetimeMs` slides the expiry of those still sliding */
  deferSessionUses(lifetimeMs: number, options: DeferredUsesOptions): DeferredWrites
}

export interface PeopleStoreOptions {
  /** the write deadline's clock */
  clock?: Clock
  /** false: a write waits in SQLite's busy timeout only (a process alone: the command line) */
  retryWhileBusy?: boolean
}

/**
 * Which of `ids` are groups of the account, inside a caller's unit of work: the groups' owner
 * answers it for every store that files something under groups (devices, geofences, channels).
 */
export function groupsOfAccountInTransaction(tx: Pick<Db, 'select'>, accountId: string, ids: readonly string[]): Set<string> {
  if (ids.length === 0) return new Set()
  return new Set(tx.select({ id: groups.id }).from(groups).where(and(eq(groups.accountId, accountId), inArray(groups.id, [...ids]))).all().map((g) => g.id))
}

/**
 * Null when every one of `ids` (none given: nothing to check) is a group of the account; else the
 * groups of them that are, for the refusal to name the rest. For the stores that file things under
 * groups (geofences, channels), inside their unit of work.
 */
export function groupsRefusedInTransaction(tx: Pick<Db, 'select'>, accountId: string, ids: readonly string[] | undefined): { groupsFound: ReadonlySet<string> } | null {
  if (ids === undefined || ids.length === 0) return null
  const found = groupsOfAccountInTransaction(tx, accountId, ids)
  return ids.every((id) => found.has(id)) ? null : { groupsFound: found }
}

export const asRole = (role: string): StoredRole => (role === 'admin' ? 'admin' : 'member')

/** by id, or by name in any case (the PostgreSQL adapter's too) */
export const named = (columns: { id: unknown; name: unknown }, match: { id: string } | { name: string }) =>
  'id' in match ? eq(columns.id as never, match.id) : sql`lower(${columns.name}) = ${match.name.toLowerCase()}`

/** a user's row (of either engine) with the ids of their groups */
export const storedUser = (row: { id: string; accountId: string; name: string; role: string; createdAt: number }, groupIds: string[]): StoredUser => ({
  id: row.id,
  accountId: row.accountId,
  name: row.name,
  role: asRole(row.role),
  createdAt: row.createdAt,
  groups: groupIds,
})

/** a user's row joined with their account's (of either engine), as GET /me shows it */
export const userWithAccountOf = (row: { id: string; name: string; role: string; accountId: string; accountName: string }): UserWithAccount => ({
  id: row.id,
  name: row.name,
  role: asRole(row.role),
  account: { id: row.accountId, name: row.accountName },
})

/** what a session found by its hash is read with (SessionOfHash), of either engine's sessions and users */
export const sessionOfHashColumns = <
  S extends Record<'idHash' | 'createdAt' | 'expiresAt' | 'lastUsedAt', unknown>,
  U extends Record<'id' | 'accountId' | 'role', unknown>,
>(
  s: S,
  u: U,
): Pick<S, 'idHash' | 'createdAt' | 'expiresAt' | 'lastUsedAt'> & { userId: U['id']; accountId: U['accountId']; role: U['role'] } => ({ idHash: s.idHash, userId: u.id, accountId: u.accountId, role: u.role, createdAt: s.createdAt, expiresAt: s.expiresAt, lastUsedAt: s.lastUsedAt })

export function createPeopleStore(database: Pick<DatabaseHandle, 'db' | 'sqlite'>, options: PeopleStoreOptions = {}): PeopleStore {
  const { db, sqlite } = database
  const clock = options.clock ?? systemClock
  const placeholder = sql.placeholder

  const write = storeWriter(sqlite, { clock, retry: options.retryWhileBusy })
  /** one unit of work: the write lock from its start, so that what it reads holds until it commits */
  const unit = <T>(work: (tx: Tx) => T): Promise<T> => write(() => db.transaction(work, { behavior: 'immediate' }))

  // ---- reads, prepared once
  const anyUser = db.select({ one: sql<number>`1` }).from(users).limit(1).prepare()
  const accountById = db.select({ id: accounts.id, name: accounts.name }).from(accounts).where(eq(accounts.id, placeholder('id'))).prepare()
  const userOfAccount = db
    .select()
    .from(users)
    .where(and(eq(users.id, placeholder('id')), eq(users.accountId, placeholder('account'))))
    .prepare()
  const withAccount = db
    .select({ id: users.id, name: users.name, role: users.role, accountId: accounts.id, accountName: accounts.name })
    .from(users)
    .innerJoin(accounts, eq(accounts.id, users.accountId))
    .where(eq(users.id, placeholder('id')))
    .prepare()
  const credentials = db.select({ name: users.name, passwordHash: users.passwordHash }).from(users).where(eq(users.id, placeholder('id'))).prepare()
  // the partial unique index on lower(name) serves this only with its own condition (name <> '')
  const byName = db
    .select({ id: users.id, passwordHash: users.passwordHash })
    .from(users)
    .where(and(sql`lower(${users.name}) = lower(${placeholder('name')})`, ne(users.name, '')))
    .prepare()
  const version = db.select({ version: accessVersion.version }).from(accessVersion).where(eq(accessVersion.id, 4)).prepare()
  // a user who lost their password (set to none) can no longer use a session either
  const bySessionHash = db
    .select(sessionOfHashColumns(sessions, users))
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(and(eq(sessions.idHash, placeholder('idHash')), isNotNull(users.passwordHash)))
    .prepare()

  type UserRow = typeof users.$inferSelect
  type GroupRow = typeof groups.$inferSelect

  // ---- the pieces of the units of work (each on the transaction it is given)

  function requireUserIn(tx: Tx, accountId: string, userId: string): UserRow | undefined {
    return tx.select().from(users).where(and(eq(users.id, userId), eq(users.accountId, accountId))).get()
  }

  /** names are unique across the server, compared case-insensitively (as the users_name index does) */
  function nameTaken(tx: Tx, name: string, exceptUserId: string | null): boolean {
    const sameName = sql`lower(${users.name}) = lower(${name})`
    return tx.select({ id: users.id }).from(users).where(exceptUserId === null ? sameName : and(sameName, ne(users.id, exceptUserId))).get() !== undefined
  }

  /** the ids of `ids` that are groups of the account, or null when all are */
  function unknownGroups(tx: Tx, accountId: string, ids: readonly string[]): Unknown | null {
    if (ids.length === 0) return null
    const found = groupsOfAccountInTransaction(tx, accountId, ids)
    return found.size === ids.length ? null : { unknown: 'groups', known: [...found] }
  }

  function unknownUsers(tx: Tx, accountId: string, ids: readonly string[]): Unknown | null {
    if (ids.length === 0) return null
    const found = tx.select({ id: users.id }).from(users).where(and(eq(users.accountId, accountId), inArray(users.id, [...ids]))).all()
    return found.length === ids.length ? null : { unknown: 'users', known: found.map((u) => u.id) }
  }

  /** an account keeps at least one admin */
  function isLastAdmin(tx: Tx, user: UserRow): boolean {
    if (user.role !== 'admin') return false
    const others = tx
      .select({ n: count() })
      .from(users)
      .where(and(eq(users.accountId, user.accountId), eq(users.role, 'admin'), ne(users.id, user.id)))
      .get()
    return (others?.n ?? 0) === 0
  }

  function replaceUserGroups(tx: Tx, userId: string, groupIds: readonly string[]): void {
    tx.delete(userGroups).where(eq(userGroups.userId, userId)).run()
    if (groupIds.length > 0) tx.insert(userGroups).values(groupIds.map((groupId) => ({ userId, groupId }))).run()
  }

  /** the group's devices: those of `keys` still of the account (one deleted since the access function named it is left out) */
  function replaceGroupDevices(tx: Tx, accountId: string, groupId: string, keys: readonly number[]): void {
    tx.delete(deviceGroups).where(eq(deviceGroups.groupId, groupId)).run()
    if (keys.length === 0) return
    const present = tx
      .select({ key: devices.key })
      .from(devices)
      .where(and(eq(devices.accountId, accountId), inArray(devices.key, [...keys])))
      .all()
    if (present.length > 0) tx.insert(deviceGroups).values(present.map(({ key }) => ({ groupId, deviceKey: key }))).run()
  }

  function replaceGroupUsers(tx: Tx, groupId: string, userIds: readonly string[]): void {
    tx.delete(userGroups).where(eq(userGroups.groupId, groupId)).run()
    if (userIds.length > 0) tx.insert(userGroups).values(userIds.map((userId) => ({ groupId, userId }))).run()
  }

  function setHash(tx: Tx, user: UserRow, passwordHash: string, by: ChangeBy, nowMs: number): void {
    tx.update(users).set({ passwordHash }).where(eq(users.id, user.id)).run()
    // a new password ends every session of the user (their keys stay)
    tx.delete(sessions).where(eq(sessions.userId, user.id)).run()
    recordAuditInTransaction(tx, { accountId: user.accountId, actor: by.actor, action: 'password', objectType: 'user', objectId: user.id, requestId: by.requestId }, nowMs)
  }

  function userBodies(tx: Pick<Db, 'select'>, rows: UserRow[]): StoredUser[] {
    const groupsOf = new Map<string, string[]>(rows.map((row) => [row.id, []]))
    if (rows.length > 0) {
      const memberships = tx
        .select({ userId: userGroups.userId, groupId: groups.id })
        .from(userGroups)
        .innerJoin(groups, eq(groups.id, userGroups.groupId))
        .where(inArray(userGroups.userId, [...groupsOf.keys()]))
        .orderBy(groups.name, groups.id)
        .all()
      for (const { userId, groupId } of memberships) groupsOf.get(userId)!.push(groupId)
    }
    return rows.map((row) => storedUser(row, groupsOf.get(row.id)!))
  }

  /** what a viewer sees: an admin the account's groups, a member their own */
  function visible(viewer: GroupViewer) {
    const ofAccount = eq(groups.accountId, viewer.accountId)
    if (viewer.admin) return ofAccount
    return and(ofAccount, inArray(groups.id, db.select({ id: userGroups.groupId }).from(userGroups).where(eq(userGroups.userId, viewer.userId))))
  }

  function groupBodies(rows: GroupRow[]): StoredGroup[] {
    if (rows.length === 0) return []
    const bodies = new Map<string, StoredGroup>(rows.map((row) => [row.id, { id: row.id, name: row.name, devices: [], users: [] }]))
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

  const newSessionRow = (session: NewSession, nowMs: number) => ({ ...session, lastUsedAt: nowMs })

  return {
    // ---- accounts and the first run
    async hasUsers() {
      return anyUser.get() !== undefined
    },
    async account(id) {
      return accountById.get({ id }) ?? null
    },
    async accountsNamed(match) {
      return db.select({ id: accounts.id, name: accounts.name }).from(accounts).where(named(accounts, match)).all()
    },
    async accountsWithUsers() {
      return db
        .select({ id: accounts.id, name: accounts.name })
        .from(accounts)
        .where(inArray(accounts.id, db.selectDistinct({ id: users.accountId }).from(users)))
        .orderBy(accounts.id)
        .all()
    },
    createAccount(account, by, nowMs) {
      return unit((tx) => {
        tx.insert(accounts).values({ id: account.id, name: account.name, createdAt: nowMs }).run()
        recordAuditInTransaction(tx, { accountId: account.id, actor: by.actor, action: 'create', objectType: 'account', objectId: account.id, requestId: by.requestId }, nowMs)
      })
    },
    setupFirstAccount(rows, by, nowMs) {
      return write(() =>
        db.transaction((tx) => {
          if (tx.select({ one: sql<number>`1` }).from(users).limit(1).get() !== undefined) return false
          tx.insert(accounts).values({ id: rows.accountId, name: rows.accountName, createdAt: nowMs }).run()
          tx.insert(users).values({ id: rows.userId, accountId: rows.accountId, name: rows.userName, role: 'admin', passwordHash: rows.passwordHash, createdAt: nowMs }).run()
          const actor = by.actor ?? rows.userId
          const entry = { accountId: rows.accountId, actor, action: 'setup', requestId: by.requestId } as const
          recordAuditInTransaction(tx, { ...entry, objectType: 'account', objectId: rows.accountId }, nowMs)
          recordAuditInTransaction(tx, { ...entry, objectType: 'user', objectId: rows.userId }, nowMs)
          return true
        }),
      )
    },

    // ---- users
    async listUsers(accountId, page) {
      const rows = db.select().from(users).where(eq(users.accountId, accountId)).orderBy(users.name, users.id).limit(page.limit).offset(page.offset).all()
      return userBodies(db, rows)
    },
    async findUser(accountId, userId) {
      const row = userOfAccount.get({ id: userId, account: accountId })
      return row === undefined ? null : userBodies(db, [row])[0]!
    },
    async usersNamed(match) {
      return db.select({ id: users.id, name: users.name, accountId: users.accountId }).from(users).where(named(users, match)).all()
    },
    async userWithAccount(userId) {
      const row = withAccount.get({ id: userId })
      return row === undefined ? null : userWithAccountOf(row)
    },
    async credentialsOf(userId) {
      return credentials.get({ id: userId }) ?? null
    },
    async timezoneOf(userId) {
      return db.select({ timezone: users.timezone }).from(users).where(eq(users.id, userId)).get() ?? null
    },
    setTimezone(userId, timezone) {
      return unit((tx) => tx.update(users).set({ timezone }).where(eq(users.id, userId)).returning({ id: users.id }).all().length > 0)
    },
    async userByName(name) {
      return byName.get({ name }) ?? null
    },
    createUser(user, by, nowMs) {
      return unit((tx): 'created' | Unknown | NameTaken => {
        if (!tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, user.accountId)).get()) return { unknown: 'account', known: [] }
        const groupsUnknown = unknownGroups(tx, user.accountId, user.groups)
        if (groupsUnknown) return groupsUnknown
        if (nameTaken(tx, user.name, null)) return { nameTaken: true }
        tx.insert(users).values({ id: user.id, accountId: user.accountId, name: user.name, role: user.role, passwordHash: user.passwordHash, createdAt: nowMs }).run()
        replaceUserGroups(tx, user.id, user.groups)
        recordAuditInTransaction(tx, { accountId: user.accountId, actor: by.actor, action: 'create', objectType: 'user', objectId: user.id, requestId: by.requestId }, nowMs)
        return 'created'
      })
    },
    updateUser(accountId, userId, change, by, nowMs) {
      return unit((tx): 'updated' | 'no-user' | Unknown | NameTaken | LastAdmin => {
        const user = requireUserIn(tx, accountId, userId)
        if (!user) return 'no-user'
        if (change.role === 'member' && isLastAdmin(tx, user)) return { lastAdmin: user.name }
        if (change.groups !== undefined) {
          const groupsUnknown = unknownGroups(tx, accountId, change.groups)
          if (groupsUnknown) return groupsUnknown
        }
        if (change.name !== undefined && change.name !== user.name && nameTaken(tx, change.name, user.id)) return { nameTaken: true }
        if (change.name !== undefined || change.role !== undefined) tx.update(users).set({ name: change.name, role: change.role }).where(eq(users.id, user.id)).run()
        if (change.groups !== undefined) replaceUserGroups(tx, user.id, change.groups)
        // after both: the links they made keep only what they reach once the whole change is made
        if (change.role !== undefined || change.groups !== undefined) endLinks(tx, user.accountId, nowMs)
        if (change.name !== undefined || change.role !== undefined || change.groups !== undefined) {
          recordAuditInTransaction(tx, { accountId: user.accountId, actor: by.actor, action: 'update', objectType: 'user', objectId: user.id, requestId: by.requestId }, nowMs)
        }
        if (change.passwordHash !== undefined) setHash(tx, user, change.passwordHash, by, nowMs)
        return 'updated'
      })
    },
    replaceDemoPassword(userId, passwordHash) {
      return unit((tx) => {
        tx.update(users).set({ passwordHash }).where(eq(users.id, userId)).run()
        tx.delete(sessions).where(eq(sessions.userId, userId)).run()
      })
    },
    setPassword(accountId, userId, passwordHash, by, nowMs) {
      return unit((tx): 'set' | 'no-user' => {
        const user = requireUserIn(tx, accountId, userId)
        if (!user) return 'no-user'
        setHash(tx, user, passwordHash, by, nowMs)
        return 'set'
      })
    },
    deleteUser(accountId, userId, by, nowMs) {
      return unit((tx): 'deleted' | 'no-user' | LastAdmin => {
        const user = requireUserIn(tx, accountId, userId)
        if (!user) return 'no-user'
        if (isLastAdmin(tx, user)) return { lastAdmin: user.name }
        // their keys, sessions, memberships and own email-alerts channel cascade; migration 0015's trigger revokes the links they made
        tx.delete(users).where(eq(users.id, user.id)).run()
        recordAuditInTransaction(tx, { accountId: user.accountId, actor: by.actor, action: 'delete', objectType: 'user', objectId: user.id, requestId: by.requestId }, nowMs)
        return 'deleted'
      })
    },

    // ---- groups
    async listGroups(viewer, page) {
      return groupBodies(db.select().from(groups).where(visible(viewer)).orderBy(groups.name, groups.id).limit(page.limit).offset(page.offset).all())
    },
    async findGroup(viewer, groupId) {
      const row = db.select().from(groups).where(and(eq(groups.id, groupId), visible(viewer))).get()
      return row === undefined ? null : groupBodies([row])[0]!
    },
    async groupsNamed(accountId, match) {
      return db.select({ id: groups.id, name: groups.name }).from(groups).where(and(eq(groups.accountId, accountId), named(groups, match))).all()
    },
    createGroup(group, by, nowMs) {
      return unit((tx): 'created' | Unknown => {
        const usersUnknown = unknownUsers(tx, group.accountId, group.users)
        if (usersUnknown) return usersUnknown
        tx.insert(groups).values({ id: group.id, accountId: group.accountId, name: group.name }).run()
        replaceGroupDevices(tx, group.accountId, group.id, group.deviceKeys)
        replaceGroupUsers(tx, group.id, group.users)
        recordAuditInTransaction(tx, { accountId: group.accountId, actor: by.actor, action: 'create', objectType: 'group', objectId: group.id, requestId: by.requestId }, nowMs)
        return 'created'
      })
    },
    updateGroup(accountId, groupId, change, by, nowMs) {
      return unit((tx): 'updated' | 'no-group' | Unknown => {
        const group = tx.select().from(groups).where(and(eq(groups.id, groupId), eq(groups.accountId, accountId))).get()
        if (!group) return 'no-group'
        if (change.users !== undefined) {
          const usersUnknown = unknownUsers(tx, accountId, change.users)
          if (usersUnknown) return usersUnknown
        }
        if (change.name !== undefined) tx.update(groups).set({ name: change.name }).where(eq(groups.id, group.id)).run()
        if (change.deviceKeys !== undefined) replaceGroupDevices(tx, accountId, group.id, change.deviceKeys)
        if (change.users !== undefined) replaceGroupUsers(tx, group.id, change.users)
        // after both lists: share links keep only what their creators reach once the whole change is made
        if (change.deviceKeys !== undefined || change.users !== undefined) endLinks(tx, accountId, nowMs)
        if (change.name !== undefined || change.deviceKeys !== undefined || change.users !== undefined) {
          recordAuditInTransaction(tx, { accountId, actor: by.actor, action: 'update', objectType: 'group', objectId: group.id, requestId: by.requestId }, nowMs)
        }
        return 'updated'
      })
    },
    deleteGroup(accountId, groupId, by, nowMs) {
      return unit((tx): 'deleted' | 'no-group' => {
        const group = tx.select({ id: groups.id }).from(groups).where(and(eq(groups.id, groupId), eq(groups.accountId, accountId))).get()
        if (!group) return 'no-group'
        // its memberships cascade
        tx.delete(groups).where(eq(groups.id, group.id)).run()
        endLinks(tx, accountId, nowMs)
        recordAuditInTransaction(tx, { accountId, actor: by.actor, action: 'delete', objectType: 'group', objectId: group.id, requestId: by.requestId }, nowMs)
        return 'deleted'
      })
    },

    // ---- sessions
    async credentialsVersion() {
      return version.get()?.version ?? 0
    },
    async sessionByHash(idHash) {
      const row = bySessionHash.get({ idHash })
      return row === undefined ? null : { ...row, role: asRole(row.role) }
    },
    openSession(session, expectedPasswordHash, sweepBeforeMs) {
      return write(() =>
        db.transaction((tx) => {
          // the user may have gone, or changed their password, while the password was checked
          if (expectedPasswordHash !== null) {
            const current = tx.select({ passwordHash: users.passwordHash }).from(users).where(eq(users.id, session.userId)).get()
            if (current?.passwordHash !== expectedPasswordHash) return false
          }
          tx.delete(sessions).where(lte(sessions.expiresAt, sweepBeforeMs)).run()
          tx.insert(sessions).values(newSessionRow(session, session.createdAt)).run()
          return true
        }),
      )
    },
    changeOwnPassword(userId, expectedHash, newHash, keepIdHash, requestId, nowMs) {
      return unit((tx): 'changed' | 'changed-meanwhile' | 'no-user' => {
        const user = tx.select({ accountId: users.accountId, passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId)).get()
        if (!user) return 'no-user'
        if (user.passwordHash !== expectedHash) return 'changed-meanwhile'
        tx.update(users).set({ passwordHash: newHash }).where(eq(users.id, userId)).run()
        tx.delete(sessions).where(keepIdHash === null ? eq(sessions.userId, userId) : and(eq(sessions.userId, userId), ne(sessions.idHash, keepIdHash))).run()
        recordAuditInTransaction(tx, { accountId: user.accountId, actor: userId, action: 'password', objectType: 'user', objectId: userId, requestId }, nowMs)
        return 'changed'
      })
    },
    renewSession(oldIdHash, nowMs, endsAtMs, fresh) {
      return write(() =>
        db.transaction((tx) => {
          tx.update(sessions).set({ lastUsedAt: nowMs, expiresAt: endsAtMs }).where(eq(sessions.idHash, oldIdHash)).run()
          tx.insert(sessions).values(newSessionRow(fresh, nowMs)).run()
        }),
      )
    },
    async endSession(idHash) {
      await write(() => db.delete(sessions).where(eq(sessions.idHash, idHash)).run())
    },
    deferSessionUses(lifetimeMs, deferred) {
      // A session's row has expires_at = last_used_at + the lifetime while it slides; a replaced one
      // (renew) is given another distance (the grace): the update does not reach it
      const sliding = sql`${sessions.expiresAt} = ${sessions.lastUsedAt} + ${lifetimeMs}`
      return createDeferredWrites(sqlite, {
        delayMs: deferred.delayMs,
        hasPending: deferred.hasPending,
        write: () => {
          // a session ended meanwhile: its row is gone and the update changes nothing
          db.transaction((tx) => {
            for (const [idHash, atMs] of deferred.pending()) {
              tx.update(sessions).set({ lastUsedAt: atMs, expiresAt: atMs + lifetimeMs }).where(and(eq(sessions.idHash, idHash), sliding)).run()
            }
          })
          deferred.written()
        },
        log: deferred.log,
        failure: deferred.failure,
        context: deferred.context,
      })
    },
  }
}
