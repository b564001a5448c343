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

/** How long a recognised key is trusted without asking the database again. */
export const KEY_CACHE_TTL_MS = 10_000

export function createKeyLookup(sqlite: Database) {
  const byHash = sqlite.query<{ hash: string; user_id: string; account_id: string }, [string]>(
    'SELECT k.hash, u.id AS user_id, u.account_id FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.hash = ?',
  )
  // Only known keys are cached, by the key as presented (no hashing on a hit): a key created a
  // moment ago by `cli key create` is found on its first use; a removed one stops working
  // within KEY_CACHE_TTL_MS.
  const recognised = new LRUCache<string, UserPrincipal>({ max: 10_000, ttl: KEY_CACHE_TTL_MS })
  return function findUserByKey(key: string): UserPrincipal | null {
    const cached = recognised.get(key)
    if (cached) return cached
    const presented = hashKey(key)
    const row = byHash.get(presented)
    if (!row || !timingSafeEqual(Buffer.from(row.hash), Buffer.from(presented))) return null
    const principal: UserPrincipal = { kind: 'user', userId: row.user_id, accountId: row.account_id }
    recognised.set(key, principal)
    return principal
  }
}
