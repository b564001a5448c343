/**
 * Every HTTP API request gets an id (a well-formed incoming X-Request-Id, or a new one), echoed
 * in the response's X-Request-Id, and one access log line and its metrics once answered.
 *
 * What is logged is chosen, never dumped: method, the route template, status, duration, id, and
 * the URL with credentials cut out (`token=` and other secret query parameters, the short-link
 * code, and anything shaped like a token, key or code wherever it stands). Headers are never
 * logged, so the Authorization header cannot leak through here.
 */
import { Elysia } from 'elysia'
import type { Logger } from '../log'
import type { ServerMetrics } from './server-metrics'

export const REQUEST_ID_HEADER = 'x-request-id'
/** what we accept from a client or a proxy: short, printable, nothing to inject into a log */
const WELL_FORMED_ID = /^[A-Za-z0-9._:@/+=-]{8,128}$/
/** query parameters whose value is a credential */
const SECRET_PARAMS = /^(token|key|api_key|apikey|access_token|password|secret)$/i
/** routes a probe or a scraper calls every few seconds: logged at debug, not info */
const QUIET_ROUTES = new Set(['/health', '/ready', '/metrics'])
const UNMATCHED = 'unmatched'
/** anything else a client invents is counted as OTHER, so it cannot grow the metrics */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

export function requestIdOf(request: Request): string {
  const incoming = request.headers.get(REQUEST_ID_HEADER)
  return incoming !== null && WELL_FORMED_ID.test(incoming) ? incoming : crypto.randomUUID()
}

const REDACTED = '[redacted]'
/** a UUID is an id we want in the log, though its 36 characters look like a token */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** runs of base64url characters: share tokens (43), API keys (`trk_` + 43), short codes (10); a
 * percent escape left after decodeUnreserved is a separator, matched only to be kept whole */
const TOKEN_CHARS = /%[0-9A-Fa-f]{2}|[A-Za-z0-9_-]+/g
const ALNUM_RUN = /[A-Za-z0-9]+/g
/** a run this long is a credential whatever its place: a share token, an API key, another secret */
const LONG_SECRET_LENGTH = 32
/** the length range of a short code (SHORT_CODE in share/tokens.ts) */
const CODE_MIN = 8
const CODE_MAX = 32

/** how many of lower case, upper case and digits `run` mixes: random codes mix them, words of an API path do not */
function characterClasses(run: string): number {
  return Number(/[a-z]/.test(run)) + Number(/[A-Z]/.test(run)) + Number(/[0-9]/.test(run))
}

/**
 * Cuts, wherever they stand, the runs of characters shaped like a credential: 32 or more
 * base64url characters (not a UUID), and 8 to 32 letters and digits that mix case or digits
 * (a short code; API words are lower case, ids are UUIDs, times are digits alone or short runs).
 */
function redactShapes(text: string): string {
  return text.replace(TOKEN_CHARS, (run) => {
    if (run.startsWith('%') || UUID.test(run)) return run
    if (run.length >= LONG_SECRET_LENGTH) return REDACTED
    return run.replace(ALNUM_RUN, (part) => (part.length >= CODE_MIN && part.length <= CODE_MAX && characterClasses(part) >= 2 ? REDACTED : part))
  })
}

/** %41 → A: escapes of unreserved characters mean the same (RFC 3986 §6.2.2.2), and could hide a token's shape */
function decodeUnreserved(text: string): string {
  return text.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16))
    return /[A-Za-z0-9._~-]/.test(char) ? char : escape
  })
}

/**
 * The path and query of a URL as it may be logged: secret parameters' values replaced, the
 * short-link code too, and anything shaped like a token, a key or a code wherever it stands, so
 * a mangled URL (`/share??token=…`, `//s/<code>`, a token in a path segment) leaks nothing either.
 */
/** the request id the request log gave this request (X-Request-Id, on the answer's headers), for the audit log */
export function loggedRequestId(set: { headers: Record<string, unknown> }): string | null {
  const id = set.headers[REQUEST_ID_HEADER]
  return typeof id === 'string' ? id : null
}

export function redactUrl(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  let rest = start < 0 ? '/' : decodeUnreserved(url.slice(start))
  const hash = rest.indexOf('#')
  if (hash >= 0) rest = rest.slice(0, hash)
  const q = rest.indexOf('?')
  let path = q < 0 ? rest : rest.slice(0, q)
  // /s/<code> redirects to the share page with its token: the code is as good as the token, whatever its shape
  path = redactShapes(path.replace(/^\/+s\/+[^/]+/, `/s/${REDACTED}`))
  if (q < 0) return path
  const query = rest
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      const name = eq < 0 ? pair : pair.slice(0, eq)
      let decoded = name
      try {
        decoded = decodeURIComponent(name)
      } catch {}
      // `??token=` and the like: the name is what is left after the stray punctuation
      return SECRET_PARAMS.test(decoded.replace(/^[^A-Za-z0-9_]+/, '')) ? `${name}=${REDACTED}` : redactShapes(pair)
    })
    .join('&')
  return `${path}?${query}`
}

interface Started {
  at: number
  id: string
}

export interface RequestLogOptions {
  log: Logger
  metrics?: ServerMetrics
}

/**
 * Use it on the root app right after the problem-details plugin, before any route: Elysia's
 * after-response hook only reaches the routes registered after it.
 */
export function requestLog({ log, metrics }: RequestLogOptions) {
  const started = new WeakMap<Request, Started>()
  return new Elysia({ name: 'request-log' })
    .onRequest(({ request, set }) => {
      const id = requestIdOf(request)
      started.set(request, { at: performance.now(), id })
      set.headers[REQUEST_ID_HEADER] = id
    })
    .onAfterResponse({ as: 'global' }, ({ request, route, set, responseValue }) => {
      const begun = started.get(request)
      const seconds = begun ? (performance.now() - begun.at) / 1000 : 0
      // a Response returned by a handler carries its own status; otherwise Elysia's set.status
      // (problem details set it too, see http/problem.ts)
      const status = responseValue instanceof Response ? responseValue.status : typeof set.status === 'number' ? set.status : 200
      const template = route || UNMATCHED
      const method = METHODS.has(request.method) ? request.method : 'OTHER'
      metrics?.httpRequests.inc([method, template, String(status)])
      metrics?.httpDuration.observe([method, template], seconds)
      const level = QUIET_ROUTES.has(template) && status < 400 ? 'debug' : 'info'
      // redacting and serialising cost a microsecond or two a request: not for a line nobody writes
      if (!log.enabled(level)) return
      log[level]('request', {
        id: begun?.id,
        method: request.method,
        route: template,
        url: redactUrl(request.url),
        status,
        ms: Math.round(seconds * 10_000) / 10,
      })
    })
}
