/**
 * Bodies of the device administration routes (POST/PATCH /devices): types, lengths and unknown
 * fields here; the rules between fields and against the database (an identifier's shape, imei or
 * serial, groups, model, duplicates) in admin-service.ts, so the command line gets them too.
 */
import { t } from 'elysia'
import { Uuid } from '../http/model'
import { DEVICE_STATES } from './model'

export const MAX_ALIAS_LENGTH = 100
export const MAX_SERIAL_LENGTH = 64
export const MAX_ICCID_LENGTH = 32
export const MAX_DEVICE_GROUPS = 1000

const fields = {
  alias: t.String({ minLength: 1, maxLength: MAX_ALIAS_LENGTH, description: 'Display name, 1 to 100 characters', examples: ['Truck 12'] }),
  model: t.String({
    format: 'uuid',
    description:
      'The model (GET /models): a server-wide one or one of your account\'s; an unknown model, or another account\'s, is 404. Optional: a device left without one gets the built-in model of the protocol it first reports on (its `model` is null until then)',
    examples: ['6f1c2b1e-3a5d-4c1e-9b7a-2d4e5f6a7b8c'],
  }),
  groups: (more = '') =>
    t.Array(Uuid, {
      maxItems: MAX_DEVICE_GROUPS,
      description: `${more}Groups of your account (a member sees the device through them); another account's or an unknown group is 404`,
    }),
  imei: t.String({
    maxLength: 15,
    description:
      'The tracker\'s IMEI (what GT06 and Teltonika send): exactly 15 digits, no check-digit test (a terminal id need not pass it); "" for none',
    examples: ['359710049095095'],
  }),
  serial: t.String({
    maxLength: MAX_SERIAL_LENGTH,
    description: 'The identifier the tracker sends otherwise (OsmAnd / Traccar Client\'s "device identifier"): 1 to 64 printable ASCII characters, no spaces; "" for none',
    examples: ['S123'],
  }),
  iccid: t.String({ maxLength: MAX_ICCID_LENGTH, description: 'The SIM\'s ICCID: up to 32 letters and digits; "" for none', examples: ['8934071179000000000'] }),
  properties: (more = '') => t.Record(t.String(), t.Unknown(), { description: `${more}Any JSON object of yours (plate, driver, …), shown as is` }),
  state: (more = '') =>
    // not t.UnionEnum: it gives its first value as the default, which a body left without a state would get
    t.Union(
      DEVICE_STATES.map((state) => t.Literal(state)),
      {
        description: `One of the seven states${more}; ingestion moves a device between new, moving, stopped and off, and never changes suspended, unlink (reports refused, left out of GET /devices) or stolen`,
      },
    ),
}

export const CreateDeviceBody = t.Object(
  {
    alias: fields.alias,
    model: t.Optional(fields.model),
    groups: t.Optional(fields.groups()),
    imei: t.Optional(fields.imei),
    serial: t.Optional(fields.serial),
    iccid: t.Optional(fields.iccid),
    properties: t.Optional(fields.properties('Default {}. ')),
    state: t.Optional(fields.state(' (default `new`)')),
  },
  { additionalProperties: false, description: '`alias` and `imei` or `serial` are all a device needs: the identifier is how it is recognised when it reports, and a device left without `model` gets the built-in model of the protocol it first reports on' },
)

export const UpdateDeviceBody = t.Object(
  {
    alias: t.Optional(fields.alias),
    model: t.Optional(fields.model),
    groups: t.Optional(fields.groups("Replaces the device's groups. ")),
    imei: t.Optional(fields.imei),
    serial: t.Optional(fields.serial),
    iccid: t.Optional(fields.iccid),
    properties: t.Optional(fields.properties('Replaces the properties. ')),
    state: t.Optional(fields.state()),
  },
  { additionalProperties: false, description: 'Only the fields sent change; the device must keep an `imei` or a `serial`' },
)

export type CreateDeviceInput = typeof CreateDeviceBody.static
export type UpdateDeviceInput = typeof UpdateDeviceBody.static
