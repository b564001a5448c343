/**
 * Operations endpoints: GET /health (alive), GET /ready (can serve), GET /metrics (Prometheus).
 * No data behind any of them; /metrics wants `Authorization: Bearer <METRICS_TOKEN>` when set.
 */
import { Elysia, t } from 'elysia'
import { timingSafeEqual } from 'node:crypto'
import { Unauthorized, Unavailable } from '../errors'
import { bearerToken } from '../http/auth'
import { responses } from '../http/model'
import { PROTOCOLS } from '../ingest/protocols'
import { databaseFreeBytes, readiness, type ServerStatus } from './health'
import { METRICS_CONTENT_TYPE } from './metrics'
import type { ServerMetrics } from './server-metrics'
import type { MaintenanceStore } from '../store/maintenance'

export interface OpsDeps {
  /** whether the database answers and is migrated, and where its file is */
  database: MaintenanceStore
  status: ServerStatus
  metrics: ServerMetrics
  /** METRICS_TOKEN; null leaves /metrics open (bind it to a private interface then) */
  metricsToken: string | null
  /** READY_MIN_FREE_MB in bytes: less free space where the database is makes /ready 503; 0 turns it off */
  minFreeBytes: number
  /** free bytes where the database is; default statfs of its directory (tests inject one) */
  freeBytes?: () => number | null
  /** what an operator should know that does not stop the server serving (X-Forwarded-For from an untrusted peer) */
  warnings?: () => string[]
}

const sha256 = (text: string) => new Bun.CryptoHasher('sha256').update(text).digest()

/** Throws Unauthorized unless the request carries the metrics token (compared in constant time). */
export function checkMetricsToken(request: Request, expected: string | null): void {
  if (expected === null) return
  const token = bearerToken(request)
  if (token === null || token === '') throw new Unauthorized('Send Authorization: Bearer <METRICS_TOKEN>', false)
  if (!timingSafeEqual(sha256(token), sha256(expected))) throw new Unauthorized('Wrong metrics token', true)
}

const Checks = t.Object({
  database: t.Union([t.Literal('ok'), t.Literal('failing')]),
  migrations: t.Union([t.Literal('ok'), t.Literal('failing')]),
  listeners: t.Union([t.Literal('ok'), t.Literal('failing')]),
  disk: t.Union([t.Literal('ok'), t.Literal('failing')]),
})

const Listeners = t.Record(t.String(), t.Union([t.Literal('up'), t.Literal('off')]), {
  description: `Each device protocol's listener: ${PROTOCOLS.map((p) => `\`${p.name}\` (${p.portVariable})`).join(', ')}; \`off\` when its port variable is 0`,
})

export function opsRoutes({ database, status, metrics, metricsToken, minFreeBytes, freeBytes = () => databaseFreeBytes(database.file), warnings = () => [] }: OpsDeps) {
  const disk = { freeBytes, minFreeBytes }
  return new Elysia({ name: 'ops' })
    .get('/health', () => ({ status: 'ok' as const }), {
      detail: {
        tags: ['Operations'],
        summary: 'Liveness',
        description: 'Always 200 while the process answers. No authentication, no data. For a supervisor that restarts a hung process.',
        security: [],
        responses: responses({ 200: { schema: t.Object({ status: t.Literal('ok') }), description: 'Alive' } }),
      },
    })
    .get(
      '/ready',
      async () => {
        const result = await readiness(database, status, disk)
        if (!result.ready) {
          const failing = Object.entries(result.checks).filter(([, v]) => v !== 'ok').map(([k]) => k)
          throw new Unavailable(`Not ready: ${failing.join(', ')} failing (${result.reasons.join('; ')})`)
        }
        const notes = warnings()
        return { status: 'ready' as const, checks: result.checks, ...(status.listeners ? { listeners: status.listeners } : {}), ...(notes.length > 0 ? { warnings: notes } : {}) }
      },
      {
        detail: {
          tags: ['Operations'],
          summary: 'Readiness',
          description:
            '200 when the database answers, every migration is applied, the device listeners are up and the database\'s file system ' +
            'has at least READY_MIN_FREE_MB free (default 64; `disk`); 503 (problem details naming the failing checks and why) ' +
            `otherwise, and from the moment a shutdown begins. A running server also says which device listeners it has (\`listeners\`: ` +
            `${PROTOCOLS.map((p) => p.name).join(', ')}; \`off\` when turned off). ` +
            '`warnings` (present only when there is one) tells what an operator should fix but does not stop the server serving: ' +
            'X-Forwarded-For arriving from a peer TRUSTED_PROXIES does not name (a reverse proxy nobody named makes every client one ' +
            'address in the failed-authentication throttle). A warning never makes it 503: any client can send that header. ' +
            'No authentication, no data. For a load balancer.',
          security: [],
          responses: responses(
            { 200: { schema: t.Object({ status: t.Literal('ready'), checks: Checks, listeners: t.Optional(Listeners), warnings: t.Optional(t.Array(t.String())) }), description: 'Ready' } },
            503,
          ),
        },
      },
    )
    .get(
      '/metrics',
      async ({ request }) => {
        checkMetricsToken(request, metricsToken)
        await metrics.collect()
        return new Response(metrics.registry.render(), { headers: { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' } })
      },
      {
        detail: {
          tags: ['Operations'],
          summary: 'Prometheus metrics',
          description:
            'Prometheus text format 0.0.4: HTTP requests by route template and status with a latency histogram, fixes ingested by ' +
            'protocol, ingest batch commit time, connected devices, TCP connections, database and WAL size, rows deleted by ' +
            'retention. When the server has a METRICS_TOKEN, send it as `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise); ' +
            'without one the endpoint is open.',
          responses: responses({ 200: { schema: t.String(), description: 'Metrics', contentType: METRICS_CONTENT_TYPE } }, 401),
        },
      },
    )
}
