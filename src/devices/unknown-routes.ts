import { Elysia, t } from 'elysia'
import type { authPlugin } from '../http/auth'
import { responses } from '../http/model'
import { RECENT_UNKNOWNS_MAX } from '../ingest/recent-unknowns'
import type { UnknownIdentifiers } from './unknown'

const UnknownIdentifier = t.Object({
  identifier: t.String({ description: 'What the device sent as its IMEI or serial: give it to a new device (`imei` when it is 15 digits, else `serial`)' }),
  protocol: t.String({ description: 'The protocol it last reported over (`osmand`, `gt06`, `teltonika`, `h02`, `gps103`, `watch`): its built-in model is that protocol\'s' }),
  first_seen: t.String({ format: 'date-time', description: 'Its first refused report in the list' }),
  last_seen: t.String({ format: 'date-time' }),
  attempts: t.Integer({ minimum: 1, description: 'Refused identifications since first_seen (a login, an HTTP report)' }),
  source: t.String({ description: 'The client address it last reported from' }),
})

const UnknownIdentifiersList = t.Object({
  listed: t.Boolean({ description: 'false on a server with more than one account: then nothing is listed, to anyone' }),
  reason: t.Union([t.String(), t.Null()], { description: 'why `listed` is false; null when it is true' }),
  identifiers: t.Array(UnknownIdentifier, { description: 'the most recently seen first' }),
})

/** GET /devices/unknown: identifiers that tried to report and no device has. */
export function unknownDeviceRoutes(auth: ReturnType<typeof authPlugin>, unknown: UnknownIdentifiers) {
  return new Elysia({ name: 'device-unknown', prefix: '/devices' }).use(auth).get('/unknown', () => unknown.list(), {
    auth: 'admin',
    detail: {
      tags: ['Administration'],
      summary: 'Identifiers that tried to report, and no device has',
      description:
        `Unknown identifiers refused by this server's device listeners in the last 24 hours, the most recently seen first: add the device ` +
        `(POST /devices) with the identifier and it reports in on its next try. Kept in this server process's memory only (a restart ` +
        `empties the list), at most the ${RECENT_UNKNOWNS_MAX.toLocaleString('en')} most recently seen. Not listed: an identifier masked past its ` +
        "source's ration of unknown identifiers (it was answered as a known one; see UNKNOWN_IDENTIFIERS_PER_MINUTE), an unlinked " +
        "device's, one no device could be given (not a serial's shape), one a device has since been given. " +
        'Account admins only (a member is 403), and listed only on a server with one account: an unknown identifier belongs to no account, ' +
        "so on a server shared by accounts the answer is `listed: false` with the reason and no identifier, for every admin (the server's " +
        'log names unknown identifiers for its operator).',
      responses: responses({ 200: { schema: UnknownIdentifiersList, description: 'The identifiers, or why none is listed' } }, 401, 403, 429, 504),
    },
  })
}
