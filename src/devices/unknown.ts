/**
 * Unknown identifiers that tried to report in the last 24 hours (ingest/recent-unknowns.ts), for
 * an admin who is adding the device that was just switched on.
 *
 * Tenancy: an unknown identifier belongs to no account, and what strangers send (an identifier,
 * an address) must not reach the admins of every account on a shared server. So the list is shown
 * only on a server with one account, whose admins are then its operators; with two accounts or
 * more nobody is shown any (`listed: false`, with the reason: an answer, not an error, as the
 * console asks on every visit), and the operator finds unknown identifiers in the server's log
 * ("device refused", once per source and minute). The rule is read at every request: the list
 * stops the moment a second account is made.
 */
import type { Clock } from '../clock'
import type { RecentUnknowns } from '../ingest/recent-unknowns'
import type { UnknownIdentifierStore } from '../store/devices'

export interface UnknownIdentifierBody {
  identifier: string
  protocol: string
  first_seen: string
  last_seen: string
  attempts: number
  source: string
}

/** What GET /devices/unknown answers: the list, or why there is none to show on this server. */
export interface UnknownIdentifiersBody {
  listed: boolean
  /** why `listed` is false (a server shared by accounts), else null */
  reason: string | null
  identifiers: UnknownIdentifierBody[]
}

export const SHARED_SERVER_REASON =
  "Unknown identifiers are listed only on a server with one account: they belong to no account, and one account's admins must not see what is sent to another's. The server's log names them (\"device refused\")."

export function createUnknownIdentifiers({ store, clock, recent }: { store: UnknownIdentifierStore; clock: Clock; recent: RecentUnknowns | null }) {
  return {
    /** the list, most recently seen first; none (`listed` false) on a server with more than one account */
    async list(): Promise<UnknownIdentifiersBody> {
      if ((await store.accountCount()) > 1) return { listed: false, reason: SHARED_SERVER_REASON, identifiers: [] }
      const seen = recent?.list(clock.now()) ?? []
      if (seen.length === 0) return { listed: true, reason: null, identifiers: [] }
      // a device added since (by any process) is no longer unknown
      const known = await store.knownIdentifiers(seen.map((s) => s.identifier))
      const identifiers = seen
        .filter((s) => !known.has(s.identifier))
        .map((s) => ({
          identifier: s.identifier,
          protocol: s.protocol,
          first_seen: new Date(s.firstSeenMs).toISOString(),
          last_seen: new Date(s.lastSeenMs).toISOString(),
          attempts: s.attempts,
          source: s.address,
        }))
      return { listed: true, reason: null, identifiers }
    },
  }
}

export type UnknownIdentifiers = ReturnType<typeof createUnknownIdentifiers>
