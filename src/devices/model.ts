import { t } from 'elysia'
import { DateTime, pageFields, Uuid } from '../http/model'

export const DEVICE_STATES = ['off', 'moving', 'stopped', 'suspended', 'unlink', 'stolen', 'new'] as const
export type DeviceState = (typeof DEVICE_STATES)[number]

export const Device = t.Object(
  {
    id: Uuid,
    model: t.Union([Uuid, t.Null()], {
      description:
        'The model (GET /models), which says what commands the device takes. null: created without one and not yet reported; its first report gives it the built-in model of that protocol, and until then its commands are 409',
    }),
    alias: t.String(),
    properties: t.Record(t.String(), t.Unknown(), { description: 'Custom properties (picture, plate, VIN, …), as imported' }),
    serial: t.String(),
    imei: t.String(),
    iccid: t.String(),
    state: t.UnionEnum(DEVICE_STATES),
    location: t.Union([t.Tuple([t.Number(), t.Number()]), t.Null()], {
      description: '[latitude, longitude]; null when the device has never reported. A moving device reads its newest live fix.',
    }),
    connected: t.Boolean(),
    connected_at: t.Union([DateTime, t.Null()]),
    disconnected_at: t.Union([DateTime, t.Null()]),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { additionalProperties: false },
)

export type DeviceBody = typeof Device.static

export const DeviceStatus = t.Object(
  {
    id: Uuid,
    attributes: t.Record(t.String(), t.Unknown(), {
      description: 'Each attribute a status or information packet gave, its latest value (see the operation\'s description); {} when none has',
    }),
    updated_at: t.Union([DateTime, t.Null()], { description: 'When the latest of them was stored; null when none has been' }),
    address: t.Union([t.String(), t.Null()], {
      description:
        '"City, CC" of the nearest populated place to the device\'s `location` (the one `GET /devices/{id}` gives), from the offline ' +
        'geocoder (never the online one: the console reads this with every fix); null when the device has no location',
      examples: ['Montreuil, FR'],
    }),
  },
  { additionalProperties: false },
)

export type DeviceStatusBody = typeof DeviceStatus.static

export const ListQuery = t.Object(
  {
    groups: t.Optional(
      t.Array(Uuid, {
        title: 'groups',
        description: 'Only devices in at least one of these groups: repeat the parameter (?groups=a&groups=b) or separate with commas',
      }),
    ),
    ...pageFields('devices'),
  },
  { additionalProperties: true },
)
