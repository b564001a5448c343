/**
 * Who the client is, as an address: the socket's peer, or, when the peer is one of the
 * operator's trusted proxies (TRUSTED_PROXIES), the right-most address of X-Forwarded-For that
 * is not itself a trusted proxy. Anything left of that is what the client wrote and is never
 * believed; without trusted proxies X-Forwarded-For is ignored altogether.
 *
 * Ignoring it has a price when the server does sit behind a proxy nobody named: every client is
 * then the proxy's address, and one client's bad keys get everyone's sign-in refused. So
 * X-Forwarded-For from a peer that is not trusted is watched (`createForwardedForWatch`): a line
 * at warn at once, then at most one an hour, and a warning in /ready's body.
 */
import { Elysia } from 'elysia'
import ipaddr from 'ipaddr.js'
import type { Clock } from '../clock'
import type { Logger } from '../log'

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number]

/** "10.0.0.1", "10.0.0.0/8", "::1", "fd00::/8" → a range; throws a message naming the entry when it is neither */
export function parseProxyEntry(entry: string): Range {
  try {
    if (entry.includes('/')) {
      const [address, bits] = ipaddr.parseCIDR(entry)
      return [normalise(address), address.kind() === 'ipv6' && normalise(address).kind() === 'ipv4' ? bits - 96 : bits]
    }
    const address = normalise(ipaddr.parse(entry))
    return [address, address.kind() === 'ipv4' ? 32 : 128]
  } catch {
    throw new Error(`"${entry}" is not an IP address or CIDR range`)
  }
}

/** IPv4-mapped IPv6 (::ffff:10.0.0.1, as a dual-stack socket reports IPv4 peers) as plain IPv4 */
function normalise(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() ? (address as ipaddr.IPv6).toIPv4Address() : address
}

export interface PeerSource {
  requestIP(request: Request): { address: string } | null
}

/** how often the X-Forwarded-For warning may be written again */
const FORWARDED_FOR_LOG_INTERVAL_MS = 60 * 60 * 1000

/**
 * Requests that came with X-Forwarded-For from a peer TRUSTED_PROXIES does not name. Without
 * TRUSTED_PROXIES every such request is seen (a header lookup a request, `forwardedForPlugin`);
 * with it, those whose client address is asked (sign-in, a failed authentication, a share
 * link's view): telling a trusted peer from another costs reading the peer's address, which
 * other requests never pay for.
 */
export function createForwardedForWatch({ log, clock }: { log: Logger; clock: Clock }) {
  let requests = 0
  let unlogged = 0
  let lastAt = 0
  let lastPeer: string | null = null
  let loggedAt = -Infinity
  const advice = (peer: string | null) =>
    `X-Forwarded-For arrives from ${peer ?? 'a peer'} that TRUSTED_PROXIES does not name: it is ignored, so every client behind ` +
    'that peer counts as one address in the failed-authentication throttle (one client\'s bad keys or passwords then get ' +
    "everyone's sign-in refused). If the server is behind a reverse proxy, add the proxy's address to TRUSTED_PROXIES"
  return {
    /** a request came with X-Forwarded-For from `peer` (null when unknown), which is not trusted */
    seen(peer: string | null): void {
      requests++
      unlogged++
      lastAt = clock.now()
      lastPeer = peer
      if (lastAt - loggedAt < FORWARDED_FOR_LOG_INTERVAL_MS) return
      // requests: how many came since the previous line (1 on the first)
      log.warn(advice(peer), { peer, requests: unlogged })
      loggedAt = lastAt
      unlogged = 0
    },
    /** what /ready says about it (nothing when no such request came since the start) */
    warnings(): string[] {
      if (requests === 0) return []
      return [`${advice(lastPeer)} (${requests} requests since the server started, the last at ${new Date(lastAt).toISOString()})`]
    },
  }
}

export type ForwardedForWatch = ReturnType<typeof createForwardedForWatch>

/** Without TRUSTED_PROXIES, every request's X-Forwarded-For is from an untrusted peer: the watch sees them all. */
export function forwardedForPlugin(trustedProxies: readonly string[], watch: ForwardedForWatch) {
  const plugin = new Elysia({ name: 'forwarded-for' })
  if (trustedProxies.length > 0) return plugin
  return plugin.onRequest(({ request, server }) => {
    if (request.headers.has('x-forwarded-for')) watch.seen((server as PeerSource | null)?.requestIP(request)?.address ?? null)
  })
}

/** The client address of a request: `(request, server) → address`; 'local' when there is no socket (app.handle in tests). */
export function createClientAddress(trustedProxies: readonly string[], watch?: ForwardedForWatch) {
  const ranges = trustedProxies.map(parseProxyEntry)
  const trusted = (address: string): boolean => {
    if (!ipaddr.isValid(address)) return false
    const parsed = normalise(ipaddr.parse(address))
    return ranges.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits))
  }
  return function clientAddress(request: Request, server: PeerSource | null | undefined): string {
    const peer = server?.requestIP(request)?.address
    if (peer === undefined) return 'local'
    if (ranges.length === 0) return peer
    if (!trusted(peer)) {
      if (watch && request.headers.has('x-forwarded-for')) watch.seen(peer)
      return peer
    }
    const forwarded = request.headers.get('x-forwarded-for')
    if (forwarded === null) return peer
    const hops = forwarded.split(',').map((hop) => hop.trim())
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!
      // a hop that is not an address at all was written by someone untrusted: stop believing here
      if (!ipaddr.isValid(hop)) return peer
      if (!trusted(hop)) return normalise(ipaddr.parse(hop)).toString()
    }
    return peer
  }
}

export type ClientAddress = ReturnType<typeof createClientAddress>
