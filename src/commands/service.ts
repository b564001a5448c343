/**
 * The commands a device's model offers, with their widgets exactly as stored; sending one
 * (checked against its widget, its text made from `send.text`, stored in the queue before the
 * 202), and the device's sent commands. Every device is found through the access function: a
 * device out of reach is 404; share tokens never get here (the routes are for users).
 */
import type { Database } from 'bun:sqlite'
import { and, eq, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { commands, models } from '../../db/schema'
import type { DeviceAccess } from '../devices/access'
import { requireDevice } from '../devices/service'
import { Conflict, NotFound } from '../errors'
import type { UserPrincipal } from '../principal'
import type { CommandBody, SentCommandBody } from './model'
import type { CommandQueue } from './queue'
import { PROTOCOLS } from '../ingest/protocols'
import { checkValues, renderCommand, widgetFields } from './sending'

/**
 * The protocols whose devices can be sent commands (their units encode them: their TCP sessions
 * carry them), each with the separators its command texts split on. A model with another protocol
 * label (osmand, an HTTP protocol that cannot be called back) or none: 409.
 */
const COMMAND_PROTOCOLS: ReadonlyMap<string, readonly string[]> = new Map(
  PROTOCOLS.flatMap((p) => (p.transport === 'tcp' && p.encodeCommand ? [[p.name, p.commandSeparators ?? []] as const] : [])),
)

export interface CommandServiceDeps {
  sqlite: Database
  db: Db
  access: DeviceAccess
  queue: CommandQueue
}

export function createCommandService({ sqlite, db, access, queue }: CommandServiceDeps) {
  const byModel = sqlite.query<{ id: string; name: string; widget: string }, [string]>(
    'SELECT id, name, widget FROM commands WHERE model_id = ? ORDER BY ordinal, id',
  )
  const commandOfModel = db
    .select({ id: commands.id, name: commands.name, widget: commands.widget, send: commands.send, protocol: models.protocol })
    .from(commands)
    .innerJoin(models, eq(models.id, commands.modelId))
    .where(and(eq(commands.id, sql.placeholder('command')), eq(commands.modelId, sql.placeholder('model'))))
    .prepare()

  return {
    forDevice(principal: UserPrincipal, deviceId: string): CommandBody[] {
      const device = requireDevice(access, principal, deviceId)
      // a device without a model yet (it has not reported) offers no command
      if (device.model_id === null) return []
      return byModel.all(device.model_id).map((c) => ({ id: c.id, name: c.name, widget: JSON.parse(c.widget) }))
    },

    /** Queues the command with these form values; answers once it is stored. */
    async send(principal: UserPrincipal, deviceId: string, commandId: string, body: unknown): Promise<SentCommandBody> {
      const device = requireDevice(access, principal, deviceId)
      if (device.model_id === null) {
        throw new Conflict(
          'The device has no model yet, so no command: its first report gives it the built-in model of its protocol (or set one with PATCH /devices/{id})',
        )
      }
      const command = commandOfModel.get({ command: commandId.toLowerCase(), model: device.model_id })
      if (!command) throw new NotFound(`No command ${commandId} for this device's model`)
      const template = command.send === null ? null : (JSON.parse(command.send) as { text?: unknown }).text
      if (typeof template !== 'string') throw new Conflict(`The command "${command.name}" cannot be sent: its model gives it no send text`)
      const protocol = command.protocol?.toLowerCase() ?? null
      const separators = protocol === null ? undefined : COMMAND_PROTOCOLS.get(protocol)
      if (separators === undefined) {
        throw new Conflict(
          `Devices of this model (protocol ${protocol ?? 'none'}) cannot be sent commands: only ${[...COMMAND_PROTOCOLS.keys()].join(', ')} devices take them`,
        )
      }
      const fields = widgetFields(JSON.parse(command.widget))
      const rendered = renderCommand(template, fields, checkValues(fields, body, separators))
      return queue.enqueue({ deviceKey: device.key, commandId: command.id, name: command.name, ...rendered, userId: principal.userId })
    },

    /** the device's sent commands, newest first */
    sent(principal: UserPrincipal, deviceId: string, page: { limit: number; offset: number }): SentCommandBody[] {
      return queue.list(requireDevice(access, principal, deviceId).key, page)
    },

    sentOne(principal: UserPrincipal, deviceId: string, sentId: string): SentCommandBody {
      const sent = queue.get(requireDevice(access, principal, deviceId).key, sentId)
      if (!sent) throw new NotFound(`No sent command ${sentId} for device ${deviceId}`)
      return sent
    },

    /** Cancels a command still queued; Conflict for any other status. */
    async cancel(principal: UserPrincipal, deviceId: string, sentId: string): Promise<void> {
      const device = requireDevice(access, principal, deviceId)
      const outcome = await queue.cancel(device.key, sentId)
      if (outcome === null) throw new NotFound(`No sent command ${sentId} for device ${deviceId}`)
      if (!outcome.cancelled) throw new Conflict(`The command is ${outcome.status}: only a queued command can be cancelled`)
    },
  }
}

export type CommandService = ReturnType<typeof createCommandService>
