import { Elysia, t } from 'elysia'
import type { authPlugin } from '../http/auth'
import { responses } from '../http/model'
import { MAX_STREAMS_PER_PRINCIPAL, type LiveStreams } from './service'

/** The documented responses, with what a 429 and a 503 mean here. */
function streamResponses() {
  const documented = responses({ 200: { schema: t.String(), description: 'The event stream', contentType: 'text/event-stream' } }, 401, 403, 429, 503, 504)
  return {
    ...documented,
    429: { ...documented[429], description: 'The user (or, for a share token, the user who made the link) holds as many streams as allowed, or too many failed authentications' },
    503: { ...documented[503], description: 'The server holds MAX_STREAMS streams' },
  }
}

/** GET /devices/stream: Server-Sent Events of live fixes, alarms and device status. */
export function streamRoutes(auth: ReturnType<typeof authPlugin>, streams: LiveStreams) {
  return new Elysia({ name: 'stream' }).use(auth).get(
    '/devices/stream',
    async ({ principal, request, server }) => {
      const body = await streams.open(principal, request.signal)
      // the stream is quiet between fixes; the heartbeat, not Bun's idle timer, decides when it is dead
      server?.timeout(request, 0)
      return new Response(body, {
        headers: {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-store',
          'referrer-policy': 'no-referrer',
          'x-accel-buffering': 'no',
        },
      })
    },
    {
      auth: 'any',
      detail: {
        tags: ['Devices'],
        summary: 'Live positions, alarms and device status (Server-Sent Events)',
        description:
          'A `text/event-stream` of the fixes of the devices you reach (a share token: the link\'s devices; it needs the location ' +
          'permission). Each fix is `event: fix` with data `{"id","latitude","longitude","speed","course","timestamp"}` (speed km/h or null, ' +
          'course degrees clockwise from north or null, timestamp Unix seconds); the newest known fix of each device comes first. ' +
          'Each device alarm (an event: `sos`, `power_cut`, `overspeed`… as `GET /devices/{id}/history/events` lists them) is `event: alarm` with data ' +
          '`{"id","alarm_code","timestamp","latitude","longitude","speed","context"}` (id the device\'s, timestamp Unix seconds as the device dated it, ' +
          'latitude and longitude null when the event came without a usable position, speed km/h or null, context as the events API shows it: ' +
          'a geofence\'s `name`, an overspeed\'s `limit` and `speed`, `{}` when none), sent once the event is stored, ' +
          'to the streams a fix of that device goes to; a share token gets alarms only when its link grants the events permission. ' +
          'Alarms are not replayed: a stream tells those stored while it is open (read the rest with `GET /events`); a re-sent event that was already stored is not sent again. ' +
          'What a device\'s status and information packets say of it (battery, external power, signal, ignition, ICCID… as `GET /devices/{id}/status` ' +
          'lists them) is `event: status` with data `{"id","attributes","updated_at"}` (only the attributes that report gave; updated_at ISO 8601, ' +
          'when it was stored), sent once stored to the streams a fix of that device goes to; not replayed either. ' +
          'A comment line is sent every 15 s as heartbeat. ' +
          'The stream follows access while open: once a group membership or device changes, fixes of devices you no longer reach stop ' +
          'and devices newly reached start (their newest known fix first). ' +
          'The stream ends when a share link is patched or revoked, and at its `expires_at` exactly (no event after it): reconnect ' +
          '(a revoked or expired token then gets 401). ' +
          `At most ${MAX_STREAMS_PER_PRINCIPAL} streams may be open at once per user: their keys, sessions and every share link they made together ` +
          '(a share token spends the budget of the user who made its link, so links do not multiply it); ' +
          'the next is 429 with `Retry-After` (the heartbeat interval, in seconds). The server as a whole holds at most MAX_STREAMS (default 2,000); ' +
          'beyond, 503 with the same `Retry-After`. A stream frees its slot as soon as its connection closes. ' +
          'A share link\'s stream also ends when the link is revoked by any process (its creator deleted, say), at the next fix or heartbeat. ' +
          'Authenticate with the Authorization header, as everywhere (read it with fetch; EventSource cannot send headers).',
        responses: streamResponses(),
      },
    },
  )
}
