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
import { normalise, parseProxyEntry } from './addresses'


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
/** `address → whether it is one of TRUSTED_PROXIES` */
function trustedBy(trustedProxies: readonly string[]): (address: string) => boolean {
  const ranges = trustedProxies.map(parseProxyEntry)
  return (address) => {
    if (ranges.length === 0 || !ipaddr.isValid(address)) return false
    const parsed = normalise(ipaddr.parse(address))
    return ranges.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits))
  }
}

export function createClientAddress(trustedProxies: readonly string[], watch?: ForwardedForWatch) {
  const ranges = trustedProxies.map(parseProxyEntry)
  const trusted = trustedBy(trustedProxies)
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

/** a name or address with an optional port, and nothing else (no path, no user) */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/

export type RequestOrigin = (request: Request, server: PeerSource | null | undefined) => string | null

/** the first value of a proxy's header ("https, http" → "https"), or null */
function firstValue(header: string | null): string | null {
  const value = header?.split(',')[0]?.trim()
  return value ? value : null
}

/**
 * The origin a request was sent to, as the browser that sent it saw it: the scheme and the Host
 * header (`http://192.168.1.20:3000`), or null when the Host is not a host. Behind one of
 * TRUSTED_PROXIES the proxy's X-Forwarded-Proto and X-Forwarded-Host say it instead (a TLS
 * proxy talks plain HTTP to the server); from any other peer they are ignored. A page elsewhere
 * cannot make a browser send another site's Host, so this is the origin a CSRF check compares
 * the Origin header with.
 */
export function createRequestOrigin(trustedProxies: readonly string[]): RequestOrigin {
  const trusted = trustedBy(trustedProxies)
  const proxied = trustedProxies.length > 0
  return function requestOrigin(request, server) {
    const url = new URL(request.url)
    let scheme = url.protocol.slice(0, -1)
    let host = request.headers.get('host') ?? url.host
    if (proxied) {
      const peer = server?.requestIP(request)?.address
      if (peer !== undefined && trusted(peer)) {
        const proto = firstValue(request.headers.get('x-forwarded-proto'))?.toLowerCase()
        if (proto === 'http' || proto === 'https') scheme = proto
        host = firstValue(request.headers.get('x-forwarded-host')) ?? host
      }
    }
    if (!HOST.test(host)) return null
    // the URL parser lower-cases the host and drops a default port, as browsers write Origin
    try {
      return new URL(`${scheme}://${host}`).origin
    } catch {
      return null
    }
  }
}
