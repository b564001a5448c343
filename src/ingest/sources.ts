/**
 * Where device traffic comes from, and what one source may cost us.
 *
 * Device protocols are unauthenticated by design: the identifier (IMEI or serial) is the only
 * credential, so an identifier that is known answers differently from one that is not (an ACK or
 * a close). What keeps that from being an oracle is rationing what an unknown identifier is
 * told: each source (an IPv4 address, or an IPv6 /64) may hear "unknown" for a few distinct
 * identifiers a minute; a further unknown identifier from it is masked: answered as a known
 * device would be (the login's ACK, an HTTP 200), its data dropped and counted. So past the
 * ration the answer says nothing about the identifier, and a known device behind the same
 * address (a NAT, a private APN) is never refused for what its neighbours sent: the ration is
 * on what unknown identifiers hear, not on the source. Unknown identifiers are logged once per
 * source and minute (the first one at once, then one line that sums the rest, masked ones and
 * dropped reports included), never a line each, so guessing cannot flood the log either.
 */
import { LRUCache } from 'lru-cache'
import type { Logger } from '../log'

/**
 * The key a client's address is counted under: IPv4 as it is (also when IPv4-mapped), IPv6 by
 * its /64, the block one subscriber usually holds whole (counting single IPv6 addresses would
 * cap nothing).
 */
export function sourceOf(address: string): string {
  const text = address.trim().toLowerCase().replace(/%.*$/, '')
  if (!text.includes(':')) return text
  const mapped = /^(?:::|(?:0{1,4}:){5})ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (mapped) return mapped[1]
  const [head, tail] = text.includes('::') ? text.split('::', 2) : [text, null]
  const headGroups = head ? head.split(':') : []
  const tailGroups = tail ? tail.split(':') : []
  const groups = tail === null ? headGroups : [...headGroups, ...Array(Math.max(0, 8 - headGroups.length - tailGroups.length)).fill('0'), ...tailGroups]
  const prefix = groups.slice(0, 4).map((group) => (parseInt(group, 16) || 0).toString(16))
  while (prefix.length < 4) prefix.push('0')
  return `${prefix.join(':')}::/64`
}

/** Distinct unknown identifiers a source may be told of per window before the next ones are masked. */
export const UNKNOWN_IDENTIFIERS_PER_SOURCE = 20
export const UNKNOWN_IDENTIFIER_WINDOW_MS = 60_000
/** sources tracked at once; the least recently seen beyond this are forgotten (their counts logged) */
const MAX_SOURCES = 10_000

export interface UnknownIdentifierLimits {
  /** distinct unknown identifiers a source is told of in one window (default 20; 0: none, every one is masked) */
  perSource?: number
  /** the window, ms (default 60,000) */
  windowMs?: number
}

/** What an unknown identifier gets: `refused` (told: closed, 404) or `masked` (answered as a known one, its data dropped). */
export type UnknownOutcome = 'refused' | 'masked'

interface SourceWindow {
  startedAt: number
  /**
   * the distinct unknown identifiers refused (told) in this window, as 53-bit hashes: at most
   * `perSource` a source, a few bytes each whatever an identifier's length
   */
  refused: Set<number>
  /** refusals not logged on their own line (all but the window's first) */
  unlogged: number
  /** identifications masked: answered as known, nothing stored */
  masked: number
  /** reports dropped on connections whose identifier was masked */
  dropped: number
}

/** An identifier as the window keeps it: its 53-bit hash (a collision only makes a new identifier count as a retry) */
const identifierHash = (uniqueId: string): number => Number(BigInt.asUintN(53, BigInt(Bun.hash(uniqueId))))

export function createUnknownIdentifierLimiter(options: { log: Logger; limits?: UnknownIdentifierLimits }) {
  const { log } = options
  const perSource = options.limits?.perSource ?? UNKNOWN_IDENTIFIERS_PER_SOURCE
  const windowMs = options.limits?.windowMs ?? UNKNOWN_IDENTIFIER_WINDOW_MS
  const windowSeconds = Math.round(windowMs / 1000)

  /** one line for the window, for what its first line (logged at once) did not say */
  const summarise = (source: string, window: SourceWindow) => {
    if (window.unlogged + window.masked + window.dropped === 0) return
    const refusals = window.refused.size > 0 ? 1 + window.unlogged : 0
    const attempts = refusals + window.masked
    log.warn(`unknown device identifiers: ${attempts} from ${source} in the last ${windowSeconds} s`, {
      source,
      attempts,
      distinctRefused: window.refused.size,
      masked: window.masked,
      droppedReports: window.dropped,
      since: new Date(window.startedAt).toISOString(),
    })
  }

  const windows = new LRUCache<string, SourceWindow>({
    max: MAX_SOURCES,
    dispose: (window, source, reason) => {
      if (reason === 'evict') summarise(source, window)
    },
  })

  /** the source's current window, or undefined when it has none or it ended (then summarised) */
  function current(source: string, now: number): SourceWindow | undefined {
    const window = windows.get(source)
    if (!window) return undefined
    if (now - window.startedAt < windowMs && now >= window.startedAt) return window
    windows.delete(source)
    summarise(source, window)
    return undefined
  }

  function open(source: string, now: number): SourceWindow {
    const window: SourceWindow = { startedAt: now, refused: new Set(), unlogged: 0, masked: 0, dropped: 0 }
    windows.set(source, window)
    return window
  }

  return {
    /**
     * A lookup found nothing for `uniqueId` from `address`: refused while the source has been told
     * of fewer than its ration of distinct identifiers in the window (or of this one already: a
     * misconfigured device retrying adds nothing), else masked. Counted; the window's first
     * refusal is logged at once, the rest in the window's summary. `maskable` false (a report
     * inside a session, which has no answer to mask): always refused.
     */
    unknown(address: string, uniqueId: string, reason: 'unknown' | 'unlink', now: number, maskable = true): UnknownOutcome {
      const source = sourceOf(address)
      const window = current(source, now) ?? open(source, now)
      const hash = identifierHash(uniqueId)
      if (!window.refused.has(hash)) {
        if (window.refused.size >= perSource) {
          if (maskable) {
            window.masked++
            return 'masked'
          }
          window.unlogged++
          return 'refused'
        }
        window.refused.add(hash)
        if (window.refused.size === 1 && window.unlogged === 0) {
          log.warn('device refused', { uniqueId: uniqueId.slice(0, 64), reason, source })
          return 'refused'
        }
      }
      window.unlogged++
      return 'refused'
    },

    /** A report on a masked connection was dropped: counted in the source's summary. */
    dropped(address: string, now: number): void {
      const source = sourceOf(address)
      const window = current(source, now) ?? open(source, now)
      window.dropped++
    },

    /** Log the summaries of the windows that ended (the pipeline's sweep calls this). */
    sweep(now: number): void {
      for (const source of [...windows.keys()]) current(source, now)
    },
  }
}

export type UnknownIdentifierLimiter = ReturnType<typeof createUnknownIdentifierLimiter>
