/**
 * accounts, users, groups, memberships and sessions on PostgreSQL: src/store/people.ts's store
 * over the schema's PostgreSQL twin, with the same units of work, answers and audit rows.
 *
 * What differs, each on purpose: units run side by side, so what a unit decides on is locked (see
 * below) and the users_name index refusing a name taken meanwhile answers `nameTaken`; text is
 * ordered by code point (`collate "C"`), as SQLite's BINARY orders it; the access counters are
 * read through `database.versions`, and the triggers that move them fire once a statement (even
 * for no row), so a sign-in's sweep deletes only when something expired.
 *
 * Left as it is: PostgreSQL's lower() folds every letter (Émile = émile), SQLite's only A to Z. The
 * users_name index (lower(name) on both) decides which names are the same, so this adapter
 * compares as its index does; on SQLite, a name with a capital beyond A–Z is not found by
 * `accountsNamed`/`usersNamed`/`groupsNamed` (lower() there against JavaScript's toLowerCase()).
 */
import { and, count, eq, inArray, isNotNull, lte, ne, sql } from 'drizzle-orm'
import type { PgConnectable, PgTx, PostgresHandle } from '../../../db/postgres/client'
import { accounts, deviceGroups, devices, groups, sessions, userGroups, users } from '../../../db/postgres/schema'
import {
  asRole,
  type ChangeBy,
  type GroupViewer,
  type LastAdmin,
  named,
  type NameTaken,
  type NewSession,
  type PeopleStore,
  type PeopleStoreOptions,
  sessionOfHashColumns,
  storedUser,
  userWithAccountOf,
  type StoredGroup,
  type StoredUser,
  type Unknown,
} from '../people'
import { recordAuditInTransaction } from './audit'
import type { DeferredWrites } from '../deferred'
import { createPostgresDeferredWrites, type PostgresDeferredWriteOptions } from './deferred'
import { endLinksBeyondCreatorsReachInTransaction as endLinks } from './shareLinks'
import { unitOfWork } from './unit'
import { byCodePoint } from './order'

/**
 * Which of `ids` are groups of the account, inside a caller's unit of work (people.ts's writer of
 * the same name); with `keep`, those found cannot be deleted until the caller commits (it is
 * about to file something under them).
 */
/** people.ts's writer of the same name: null when every id is a group of the account, else the groups of them that are. */
export async function groupsRefusedInTransaction(tx: PgConnectable, accountId: string, ids: readonly string[] | undefined): Promise<{ groupsFound: ReadonlySet<string> } | null> {
  if (ids === undefined || ids.length === 0) return null
  const found = await groupsOfAccountInTransaction(tx, accountId, ids)
  return ids.every((id) => found.has(id)) ? null : { groupsFound: found }
}

export async function groupsOfAccountInTransaction(tx: PgConnectable, accountId: string, ids: readonly string[], { keep = false } = {}): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const query = tx
    .select({ id: groups.id })
    .from(groups)
    .where(and(eq(groups.accountId, accountId), inArray(groups.id, [...ids])))
    .$dynamic()
  const rows = await (keep ? query.for('key share') : query)
  return new Set(rows.map((g) => g.id))
}

/** a unique index refused the row (`constraint`: which), however Drizzle wrapped the driver's error */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  for (let e = error as { code?: string; constraint_name?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === '23505') return e.constraint_name === constraint
  }
  return false
}

/** text ordered as SQLite's BINARY collation orders it (code points), whatever the database's collation */

/**
 * The write of uses noted in memory (sessions', keys' last uses) for the PostgreSQL background
 * writer. `written()` forgets everything that waits, and the write awaits: a use noted while it
 * ran must not be forgotten with it. So once a write has committed, what waits is compared with
 * what was written, synchronously: `written()` only when nothing new came meanwhile, else what is
 * new is written too. A node that keeps noting uses leaves the rest waiting (still to be written,
 * by the next write) after three rounds.
 */
export async function writeNotedUses<K>(pending: () => Iterable<[K, number]>, written: () => void, write: (uses: [K, number][]) => Promise<void>): Promise<void> {
  const done = new Map<K, number>()
  const fresh = () => [...pending()].filter(([key, atMs]) => done.get(key) !== atMs)
  for (let round = 0; round < 3; round++) {
    const uses = fresh()
    if (uses.length === 0) break
    await write(uses)
    for (const [key, atMs] of uses) done.set(key, atMs)
  }
  if (fresh().length === 0) written()
}

/** what a store's background writer of noted uses is given (people.ts's and keys.ts's DeferredUsesOptions) */
export type NotedUsesOptions<K> = Omit<PostgresDeferredWriteOptions, 'write'> & { pending(): Iterable<[K, number]>; written(): void }

/** the background writer of noted uses over the pool: `write` writes a batch of them (in one statement) */
export function deferNotedUses<K>(options: NotedUsesOptions<K>, write: (uses: [K, number][]) => Promise<void>): DeferredWrites {
  return createPostgresDeferredWrites({
    delayMs: options.delayMs,
    hasPending: options.hasPending,
    write: () => writeNotedUses(options.pending, options.written, write),
    log: options.log,
    failure: options.failure,
    context: options.context,
  })
}

export function createPostgresPeopleStore(database: PostgresHandle, _options: PeopleStoreOptions = {}): PeopleStore {
  const { db } = database
  const unit = <T>(work: (tx: PgTx) => Promise<T>) => unitOfWork(database, work)

  type UserRow = typeof users.$inferSelect
  type GroupRow = typeof groups.$inferSelect

  // ---- the pieces of the units of work (each on the transaction it is given)
  //
  // SQLite's units hold the write lock from their start; PostgreSQL's run side by side (READ
  // COMMITTED), so what a unit decides on is locked where another unit could change it meanwhile:
  // the user or group changed (FOR NO KEY UPDATE; FOR UPDATE when deleted), the account whose
  // admins are counted or memberships replaced, the groups, users and devices a membership will name (FOR KEY SHARE: not
  // deleted before commit, and compatible with another unit's NO KEY UPDATE, so that a unit
  // changing a user and one changing a group never wait for each other in a circle). Each unit
  // locks the user or group, then the account, then the members.

  /** the user, locked until commit: 'update' to delete them, else against other changes of them only (rows naming them may still be written) */
  async function requireUserIn(tx: PgTx, accountId: string, userId: string, lock: 'update' | 'no key update' = 'no key update'): Promise<UserRow | undefined> {
    const [row] = await tx
      .select()
      .from(users)
      .where(and(eq(users.id, userId), eq(users.accountId, accountId)))
      .for(lock)
    return row
  }

  /** names are unique across the server, compared case-insensitively (as the users_name index does) */
  async function nameTaken(tx: PgTx, name: string, exceptUserId: string | null): Promise<boolean> {
    const sameName = sql`lower(${users.name}) = lower(${name})`
    const found = await tx
      .select({ id: users.id })
      .from(users)
      .where(exceptUserId === null ? sameName : and(sameName, ne(users.id, exceptUserId)))
      .limit(1)
    return found.length > 0
  }

  /** the ids of `ids` that are groups of the account, or null when all are */
  async function unknownGroups(tx: PgTx, accountId: string, ids: readonly string[]): Promise<Unknown | null> {
    if (ids.length === 0) return null
    const found = await groupsOfAccountInTransaction(tx, accountId, ids, { keep: true })
    return found.size === ids.length ? null : { unknown: 'groups', known: [...found] }
  }

  async function unknownUsers(tx: PgTx, accountId: string, ids: readonly string[]): Promise<Unknown | null> {
    if (ids.length === 0) return null
    const found = await tx
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.accountId, accountId), inArray(users.id, [...ids])))
      .for('key share')
    return found.length === ids.length ? null : { unknown: 'users', known: found.map((u) => u.id) }
  }

  /**
   * The account's lock, until commit: the units that count its admins or replace memberships
   * (a user's groups, a group's users or devices) take it, so they run one after another as on
   * SQLite (two of them replacing the same membership rows, or each leaving the other's admin as
   * the last, would otherwise both pass their checks). Taking it twice in a unit is free.
   */
  async function lockAccount(tx: PgTx, accountId: string): Promise<void> {
    await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId)).for('no key update')
  }

  /** an account keeps at least one admin: counted under the account's lock */
  async function isLastAdmin(tx: PgTx, user: UserRow): Promise<boolean> {
    if (user.role !== 'admin') return false
    await lockAccount(tx, user.accountId)
    const [others] = await tx
      .select({ n: count() })
      .from(users)
      .where(and(eq(users.accountId, user.accountId), eq(users.role, 'admin'), ne(users.id, user.id)))
    return (others?.n ?? 0) === 0
  }

  async function replaceUserGroups(tx: PgTx, userId: string, groupIds: readonly string[]): Promise<void> {
    await tx.delete(userGroups).where(eq(userGroups.userId, userId))
    if (groupIds.length > 0) await tx.insert(userGroups).values(groupIds.map((groupId) => ({ userId, groupId })))
  }

  /** the group's devices: those of `keys` still of the account (one deleted since the access function named it is left out) */
  async function replaceGroupDevices(tx: PgTx, accountId: string, groupId: string, keys: readonly number[]): Promise<void> {
    await tx.delete(deviceGroups).where(eq(deviceGroups.groupId, groupId))
    if (keys.length === 0) return
    const present = await tx
      .select({ key: devices.key })
      .from(devices)
      .where(and(eq(devices.accountId, accountId), inArray(devices.key, [...keys])))
      .for('key share')
    // the devices store may file one of them under this group at the same moment (a device's
    // groups replaced): the row is the same either way, and must not fail the unit
    if (present.length > 0) await tx.insert(deviceGroups).values(present.map(({ key }) => ({ groupId, deviceKey: key }))).onConflictDoNothing()
  }

  async function replaceGroupUsers(tx: PgTx, groupId: string, userIds: readonly string[]): Promise<void> {
    await tx.delete(userGroups).where(eq(userGroups.groupId, groupId))
    if (userIds.length > 0) await tx.insert(userGroups).values(userIds.map((userId) => ({ groupId, userId })))
  }

  async function setHash(tx: PgTx, user: UserRow, passwordHash: string, by: ChangeBy, nowMs: number): Promise<void> {
    await tx.update(users).set({ passwordHash }).where(eq(users.id, user.id))
    // a new password ends every session of the user (their keys stay)
    await tx.delete(sessions).where(eq(sessions.userId, user.id))
    await recordAuditInTransaction(tx, { accountId: user.accountId, actor: by.actor, action: 'password', objectType: 'user', objectId: user.id, requestId: by.requestId }, nowMs)
  }

  async function userBodies(rows: UserRow[]): Promise<StoredUser[]> {
    const groupsOf = new Map<string, string[]>(rows.map((row) => [row.id, []]))
    if (rows.length > 0) {
      const memberships = await db
        .select({ userId: userGroups.userId, groupId: groups.id })
        .from(userGroups)
        .innerJoin(groups, eq(groups.id, userGroups.groupId))
        .where(inArray(userGroups.userId, [...groupsOf.keys()]))
        .orderBy(byCodePoint(groups.name), byCodePoint(groups.id))
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

  async function groupBodies(rows: GroupRow[]): Promise<StoredGroup[]> {
    if (rows.length === 0) return []
    const bodies = new Map<string, StoredGroup>(rows.map((row) => [row.id, { id: row.id, name: row.name, devices: [], users: [] }]))
    const groupIds = [...bodies.keys()]
    // the group's account bounds its members too: nothing crosses accounts, whatever an import left
    const memberDevices = await db
      .select({ groupId: deviceGroups.groupId, id: devices.id })
      .from(deviceGroups)
      .innerJoin(devices, eq(devices.key, deviceGroups.deviceKey))
      .innerJoin(groups, and(eq(groups.id, deviceGroups.groupId), eq(groups.accountId, devices.accountId)))
      .where(inArray(deviceGroups.groupId, groupIds))
      .orderBy(byCodePoint(devices.alias), byCodePoint(devices.id))
    for (const { groupId, id } of memberDevices) bodies.get(groupId)!.devices.push(id)
    const memberUsers = await db
      .select({ groupId: userGroups.groupId, id: users.id })
      .from(userGroups)
      .innerJoin(users, eq(users.id, userGroups.userId))
      .innerJoin(groups, and(eq(groups.id, userGroups.groupId), eq(groups.accountId, users.accountId)))
      .where(inArray(userGroups.groupId, groupIds))
      .orderBy(byCodePoint(users.name), byCodePoint(users.id))
    for (const { groupId, id } of memberUsers) bodies.get(groupId)!.users.push(id)
    return [...bodies.values()]
  }

  /** a unit that may write a user's name: the users_name index refusing it (another unit took the name meanwhile) answers as the check would have */
  async function orNameTaken<T>(work: Promise<T>): Promise<T | NameTaken> {
    try {
      return await work
    } catch (error) {
      if (isUniqueViolation(error, 'users_name')) return { nameTaken: true }
      throw error
    }
  }

  const newSessionRow = (session: NewSession, nowMs: number) => ({ ...session, lastUsedAt: nowMs })

  return {
    // ---- accounts and the first run
    async hasUsers() {
      return (await db.select({ one: sql<number>`1` }).from(users).limit(1)).length > 0
    },
    async account(id) {
      const [row] = await db.select({ id: accounts.id, name: accounts.name }).from(accounts).where(eq(accounts.id, id))
      return row ?? null
    },
    async accountsNamed(match) {
      return db.select({ id: accounts.id, name: accounts.name }).from(accounts).where(named(accounts, match))
    },
    async accountsWithUsers() {
      return db
        .select({ id: accounts.id, name: accounts.name })
        .from(accounts)
        .where(inArray(accounts.id, db.selectDistinct({ id: users.accountId }).from(users)))
        .orderBy(byCodePoint(accounts.id))
    },
    createAccount(account, by, nowMs) {
      return unit(async (tx) => {
        await tx.insert(accounts).values({ id: account.id, name: account.name, createdAt: nowMs })
        await recordAuditInTransaction(tx, { accountId: account.id, actor: by.actor, action: 'create', objectType: 'account', objectId: account.id, requestId: by.requestId }, nowMs)
      })
    },
    setupFirstAccount(rows, by, nowMs) {
      return unit(async (tx) => {
        // two setups at once: the second waits here for the first to commit, then finds its user
        await tx.execute(sql`LOCK TABLE ${users} IN SHARE ROW EXCLUSIVE MODE`)
        if ((await tx.select({ one: sql<number>`1` }).from(users).limit(1)).length > 0) return false
        await tx.insert(accounts).values({ id: rows.accountId, name: rows.accountName, createdAt: nowMs })
        await tx.insert(users).values({ id: rows.userId, accountId: rows.accountId, name: rows.userName, role: 'admin', passwordHash: rows.passwordHash, createdAt: nowMs })
        const actor = by.actor ?? rows.userId
        const entry = { accountId: rows.accountId, actor, action: 'setup', requestId: by.requestId } as const
        await recordAuditInTransaction(tx, { ...entry, objectType: 'account', objectId: rows.accountId }, nowMs)
        await recordAuditInTransaction(tx, { ...entry, objectType: 'user', objectId: rows.userId }, nowMs)
        return true
      })
    },

    // ---- users
    async listUsers(accountId, page) {
      const rows = await db
        .select()
        .from(users)
        .where(eq(users.accountId, accountId))
        .orderBy(byCodePoint(users.name), byCodePoint(users.id))
        .limit(page.limit)
        .offset(page.offset)
      return userBodies(rows)
    },
    async findUser(accountId, userId) {
      const [row] = await db
        .select()
        .from(users)
        .where(and(eq(users.id, userId), eq(users.accountId, accountId)))
      return row === undefined ? null : (await userBodies([row]))[0]!
    },
    async usersNamed(match) {
      return db.select({ id: users.id, name: users.name, accountId: users.accountId }).from(users).where(named(users, match))
    },
    async userWithAccount(userId) {
      const [row] = await db
        .select({ id: users.id, name: users.name, role: users.role, accountId: accounts.id, accountName: accounts.name })
        .from(users)
        .innerJoin(accounts, eq(accounts.id, users.accountId))
        .where(eq(users.id, userId))
      return row === undefined ? null : userWithAccountOf(row)
    },
    async credentialsOf(userId) {
      const [row] = await db.select({ name: users.name, passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId))
      return row ?? null
    },
    async timezoneOf(userId) {
      const [row] = await db.select({ timezone: users.timezone }).from(users).where(eq(users.id, userId))
      return row ?? null
    },
    setTimezone(userId, timezone) {
      return unit(async (tx) => (await tx.update(users).set({ timezone }).where(eq(users.id, userId)).returning({ id: users.id })).length > 0)
    },
    async userByName(name) {
      // the partial unique index on lower(name) serves this only with its own condition (name <> '')
      const [row] = await db
        .select({ id: users.id, passwordHash: users.passwordHash })
        .from(users)
        .where(and(sql`lower(${users.name}) = lower(${name})`, ne(users.name, '')))
      return row ?? null
    },
    createUser(user, by, nowMs) {
      return orNameTaken(
        unit(async (tx): Promise<'created' | Unknown | NameTaken> => {
          const [account] = await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, user.accountId)).for('key share')
          if (!account) return { unknown: 'account', known: [] }
          const groupsUnknown = await unknownGroups(tx, user.accountId, user.groups)
          if (groupsUnknown) return groupsUnknown
          if (await nameTaken(tx, user.name, null)) return { nameTaken: true }
          await tx.insert(users).values({ id: user.id, accountId: user.accountId, name: user.name, role: user.role, passwordHash: user.passwordHash, createdAt: nowMs })
          await replaceUserGroups(tx, user.id, user.groups)
          await recordAuditInTransaction(tx, { accountId: user.accountId, actor: by.actor, action: 'create', objectType: 'user', objectId: user.id, requestId: by.requestId }, nowMs)
          return 'created'
        }),
      )
    },
    updateUser(accountId, userId, change, by, nowMs) {
      return orNameTaken(
        unit(async (tx): Promise<'updated' | 'no-user' | Unknown | NameTaken | LastAdmin> => {
          const user = await requireUserIn(tx, accountId, userId)
          if (!user) return 'no-user'
          if (change.role === 'member' && (await isLastAdmin(tx, user))) return { lastAdmin: user.name }
          if (change.groups !== undefined) {
            await lockAccount(tx, accountId)
            const groupsUnknown = await unknownGroups(tx, accountId, change.groups)
            if (groupsUnknown) return groupsUnknown
          }
          if (change.name !== undefined && change.name !== user.name && (await nameTaken(tx, change.name, user.id))) return { nameTaken: true }
          if (change.name !== undefined || change.role !== undefined) await tx.update(users).set({ name: change.name, role: change.role }).where(eq(users.id, user.id))
          if (change.groups !== undefined) await replaceUserGroups(tx, user.id, change.groups)
          // after both: the links they made keep only what they reach once the whole change is made
          if (change.role !== undefined || change.groups !== undefined) await endLinks(tx, user.accountId, nowMs)
          if (change.name !== undefined || change.role !== undefined || change.groups !== undefined) {
            await recordAuditInTransaction(tx, { accountId: user.accountId, actor: by.actor, action: 'update', objectType: 'user', objectId: user.id, requestId: by.requestId }, nowMs)
          }
          if (change.passwordHash !== undefined) await setHash(tx, user, change.passwordHash, by, nowMs)
          return 'updated'
        }),
      )
    },
    replaceDemoPassword(userId, passwordHash) {
      return unit(async (tx) => {
        await tx.update(users).set({ passwordHash }).where(eq(users.id, userId))
        await tx.delete(sessions).where(eq(sessions.userId, userId))
      })
    },
    setPassword(accountId, userId, passwordHash, by, nowMs) {
      return unit(async (tx): Promise<'set' | 'no-user'> => {
        const user = await requireUserIn(tx, accountId, userId)
        if (!user) return 'no-user'
        await setHash(tx, user, passwordHash, by, nowMs)
        return 'set'
      })
    },
    deleteUser(accountId, userId, by, nowMs) {
      return unit(async (tx): Promise<'deleted' | 'no-user' | LastAdmin> => {
        const user = await requireUserIn(tx, accountId, userId, 'update')
        if (!user) return 'no-user'
        if (await isLastAdmin(tx, user)) return { lastAdmin: user.name }
        // their keys, sessions, memberships and own email-alerts channel cascade; the users_delete_share_links trigger revokes the links they made
        await tx.delete(users).where(eq(users.id, user.id))
        await recordAuditInTransaction(tx, { accountId: user.accountId, actor: by.actor, action: 'delete', objectType: 'user', objectId: user.id, requestId: by.requestId }, nowMs)
        return 'deleted'
      })
    },

    // ---- groups
    async listGroups(viewer, page) {
      const rows = await db
        .select()
        .from(groups)
        .where(visible(viewer))
        .orderBy(byCodePoint(groups.name), byCodePoint(groups.id))
        .limit(page.limit)
        .offset(page.offset)
      return groupBodies(rows)
    },
    async findGroup(viewer, groupId) {
      const [row] = await db
        .select()
        .from(groups)
        .where(and(eq(groups.id, groupId), visible(viewer)))
      return row === undefined ? null : (await groupBodies([row]))[0]!
    },
    async groupsNamed(accountId, match) {
      return db
        .select({ id: groups.id, name: groups.name })
        .from(groups)
        .where(and(eq(groups.accountId, accountId), named(groups, match)))
    },
    createGroup(group, by, nowMs) {
      return unit(async (tx): Promise<'created' | Unknown> => {
        const usersUnknown = await unknownUsers(tx, group.accountId, group.users)
        if (usersUnknown) return usersUnknown
        await tx.insert(groups).values({ id: group.id, accountId: group.accountId, name: group.name })
        await replaceGroupDevices(tx, group.accountId, group.id, group.deviceKeys)
        await replaceGroupUsers(tx, group.id, group.users)
        await recordAuditInTransaction(tx, { accountId: group.accountId, actor: by.actor, action: 'create', objectType: 'group', objectId: group.id, requestId: by.requestId }, nowMs)
        return 'created'
      })
    },
    updateGroup(accountId, groupId, change, by, nowMs) {
      return unit(async (tx): Promise<'updated' | 'no-group' | Unknown> => {
        const [group] = await tx
          .select()
          .from(groups)
          .where(and(eq(groups.id, groupId), eq(groups.accountId, accountId)))
          .for('no key update')
        if (!group) return 'no-group'
        if (change.users !== undefined || change.deviceKeys !== undefined) await lockAccount(tx, accountId)
        if (change.users !== undefined) {
          const usersUnknown = await unknownUsers(tx, accountId, change.users)
          if (usersUnknown) return usersUnknown
        }
        if (change.name !== undefined) await tx.update(groups).set({ name: change.name }).where(eq(groups.id, group.id))
        if (change.deviceKeys !== undefined) await replaceGroupDevices(tx, accountId, group.id, change.deviceKeys)
        if (change.users !== undefined) await replaceGroupUsers(tx, group.id, change.users)
        // after both lists: share links keep only what their creators reach once the whole change is made
        if (change.deviceKeys !== undefined || change.users !== undefined) await endLinks(tx, accountId, nowMs)
        if (change.name !== undefined || change.deviceKeys !== undefined || change.users !== undefined) {
          await recordAuditInTransaction(tx, { accountId, actor: by.actor, action: 'update', objectType: 'group', objectId: group.id, requestId: by.requestId }, nowMs)
        }
        return 'updated'
      })
    },
    deleteGroup(accountId, groupId, by, nowMs) {
      return unit(async (tx): Promise<'deleted' | 'no-group'> => {
        const [group] = await tx
          .select({ id: groups.id })
          .from(groups)
          .where(and(eq(groups.id, groupId), eq(groups.accountId, accountId)))
          .for('update')
        if (!group) return 'no-group'
        // its memberships cascade
        await tx.delete(groups).where(eq(groups.id, group.id))
        await endLinks(tx, accountId, nowMs)
        await recordAuditInTransaction(tx, { accountId, actor: by.actor, action: 'delete', objectType: 'group', objectId: group.id, requestId: by.requestId }, nowMs)
        return 'deleted'
      })
    },

    // ---- sessions
    credentialsVersion() {
      return database.versions.current(4)
    },
    async sessionByHash(idHash) {
      // a user who lost their password (set to none) can no longer use a session either
      const [row] = await db
        .select(sessionOfHashColumns(sessions, users))
        .from(sessions)
        .innerJoin(users, eq(users.id, sessions.userId))
        .where(and(eq(sessions.idHash, idHash), isNotNull(users.passwordHash)))
      return row === undefined ? null : { ...row, role: asRole(row.role) }
    },
    openSession(session, expectedPasswordHash, sweepBeforeMs) {
      return unit(async (tx) => {
        // the user may have gone, or changed their password, while the password was checked; the
        // row stays shared until commit, so a change of password waits and then ends this session too
        if (expectedPasswordHash !== null) {
          const [current] = await tx.select({ passwordHash: users.passwordHash }).from(users).where(eq(users.id, session.userId)).for('share')
          if (current?.passwordHash !== expectedPasswordHash) return false
        }
        // sessions' delete trigger fires once a statement, even for no row (SQLite's, once a row):
        // a sign-in that sweeps nothing must not move the credentials version on every node
        const [expired] = await tx.select({ one: sql<number>`1` }).from(sessions).where(lte(sessions.expiresAt, sweepBeforeMs)).limit(1)
        if (expired) await tx.delete(sessions).where(lte(sessions.expiresAt, sweepBeforeMs))
        await tx.insert(sessions).values(newSessionRow(session, session.createdAt))
        return true
      })
    },
    changeOwnPassword(userId, expectedHash, newHash, keepIdHash, requestId, nowMs) {
      return unit(async (tx): Promise<'changed' | 'changed-meanwhile' | 'no-user'> => {
        const [user] = await tx.select({ accountId: users.accountId, passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId)).for('no key update')
        if (!user) return 'no-user'
        if (user.passwordHash !== expectedHash) return 'changed-meanwhile'
        await tx.update(users).set({ passwordHash: newHash }).where(eq(users.id, userId))
        await tx.delete(sessions).where(keepIdHash === null ? eq(sessions.userId, userId) : and(eq(sessions.userId, userId), ne(sessions.idHash, keepIdHash)))
        await recordAuditInTransaction(tx, { accountId: user.accountId, actor: userId, action: 'password', objectType: 'user', objectId: userId, requestId }, nowMs)
        return 'changed'
      })
    },
    renewSession(oldIdHash, nowMs, endsAtMs, fresh) {
      return unit(async (tx) => {
        await tx.update(sessions).set({ lastUsedAt: nowMs, expiresAt: endsAtMs }).where(eq(sessions.idHash, oldIdHash))
        await tx.insert(sessions).values(newSessionRow(fresh, nowMs))
      })
    },
    async endSession(idHash) {
      await unit((tx) => tx.delete(sessions).where(eq(sessions.idHash, idHash)))
    },
    deferSessionUses(lifetimeMs, deferred) {
      // A session's row has expires_at = last_used_at + the lifetime while it slides; a replaced one
      // (renew) is given another distance (the grace): the update does not reach it. One statement
      // for every use waiting; it moves no access counter, so it needs no unit of work.
      const write = async (uses: [string, number][]) => {
        const rows = JSON.stringify(uses.map(([idHash, atMs]) => ({ id_hash: idHash, at: atMs })))
        // a session ended meanwhile: its row is gone and the update changes nothing
        await db.execute(sql`
          UPDATE sessions SET last_used_at = u.at, expires_at = u.at + ${lifetimeMs}::bigint
          FROM jsonb_to_recordset(${rows}::jsonb) AS u(id_hash text, at bigint)
          WHERE sessions.id_hash = u.id_hash AND sessions.expires_at = sessions.last_used_at + ${lifetimeMs}::bigint`)
      }
      return deferNotedUses(deferred, write)
    },
  }
}
