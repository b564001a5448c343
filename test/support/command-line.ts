/**
 * Commands over a real TCP socket, wired as the server wires them: one command queue that the app
 * queues into (POST over app.handle) and the protocols' listeners deliver from, one ingest
 * pipeline behind the listeners, each listener on 127.0.0.1, port 0. Six test files built this
 * by hand; here it is built once, and torn down in the one order that lets everything finish:
 * the clients, the listeners (they commit what is in flight), the pipeline, the queue, the database.
 */
import { createApp } from '../../src/app'
import type { manualClock } from '../../src/clock'
import { createCommandQueue, type CommandQueue } from '../../src/commands/queue'
import { loadConfig } from '../../src/config'
import type { CommandDelivery } from '../../src/ingest/commands'
import { LivePositions } from '../../src/ingest/live'
import { createIngestPipeline, type IngestPipeline, type PipelineOptions } from '../../src/ingest/pipeline'
import type { Protocol } from '../../src/ingest/protocols/protocol'
import { type ConnectionGate, startTcpListener, type TcpListener } from '../../src/ingest/tcp'
import { silentLogger } from '../../src/log'
import type { Stores } from '../../src/store'
import { connectClient, type TestClient } from '../ingest/frames'
import { caller, type EngineWorld, openWorld, type World } from './world'

export interface CommandLineOptions {
  /** the pipeline's options beyond the server's defaults (offline after 600 s, no sweep timer), e.g. `unknownIdentifiers` */
  pipeline?: Partial<Omit<PipelineOptions, 'stores' | 'clock' | 'log' | 'live'>>
  /** the connection caps, one gate for every listener; without it each listener has its own */
  gate?: ConnectionGate
  /** what the listeners deliver from: the queue itself, unless a test watches it */
  delivery?: (queue: CommandQueue) => CommandDelivery
  /** the clock's time before anything runs (the world's manual clock starts at 2026-11-25 12:00 UTC) */
  startAtMs?: number
}

/** The database a command line runs over: a test world's, or the product's as the server opens it. */
export interface CommandLineDatabase {
  stores: Stores
  clock: ReturnType<typeof manualClock>
  close(): Promise<void>
}

export interface CommandLine<Name extends string> {
  clock: ReturnType<typeof manualClock>
  queue: CommandQueue
  app: ReturnType<typeof createApp>
  /** a request through app.handle, with a bearer token and a JSON body when given */
  call: World['call']
  pipeline: IngestPipeline
  /** each protocol's listener, by the name it was given under */
  listeners: Record<Name, TcpListener>
  /** a client connected to a protocol's listener, or to any port (a server process's); ended at close */
  connect(to: Name | number): Promise<TestClient>
  /** ends the clients, stops the listeners, the pipeline and the queue, then closes the database */
  close(): Promise<void>
}

/** The command line over `database`, listening for `protocols` (by name: `{ gt06, h02 }`). */
export function commandLineOver<Name extends string>(
  database: CommandLineDatabase,
  protocols: Record<Name, Protocol>,
  options: CommandLineOptions = {},
): CommandLine<Name> {
  const { stores, clock } = database
  if (options.startAtMs !== undefined) clock.set(options.startAtMs)
  const live = new LivePositions()
  const config = loadConfig({})
  const queue = createCommandQueue({ commands: stores.commands, clock, live, log: silentLogger, ttlSeconds: config.commandTtl })
  const app = createApp({ stores, config, clock, live, commandQueue: queue })
  const pipeline = createIngestPipeline({ stores, clock, log: silentLogger, live, offlineAfterSeconds: 600, sweepIntervalMs: 0, ...options.pipeline })
  const commands = options.delivery ? options.delivery(queue) : queue
  const listeners = {} as Record<Name, TcpListener>
  for (const name of Object.keys(protocols) as Name[]) {
    const protocol = protocols[name]
    if (protocol.transport !== 'tcp') throw new Error(`${protocol.name} is not a TCP protocol`)
    listeners[name] = startTcpListener(protocol, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', gate: options.gate, commands })
  }
  const clients: TestClient[] = []
  return {
    clock,
    queue,
    app,
    call: caller(app),
    pipeline,
    listeners,
    async connect(to) {
      const client = await connectClient(typeof to === 'number' ? to : listeners[to].port)
      clients.push(client)
      return client
    },
    async close() {
      for (const client of clients.splice(0)) client.end()
      await Promise.all(Object.values<TcpListener>(listeners).map((listener) => listener.stop()))
      await pipeline.stop()
      queue.stop()
      await database.close()
    },
  }
}

/** a command line over a test world: the world's count, execute, deviceKey beside it */
export type WorldCommandLine<Name extends string> = CommandLine<Name> & { world: EngineWorld }

/** The command line over a test world of `dataset` on the run's engine (openWorld). */
export async function openCommandLine<Name extends string>(
  dataset: object,
  protocols: Record<Name, Protocol>,
  options: CommandLineOptions = {},
): Promise<WorldCommandLine<Name>> {
  const world = await openWorld(dataset)
  try {
    return { ...commandLineOver(world, protocols, options), world }
  } catch (error) {
    await world.close()
    throw error
  }
}
