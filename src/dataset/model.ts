/**
 * The dataset document of docs/import-format.md, as a schema: every object closed
 * (unknown keys are errors), every id a UUID. Cross-references are checked in service.ts.
 */
import { type Static, Type as T } from '@sinclair/typebox'
import { DEVICE_STATES } from '../devices/model'

const Uuid = T.String({ format: 'uuid' })
const DateTime = T.String({ format: 'date-time' })
const Latitude = T.Number({ minimum: -90, maximum: 90 })
const Longitude = T.Number({ minimum: -180, maximum: 180 })
const closed = { additionalProperties: false } as const
/** Names are optional (empty when absent): a file that leaves one out is still a fleet. */
const Name = T.Optional(T.String())

export const DatasetSchema = T.Object(
  {
    accounts: T.Optional(T.Array(T.Object({ id: Uuid, name: Name }, closed))),
    groups: T.Optional(T.Array(T.Object({ id: Uuid, account: Uuid, name: Name }, closed))),
    users: T.Optional(
      T.Array(
        T.Object(
          {
            id: Uuid,
            account: Uuid,
            name: Name,
            groups: T.Optional(T.Array(Uuid)),
            api_keys: T.Optional(T.Array(T.String({ minLength: 16, maxLength: 512, pattern: '^[\\x21-\\x7e]+$' }))),
          },
          closed,
        ),
      ),
    ),
    models: T.Optional(
      T.Array(
        T.Object(
          {
            id: Uuid,
            name: Name,
            protocol: T.Optional(T.String()),
            commands: T.Optional(
              T.Array(T.Object({ id: Uuid, name: Name, widget: T.Object({ type: T.String() }, { additionalProperties: true }) }, closed)),
            ),
          },
          closed,
        ),
      ),
    ),
    devices: T.Optional(
      T.Array(
        T.Object(
          {
            id: Uuid,
            account: Uuid,
            model: Uuid,
            groups: T.Optional(T.Array(Uuid)),
            alias: Name,
            properties: T.Optional(T.Record(T.String(), T.Unknown())),
            serial: T.Optional(T.String()),
            imei: T.Optional(T.String()),
            iccid: T.Optional(T.String()),
            state: T.Optional(T.Union(DEVICE_STATES.map((s) => T.Literal(s)))),
            location: T.Optional(T.Union([T.Tuple([Latitude, Longitude]), T.Null()])),
            connected: T.Optional(T.Boolean()),
            connected_at: T.Optional(T.Union([DateTime, T.Null()])),
            disconnected_at: T.Optional(T.Union([DateTime, T.Null()])),
            created_at: T.Optional(DateTime),
            updated_at: T.Optional(DateTime),
          },
          closed,
        ),
      ),
    ),
    positions: T.Optional(
      T.Array(
        T.Object(
          {
            device: Uuid,
            timestamp: T.Integer({ minimum: 0 }),
            latitude: Latitude,
            longitude: Longitude,
            speed: T.Optional(T.Union([T.Number({ minimum: 0 }), T.Null()])),
            course: T.Optional(T.Union([T.Number({ minimum: 0, maximum: 360 }), T.Null()])),
            altitude: T.Optional(T.Union([T.Number(), T.Null()])),
            satellites: T.Optional(T.Union([T.Integer({ minimum: 0 }), T.Null()])),
          },
          closed,
        ),
      ),
    ),
    events: T.Optional(
      T.Array(
        T.Object(
          {
            device: Uuid,
            alarm_code: T.String({ minLength: 1 }),
            context: T.Optional(T.Record(T.String(), T.Unknown())),
            speed: T.Optional(T.Union([T.Integer(), T.Null()])),
            satellite: T.Optional(T.Union([T.Integer(), T.Null()])),
            coordinates: T.Optional(T.Union([T.Tuple([Latitude, Longitude]), T.Null()])),
            mcc: T.Optional(T.Union([T.Integer(), T.Null()])),
            mnc: T.Optional(T.Union([T.Integer(), T.Null()])),
            dbm: T.Optional(T.Union([T.Integer(), T.Null()])),
            timestamp: T.Integer({ minimum: 0 }),
          },
          closed,
        ),
      ),
    ),
  },
  closed,
)

export type Dataset = Static<typeof DatasetSchema>
