/** GET /events: the query and each item, for validation and OpenAPI from one source. */
import { t } from 'elysia'
import { EventRecord, MAX_RANGE_SECONDS } from '../history/model'
import { pageFields, Uuid } from '../http/model'

export { MAX_RANGE_SECONDS }

/** The window GET /events reads when it is not given `from`. */
export const DEFAULT_WINDOW_SECONDS = 86_400

/** 9999-12-31T23:59:59Z, as the history windows take it */
const LATEST = 253_402_300_799

export const EventsQuery = t.Object(
  {
    from: t.Optional(
      t.Integer({ title: 'from', minimum: 0, maximum: LATEST, description: 'Start, Unix seconds (inclusive); default `to` − 86,400 (a day)', examples: [1764000000] }),
    ),
    to: t.Optional(
      t.Integer({ title: 'to', minimum: 0, maximum: LATEST, description: 'End, Unix seconds (inclusive); default now. `from` ≤ `to`, at most 31 days apart', examples: [1764086400] }),
    ),
    device: t.Optional(t.String({ format: 'uuid', title: 'device', description: 'Only this device\'s events (its id). A device you do not reach, or none, gives `[]`, as any filter that matches nothing' })),
    alarm_code: t.Optional(
      t.String({ title: 'alarm_code', pattern: '^[a-z0-9_]{1,64}$', description: 'Only events with this code (`sos`, `overspeed`, …)', examples: ['sos'] }),
    ),
    ...pageFields('events'),
  },
  { additionalProperties: true },
)

export const FleetEvent = t.Object({
  device: t.Object({ id: Uuid, alias: t.String({ examples: ['Truck 1'] }) }, { description: 'The device the event is of' }),
  ...EventRecord.properties,
  address: t.Union([t.String(), t.Null()], {
    description: '"City, CC" of the nearest populated place, from the offline geocoder (never the online one: a list stays fast); null without coordinates',
    examples: ['Montreuil, FR'],
  }),
})

export type EventsQueryInput = typeof EventsQuery.static
export type FleetEventBody = typeof FleetEvent.static
