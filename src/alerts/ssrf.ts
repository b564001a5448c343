/**
 * The SSRF guard of webhooks: a notification's URL is chosen by an account admin, but the request
 * is made by the server, from inside its network. Only http(s) is sent, and only to public
 * unicast addresses: private, loopback, link-local, and every other special range ipaddr.js
 * names (multicast, CGNAT, documentation, NAT64, 6to4, Teredo…) are refused, unless
 * WEBHOOK_ALLOW_PRIVATE=1 (tests, on-premise gateways whose receivers are on the LAN).
 *
 * Checked twice. At creation (and when the URL changes): a literal address, a `localhost` name,
 * or a name that resolves to a refused address is a 400; a name that does not resolve (yet, or
 * offline) is accepted. At each attempt: the name is resolved again and every address it has
 * must be allowed. Plain http then connects to the very address that was checked (the URL's host
 * goes in the Host header), so a name that changes its answer between the check and the
 * connection (DNS rebinding) cannot reach the inside; https connects by name, and a rebound name
 * fails the TLS check (the inside service holds no certificate for it). Redirects are never
 * followed (delivery.ts): a 3xx is a failed attempt, so no hop escapes the check.
 */
import { lookup } from 'node:dns/promises'
import ipaddr from 'ipaddr.js'

/** longest webhook URL accepted */
export const MAX_URL_LENGTH = 2048
/** how long creation waits for DNS before accepting a name it could not resolve */
const CREATION_LOOKUP_MS = 2000

/** A webhook target the guard refuses; the message says why, without any secret. */
export class TargetRefused extends Error {}

/** name → addresses (all of them, as the system resolver gives them) */
export type Resolver = (hostname: string) => Promise<string[]>

export const systemResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address)

/**
 * Why `address` may not be a webhook target, or null when it may (a public unicast address).
 * IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
 */
export function refusedAddress(address: string): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.process(address.replace(/%.*$/, ''))
  } catch {
    return `${address} is not an IP address`
  }
  const range = parsed.range()
  if (range === 'unicast') {
    // ::a.b.c.d (IPv4-compatible, deprecated) is not in ipaddr.js's table; nothing public lives there
    if (parsed.kind() === 'ipv6' && parsed.match(ipaddr.IPv6.parse('::'), 96)) return `${address} is in a reserved range (IPv4-compatible IPv6)`
    return null
  }
  const named: Record<string, string> = {
    private: 'a private',
    loopback: 'a loopback',
    linkLocal: 'a link-local',
    uniqueLocal: 'a private (unique local)',
    unspecified: 'an unspecified',
    multicast: 'a multicast',
    broadcast: 'the broadcast',
    carrierGradeNat: 'a carrier-grade NAT',
  }
  return `${address} is ${named[range] ?? `a special-purpose (${range})`} address`
}

/** `localhost` and names under it are loopback by definition (RFC 6761), whatever a resolver says. */
function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '')
  return name === 'localhost' || name.endsWith('.localhost')
}

/** The host of a parsed URL as an address, without IPv6 brackets; null for a name. */
function literalAddress(url: URL): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  return ipaddr.isValid(host) ? host : null
}

/**
 * The URL as stored, or why not (a message for the `/channel/url` field): absolute http(s), a
 * host, no user name or password (the URL is shown in answers and logs; a credential belongs in
 * `secret`), at most MAX_URL_LENGTH characters.
 */
export function parseWebhookUrl(raw: string): URL {
  if (raw.length > MAX_URL_LENGTH) throw new TargetRefused(`must be at most ${MAX_URL_LENGTH} characters`)
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new TargetRefused('must be an absolute http:// or https:// URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TargetRefused(`must be http:// or https://, not ${url.protocol}//`)
  if (url.hostname === '') throw new TargetRefused('must name a host')
  if (url.username !== '' || url.password !== '') throw new TargetRefused('must not hold a user name or password (answers show the URL; the receiver checks X-Tracker-Signature instead)')
  return url
}

/** Where one attempt connects: the URL to fetch and the Host header to send with it (when pinned to an address). */
export interface Target {
  url: string
  host: string | null
}

export interface WebhookGuardOptions {
  /** WEBHOOK_ALLOW_PRIVATE */
  allowPrivate: boolean
  resolve?: Resolver
  /** whether an address may be a target; default: `refusedAddress` (tests narrow or widen it) */
  refuse?: (address: string) => string | null
}

export function createWebhookGuard(options: WebhookGuardOptions) {
  const resolve = options.resolve ?? systemResolver
  const refuse = options.refuse ?? refusedAddress
  const allowed = (address: string) => {
    const why = refuse(address)
    if (why !== null) throw new TargetRefused(`${why}; webhooks may not target private, loopback or link-local addresses (WEBHOOK_ALLOW_PRIVATE=1 allows them)`)
  }

  return {
    allowPrivate: options.allowPrivate,

    /**
     * At creation or a change of URL: the URL as stored, or TargetRefused (a 400 for the caller).
     * A name that cannot be resolved within 2 s is accepted: each attempt checks it again.
     */
    async checkNew(raw: string): Promise<string> {
      const url = parseWebhookUrl(raw)
      if (options.allowPrivate) return url.href
      const literal = literalAddress(url)
      if (literal !== null) {
        allowed(literal)
        return url.href
      }
      if (isLocalhostName(url.hostname)) throw new TargetRefused(`${url.hostname} is a loopback name; webhooks may not target private, loopback or link-local addresses (WEBHOOK_ALLOW_PRIVATE=1 allows them)`)
      let timer: ReturnType<typeof setTimeout> | undefined
      const addresses = await Promise.race([
        resolve(url.hostname).catch(() => null),
        new Promise<null>((done) => (timer = setTimeout(() => done(null), CREATION_LOOKUP_MS))),
      ]).finally(() => clearTimeout(timer))
      for (const address of addresses ?? []) allowed(address)
      return url.href
    },

    /**
     * At each attempt: where to connect, after resolving the name again; TargetRefused when the
     * URL, or any address its name has now, is refused, or the name does not resolve.
     */
    async target(raw: string, signal?: AbortSignal): Promise<Target> {
      const url = parseWebhookUrl(raw)
      if (options.allowPrivate) return { url: url.href, host: null }
      const literal = literalAddress(url)
      if (literal !== null) {
        allowed(literal)
        return { url: url.href, host: null }
      }
      if (isLocalhostName(url.hostname)) throw new TargetRefused(`${url.hostname} is a loopback name`)
      const addresses = await abortable(
        resolve(url.hostname).catch((error: unknown) => {
          throw new TargetRefused(`${url.hostname} does not resolve (${(error as { code?: string }).code ?? 'no address'})`)
        }),
        signal,
      )
      if (addresses.length === 0) throw new TargetRefused(`${url.hostname} does not resolve`)
      for (const address of addresses) allowed(address)
      if (url.protocol === 'https:') return { url: url.href, host: null }
      // plain http: connect to the address just checked, naming the host in the Host header
      const host = url.host
      const first = addresses[0]!
      url.hostname = first.includes(':') ? `[${first}]` : first
      return { url: url.href, host }
    },
  }
}

export type WebhookGuard = ReturnType<typeof createWebhookGuard>

/** `work`, or the signal's reason once it fires first */
function abortable<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}
