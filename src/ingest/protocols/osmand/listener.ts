/**
 * OsmAnd / Traccar Client listener: its own Bun.serve on OSMAND_PORT. GET or POST, parameters
 * in the query string, a form body or a JSON body (decoder.ts reads them).
 *
 * 200 once the report is committed (the client then drops it from its queue); 400 for input
 * that cannot be stored (problem JSON naming the parameter); 404 for an unknown or unlinked
 * identifier (the client keeps the report and retries, so a phone that reports before it is
 * registered loses nothing, and its user sees why); 413 for a body over the limit; 503 while
 * shutting down; 500 when the commit failed (the client retries).
 *
 * The identifier is the device's only credential: the 404 tells a guesser which identifiers
 * exist, as GT06's and Teltonika's login answers do by the nature of their protocols, so what
 * guards them is the ration of unknown identifiers per address (sources.ts): past it an unknown
 * identifier is masked, answered 200 as a known one would be (after the same commit wait) and
 * its report dropped. Every check that does not need the device is still answered before the
 * lookup.
 */
import type { Clock } from '../../../clock'
import { DomainError } from '../../../errors'
import { jsonDepthExceeds, MAX_JSON_DEPTH, readCapped } from '../../../http/body'
import { problemResponse } from '../../../http/problem'
import type { Logger } from '../../../log'
import { MaskedUnknownDevice } from '../../pipeline'
import { decodeOsmandJson, decodeOsmandParams, type OsmandResult } from './decoder'
import { osmandModel } from './model'
import type { HttpListenerOptions, Listener } from '../protocol'

/**
 * 1 MiB: room for the decoder's largest batch (1,000 Traccar Client locations of ~0.5 KB); the
 * stock client sends one location (under 1 KB) a request.
 */
export const OSMAND_MAX_BODY_BYTES = 1 << 20

export interface OsmandListenerOptions extends HttpListenerOptions {
  maxBodyBytes?: number
}

const OK = () => new Response('OK', { headers: { 'content-type': 'text/plain' } })
const badRequest = (detail: string, parameter?: string) =>
  problemResponse({
    title: 'Bad Request',
    status: 400,
    detail,
    ...(parameter ? { errors: [{ path: `/${parameter}`, message: detail }] } : {}),
  })

async function decodeRequest(request: Request, url: URL, nowSeconds: number, maxBodyBytes: number): Promise<OsmandResult | Response> {
  const params = url.searchParams
  // the declared length first, then never more than the cap is read (PayloadTooLarge)
  const bytes = await readCapped(request, maxBodyBytes)
  if (request.method === 'GET' || bytes === null || bytes.byteLength === 0) return decodeOsmandParams(params, nowSeconds)

  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    return badRequest('The body is not UTF-8 text')
  }
  const type = (request.headers.get('content-type') ?? '').toLowerCase()
  if (type.includes('json') || (!type.includes('form') && /^\s*[[{]/.test(text))) {
    // checked before parsing: 100,000 nested `[` then cost one scan, not 100,000 arrays
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
      return badRequest(`The JSON body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`, 'body')
    }
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      return badRequest('The body is not valid JSON', 'body')
    }
    return decodeOsmandJson(body, nowSeconds)
  }
  // Form body; parameters in the query string come first (the decoder keeps the first of each).
  const merged = new URLSearchParams(params)
  for (const [key, value] of new URLSearchParams(text)) merged.append(key, value)
  return decodeOsmandParams(merged, nowSeconds)
}

export function startOsmandListener(options: OsmandListenerOptions): Listener {
  const { pipeline, clock, log } = options
  const maxBodyBytes = options.maxBodyBytes ?? OSMAND_MAX_BODY_BYTES

  async function handle(request: Request, server: { requestIP(request: Request): { address: string } | null }): Promise<Response> {
    if (request.method !== 'GET' && request.method !== 'POST') {
      return problemResponse({ title: 'Method Not Allowed', status: 405, detail: 'Use GET or POST' }, { allow: 'GET, POST' })
    }
    const url = new URL(request.url)
    const decoded = await decodeRequest(request, url, Math.floor(clock.now() / 1000), maxBodyBytes)
    if (decoded instanceof Response) return decoded
    if (!decoded.ok) return badRequest(decoded.error.message, decoded.error.parameter)

    const report = decoded.report
    if (report.fixes.length > 0 && pipeline.refusedFixes(report) === report.fixes.length) {
      return badRequest('No position could be stored: coordinates out of range, or a timestamp more than a day ahead or older than MAX_FIX_AGE_DAYS')
    }
    const source = server.requestIP(request)?.address ?? 'local'
    try {
      await pipeline.ingest(report, { source, protocol: 'osmand', builtinModel: osmandModel.id })
    } catch (error) {
      // an unknown identifier past its address's ration: the answer a known one gets, nothing stored
      if (error instanceof MaskedUnknownDevice) return OK()
      throw error
    }
    return OK()
  }

  const server = Bun.serve({
    port: options.port,
    hostname: options.hostname ?? '0.0.0.0',
    // one process a port: a second server must fail to bind (EADDRINUSE), not take half the reports
    reusePort: false,
    // Bun's own limit answers without problem details: ours (readCapped) acts first; Bun's is a
    // backstop, since nothing past ours is ever read
    maxRequestBodySize: Math.max(maxBodyBytes * 16, 64 << 20),
    // a phone on a bad network may be slow, but not this slow
    idleTimeout: 30,
    async fetch(request, server) {
      try {
        return await handle(request, server)
      } catch (error) {
        if (error instanceof DomainError) {
          // after a 413 the rest of the body is never read, so the connection cannot carry another request
          const headers = error.status === 413 ? { ...error.headers, connection: 'close' } : error.headers
          return problemResponse({ title: error.title, status: error.status, detail: error.detail }, headers)
        }
        log.error('osmand request failed', { error: (error as Error)?.message })
        return problemResponse({ title: 'Internal Server Error', status: 500, detail: 'The position could not be stored; try again' })
      }
    },
    error(error) {
      log.error('osmand listener error', { error: error.message })
      return problemResponse({ title: 'Internal Server Error', status: 500, detail: 'Internal error' })
    },
  })
  log.info('osmand listening', { port: server.port })

  return {
    port: server.port!,
    async stop() {
      // Stop accepting; requests in flight get their commit and their answer, then idle
      // keep-alive connections are cut.
      const finished = server.stop()
      pipeline.flush()
      await Promise.race([finished, Bun.sleep(1000)])
      await server.stop(true)
    },
  }
}
