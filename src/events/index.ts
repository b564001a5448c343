import { Elysia, t } from 'elysia'
import type { authPlugin } from '../http/auth'
import { responses } from '../http/model'
import { EventsQuery, FleetEvent } from './model'
import type { EventsService } from './service'

/** GET /events: the fleet's events, newest first. */
export function eventsRoutes(auth: ReturnType<typeof authPlugin>, events: EventsService) {
  return new Elysia({ name: 'events' }).use(auth).get('/events', ({ principal, query }) => events.list(principal, query), {
    auth: 'any',
    query: EventsQuery,
    detail: {
      tags: ['History'],
      summary: 'Events and alarms of every device you reach',
      description:
        'The events (device alarms such as `sos`, `power_cut`, `overspeed`; codes in the API description) of every device you reach — ' +
        'an admin: the whole account; a member: the devices of their groups; a share token: the link\'s devices, and only when the link grants ' +
        'the events permission (else 403) — newest first (then by the order they were stored), each as `GET /devices/{id}/history/events` ' +
        'shows it plus `device: {id, alias}`. Devices in state `unlink` are left out, as in `GET /devices`. ' +
        '`device` keeps one device\'s events, `alarm_code` one code\'s (both filters: no match is `[]`). Each event has `address`, the offline geocoder\'s ' +
        '"City, CC" nearest its coordinates (null without them). `from` and `to` are Unix seconds, both inclusive, at most 31 days apart, `from` ≤ `to`, otherwise 400; without `to` the window ends now, ' +
        'without `from` it starts a day before `to`. `limit` 1–1000 (default 99), `offset` ≥ 0; a page with nothing is `[]`. ' +
        'New alarms also arrive live on `GET /devices/stream` as `event: alarm`.',
      responses: responses({ 200: { schema: t.Array(FleetEvent), description: 'The events, newest first' } }, 400, 401, 403, 429),
    },
  })
}
