import { Elysia, t } from 'elysia'
import { authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import type { DeviceService } from './service'
import { Device, ListQuery } from './model'

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
}

