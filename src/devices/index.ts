import { Elysia, t } from 'elysia'
import { authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import type { DeviceService } from './service'
import { Device, DeviceStatus, ListQuery } from './model'

export function devicesRoutes(auth: ReturnType<typeof authPlugin>, devices: DeviceService) {
  return new Elysia({ name: 'devices', prefix: '/devices' })
    .use(auth)
    .get('', ({ principal, query }) => devices.list(principal, { groups: query.groups ?? null, limit: query.limit, offset: query.offset }), {
      auth: 'any',
      query: ListQuery,
      detail: {
        tags: ['Devices'],
        responses: responses({ 200: { schema: t.Array(Device), description: 'The devices' } }, 400, 401, 403, 404, 429, 504),
        summary: 'List the devices you can reach',
        description:
          'Devices sharing at least one group with the user (a share token: the link\'s devices). Devices in state `unlink` are never listed. ' +
          'Ordered by alias, then id. An empty result is 404, as the spec says.',
      },
    })
    .get('/:id', ({ principal, params }) => devices.get(principal, params.id), {
      auth: 'any',
      params: IdParams,
      detail: {
        tags: ['Devices'],
        summary: 'One device',
        description: '404 when it does not exist or you cannot reach it (never 403).',
        responses: responses({ 200: { schema: Device, description: 'The device' } }, 400, 401, 403, 404, 429, 504),
      },
    })
    .get('/:id/status', ({ principal, params }) => devices.status(principal, params.id), {
      auth: 'any',
      params: IdParams,
      detail: {
        tags: ['Devices'],
        summary: 'What the device says of itself',
        description:
          'The latest value of each attribute the device\'s status and information packets gave, merged packet by packet (a later value ' +
          'replaces an earlier one; attributes a packet did not carry keep theirs). Reached as the device is (404 when it does not exist or ' +
          'you cannot reach it); a share token needs the location permission. `{}` and `updated_at: null` for a device that has sent none. ' +
          'Names and units are those of the fixes\' attributes (README, "Devices reporting in"): GT06 status (0x13), heartbeat (0x23) and ' +
          'information (0x94) packets give `ignition`, `charging`, `external_power`, `immobilized`, `armed`, `gps_tracking`, `voltage_level` ' +
          '(0–6) or `battery_level` (%), `battery_voltage` and `external_voltage` (V), `gsm_signal` (0–4), `iccid`, `imsi`, `door`, ' +
          '`temperature` (°C), `fuel_level`, and its cell and Wi-Fi packets `cells` and `wifi` (never a place); Teltonika records give the ' +
          'FMB1xx elements that describe the device (`ignition`, `movement`, `external_voltage`, `battery_voltage`, `battery_level`, ' +
          '`gsm_signal`, `operator`, `odometer`, `din1`…, `iccid`, …; the newest record\'s value wins); H02 frames give their status ' +
          'word (`status_word`, `ignition`, `armed`, `external_power`), LINK\'s `gsm_signal`, `satellites`, `battery_level`, `steps`, ' +
          '`turnovers` and NBR\'s `cells`. The live stream sends each change as `event: status`. `address` names the place of the device\'s ' +
          '`location` ("City, CC", offline geocoder), so a client showing the status need not ask for it elsewhere.',
        responses: responses({ 200: { schema: DeviceStatus, description: 'The device\'s latest status' } }, 400, 401, 403, 404, 429, 504),
      },
    })
}

