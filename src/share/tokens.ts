/**
 * Share tokens: how they are made, and the in-process LRU that resolves a presented token to
 * its link without a query per request. Every change to a link goes through the share service,
 * which drops the token's entry, so a patched or revoked link takes effect on the next request.
 *
 * Access is recorded here too (unique viewers, last access), cheaply: a viewer the entry has
 * already seen costs nothing, and `last_accessed_at` is written at most once a second per link;
 * the newer in-memory value is overlaid when links are read, and written when the entry leaves.
 */
import type { Database } from 'bun:sqlite'
import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock'

/** 32 random bytes (256 bits), base64url: unguessable, and safe in a URL as is. */
export function generateToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
export const SHORT_CODE_LENGTH = 10
export const SHORT_CODE = /^[0-9A-Za-z]{8,32}$/

/** 10 base62 characters (59 bits), drawn without modulo bias. */
export function generateShortCode(length = SHORT_CODE_LENGTH): string {
  let code = ''
  while (code.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      // 248 = 4 × 62: bytes above it would favour the first characters
      if (byte < 248 && code.length < length) code += BASE62[byte % 62]
    }
  }
  return code
}

const MAX_SEEN_VIEWERS = 1000

/** A link as the resolver needs it, held in the cache by token. */
export interface CachedLink {
  linkId: string
  accountId: string
  deviceKeys: readonly number[]
  acl: ReadonlySet<string>
  revoked: boolean
  expiresAt: number
  /** viewers already counted for this link, so a returning one costs no write */
  seenViewers: Set<string>
  /** newest access, and the value last written to the database */
  lastAccessedAt: number | null
  lastAccessWritten: number | null
}

export interface ShareTokenCacheOptions {
  max?: number
  /** a safety net for changes made outside this process (an import); in-process changes drop the entry at once */
  ttlMs?: number
  /** minimum interval between two writes of `last_accessed_at` for one link */
  accessWriteIntervalMs?: number
}

export function createShareTokenCache(sqlite: Database, clock: Clock, options: ShareTokenCacheOptions = {}) {
  const accessWriteInterval = options.accessWriteIntervalMs ?? 1000
  const linkByToken = sqlite.query<
    { id: string; account_id: string; acl: string; revoked: number; expires_at: number; last_accessed_at: number | null },
    [string]
  >('SELECT id, account_id, acl, revoked, expires_at, last_accessed_at FROM share_links WHERE token = ?')
  const deviceKeysOf = sqlite.query<{ device_key: number }, [string]>(
    'SELECT device_key FROM share_link_devices WHERE link_id = ? ORDER BY ordinal',
  )
  const writeAccess = sqlite.query<unknown, [number, string]>(
    'UPDATE share_links SET last_accessed_at = max(coalesce(last_accessed_at, 0), ?) WHERE id = ?',
  )
  const insertViewer = sqlite.query<unknown, [string, string, number]>(
    'INSERT OR IGNORE INTO share_viewers (link_id, viewer, first_seen_at) VALUES (?, ?, ?)',
  )
  const countViewer = sqlite.query<unknown, [string]>('UPDATE share_links SET unique_views = unique_views + 1 WHERE id = ?')
  const addViewer = sqlite.transaction((linkId: string, viewer: string, now: number) => {
    if (insertViewer.run(linkId, viewer, now).changes > 0) countViewer.run(linkId)
  })

  function flushAccess(link: CachedLink): void {
    if (link.lastAccessedAt !== null && link.lastAccessedAt !== link.lastAccessWritten) {
      writeAccess.run(link.lastAccessedAt, link.linkId)
      link.lastAccessWritten = link.lastAccessedAt
    }
  }

  const cache = new LRUCache<string, CachedLink>({
    max: options.max ?? 10_000,
    ttl: options.ttlMs ?? 60_000,
    // an entry leaving (dropped, evicted, expired) takes its unwritten access time with it: write it first
    dispose: (link) => flushAccess(link),
  })

  function load(token: string): CachedLink | null {
    const row = linkByToken.get(token)
    if (!row) return null
    return {
      linkId: row.id,
      accountId: row.account_id,
      deviceKeys: deviceKeysOf.all(row.id).map((d) => d.device_key),
      acl: new Set(JSON.parse(row.acl) as string[]),
      revoked: row.revoked === 1,
      expiresAt: row.expires_at,
      seenViewers: new Set(),
      lastAccessedAt: row.last_accessed_at,
      lastAccessWritten: row.last_accessed_at,
    }
  }

  return {
    /** the link behind `token`, from the cache or the database; null when there is none */
    lookup(token: string): CachedLink | null {
      let link = cache.get(token)
      if (link === undefined) {
        const loaded = load(token)
        if (loaded === null) return null
        cache.set(token, loaded)
        link = loaded
      }
      return link
    },

    isActive(link: CachedLink): boolean {
      return !link.revoked && clock.now() < link.expiresAt
    },

    /** counts `viewer` once per link, and notes the access time */
    recordAccess(link: CachedLink, viewer: string): void {
      const now = clock.now()
      if (!link.seenViewers.has(viewer)) {
        addViewer(link.linkId, viewer, now)
        // a link passed around widely must not grow the entry without bound; forgetting costs one no-op insert
        if (link.seenViewers.size >= MAX_SEEN_VIEWERS) link.seenViewers.clear()
        link.seenViewers.add(viewer)
      }
      link.lastAccessedAt = Math.max(link.lastAccessedAt ?? 0, now)
      if (link.lastAccessWritten === null || now - link.lastAccessWritten >= accessWriteInterval) flushAccess(link)
    },

    /** the newest access known in memory, possibly newer than the database's */
    lastAccessedAt(token: string): number | null {
      return cache.peek(token, { allowStale: true })?.lastAccessedAt ?? null
    },

    /** drops the token's entry: the next request reads the link afresh */
    forget(token: string): void {
      cache.delete(token)
    },
  }
}

export type ShareTokenCache = ReturnType<typeof createShareTokenCache>
