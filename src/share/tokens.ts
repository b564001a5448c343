/**
 * Share tokens: how they are made, and the in-process LRU that resolves a presented token to
 * its link without a query per request. Every change to a link goes through the share service,
 * which drops the token's entry, so a patched or revoked link takes effect on the next request.
 *
 * Access is counted here too (unique viewers, last access), and never with a write in the
 * request: a share-token read must answer while another process holds the database's write
 * lock, or the disk is full. Views wait in memory, per link, and a background flush writes them
 * in one transaction (every `accessFlushMs`, default 1 s, only while there is something to
 * write; it never waits for the lock, and a failure is logged and retried later). Reading a
 * link merges what is still waiting, so its `unique_views` and `last_accessed_at` are current.
 *
 * Bounded and best-effort: at most MAX_PENDING_VIEWERS new viewers wait per link between two
 * flushes (beyond that a new viewer is not counted until the next flush makes room), at most
 * MAX_PENDING_LINKS links wait, and what waits is lost if the process dies before a flush (a
 * clean stop flushes). Otherwise the count is exact: share_viewers remembers every viewer.
 */
import type { Database } from 'bun:sqlite'
import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock'
import { type Logger, silentLogger } from '../log'
import { createDeferredWrites } from '../store/deferred'

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

/** viewers an entry remembers as already counted; past it the set starts over (a re-check is one read) */
const MAX_SEEN_VIEWERS = 1000
/** new viewers of one link waiting for the next flush; past it a new viewer goes uncounted */
export const MAX_PENDING_VIEWERS = 1000
/** links with views waiting for the next flush; past it a new link's views go uncounted */
const MAX_PENDING_LINKS = 10_000

/** A link as the resolver needs it, held in the cache by token. */
export interface CachedLink {
  linkId: string
  accountId: string
  /** null once the user who made it was deleted (the link was revoked with them, migration 0015) */
  creatorId: string | null
  deviceKeys: readonly number[]
  acl: ReadonlySet<string>
  revoked: boolean
  expiresAt: number
  /** viewers already counted for this link (written or waiting), so a returning one costs nothing */
  seenViewers: Set<string>
}

/** Views of one link not yet written. */
interface PendingAccess {
  /** new viewers, with when each was first seen */
  viewers: Map<string, number>
  lastAccessedAt: number
}

export interface ShareTokenCacheOptions {
  max?: number
  /** a safety net for changes made outside this process; in-process changes drop the entry at once, devices leaving a link (any process) empty the cache */
  ttlMs?: number
  /** how soon waiting views are written (default 1000 ms); one transaction for all links */
  accessFlushMs?: number
  /** where a failed flush is reported */
  log?: Logger
}

export function createShareTokenCache(sqlite: Database, clock: Clock, options: ShareTokenCacheOptions = {}) {
  const accessFlushMs = options.accessFlushMs ?? 1000
  const log = options.log ?? silentLogger
  const linkByToken = sqlite.query<{ id: string; account_id: string; created_by: string | null; acl: string; revoked: number; expires_at: number }, [string]>(
    'SELECT id, account_id, created_by, acl, revoked, expires_at FROM share_links WHERE token = ?',
  )
  const deviceKeysOf = sqlite.query<{ device_key: number }, [string]>(
    'SELECT device_key FROM share_link_devices WHERE link_id = ? ORDER BY ordinal',
  )
  // a read: whether a viewer new to the cache entry was counted before (the entry was reloaded)
  const viewerCounted = sqlite.query<{ found: number }, [string, string]>('SELECT 1 AS found FROM share_viewers WHERE link_id = ? AND viewer = ?')
  // the link may have gone (its account deleted) while its views waited: then they go too
  const insertViewer = sqlite.query<unknown, [string, string, number]>(
    'INSERT OR IGNORE INTO share_viewers (link_id, viewer, first_seen_at) SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM share_links WHERE id = ?1)',
  )
  const writeAccess = sqlite.query<unknown, [number, number, string]>(
    'UPDATE share_links SET unique_views = unique_views + ?, last_accessed_at = max(coalesce(last_accessed_at, 0), ?) WHERE id = ?',
  )
  const writePending = sqlite.transaction((links: [string, PendingAccess][]) => {
    for (const [linkId, access] of links) {
      let added = 0
      for (const [viewer, firstSeenAt] of access.viewers) added += insertViewer.run(linkId, viewer, firstSeenAt).changes
      writeAccess.run(added, access.lastAccessedAt, linkId)
    }
  })

  const pending = new Map<string, PendingAccess>()
  // the background write of what waits: store/deferred.ts (never on a request's path, never waiting for the lock)
  const deferred = createDeferredWrites(sqlite, {
    delayMs: accessFlushMs,
    hasPending: () => pending.size > 0,
    write: () => {
      writePending([...pending])
      pending.clear()
    },
    log,
    failure: 'share link views not written yet; will retry',
    context: () => ({ links: pending.size }),
  })
  const { flush, schedule } = deferred

  // Devices leaving a link, by any process (an import moving a device to another account), bump
  // row 3 of access_version (migration 0003): read on each lookup (about 2 µs), the cache starts
  // over when it moved, so a cached token never serves a device its link no longer holds.
  const linkDevicesVersion = sqlite.query<{ version: number }, []>('SELECT version FROM access_version WHERE id = 3')
  let knownLinkDevicesVersion = -1

  const cache = new LRUCache<string, CachedLink>({
    max: options.max ?? 10_000,
    ttl: options.ttlMs ?? 60_000,
  })

  function load(token: string): CachedLink | null {
    const row = linkByToken.get(token)
    if (!row) return null
    return {
      linkId: row.id,
      accountId: row.account_id,
      creatorId: row.created_by,
      deviceKeys: deviceKeysOf.all(row.id).map((d) => d.device_key),
      acl: new Set(JSON.parse(row.acl) as string[]),
      revoked: row.revoked === 1,
      expiresAt: row.expires_at,
      seenViewers: new Set(),
    }
  }

  return {
    /** the link behind `token`, from the cache or the database; null when there is none */
    lookup(token: string): CachedLink | null {
      const version = linkDevicesVersion.get()?.version ?? 0
      if (version !== knownLinkDevicesVersion) {
        cache.clear()
        knownLinkDevicesVersion = version
      }
      let link = cache.get(token)
      if (link === undefined) {
        const loaded = load(token)
        if (loaded === null) return null
        cache.set(token, loaded)
        link = loaded
      }
      return link
    },

    /** neither revoked nor expired, and its creator still there (a link ends with them) */
    isActive(link: CachedLink): link is CachedLink & { creatorId: string } {
      return !link.revoked && link.creatorId !== null && clock.now() < link.expiresAt
    },

    /** counts `viewer` once per link and notes the access time, in memory: the next flush writes them */
    recordAccess(link: CachedLink, viewer: string): void {
      const now = clock.now()
      let access = pending.get(link.linkId)
      if (access === undefined) {
        if (pending.size >= MAX_PENDING_LINKS) return
        access = { viewers: new Map(), lastAccessedAt: now }
        pending.set(link.linkId, access)
        schedule()
      }
      access.lastAccessedAt = Math.max(access.lastAccessedAt, now)
      if (link.seenViewers.has(viewer) || access.viewers.has(viewer)) return
      // no room: not counted, and not remembered either, so it counts when it comes back after a flush
      if (access.viewers.size >= MAX_PENDING_VIEWERS) return
      try {
        if (viewerCounted.get(link.linkId, viewer) === null) access.viewers.set(viewer, now)
        // a link passed around widely must not grow the entry without bound; forgetting costs one read
        if (link.seenViewers.size >= MAX_SEEN_VIEWERS) link.seenViewers.clear()
        link.seenViewers.add(viewer)
      } catch (error) {
        // best-effort: a view that cannot be checked is not counted, and the read goes on
        log.warn('share link view not counted', { error: error instanceof Error ? error.message : String(error) })
      }
    },

    /** what waits to be written for a link: new viewers and the newest access (null when none) */
    pendingAccess(linkId: string): { views: number; lastAccessedAt: number | null } {
      const access = pending.get(linkId)
      return { views: access?.viewers.size ?? 0, lastAccessedAt: access?.lastAccessedAt ?? null }
    },

    /** writes what waits now (waiting for the lock if `wait`); false when it could not */
    flush,

    /** drops the token's entry: the next request reads the link afresh */
    forget(token: string): void {
      cache.delete(token)
    },
  }
}

export type ShareTokenCache = ReturnType<typeof createShareTokenCache>
