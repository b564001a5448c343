/**
 * Geofence routes: /geofences. Any user of the account reads (a share token gets 403), an
 * account admin writes. They parse, call the service (service.ts) and shape the answer; writes
 * wait for another process's write lock asynchronously (store/busy.ts: 504 after 5 s).
 */
import { Elysia, t } from 'elysia'
import { actorOf } from '../admin/actor'
import { asUser, type authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { loggedRequestId } from '../ops/requests'
import { CreateGeofenceBody, Geofence, GeofenceListQuery, UpdateGeofenceBody } from './model'
import type { GeofenceService } from './service'

export interface GeofenceRouteDeps {
  /** its writes wait for another process's write lock asynchronously (the store's units of work, store/busy.ts) */
  geofences: GeofenceService
}

const TAGS = ['Geofences']
const READ =
  'Any user of the account reads every geofence of the account (a member too, whatever their groups); a share token gets 403. ' +
  "Another account's geofence is 404."
const WRITE =
  'For account admins: a member or a share token gets 403; another account\'s geofence is 404. Each change is in the audit log ' +
  '(GET /audit, `object_type: geofence`). A refused request changes nothing.'
const RULES =
  '`area` is a GeoJSON Polygon (`[longitude, latitude]` points; rings closed, at most 1,000 points in all (the server\'s ' +
  '`MAX_GEOFENCE_VERTICES`: more is 400 at `/area/coordinates`; a geofence stored before the limit was lowered is kept and works as it is), not self-intersecting, ' +
  'holes inside the outer ring; an edge spanning more than 180° of longitude crosses the antimeridian the short way round; a ring ' +
  'winding around a pole is refused: use a Circle there) or a Circle (`center: [latitude, longitude]`, `radius` 10 to 100,000 m, ' +
  'great-circle distance). A fix exactly on the boundary (within 1 cm) is inside. Bad geometry is 400 naming the place at fault ' +
  '(`errors[].path`, e.g. `/area/coordinates/0`). `groups`: ids of groups of your account (another\'s or an unknown one is 404 ' +
  'naming its place, a repeated one 400); empty or absent, the geofence applies to every device of the account. A group deleted ' +
  'later stays listed and matches no device (the geofence does not widen to every device). `speed_limit` in km/h (above 0, at ' +
  'most 1000) or null. Unknown fields are 400.'

export function geofenceRoutes(auth: ReturnType<typeof authPlugin>, { geofences }: GeofenceRouteDeps) {
  return new Elysia({ name: 'geofences', prefix: '/geofences' })
    .use(auth)
    .get('', ({ principal, query }) => geofences.list(asUser(principal).accountId, query), {
      auth: 'user',
      query: GeofenceListQuery,
      detail: {
        tags: TAGS,
        summary: "List the account's geofences",
        description: `Ordered by name, then id; \`limit\` 1–1000 (default 99), \`offset\`; an empty page is \`[]\`. ${READ}`,
        responses: responses({ 200: { schema: t.Array(Geofence), description: 'The geofences' } }, 400, 401, 403, 429),
      },
    })
    .get('/:id', ({ principal, params }) => geofences.get(asUser(principal).accountId, params.id), {
      auth: 'user',
      params: IdParams,
      detail: {
        tags: TAGS,
        summary: 'One geofence',
        description: READ,
        responses: responses({ 200: { schema: Geofence, description: 'The geofence' } }, 400, 401, 403, 404, 429),
      },
    })
    .post(
      '',
      async ({ principal, body, set }) => {
        const by = actorOf(asUser(principal), loggedRequestId(set))
        const created = await geofences.create(by, body)
        set.status = 201
        set.headers.location = `/geofences/${created.id}`
        return created
      },
      {
        auth: 'admin',
        body: CreateGeofenceBody,
        detail: {
          tags: TAGS,
          summary: 'Add a geofence',
          description:
            `201 with the geofence and \`Location: /geofences/{id}\`. An account has at most 1,000 geofences (the server's ` +
            '`MAX_GEOFENCES_PER_ACCOUNT`): one more is 409, nothing stored, until one is deleted (409, not 400: the request is ' +
            `right, the account is full). ${RULES} ${WRITE}`,
          responses: responses({ 201: { schema: Geofence, description: 'The new geofence' } }, 400, 401, 403, 404, 409, 429, 504),
        },
      },
    )
    .patch(
      '/:id',
      async ({ principal, params, body, set }) => {
        const by = actorOf(asUser(principal), loggedRequestId(set))
        return geofences.update(by, params.id, body)
      },
      {
        auth: 'admin',
        params: IdParams,
        body: UpdateGeofenceBody,
        detail: {
          tags: TAGS,
          summary: 'Change a geofence',
          description:
            'Only the fields sent change: `area` and `groups` replace what was there, `speed_limit: null` removes the limit. A device already ' +
            `inside a changed area gets its enter or exit from its next fix. ${RULES} ${WRITE}`,
          responses: responses({ 200: { schema: Geofence, description: 'The geofence' } }, 400, 401, 403, 404, 429, 504),
        },
      },
    )
    .delete(
      '/:id',
      async ({ principal, params, set }) => {
        const by = actorOf(asUser(principal), loggedRequestId(set))
        await geofences.remove(by, params.id)
        set.status = 204
        return null
      },
      {
        auth: 'admin',
        params: IdParams,
        detail: {
          tags: TAGS,
          summary: 'Delete a geofence',
          description: `Devices inside it get no \`geofence_exit\`: it no longer exists to leave. ${WRITE}`,
          responses: responses({ 204: { description: 'Deleted' } }, 400, 401, 403, 404, 429, 504),
        },
      },
    )
}
