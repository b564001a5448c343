/**
 * A world for command tests: the test world's fleet with commands that can be sent, and the
 * command queue built outside the app (as the server builds it for its protocol listeners), so a
 * test drives the delivery interface directly, with the world's clock.
 */
import { createApp } from '../../src/app'
import type { manualClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { createCommandQueue, type CommandQueue } from '../../src/commands/queue'
import { LivePositions } from '../../src/ingest/live'
import { createLogger, type Logger } from '../../src/log'
import type { Stores } from '../../src/store'
import { baseDataset, caller, type EngineWorld, ids, openWorld } from '../support/world'

export const commandIds = {
  reboot: '0e000000-0000-4000-8000-000000000003', // a button without `send`
  setInterval: '0e000000-0000-4000-8000-000000000004', // a form with a number field
  locate: '0e000000-0000-4000-8000-000000000005', // the osmand model's command
}

/** the test world's fleet; its GT06 model's commands carry `send` */
export function commandDataset() {
  const data = baseDataset()
  const gt06 = data.models.find((m) => m.id === ids.gt06)!
  const bare = data.models.find((m) => m.id === ids.bare)! as { commands?: unknown[] }
  gt06.commands = [
    { ...gt06.commands![0]!, send: { text: 'RELAY,1#' } },
    { ...gt06.commands![1]!, send: { text: 'APN,{apn},,{password}#' } },
    { id: commandIds.reboot, name: 'Reboot', widget: { type: 'button', label: 'Reboot', confirm: false } },
    {
      id: commandIds.setInterval,
      name: 'Set interval',
      widget: { type: 'form', fields: [{ name: 'seconds', type: 'number', label: 'Seconds' }] },
      send: { text: 'TIMER,{seconds}#' },
    },
  ] as typeof gt06.commands
  bare.commands = [{ id: commandIds.locate, name: 'Locate', widget: { type: 'button', label: 'Locate', confirm: false }, send: { text: 'WHERE#' } }]
  return data
}

/** The command world on the run's engine (test/support/world.ts openWorld): what its tests use. */
export interface EngineCommandWorld {
  /** the world underneath: its stores, execute, count, deviceKey */
  world: EngineWorld
  clock: ReturnType<typeof manualClock>
  live: LivePositions
  queue: CommandQueue
  app: ReturnType<typeof createApp>
  /** every log line written, as text */
  logLines: string[]
  call(method: string, path: string, options?: { token?: string; body?: unknown }): Promise<Response>
  deviceKey(id: string): Promise<number>
  /**
   * A new app and queue over the same database, as after a restart: on a connection of their own
   * with nothing in memory from before (the old queue stopped)
   */
  restart(): Promise<EngineCommandWorld>
  close(): Promise<void>
}

function buildOver(world: EngineWorld, stores: Stores, logLines: string[], env: Record<string, string>): EngineCommandWorld {
  const config = loadConfig(env)
  const { clock } = world
  const log: Logger = createLogger('debug', (line) => logLines.push(line))
  const live = new LivePositions()
  const queue = createCommandQueue({ commands: stores.commands, clock, live, log, ttlSeconds: config.commandTtl })
  const app = createApp({ stores, config, clock, live, log, commandQueue: queue })
  return {
    world,
    clock,
    live,
    queue,
    app,
    logLines,
    call: caller(app),
    deviceKey: (id) => world.deviceKey(id),
    async restart() {
      queue.stop()
      return buildOver(world, await world.otherStores(), logLines, env)
    },
    async close() {
      queue.stop()
      await world.close()
    },
  }
}

/** makeCommandWorld on the run's engine; `env`: the server's environment (COMMAND_TTL) */
export async function openCommandWorld(env: Record<string, string> = {}): Promise<EngineCommandWorld> {
  const world = await openWorld(commandDataset())
  return buildOver(world, world.stores, [], env)
}
