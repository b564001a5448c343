/**
 * OsmAnd / Traccar Client listener: its own Bun.serve on OSMAND_PORT. GET or POST, parameters
 * in the query string, a form body or a JSON body (decoders/osmand.ts reads them).
 *
 * 200 once the report is committed (the client then drops it from its queue); 400 for input
 * that cannot be stored (problem JSON naming the parameter); 404 for an unknown device; 413 for
 * a body over the limit; 503 while shutting down; 500 when the commit failed (the client retries).
 */
import type { Clock } from '../clock'
import { DomainError } from '../errors'
import { problemResponse } from '../http/problem'
import type { Logger } from '../log'
import { decodeOsmandJson, decodeOsmandParams, type OsmandResult } from './decoders/osmand'
import type { IngestPipeline } from './pipeline'

export const OSMAND_MAX_BODY_BYTES = 64 * 1024

export interface OsmandListenerOptions {
  pipeline: IngestPipeline
  clock: Clock
  log: Logger
  port: number
  hostname?: string
  maxBodyBytes?: number
}

export interface Listener {
  /** the port actually bound */
  port: number
  /** stop accepting; in-flight requests finish */
  stop(): Promise<void>
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
  if (request.method === 'GET' || !request.body) return decodeOsmandParams(params, nowSeconds)

  const declared = Number(request.headers.get('content-length') ?? '0')
  if (declared > maxBodyBytes) return problemResponse({ title: 'Content Too Large', status: 413, detail: `The body is over ${maxBodyBytes} bytes` })
  const bytes = await request.arrayBuffer()
  if (bytes.byteLength > maxBodyBytes) return problemResponse({ title: 'Content Too Large', status: 413, detail: `The body is over ${maxBodyBytes} bytes` })
  if (bytes.byteLength === 0) return decodeOsmandParams(params, nowSeconds)

  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    return badRequest('The body is not UTF-8 text')
  }
  const type = (request.headers.get('content-type') ?? '').toLowerCase()
  if (type.includes('json') || (!type.includes('form') && /^\s*[[{]/.test(text))) {
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

  async function handle(request: Request): Promise<Response> {
    if (request.method !== 'GET' && request.method !== 'POST') {
      return problemResponse({ title: 'Method Not Allowed', status: 405, detail: 'Use GET or POST' }, { allow: 'GET, POST' })
    }
    const url = new URL(request.url)
    const decoded = await decodeRequest(request, url, Math.floor(clock.now() / 1000), maxBodyBytes)
    if (decoded instanceof Response) return decoded
    if (!decoded.ok) return badRequest(decoded.error.message, decoded.error.parameter)

    const report = decoded.report
    const result = await pipeline.ingest(report)
    if (report.fixes.length > 0 && result.rejected === report.fixes.length) {
      return badRequest('No position could be stored: coordinates out of range or timestamp more than a day ahead')
    }
    return OK()
  }

  const server = Bun.serve({
    port: options.port,
    hostname: options.hostname ?? '0.0.0.0',
    maxRequestBodySize: maxBodyBytes,
    // a phone on a bad network may be slow, but not this slow
    idleTimeout: 30,
    async fetch(request) {
      try {
        return await handle(request)
      } catch (error) {
        if (error instanceof DomainError) {
          return problemResponse({ title: error.title, status: error.status, detail: error.detail })
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
