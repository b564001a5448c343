/**
 * API keys: random, shown once, stored only as a SHA-256 hash. A presented key is hashed and
 * looked up by hash; the stored hash is then compared in constant time, so no timing of ours
 * depends on how much of a guess was right.
 */
import type { Database } from 'bun:sqlite'
import { LRUCache } from 'lru-cache'
import { timingSafeEqual } from 'node:crypto'
import { NotFound } from '../errors'
import type { UserPrincipal } from '../principal'

export function hashKey(key: string): string {
  return new Bun.CryptoHasher('sha256').update(key).digest('hex')
}

/** 32 random bytes, base64url, with a prefix that makes a leaked key easy to recognise. */
export function generateKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return `trk_${Buffer.from(bytes).toString('base64url')}`
}

export function createApiKey(sqlite: Database, givenUserId: string, now = Date.now()): string {
  // ids are stored in lower case; a UUID is the same in any case
  const userId = givenUserId.toLowerCase()
  const user = sqlite.query('SELECT id FROM users WHERE id = ?').get(userId)
  if (!user) throw new NotFound(`No user with id ${givenUserId}`)
  const key = generateKey()
  sqlite.query('INSERT INTO api_keys (user_id, hash, created_at) VALUES (?, ?, ?)').run(userId, hashKey(key), now)
  return key
}

/**
 * The credentials version (row 4 of access_version, bumped by triggers when a key, a session, a
 * user's password, role or account changes, from any process): a cache of who a credential is
 * holds only while it stays the same. One read of one row a request (2 µs) buys "a revoked key
 * fails on the very next request".
 */
export function createCredentialsVersion(sqlite: Database): () => number {
  const read = sqlite.query<{ version: number }, []>('SELECT version FROM access_version WHERE id = 4')
  return () => read.get()?.version ?? 0
}

export function createKeyLookup(sqlite: Database, clock: { now(): number } = { now: Date.now }) {
  const byHash = sqlite.query<{ hash: string; user_id: string; account_id: string; role: string; expires_at: number | null }, [string]>(
    `SELECT k.hash, u.id AS user_id, u.account_id, u.role, k.expires_at FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.hash = ?`,
  )
  const credentialsVersion = createCredentialsVersion(sqlite)
  // Only known keys are cached, by the key as presented (no hashing on a hit), and only for the
  // credentials version they were read at.
  const recognised = new LRUCache<string, { principal: UserPrincipal; expiresAt: number | null }>({ max: 10_000 })
  let cachedAtVersion = -1
  return function findUserByKey(key: string): UserPrincipal | null {
    const version = credentialsVersion()
    if (version !== cachedAtVersion) {
      recognised.clear()
      cachedAtVersion = version
    }
    let entry = recognised.get(key)
    if (!entry) {
      const presented = hashKey(key)
      const row = byHash.get(presented)
      if (!row || !timingSafeEqual(Buffer.from(row.hash), Buffer.from(presented))) return null
      const role = row.role === 'admin' ? 'admin' : 'member'
      entry = { principal: { kind: 'user', userId: row.user_id, accountId: row.account_id, role, via: 'key' }, expiresAt: row.expires_at }
      recognised.set(key, entry)
    }
    if (entry.expiresAt !== null && clock.now() >= entry.expiresAt) return null
    return entry.principal
  }
}
