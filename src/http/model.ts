/** Schemas shared by every module: ids, datetimes and the problem body, for validation and OpenAPI. */
import { t } from 'elysia'

export const Uuid = t.String({ format: 'uuid', description: 'UUID', examples: ['6f1c2b1e-3a5d-4c1e-9b7a-2d4e5f6a7b8c'] })

export const DateTime = t.String({ format: 'date-time', description: 'ISO 8601 UTC', examples: ['2026-11-25T21:27:24.000Z'] })

export const IdParams = t.Object({ id: Uuid })

export const ProblemBody = t.Object(
  {
    type: t.String({ examples: ['about:blank'] }),
    title: t.String({ examples: ['Not Found'] }),
    status: t.Integer({ examples: [404] }),
    detail: t.String(),
    errors: t.Optional(t.Array(t.Object({ path: t.String({ examples: ['/ttl'] }), message: t.String() }))),
  },
  { description: 'RFC 9457 problem details (Content-Type: application/problem+json)' },
)

/** Problem responses to declare on a route, by status. */
export function problems(...statuses: number[]) {
  return Object.fromEntries(statuses.map((s) => [s, ProblemBody])) as Record<number, typeof ProblemBody>
}

/** ISO 8601 with milliseconds and Z, or null. */
export function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString()
}
