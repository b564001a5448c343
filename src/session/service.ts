/**
 * Sign-in sessions of people (the console). A session id is 32 random bytes (base64url) that
 * only the browser's cookie holds; the database keeps its SHA-256. A session lasts
 * SESSION_LIFETIME_MS from its last use: each use slides it in memory at once, and in the
 * database in the background (store/deferred.ts), at most once a minute a session, so no request
 * waits on a write. It ends at sign-out, when it goes unused for the lifetime, and when its user
 * is deleted or their password changes (the users service deletes the rows; the trigger on
 * sessions moves the credentials version, which empties every process's cache).
 */
import { and, eq, isNotNull, lte, ne, sql } from 'drizzle-orm'
import { timingSafeEqual } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { connectionOf, type Db } from '../../db/client'
import { accounts, sessions, users } from '../../db/schema'
import { createAuditLog } from '../admin/audit'
import { type Clock, systemClock } from '../clock'
import { Conflict, NotFound } from '../errors'
import { createCredentialsVersion } from '../keys/service'
import { type Logger, silentLogger } from '../log'
import type { Role, UserPrincipal } from '../principal'
import { retryWhileBusy } from '../store/busy'
import { createDeferredWrites } from '../store/deferred'
import { verifyPassword } from './passwords'

/** 14 days from the last use */
export const SESSION_LIFETIME_MS = 14 * 24 * 60 * 60 * 1000
/** a session's use is written at most this often */
const USE_WRITE_INTERVAL_MS = 60_000
/**
 * A session older than this gets a new id when the console asks who is signed in (GET /session),
 * so that the browser's cookie (Max-Age 14 days) slides with use too, without the server ever
 * sending an id twice.
 */
export const RENEW_AFTER_MS = 24 * 60 * 60 * 1000
/** how long a replaced id still works: requests the browser sent before it had the new cookie */
export const REPLACED_GRACE_MS = 60_000
/**
 * Expired sessions are deleted at the next sign-in, this long after the database says they
 * expired: a session in use slides in memory before the database hears of it (at most a minute).
 */
const SWEEP_MARGIN_MS = 10 * USE_WRITE_INTERVAL_MS

/** 32 random bytes, base64url (43 characters): what the cookie carries */
export function generateSessionId(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
}

/** what sessions.id_hash keeps */
export function hashSessionId(sessionId: string): string {
  return new Bun.CryptoHasher('sha256').update(sessionId).digest('hex')
}

/** who is signed in, as POST and GET /session answer */
export interface SessionUser {
  id: string
  name: string
  role: Role
  account: { id: string; name: string }
}

interface CachedSession {
  idHash: string
  principal: UserPrincipal
  createdAt: number
  /** Unix ms; slides with each use, unless replaced */
  expiresAt: number
  /** its id has been replaced by a new one (renew): it ends at expiresAt, whatever its use */
  replaced: boolean
  /** the last use the database has been told of (or is about to be) */
  writtenUseAt: number
}

export interface SessionServiceOptions {
  db: Db
  clock?: Clock
  log?: Logger
  /** how soon a session's use is written in the background (default 1 s) */
  flushMs?: number
  /** told of each password verified (an argon2id hash computed): a metric */
  onPasswordCheck?: () => void
}

export function createSessionService({ db, clock = systemClock, log = silentLogger, flushMs = 1000, onPasswordCheck = () => {} }: SessionServiceOptions) {
  const sqlite = connectionOf(db)
  const credentialsVersion = createCredentialsVersion(sqlite)
  // a user who lost their password (set to none) can no longer use a session either
  const bySessionHash = db
    .select({
      idHash: sessions.idHash,
      userId: users.id,
      accountId: users.accountId,
      role: users.role,
      createdAt: sessions.createdAt,
      expiresAt: sessions.expiresAt,
      lastUsedAt: sessions.lastUsedAt,
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(and(eq(sessions.idHash, sql.placeholder('idHash')), isNotNull(users.passwordHash)))
    .prepare()
  // the partial unique index on lower(name) serves this only with its own condition (name <> '')
  const audit = createAuditLog(db)
  const byName = db
    .select({ id: users.id, passwordHash: users.passwordHash })
    .from(users)
    .where(and(sql`lower(${users.name}) = lower(${sql.placeholder('name')})`, ne(users.name, '')))
    .prepare()
  const userById = db
    .select({ id: users.id, name: users.name, role: users.role, accountId: accounts.id, accountName: accounts.name })
    .from(users)
    .innerJoin(accounts, eq(accounts.id, users.accountId))
    .where(eq(users.id, sql.placeholder('id')))
    .prepare()

  // A session's row has expires_at = last_used_at + the lifetime while it slides; a replaced one
  // (renew) is given another distance (the grace), which is how every reader tells it apart.
  const sliding = sql`${sessions.expiresAt} = ${sessions.lastUsedAt} + ${SESSION_LIFETIME_MS}`

  // Only sessions found are cached, by the id as presented (no hashing on a hit), and only for
  // the credentials version they were read at.
  const cache = new LRUCache<string, CachedSession>({ max: 10_000 })
  let cachedAtVersion = -1

  /** session id hash → the use waiting to be written */
  const pendingUse = new Map<string, number>()
  const deferred = createDeferredWrites(sqlite, {
    delayMs: flushMs,
    hasPending: () => pendingUse.size > 0,
    write: () => {
      const uses = [...pendingUse]
      // a session ended meanwhile: its row is gone and the update changes nothing; nor does it
      // reach a replaced one
      db.transaction((tx) => {
        for (const [idHash, atMs] of uses) {
          tx.update(sessions).set({ lastUsedAt: atMs, expiresAt: atMs + SESSION_LIFETIME_MS }).where(and(eq(sessions.idHash, idHash), sliding)).run()
        }
      })
      pendingUse.clear()
    },
    log,
    failure: "sessions' last use not written yet; will retry",
    context: () => ({ sessions: pendingUse.size }),
  })

  function userBody(userId: string): SessionUser {
    const row = userById.get({ id: userId })
    if (!row) throw new NotFound('The signed-in user no longer exists')
    return { id: row.id, name: row.name, role: row.role === 'admin' ? 'admin' : 'member', account: { id: row.accountId, name: row.accountName } }
  }

  /** a new session for the user, in the database; its id (for the cookie) */
  async function open(userId: string, passwordHash: string | null = null): Promise<string | null> {
    const sessionId = generateSessionId()
    const now = clock.now()
    const opened = await retryWhileBusy(
      sqlite,
      () =>
        db.transaction((tx) => {
          // the user may have gone, or changed their password, while the password was checked
          if (passwordHash !== null) {
            const current = tx.select({ passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId)).get()
            if (current?.passwordHash !== passwordHash) return false
          }
          tx.delete(sessions).where(lte(sessions.expiresAt, now - SWEEP_MARGIN_MS)).run()
          tx.insert(sessions).values({ idHash: hashSessionId(sessionId), userId, createdAt: now, lastUsedAt: now, expiresAt: now + SESSION_LIFETIME_MS }).run()
          return true
        }),
      { clock },
    )
    return opened ? sessionId : null
  }

  return {
    /**
     * A new session when `name` (any case) and `password` match a user with a password; null
     * otherwise, after the same work either way (a password is verified, against a dummy hash
     * when there is no user to verify against).
     */
    async signIn(name: string, password: string): Promise<{ sessionId: string; user: SessionUser } | null> {
      const user = byName.get({ name }) ?? null
      onPasswordCheck()
      const matches = await verifyPassword(password, user?.passwordHash ?? null)
      if (!matches || user === null) return null
      const sessionId = await open(user.id, user.passwordHash)
      return sessionId === null ? null : { sessionId, user: userBody(user.id) }
    },

    /** the user's sign-in name and password hash (null: none), or null when the user is gone */
    credentialsOf(userId: string): { name: string; passwordHash: string | null } | null {
      return db.select({ name: users.name, passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId)).get() ?? null
    },

    /** whether `password` is the one `passwordHash` was made from (an argon2id verification) */
    async checkPassword(password: string, passwordHash: string): Promise<boolean> {
      onPasswordCheck()
      return verifyPassword(password, passwordHash)
    },

    /**
     * The user's own change of password (PATCH /me), from `expectedHash` (the one the caller has
     * just verified the current password against) to `newHash`: every other session of the user
     * ends, `keepSessionId`'s (the request's own) lives on; recorded in the audit log (action
     * `password`, by the user). Conflict when the password has changed meanwhile.
     */
    async changePassword(userId: string, expectedHash: string, newHash: string, keepSessionId: string | null, requestId: string | null): Promise<void> {
      const kept = keepSessionId === null ? null : hashSessionId(keepSessionId)
      const now = clock.now()
      const changed = await retryWhileBusy(
        sqlite,
        () =>
          db.transaction(
            (tx) => {
              const user = tx.select({ accountId: users.accountId, passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId)).get()
              if (!user) throw new NotFound('The signed-in user no longer exists')
              if (user.passwordHash !== expectedHash) return false
              tx.update(users).set({ passwordHash: newHash }).where(eq(users.id, userId)).run()
              tx.delete(sessions).where(kept === null ? eq(sessions.userId, userId) : and(eq(sessions.userId, userId), ne(sessions.idHash, kept))).run()
              audit.record({ accountId: user.accountId, actor: userId, action: 'password', objectType: 'user', objectId: userId, requestId }, now)
              return true
            },
            { behavior: 'immediate' },
          ),
        { clock },
      )
      if (!changed) throw new Conflict('Your password was changed meanwhile (another session, or an admin); nothing was changed')
    },

    /** a new session for a user who has just proven who they are otherwise (first-run setup) */
    async open(userId: string): Promise<string> {
      return (await open(userId))!
    },

    /** the user of a live session, sliding its expiry; null when unknown, expired or ended (AuthDeps.findUserBySession) */
    findUserBySession(sessionId: string): UserPrincipal | null {
      const version = credentialsVersion()
      if (version !== cachedAtVersion) {
        cache.clear()
        cachedAtVersion = version
      }
      let entry = cache.get(sessionId)
      if (entry === undefined) {
        const presented = hashSessionId(sessionId)
        const row = bySessionHash.get({ idHash: presented })
        if (!row || !timingSafeEqual(Buffer.from(row.idHash), Buffer.from(presented))) return null
        const role: Role = row.role === 'admin' ? 'admin' : 'member'
        entry = {
          idHash: row.idHash,
          principal: { kind: 'user', userId: row.userId, accountId: row.accountId, role, via: 'session' },
          createdAt: row.createdAt,
          expiresAt: row.expiresAt,
          replaced: row.expiresAt !== row.lastUsedAt + SESSION_LIFETIME_MS,
          writtenUseAt: row.lastUsedAt,
        }
        cache.set(sessionId, entry)
      }
      const now = clock.now()
      if (now >= entry.expiresAt) {
        cache.delete(sessionId)
        return null
      }
      if (entry.replaced) return entry.principal
      entry.expiresAt = now + SESSION_LIFETIME_MS
      if (now - entry.writtenUseAt >= USE_WRITE_INTERVAL_MS) {
        entry.writtenUseAt = now
        pendingUse.set(entry.idHash, now)
        deferred.schedule()
      }
      return entry.principal
    },

    /**
     * A new id for a session older than RENEW_AFTER_MS (null when it is younger, or unknown): the
     * same user, a new row; the old id keeps working REPLACED_GRACE_MS (requests already sent
     * with it), then ends. Called for a session that has just authenticated the request.
     */
    async renew(sessionId: string): Promise<string | null> {
      const entry = cache.get(sessionId)
      const now = clock.now()
      if (entry === undefined || entry.replaced || now - entry.createdAt < RENEW_AFTER_MS) return null
      const fresh = generateSessionId()
      const endsAt = now + REPLACED_GRACE_MS
      entry.replaced = true
      entry.expiresAt = endsAt
      pendingUse.delete(entry.idHash)
      await retryWhileBusy(
        sqlite,
        () =>
          db.transaction((tx) => {
            tx.update(sessions).set({ lastUsedAt: now, expiresAt: endsAt }).where(eq(sessions.idHash, entry.idHash)).run()
            tx.insert(sessions)
              .values({ idHash: hashSessionId(fresh), userId: entry.principal.userId, createdAt: now, lastUsedAt: now, expiresAt: now + SESSION_LIFETIME_MS })
              .run()
          }),
        { clock },
      )
      return fresh
    },

    /** who the principal is, as /session shows it */
    userOf(principal: UserPrincipal): SessionUser {
      return userBody(principal.userId)
    },

    /** ends the session: its row goes (the trigger moves the credentials version, so every process forgets it) */
    async end(sessionId: string): Promise<void> {
      const idHash = hashSessionId(sessionId)
      pendingUse.delete(idHash)
      cache.delete(sessionId)
      await retryWhileBusy(sqlite, () => db.delete(sessions).where(eq(sessions.idHash, idHash)).run(), { clock })
    },

    /** writes the uses waiting (at stop: `wait`) */
    flush: deferred.flush,
  }
}

export type SessionService = ReturnType<typeof createSessionService>
