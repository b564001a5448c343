import { Elysia, t } from 'elysia'
import { asUser, type authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { Command } from './model'
import type { CommandService } from './service'

export function commandsRoutes(auth: ReturnType<typeof authPlugin>, commands: CommandService) {
  return new Elysia({ name: 'commands', prefix: '/devices' }).use(auth).get(
    '/:id/commands',
    ({ principal, params }) => commands.forDevice(asUser(principal), params.id),
    {
      auth: 'user',
      params: IdParams,
      detail: {
        tags: ['Devices'],
        responses: responses({ 200: { schema: t.Array(Command), description: "The model's commands" } }, 400, 401, 403, 404, 429, 504),
        summary: "Commands of the device's model",
        description: 'An empty array when the model offers none. 404 when the device is out of reach; 403 with a share token (links are read-only).',
      },
    },
  )
}
