/**
 * The dataset document of docs/import-format.md, as a schema: every object closed
 * (unknown keys are errors), every id a UUID. Cross-references are checked in service.ts.
 * `must` on a schema is what its error message says the field must be, where the type alone
 * would say it badly (see plainMessage).
 */
import { Kind, type Static, type TSchema, Type as T } from '@sinclair/typebox'
import { type ValueError, ValueErrorType } from '@sinclair/typebox/errors'
import { DEVICE_STATES, type DeviceState } from '../devices/model'

const Uuid = T.String({ format: 'uuid' })
const DateTime = T.String({ format: 'date-time' })
const Latitude = T.Number({ minimum: -90, maximum: 90 })
const Longitude = T.Number({ minimum: -180, maximum: 180 })
const LatLonOrNull = T.Union([T.Tuple([Latitude, Longitude]), T.Null()], {
  must: '[latitude, longitude] (latitude from -90 to 90, longitude from -180 to 180) or null',
})
const UnixSeconds = T.Integer({ minimum: 0, must: 'an integer ≥ 0 (Unix seconds)' })
const closed = { additionalProperties: false } as const
/** Names are optional (empty when absent): a file that leaves one out is still a fleet. */
const Name = T.Optional(T.String())
/** the default first, as docs/import-format.md lists them */
const STATES: DeviceState[] = ['new', ...DEVICE_STATES.filter((s) => s !== 'new')]

/** The longest `send.text` a command may carry (before its fields are put in). */
export const MAX_SEND_TEXT_LENGTH = 512

/**
 * A model's command: its widget is an object with a `type` and whatever else the client needs,
 * kept as written. POST/PATCH /models (admin/models-model.ts) take the same object. `send.text`
 * is what the device receives, `{field}` standing for a form field's value (commands/sending.ts);
 * a command without `send` cannot be sent.
 */
export const ModelCommandSchema = T.Object(
  {
    id: Uuid,
    name: Name,
    widget: T.Object({ type: T.String() }, { additionalProperties: true }),
    send: T.Optional(
      T.Object(
        { text: T.String({ minLength: 1, maxLength: MAX_SEND_TEXT_LENGTH, must: `a string of 1 to ${MAX_SEND_TEXT_LENGTH} characters` }) },
        { ...closed, description: 'How the command is sent: `text` goes to the device, `{field}` replaced by the value of that form field' },
      ),
    ),
  },
  closed,
)

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
            role: T.Optional(T.Union([T.Literal('admin'), T.Literal('member')])),
            groups: T.Optional(T.Array(Uuid)),
            api_keys: T.Optional(
              T.Array(T.String({ minLength: 16, maxLength: 512, pattern: '^[\\x21-\\x7e]+$', must: '16 to 512 printable ASCII characters, no spaces' })),
            ),
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
            commands: T.Optional(T.Array(ModelCommandSchema)),
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
            model: T.Optional(Uuid),
            groups: T.Optional(T.Array(Uuid)),
            alias: Name,
            properties: T.Optional(T.Record(T.String(), T.Unknown())),
            serial: T.Optional(T.String()),
            imei: T.Optional(T.String()),
            iccid: T.Optional(T.String()),
            state: T.Optional(T.Union(STATES.map((s) => T.Literal(s)))),
            location: T.Optional(LatLonOrNull),
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
            timestamp: UnixSeconds,
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
            coordinates: T.Optional(LatLonOrNull),
            mcc: T.Optional(T.Union([T.Integer(), T.Null()])),
            mnc: T.Optional(T.Union([T.Integer(), T.Null()])),
            dbm: T.Optional(T.Union([T.Integer(), T.Null()])),
            timestamp: UnixSeconds,
          },
          closed,
        ),
      ),
    ),
  },
  closed,
)

export type Dataset = Static<typeof DatasetSchema>

/** A short, plain description of what a value of `schema` is: "a string", "one of new, off, …". */
function describe(schema: TSchema): string {
  if (typeof schema.must === 'string') return schema.must
  const range = (min: unknown, max: unknown) =>
    min !== undefined && max !== undefined ? ` from ${min} to ${max}` : min !== undefined ? ` ≥ ${min}` : max !== undefined ? ` ≤ ${max}` : ''
  switch (schema[Kind]) {
    case 'String':
      if (schema.format === 'uuid') return 'a UUID'
      if (schema.format === 'date-time') return 'an ISO 8601 datetime with Z or an offset, such as 2026-11-01T08:00:00Z'
      return schema.minLength === 1 ? 'a non-empty string' : 'a string'
    case 'Number':
      return `a number${range(schema.minimum, schema.maximum)}`
    case 'Integer':
      return `an integer${range(schema.minimum, schema.maximum)}`
    case 'Boolean':
      return 'true or false'
    case 'Literal':
      return JSON.stringify(schema.const)
    case 'Null':
      return 'null'
    case 'Object':
    case 'Record':
      return 'an object'
    case 'Array':
      return 'an array'
    case 'Union': {
      const members = schema.anyOf as TSchema[]
      if (members.every((m) => m[Kind] === 'Literal')) return `one of ${members.map((m) => m.const).join(', ')}`
      const nullable = members.some((m) => m[Kind] === 'Null')
      return members.filter((m) => m[Kind] !== 'Null').map(describe).join(' or ') + (nullable ? ' or null' : '')
    }
    default:
      return 'something else'
  }
}

/** What is wrong with one field, in words: "is required", "is not a known field", "must be a string". */
export function plainMessage(error: ValueError): string {
  if (error.type === ValueErrorType.ObjectRequiredProperty) return 'is required'
  if (error.type === ValueErrorType.ObjectAdditionalProperties) return 'is not a known field'
  return `must be ${describe(error.schema)}`
}
