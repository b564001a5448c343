/**
 * Sign-in sessions of people (the console). A session id is 32 random bytes (base64url) that
 * only the browser's cookie holds; the database keeps its SHA-256. A session lasts
 * SESSION_LIFETIME_MS from its last use: each use slides it in memory at once, and in the
 * database in the background (store/deferred.ts), at most once a minute a session, so no request
 * waits on a write. It ends at sign-out, when it goes unused for the lifetime, and when its user
 * is deleted or their password changes (the people store deletes the rows in the same unit of
 * work; the trigger on sessions moves the credentials version, which empties every process's cache).
 * Every read and write goes through the people store (store/people.ts).
 */
import { timingSafeEqual } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { type Clock, systemClock } from '../clock'
import { Conflict, NotFound, Unauthorized } from '../errors'
import { type Logger, silentLogger } from '../log'
import type { Role, UserPrincipal } from '../principal'
import type { PeopleStore } from '../store/people'
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
  people: PeopleStore
  clock?: Clock
  log?: Logger
  /** how soon a session's use is written in the background (default 1 s) */
  flushMs?: number
  /** told of each password verified (an argon2id hash computed): a metric */
  onPasswordCheck?: () => void
}

export function createSessionService({ people, clock = systemClock, log = silentLogger, flushMs = 1000, onPasswordCheck = () => {} }: SessionServiceOptions) {
  // Only sessions found are cached, by the id as presented (no hashing on a hit), and only for
  // the credentials version they were read at.
  const cache = new LRUCache<string, CachedSession>({ max: 10_000 })
  let cachedAtVersion = -1

  /** session id hash → the use waiting to be written */
  const pendingUse = new Map<string, number>()
  const deferred = people.deferSessionUses(SESSION_LIFETIME_MS, {
    delayMs: flushMs,
    hasPending: () => pendingUse.size > 0,
    pending: () => [...pendingUse],
    written: () => pendingUse.clear(),
    log,
    failure: "sessions' last use not written yet; will retry",
    context: () => ({ sessions: pendingUse.size }),
  })

  async function userBody(userId: string): Promise<SessionUser> {
    const user = await people.userWithAccount(userId)
    if (!user) throw new NotFound('The signed-in user no longer exists')
    return user
  }

  /** a new session for the user, in the database; its id (for the cookie) */
  async function open(userId: string, passwordHash: string | null = null): Promise<string | null> {
    const sessionId = generateSessionId()
    const now = clock.now()
    const opened = await people.openSession(
      { idHash: hashSessionId(sessionId), userId, createdAt: now, expiresAt: now + SESSION_LIFETIME_MS },
      passwordHash,
      now - SWEEP_MARGIN_MS,
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
      const user = await people.userByName(name)
      onPasswordCheck()
      const matches = await verifyPassword(password, user?.passwordHash ?? null)
      if (!matches || user === null) return null
      const sessionId = await open(user.id, user.passwordHash)
      return sessionId === null ? null : { sessionId, user: await userBody(user.id) }
    },

    /** the user's sign-in name and password hash (null: none), or null when the user is gone */
    credentialsOf(userId: string): Promise<{ name: string; passwordHash: string | null } | null> {
      return people.credentialsOf(userId)
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
      const outcome = await people.changeOwnPassword(userId, expectedHash, newHash, kept, requestId, clock.now())
      if (outcome === 'no-user') throw new NotFound('The signed-in user no longer exists')
      const changed = outcome === 'changed'
      if (!changed) throw new Conflict('Your password was changed meanwhile (another session, or an admin); nothing was changed')
    },

    /** a new session for a user who has just proven who they are otherwise (first-run setup) */
    async open(userId: string): Promise<string> {
      return (await open(userId))!
    },

    /** the user of a live session, sliding its expiry; null when unknown, expired or ended (AuthDeps.findUserBySession) */
    async findUserBySession(sessionId: string): Promise<UserPrincipal | null> {
      const version = await people.credentialsVersion()
      if (version !== cachedAtVersion) {
        cache.clear()
        cachedAtVersion = version
      }
      let entry = cache.get(sessionId)
      if (entry === undefined) {
        const presented = hashSessionId(sessionId)
        const row = await people.sessionByHash(presented)
        if (!row || !timingSafeEqual(Buffer.from(row.idHash), Buffer.from(presented))) return null
        const role: Role = row.role
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
      await people.renewSession(entry.idHash, now, endsAt, { idHash: hashSessionId(fresh), userId: entry.principal.userId, createdAt: now, expiresAt: now + SESSION_LIFETIME_MS })
      return fresh
    },

    /** who the principal is, as /session shows it */
    userOf(principal: UserPrincipal): Promise<SessionUser> {
      return userBody(principal.userId)
    },

    /** sets (null: clears) the user's own time zone, already checked (src/timezone.ts) */
    async setTimezone(principal: UserPrincipal, timezone: string | null): Promise<void> {
      if (!(await people.setTimezone(principal.userId, timezone))) throw new Unauthorized('The signed-in user no longer exists', false)
    },

    /** ends the session: its row goes (the trigger moves the credentials version, so every process forgets it) */
    async end(sessionId: string): Promise<void> {
      const idHash = hashSessionId(sessionId)
      pendingUse.delete(idHash)
      cache.delete(sessionId)
      await people.endSession(idHash)
    },

    /** writes the uses waiting (at stop: `wait`) */
    flush: deferred.flush,
  }
}

export type SessionService = ReturnType<typeof createSessionService>
