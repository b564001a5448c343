import { Elysia, t } from 'elysia'
import type { authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { DEFAULT_GAP_THRESHOLD_SECONDS } from '../track'
import { EventRecord, RangeQuery, RouteQuery, RouteResult, TravelResult } from './model'
import { HISTORY_REQUESTS_PER_PRINCIPAL, type HistoryService, type Thresholds } from './service'

const ERRORS = [400, 401, 403, 404, 429, 500, 503, 504]
const RANGE_RULES = '`from` and `to` are required integer Unix seconds, `from` ≤ `to`, at most 31 days apart; otherwise 400.'
const IN_FLIGHT_RULE =
  `At most ${HISTORY_REQUESTS_PER_PRINCIPAL} route or travels requests may be in flight at once for one user: their keys, sessions and every ` +
  'share link they made together (a share token spends the budget of the user who made its link, however many links or holders), ' +
  'a route counting until its body has been sent; more are 429 with `Retry-After: 1`. The server as a whole holds at most ' +
  'HISTORY_MEMORY_MB (default 64 MiB) of them, reckoned from the window\'s fixes (96 bytes a fix) before anything is read: a request ' +
  'that does not fit waits its turn, first come first served (one alone always runs), at most 5 s and with at most 64 waiting; ' +
  'beyond, 503 with `Retry-After: 1`. The work of every request in flight is cut into steps that take turns, so other requests are answered meanwhile.'

const GAP_RULE =
  `A silence longer than \`gap_threshold_time\` (default ${DEFAULT_GAP_THRESHOLD_SECONDS} s) after which` +
  ' the device reports from farther than the stop radius is a gap: ' +
  'it ends the travel before it and counts as neither driving time nor distance; within the radius it is part of a stop. '

const thresholds = (query: { stop_threshold_time: number; gap_threshold_time: number }): Thresholds => ({
  stopThresholdSeconds: query.stop_threshold_time,
  gapThresholdSeconds: query.gap_threshold_time,
})

/** The documented responses, with what a 429 means here (the shared text speaks of authentication). */
function historyResponses(success: Parameters<typeof responses>[0]) {
  const documented = responses(success, ...ERRORS)
  return {
    ...documented,
    429: { ...documented[429], description: 'Too many history requests in flight for this user (or the user who made the share link), or too many failed authentications' },
    503: { ...documented[503], description: 'The history memory budget of the server stayed taken (HISTORY_MEMORY_MB), or too many requests wait for it' },
  }
}

/** A long route's body streams: it is never one string in memory (see route-body.ts). */
const routeResponse = (body: string | ReadableStream<Uint8Array>) => new Response(body, { headers: { 'content-type': 'application/json;charset=utf-8' } })

/** Bun's default idle timeout, which the API server keeps: a client that stops reading a route is cut off after it. */
const SEND_IDLE_TIMEOUT_SECONDS = 10

interface ServerTimeout {
  timeout(request: Request, seconds: number): void
}

/**
 * The answer of `prepare`, with the connection's idle timer off while it is prepared: a request
 * may wait its turn for the memory budget, or share the event loop with other routes, longer
 * than Bun's idle timeout, which would close the connection with nothing said. Once the answer
 * goes out the timer is back, so a client that stops reading frees its budget.
 */
async function patiently<T>(server: ServerTimeout | null, request: Request, prepare: () => Promise<T>): Promise<T> {
  server?.timeout(request, 0)
  try {
    return await prepare()
  } finally {
    server?.timeout(request, SEND_IDLE_TIMEOUT_SECONDS)
  }
}

export function historyRoutes(auth: ReturnType<typeof authPlugin>, history: HistoryService) {
  const route = {
    auth: 'any' as const,
    params: IdParams,
    query: RouteQuery,
    detail: {
      tags: ['History'],
      summary: 'Route points and stops',
      description:
        `${RANGE_RULES} A stop is a span of at least \`stop_threshold_time\` seconds (default 300) during which the device stays within ` +
        'a small radius, a gap in reporting included. `total_distance` counts movement only and equals the travels\' total over the same window. ' +
        GAP_RULE +
        'Such gaps are listed in `gaps`, which is left out when there is none. ' +
        IN_FLIGHT_RULE,
      responses: historyResponses({ 200: { schema: RouteResult, description: 'The route' } }),
    },
  }
  const events = {
    auth: 'any' as const,
    params: IdParams,
    query: RangeQuery,
    detail: {
      tags: ['History'],
      summary: 'Events and alarms',
      description: `${RANGE_RULES} In time order. Alarm codes are listed in the API description.`,
      responses: responses({ 200: { schema: t.Array(EventRecord), description: 'The events' } }, ...ERRORS),
    },
  }

  return new Elysia({ name: 'history', prefix: '/devices' })
    .use(auth)
    .get('/:id/history/route', async ({ principal, params, query, request, server }) => routeResponse(await patiently(server, request, () => history.route(principal, params.id, query, thresholds(query), request.signal))), route)
    .get('/:id/route', async ({ principal, params, query, request, server }) => routeResponse(await patiently(server, request, () => history.route(principal, params.id, query, thresholds(query), request.signal))), {
      ...route,
      detail: { ...route.detail, summary: 'Route points and stops (alias of /history/route)' },
    })
    .get('/:id/history/travels', ({ principal, params, query, request, server }) => patiently(server, request, () => history.travels(principal, params.id, query, thresholds(query), request.signal)), {
      auth: 'any',
      params: IdParams,
      query: RouteQuery,
      detail: {
        tags: ['History'],
        summary: 'Travels between stops',
        description:
          `${RANGE_RULES} Travels are the movements between stops (\`stop_threshold_time\`, default 300 s, as for the route). ` +
          '`distance` in metres along the fixes, `duration` in seconds, `max_speed` and `avg_speed` (distance / duration) in km/h. ' +
          GAP_RULE +
          'Each place has an `address`: "City, CC" from the offline geocoder, or a street address when GEOCODER_URL answers in time. ' +
          IN_FLIGHT_RULE,
        responses: historyResponses({ 200: { schema: TravelResult, description: 'The travels' } }),
      },
    })
    .get('/:id/history/events', ({ principal, params, query }) => history.events(principal, params.id, query), events)
    .get('/:id/events', ({ principal, params, query }) => history.events(principal, params.id, query), {
      ...events,
      detail: { ...events.detail, summary: 'Events and alarms (alias of /history/events)' },
    })
}
