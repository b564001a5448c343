/**
 * Where device traffic comes from, and what one source may cost us.
 *
 * Device protocols are unauthenticated by design: the identifier (IMEI or serial) is the only
 * credential, so an identifier that is known answers differently from one that is not (an ACK or
 * a close). What keeps that from being an oracle is rationing guesses: each source (an IPv4
 * address, or an IPv6 /64) may try a few distinct unknown identifiers a minute; after that every
 * identification from it, known or not, is refused without a lookup until the minute is over,
 * so the answer then says nothing about the identifier. Unknown identifiers are logged once per
 * source and minute (the first one at once, then one line that sums the rest), never a line
 * each, so guessing cannot flood the log either.
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

/** Distinct unknown identifiers one source may try per window before it is refused. */
export const UNKNOWN_IDENTIFIERS_PER_SOURCE = 20
export const UNKNOWN_IDENTIFIER_WINDOW_MS = 60_000
/** sources tracked at once; the least recently seen beyond this are forgotten (their counts logged) */
const MAX_SOURCES = 10_000

export interface UnknownIdentifierLimits {
  /** distinct unknown identifiers a source may try in one window (default 20) */
  perSource?: number
  /** the window, ms (default 60,000) */
  windowMs?: number
}

interface SourceWindow {
  startedAt: number
  /** distinct unknown identifiers tried (kept up to the limit) */
  unknown: Set<string>
  /** unknown identifiers after the first, not yet logged */
  unlogged: number
  /** identifications refused without a lookup while the source was over its limit */
  refused: number
}

export function createUnknownIdentifierLimiter(options: { log: Logger; limits?: UnknownIdentifierLimits }) {
  const { log } = options
  const perSource = options.limits?.perSource ?? UNKNOWN_IDENTIFIERS_PER_SOURCE
  const windowMs = options.limits?.windowMs ?? UNKNOWN_IDENTIFIER_WINDOW_MS
  const windowSeconds = Math.round(windowMs / 1000)

  /** one line for the window, when there was more than its first (logged at once) */
  const summarise = (source: string, window: SourceWindow) => {
    if (window.unlogged + window.refused === 0) return
    const attempts = 1 + window.unlogged + window.refused
    log.warn(`unknown device identifiers: ${attempts} from ${source} in the last ${windowSeconds} s`, {
      source,
      attempts,
      distinctUnknown: window.unknown.size,
      refusedWhileLimited: window.refused,
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

  return {
    /**
     * Before a lookup: seconds until this source may identify again when it is over its limit
     * (the attempt is counted as refused), or null when it may go ahead.
     */
    refusal(address: string, now: number): number | null {
      const window = current(sourceOf(address), now)
      if (!window || window.unknown.size < perSource) return null
      window.refused++
      return Math.max(1, Math.ceil((window.startedAt + windowMs - now) / 1000))
    },

    /** After a lookup found nothing: count it; the first of a window is logged at once. */
    unknown(address: string, uniqueId: string, reason: 'unknown' | 'unlink', now: number): void {
      const source = sourceOf(address)
      const window = current(source, now)
      if (!window) {
        windows.set(source, { startedAt: now, unknown: new Set([uniqueId]), unlogged: 0, refused: 0 })
        log.warn('device refused', { uniqueId: uniqueId.slice(0, 64), reason, source })
        return
      }
      if (window.unknown.size < perSource) window.unknown.add(uniqueId)
      window.unlogged++
    },

    /** Log the summaries of the windows that ended (the pipeline's sweep calls this). */
    sweep(now: number): void {
      for (const source of [...windows.keys()]) current(source, now)
    },
  }
}

export type UnknownIdentifierLimiter = ReturnType<typeof createUnknownIdentifierLimiter>
