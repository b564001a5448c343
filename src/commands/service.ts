/**
 * The commands a device's model offers, with their widgets exactly as stored; sending one
 * (checked against its widget, its text made from `send.text`, stored in the queue before the
 * 202), and the device's sent commands. Every device is found through the access function: a
 * device out of reach is 404; share tokens never get here (the routes are for users).
 */
import type { DeviceAccess } from '../devices/access'
import { requireDevice } from '../devices/service'
import { Conflict, NotFound } from '../errors'
import type { UserPrincipal } from '../principal'
import type { CommandBody, SentCommandBody } from './model'
import type { CommandQueue } from './queue'
import { PROTOCOLS } from '../ingest/protocols'
import type { ModelStore } from '../store/models'
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
  /** the models and their commands (store/models.ts) */
  models: ModelStore
  access: DeviceAccess
  queue: CommandQueue
}

export function createCommandService({ models, access, queue }: CommandServiceDeps) {
  return {
    async forDevice(principal: UserPrincipal, deviceId: string): Promise<CommandBody[]> {
      const device = await requireDevice(access, principal, deviceId)
      // a device without a model yet (it has not reported) offers no command
      if (device.model_id === null) return []
      return (await models.commandsOf(device.model_id)).map((c) => ({ id: c.id, name: c.name, widget: JSON.parse(c.widget) }))
    },

    /** Queues the command with these form values; answers once it is stored. */
    async send(principal: UserPrincipal, deviceId: string, commandId: string, body: unknown): Promise<SentCommandBody> {
      const device = await requireDevice(access, principal, deviceId)
      if (device.model_id === null) {
        throw new Conflict(
          'The device has no model yet, so no command: its first report gives it the built-in model of its protocol (or set one with PATCH /devices/{id})',
        )
      }
      const command = await models.sendable(device.model_id, commandId.toLowerCase())
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
    async sent(principal: UserPrincipal, deviceId: string, page: { limit: number; offset: number }): Promise<SentCommandBody[]> {
      return queue.list((await requireDevice(access, principal, deviceId)).key, page)
    },

    async sentOne(principal: UserPrincipal, deviceId: string, sentId: string): Promise<SentCommandBody> {
      const sent = await queue.get((await requireDevice(access, principal, deviceId)).key, sentId)
      if (!sent) throw new NotFound(`No sent command ${sentId} for device ${deviceId}`)
      return sent
    },

    /** Cancels a command still queued; Conflict for any other status. */
    async cancel(principal: UserPrincipal, deviceId: string, sentId: string): Promise<void> {
      const device = await requireDevice(access, principal, deviceId)
      const outcome = await queue.cancel(device.key, sentId)
      if (outcome === null) throw new NotFound(`No sent command ${sentId} for device ${deviceId}`)
      if (!outcome.cancelled) throw new Conflict(`The command is ${outcome.status}: only a queued command can be cancelled`)
    },
  }
}

export type CommandService = ReturnType<typeof createCommandService>
