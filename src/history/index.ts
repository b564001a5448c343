import { Elysia, t } from 'elysia'
import type { authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { DEFAULT_GAP_THRESHOLD_SECONDS } from '../track'
import { EventRecord, RangeQuery, RouteQuery, RouteResult, TravelResult } from './model'
import { HISTORY_REQUESTS_PER_PRINCIPAL, type HistoryService, type Thresholds } from './service'

const ERRORS = [400, 401, 403, 404, 429, 500, 504]
const RANGE_RULES = '`from` and `to` are required integer Unix seconds, `from` ≤ `to`, at most 31 days apart; otherwise 400.'
const IN_FLIGHT_RULE =
  `At most ${HISTORY_REQUESTS_PER_PRINCIPAL} route or travels requests may be in flight at once for one user (whatever key) or one share link ` +
  '(however many people hold its token), a route counting until its body has been sent; more are 429 with `Retry-After: 1`.'

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
  return { ...documented, 429: { ...documented[429], description: 'Too many history requests in flight for this user or share link, or too many failed authentications' } }
}

/** A long route's body streams: it is never one string in memory (see route-body.ts). */
const routeResponse = (body: string | ReadableStream<Uint8Array>) => new Response(body, { headers: { 'content-type': 'application/json;charset=utf-8' } })

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
    .get('/:id/history/route', async ({ principal, params, query }) => routeResponse(await history.route(principal, params.id, query, thresholds(query))), route)
    .get('/:id/route', async ({ principal, params, query }) => routeResponse(await history.route(principal, params.id, query, thresholds(query))), {
      ...route,
      detail: { ...route.detail, summary: 'Route points and stops (alias of /history/route)' },
    })
    .get('/:id/history/travels', ({ principal, params, query }) => history.travels(principal, params.id, query, thresholds(query)), {
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
