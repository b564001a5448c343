/**
 * Reading a JSON request body with bounds, for every API route that takes one. The body is read
 * only after authentication (see auth.ts), never more than `maxBytes` of it, and its nesting is
 * checked before it is parsed: a small body of 20,000 nested `[` once cost gigabytes in the
 * validator's error message, and 100,000 overflowed the stack.
 */
import { Invalid, PayloadTooLarge } from '../errors'

/** 1 MiB: the largest body the API takes (a share link of 1,000 devices is about 40 KB) */
export const MAX_BODY_BYTES = 1 << 20
/** deeper than any body the API takes (they are 3 levels deep), shallow enough that no error message grows with it */
export const MAX_JSON_DEPTH = 16

export interface BodyLimits {
  maxBytes: number
  maxDepth: number
}

export const defaultBodyLimits: BodyLimits = { maxBytes: MAX_BODY_BYTES, maxDepth: MAX_JSON_DEPTH }

const tooLarge = (maxBytes: number) => new PayloadTooLarge(`The request body is larger than ${maxBytes} bytes`)

/** The body's bytes, refused as soon as they pass `maxBytes` (the declared length is believed first, never trusted). */
export async function readCapped(request: Request, maxBytes: number): Promise<Uint8Array | null> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes)
  if (request.body === null) return null
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel().catch(() => {})
      throw tooLarge(maxBytes)
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0]!
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/** The deepest nesting of arrays and objects in `text`, stopping as soon as it passes `limit`; strings are skipped. */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // backslash: the next character is escaped
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * The body as JSON, or null when there is none (null rather than undefined: Elysia would try its
 * own parsers after an undefined). Every body is read as JSON whatever its
 * Content-Type says (the API takes nothing else), so `curl -d` and `fetch` with a string body work.
 */
export async function readJsonBody(request: Request, limits: BodyLimits = defaultBodyLimits): Promise<unknown> {
  const bytes = await readCapped(request, limits.maxBytes)
  if (bytes === null || bytes.byteLength === 0) return null
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw new Invalid('The request body is not valid UTF-8')
  }
  if (jsonDepthExceeds(text, limits.maxDepth)) throw new Invalid(`The request body nests arrays and objects deeper than ${limits.maxDepth} levels`)
  try {
    return JSON.parse(text)
  } catch {
    throw new Invalid('The request body is not valid JSON')
  }
}

/**
 * The parse hook of a route that takes a JSON body without authentication (sign-in, first-run
 * setup): `{ parse: boundedJson() }` reads it with the bounds the auth macro uses, so Elysia's
 * own parser never reads an unbounded body.
 */
export function boundedJson(limits: BodyLimits = defaultBodyLimits) {
  return ({ request }: { request: Request }): Promise<unknown> => readJsonBody(request, limits)
}
