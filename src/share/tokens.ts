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
import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock'
import { type Logger, silentLogger } from '../log'
import type { ShareLinkStore } from '../store/shareLinks'

/** 32 random bytes (256 bits), base64url: unguessable, and safe in a URL as is. */
export function generateToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
export const SHORT_CODE_LENGTH = 10
export const SHORT_CODE = /^[0-9A-Za-z]{8,32}$/

/**
 * 10 base62 characters (59 bits), drawn without modulo bias, mixing at least two of lower case,
 * upper case and digits: the access log knows a code wherever it stands by that mix (ops/requests.ts),
 * and a code of one class alone (about 1 in 5,000 draws, e.g. all lower case) would pass as a word.
 */
export function generateShortCode(length = SHORT_CODE_LENGTH): string {
  for (;;) {
    let code = ''
    while (code.length < length) {
      for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
        // 248 = 4 × 62: bytes above it would favour the first characters
        if (byte < 248 && code.length < length) code += BASE62[byte % 62]
      }
    }
    if (Number(/[a-z]/.test(code)) + Number(/[A-Z]/.test(code)) + Number(/[0-9]/.test(code)) >= 2) return code
  }
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

export function createShareTokenCache(links: ShareLinkStore, clock: Clock, options: ShareTokenCacheOptions = {}) {
  const accessFlushMs = options.accessFlushMs ?? 1000
  const log = options.log ?? silentLogger

  const pending = new Map<string, PendingAccess>()
  // the background write of what waits (store/deferred.ts through the link store): never on a
  // request's path, never waiting for the lock
  const deferred = links.deferViews({
    delayMs: accessFlushMs,
    hasPending: () => pending.size > 0,
    pending: () => pending,
    written: () => pending.clear(),
    log,
    failure: 'share link views not written yet; will retry',
    context: () => ({ links: pending.size }),
  })
  const { flush, schedule } = deferred

  // Devices leaving a link, by any process (an import moving a device to another account), bump
  // row 3 of access_version (migration 0003): read on each lookup (about 2 µs), the cache starts
  // over when it moved, so a cached token never serves a device its link no longer holds.
  let knownLinkDevicesVersion = -1

  const cache = new LRUCache<string, CachedLink>({
    max: options.max ?? 10_000,
    ttl: options.ttlMs ?? 60_000,
  })

  async function load(token: string): Promise<CachedLink | null> {
    const row = await links.linkByToken(token)
    if (!row) return null
    return {
      linkId: row.id,
      accountId: row.accountId,
      creatorId: row.createdBy,
      deviceKeys: row.deviceKeys,
      acl: new Set(row.acl),
      revoked: row.revoked,
      expiresAt: row.expiresAt,
      seenViewers: new Set(),
    }
  }

  /** what waits for the link, made when there is room (a new entry schedules a flush) */
  function pendingOf(linkId: string, now: number): PendingAccess | null {
    let access = pending.get(linkId)
    if (access === undefined) {
      if (pending.size >= MAX_PENDING_LINKS) return null
      access = { viewers: new Map(), lastAccessedAt: now }
      pending.set(linkId, access)
      schedule()
    }
    return access
  }

  return {
    /** the link behind `token`, from the cache or the database; null when there is none */
    async lookup(token: string): Promise<CachedLink | null> {
      const version = await links.linkDevicesVersion()
      if (version !== knownLinkDevicesVersion) {
        cache.clear()
        knownLinkDevicesVersion = version
      }
      let link = cache.get(token)
      if (link === undefined) {
        const loaded = await load(token)
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
    async recordAccess(link: CachedLink, viewer: string): Promise<void> {
      const now = clock.now()
      const access = pendingOf(link.linkId, now)
      if (access === null) return
      access.lastAccessedAt = Math.max(access.lastAccessedAt, now)
      if (link.seenViewers.has(viewer) || access.viewers.has(viewer)) return
      // no room: not counted, and not remembered either, so it counts when it comes back after a flush
      if (access.viewers.size >= MAX_PENDING_VIEWERS) return
      try {
        const counted = await links.viewerCounted(link.linkId, viewer)
        // a flush may have written (and let go of) the entry while the read was answered
        if (!counted) pendingOf(link.linkId, now)?.viewers.set(viewer, now)
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
