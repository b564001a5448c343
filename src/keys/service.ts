/**
 * API keys: random, shown once, stored only as a SHA-256 hash. A presented key is hashed and
 * looked up by hash; the stored hash is then compared in constant time, so no timing of ours
 * depends on how much of a guess was right.
 */
import { LRUCache } from 'lru-cache'
import { timingSafeEqual } from 'node:crypto'
import type { Connectable } from '../../db/client'
import { NotFound } from '../errors'
import { type Logger, silentLogger } from '../log'
import type { UserPrincipal } from '../principal'
import { insertKeyInTransaction, type KeyStore } from '../store/keys'

export function hashKey(key: string): string {
  return new Bun.CryptoHasher('sha256').update(key).digest('hex')
}

/** 32 random bytes, base64url, with a prefix that makes a leaked key easy to recognise. */
export function generateKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return `trk_${Buffer.from(bytes).toString('base64url')}`
}

/** A new key for the user, for a process that opens the database itself (the demo): its secret. */
export function createApiKey(connection: Connectable, givenUserId: string, now = Date.now()): string {
  // ids are stored in lower case; a UUID is the same in any case
  const userId = givenUserId.toLowerCase()
  const key = generateKey()
  if (!insertKeyInTransaction(connection, userId, hashKey(key), now)) throw new NotFound(`No user with id ${givenUserId}`)
  return key
}

/** a key's last use is written at most this often (and shown to this precision) */
export const KEY_USE_PRECISION_MS = 60_000

export interface KeyUsageOptions {
  /** how soon a noted use is written (default 1 s); tests shorten it */
  flushMs?: number
  log?: Logger
}

/**
 * API keys' last use (`last_used_at`), noted in memory by the key lookup and written in the
 * background (store/deferred.ts): no request writes, or waits for another process's write lock.
 * A key's use is noted at most once a minute, so a busy key costs one write a minute; the time
 * shown is its first use of that minute.
 */
export function createKeyUsage(keys: KeyStore, clock: { now(): number }, options: KeyUsageOptions = {}) {
  /** key row id → the use waiting to be written */
  const pending = new Map<number, number>()
  /** key row id → when its use was last noted: another within the minute is not noted */
  const noted = new Map<number, number>()
  const deferred = keys.deferUses({
    delayMs: options.flushMs ?? 1000,
    hasPending: () => pending.size > 0,
    pending: () => pending,
    written: () => {
      pending.clear()
      // what is older than a minute would be noted again anyway: the map stays as small as the last minute's keys
      const now = clock.now()
      for (const [keyId, atMs] of noted) if (now - atMs >= KEY_USE_PRECISION_MS) noted.delete(keyId)
    },
    log: options.log ?? silentLogger,
    failure: 'API keys\' last use not written yet; will retry',
    context: () => ({ keys: pending.size }),
  })

  return {
    /** notes a use of the key (its api_keys row id) now; written in the background */
    record(keyId: number): void {
      const now = clock.now()
      const last = noted.get(keyId)
      if (last !== undefined && now - last < KEY_USE_PRECISION_MS && now >= last) return
      noted.set(keyId, now)
      pending.set(keyId, now)
      deferred.schedule()
    },
    /** a use noted but not yet written (Unix ms), else null: reads merge it, so a use shows at once */
    pendingUse(keyId: number): number | null {
      return pending.get(keyId) ?? null
    },
    /** writes what waits now (waiting for the lock if `wait`, at stop); false when it could not */
    flush: deferred.flush,
  }
}

export type KeyUsage = ReturnType<typeof createKeyUsage>

/**
 * Who a presented key is. The credentials version (row 4 of access_version, bumped by triggers
 * when a key, a session, a user's password, role or account changes, from any process) is read
 * on every call (one prepared read, 2 µs): a cache of who a credential is holds only while it
 * stays the same, which buys "a revoked key fails on the very next request".
 *
 * `usage`, when given, notes each accepted key's use (for last_used_at), in memory only.
 */
export function createKeyLookup(keys: KeyStore, clock: { now(): number } = { now: Date.now }, usage?: KeyUsage) {
  // Only known keys are cached, by the key as presented (no hashing on a hit), and only for the
  // credentials version they were read at.
  const recognised = new LRUCache<string, RecognisedKey>({ max: 10_000 })
  let cachedAtVersion = -1

  function recognise(key: string, version: number): UserPrincipal | null | Promise<UserPrincipal | null> {
    if (version !== cachedAtVersion) {
      recognised.clear()
      cachedAtVersion = version
    }
    const entry = recognised.get(key)
    if (entry !== undefined) return use(entry)
    const presented = hashKey(key)
    return keys.keyByHash(presented).then((row) => {
      if (!row || !timingSafeEqual(Buffer.from(row.hash), Buffer.from(presented))) return null
      const role = row.role === 'admin' ? 'admin' : 'member'
      const found: RecognisedKey = { principal: { kind: 'user', userId: row.userId, accountId: row.accountId, role, via: 'key' }, keyId: row.id, expiresAt: row.expiresAt }
      recognised.set(key, found)
      return use(found)
    })
  }

  function use(entry: RecognisedKey): UserPrincipal | null {
    if (entry.expiresAt !== null && clock.now() >= entry.expiresAt) return null
    usage?.record(entry.keyId)
    return entry.principal
  }

  // chained rather than async: this runs on every request with a key
  return function findUserByKey(key: string): Promise<UserPrincipal | null> {
    return keys.credentialsVersion().then((version) => recognise(key, version))
  }
}

interface RecognisedKey {
  principal: UserPrincipal
  keyId: number
  expiresAt: number | null
}
