/** Schemas shared by every module: ids, datetimes and the problem body, for validation and OpenAPI. */
import { t, type TSchema } from 'elysia'

export const Uuid = t.String({ format: 'uuid', description: 'UUID', examples: ['6f1c2b1e-3a5d-4c1e-9b7a-2d4e5f6a7b8c'] })

export const DateTime = t.String({ format: 'date-time', description: 'ISO 8601 UTC', examples: ['2026-11-25T21:27:24.000Z'] })

export const IdParams = t.Object({ id: Uuid })

/** A list's paging: `limit` (1–1000, default 99) and `offset`, described with what the list holds. */
export function pageFields(items: string) {
  return {
    limit: t.Integer({ title: 'limit', minimum: 1, maximum: 1000, default: 99, description: `Maximum number of ${items} (1–1000)` }),
    offset: t.Integer({ title: 'offset', minimum: 0, maximum: 2_147_483_647, default: 0, description: `Number of ${items} to skip` }),
  }
}

export const ProblemBody = t.Object(
  {
    type: t.String({ examples: ['about:blank'] }),
    title: t.String({ description: 'The HTTP status text' }),
    status: t.Integer({ description: 'The HTTP status code' }),
    detail: t.String(),
    errors: t.Optional(t.Array(t.Object({ path: t.String({ examples: ['/ttl'] }), message: t.String() }))),
  },
  { description: 'RFC 9457 problem details (Content-Type: application/problem+json)' },
)

/** What each error status answers, as an example of its own (documentation only; the answers come from src/errors.ts). */
const PROBLEM_EXAMPLES: Record<number, { title: string; detail: string; errors?: { path: string; message: string }[] }> = {
  400: { title: 'Bad Request', detail: 'Invalid body: /ttl must be an integer from 60 to 31536000', errors: [{ path: '/ttl', message: 'must be an integer from 60 to 31536000' }] },
  401: { title: 'Unauthorized', detail: 'Send Authorization: Bearer <API key or share token>' },
  403: { title: 'Forbidden', detail: 'A share token cannot do this; use an API key' },
  404: { title: 'Not Found', detail: 'No device 6f1c2b1e-3a5d-4c1e-9b7a-2d4e5f6a7b8c (it does not exist or you cannot reach it)' },
  409: { title: 'Conflict', detail: 'A user named "alice" already exists' },
  413: { title: 'Content Too Large', detail: 'The request body is larger than 1048576 bytes' },
  429: { title: 'Too Many Requests', detail: 'Too many failed authentications from this client; try again later' },
  500: { title: 'Internal Server Error', detail: 'Something went wrong on our side; it has been logged' },
  503: { title: 'Service Unavailable', detail: 'Not ready: listeners failing (shutting down)' },
  504: { title: 'Gateway Timeout', detail: 'The database was busy for too long; try again' },
}

export function problemExample(status: number) {
  return { type: 'about:blank', status, ...(PROBLEM_EXAMPLES[status] ?? { title: 'Error', detail: 'Error' }) }
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid parameters',
  401: 'Missing, malformed or unknown bearer token',
  403: 'Not allowed with this token',
  404: 'Not found, or out of your reach',
  409: 'Conflicts with what exists',
  429: 'Too many failed authentications',
  500: 'Internal error',
  503: 'Not ready, or shutting down',
  504: 'The database was busy for too long',
}

/**
 * The OpenAPI responses of a route, declared as documentation rather than as Elysia's
 * `response` validator: validating every answer against its schema cost more than the whole
 * rest of a request (measured: 43 µs of 126 µs for one device, 3.3 ms for 99). The shapes are
 * held by the services' types and the API tests instead.
 */
export function responses(success: Record<number, { schema?: TSchema; description: string; contentType?: string }>, ...errors: number[]) {
  const documented: Record<string, { description: string; content?: Record<string, { schema: object; example?: object }> }> = {}
  for (const [status, { schema, description, contentType }] of Object.entries(success)) {
    documented[status] = schema ? { description, content: { [contentType ?? 'application/json']: { schema } } } : { description }
  }
  for (const status of errors) {
    documented[status] = { description: STATUS_TEXT[status] ?? 'Error', content: { 'application/problem+json': { schema: ProblemBody, example: problemExample(status) } } }
  }
  return documented
}

/** ISO 8601 with milliseconds and Z. */
export const iso = (ms: number) => new Date(ms).toISOString()

/** ISO 8601 with milliseconds and Z, or null. */
export function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString()
}
