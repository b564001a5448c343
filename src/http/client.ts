/**
 * Who the client is, as an address: the socket's peer, or, when the peer is one of the
 * operator's trusted proxies (TRUSTED_PROXIES), the right-most address of X-Forwarded-For that
 * is not itself a trusted proxy. Anything left of that is what the client wrote and is never
 * believed; without trusted proxies X-Forwarded-For is ignored altogether.
 */
import ipaddr from 'ipaddr.js'

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

/** The client address of a request: `(request, server) → address`; 'local' when there is no socket (app.handle in tests). */
export function createClientAddress(trustedProxies: readonly string[]) {
  const ranges = trustedProxies.map(parseProxyEntry)
  const trusted = (address: string): boolean => {
    if (!ipaddr.isValid(address)) return false
    const parsed = normalise(ipaddr.parse(address))
    return ranges.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits))
  }
  return function clientAddress(request: Request, server: PeerSource | null | undefined): string {
    const peer = server?.requestIP(request)?.address
    if (peer === undefined) return 'local'
    if (ranges.length === 0 || !trusted(peer)) return peer
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
