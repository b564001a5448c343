/**
 * The identifiers no device has that tried to report lately, so that an admin can add the device
 * that was just switched on (GET /devices/unknown, the console's Administration › Devices).
 *
 * In memory only, bounded: the `max` most recently seen distinct identifiers (least recently seen
 * forgotten first), each forgotten `keepMs` after it was last seen. Only what the ingest
 * pipeline refused is listed: an identifier masked past its source's ration (sources.ts) is left
 * out, as the answer it got was, so a source guessing identifiers adds at most its ration a
 * window to the list, and what the list shows was a real refusal. An identifier a device could
 * not be given (not an IMEI nor a serial, identifiers.ts) is left out too: it cannot be added.
 */
import { LRUCache } from 'lru-cache'
import { SERIAL } from '../devices/identifiers'

export const RECENT_UNKNOWNS_MAX = 1000
export const RECENT_UNKNOWNS_KEEP_MS = 24 * 60 * 60 * 1000

export interface RecentUnknown {
  identifier: string
  /** the protocol it last reported over (`osmand`, `gt06`, …) */
  protocol: string
  firstSeenMs: number
  lastSeenMs: number
  /** refused identifications since it was first seen */
  attempts: number
  /** the client address it last reported from */
  address: string
}

export function createRecentUnknowns(options: { max?: number; keepMs?: number } = {}) {
  const keepMs = options.keepMs ?? RECENT_UNKNOWNS_KEEP_MS
  const seen = new LRUCache<string, RecentUnknown>({ max: options.max ?? RECENT_UNKNOWNS_MAX })

  return {
    /** `identifier` was refused as unknown, now, over `protocol` from `address` */
    refused(identifier: string, protocol: string, address: string, nowMs: number): void {
      if (!SERIAL.test(identifier)) return
      const entry = seen.get(identifier)
      if (entry && nowMs - entry.lastSeenMs < keepMs) {
        Object.assign(entry, { protocol, address, lastSeenMs: Math.max(entry.lastSeenMs, nowMs), attempts: entry.attempts + 1 })
      } else seen.set(identifier, { identifier, protocol, address, firstSeenMs: nowMs, lastSeenMs: nowMs, attempts: 1 })
    },
    /** those seen within `keepMs` of `nowMs`, the most recently seen first */
    list(nowMs: number): RecentUnknown[] {
      const recent: RecentUnknown[] = []
      for (const entry of seen.values()) if (nowMs - entry.lastSeenMs < keepMs) recent.push({ ...entry })
      return recent.sort((a, b) => b.lastSeenMs - a.lastSeenMs)
    },
  }
}

export type RecentUnknowns = ReturnType<typeof createRecentUnknowns>
