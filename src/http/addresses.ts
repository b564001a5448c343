/**
 * IP addresses and ranges as the operator writes them (TRUSTED_PROXIES): parsed once, IPv4-mapped
 * IPv6 taken as plain IPv4. A leaf: config.ts validates with it, http/client.ts matches with it.
 */
import ipaddr from 'ipaddr.js'

export type Range = [ipaddr.IPv4 | ipaddr.IPv6, number]

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
export function normalise(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() ? (address as ipaddr.IPv6).toIPv4Address() : address
}
