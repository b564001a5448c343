/**
 * The one TCP session handler: every TCP protocol unit (protocols/<name>/) is served by it, the
 * unit giving only its framing and what each frame asks (protocols/protocol.ts). Per connection:
 *
 *   bytes → the framing machine (protocols/framing.ts) → frames → the unit's decoder → a Step:
 *   login   open the device's session (committed), then the unit's accept; refused: its refuse,
 *           and the connection closes; masked (an unknown identifier past its source's ration,
 *           identify.ts): the accept all the same, after the commit a known device waits for,
 *           and from then on the connection's reports are decoded and answered as a known
 *           device's would be, but dropped and counted, never stored;
 *   report  commit it through the pipeline, then the unit's reply (never before the commit);
 *           on a connection without a device yet (a protocol without a login) the report's
 *           identifier opens the session first, as a login would;
 *   answer  a reply that needs no commit (a time request), or only a sign of life;
 *   drop    logged at debug; close: the connection ends (data before a login).
 * Frames that arrive while a session is being opened wait for it, because decoding them needs the
 * device. Reports are pipelined: each is acknowledged after its commit, in order, since the
 * pipeline settles reports in the order it received them.
 *
 * What every connection gets besides: Bun.listen, writes that respect backpressure, reading
 * paused while too many reports of one connection await their commit, and the timeouts: a client
 * that completes no frame for `idleTimeoutMs` is closed (which also catches a client that trickles
 * a frame it never finishes), and so is one that has not identified a device within
 * `loginTimeoutMs`. Elapsed time comes from the injected clock; the check runs on a real-time
 * interval, or by hand (`closeIdle()`) in tests.
 *
 * Connections are capped, in total and per source (an IPv4 address or an IPv6 /64), by a gate
 * the listeners share: one beyond a cap is closed at once, before it costs anything more than its
 * descriptor for a moment. Idle sockets could otherwise take every file descriptor, and then the
 * API stops answering too.
 *
 * Commands (with `commands`, for a protocol that has an encoder): each logged-in device gets a
 * command line (commands.ts) that sends what the queue hands out and gives back the answers the
 * unit's decoder recognises (a Step's `commandAnswer`). The unit's decoder and encoder share one
 * state per connection (`connectionState()`, protocols/protocol.ts), made when it opens and gone
 * when it closes; the first command goes out only after a frame identified the device, so the
 * decoder has seen that frame (an H02 maker, a watch's dialect, a JT808 header) by then.
 *
 * Nothing a client sends can throw out of here: a handler error closes that connection only.
 */
import type { Socket, TCPSocketListener } from 'bun'
import type { Clock } from '../clock'
import type { Logger } from '../log'
import { createCommandCourier, type CommandCourier, type CommandDelivery, type CommandLine } from './commands'
import { MaskedUnknownDevice, UnknownDevice } from './identify'
import type { DeviceSession, IngestPipeline } from './pipeline'
import { createFrameMachine } from './protocols/framing'
import type { Step, TcpProtocol } from './protocols/protocol'
import { sourceOf } from './sources'
import type { DecodedReport } from './types'

export const DEFAULT_IDLE_TIMEOUT_MS = 5 * 60_000
export const DEFAULT_LOGIN_TIMEOUT_MS = 30_000
export const DEFAULT_MAX_CONNECTIONS = 10_000
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 100
/** bytes we hold for a client that does not read its acknowledgements */
const MAX_OUTGOING_BYTES = 64 * 1024
/** reports of one connection waiting for a commit: pause reading above, resume below half */
const MAX_IN_FLIGHT = 256

export interface TcpConnection {
  readonly remote: string
  readonly closed: boolean
  /** queue bytes for the client (kept in order across backpressure) */
  write(bytes: Uint8Array): void
  /** close once what was written has gone out */
  close(reason: string): void
  /** close now, dropping anything unsent */
  terminate(reason: string): void
  /** a complete frame arrived: resets the idle timer */
  progress(): void
  /** a device logged in on this connection: the login timeout no longer applies */
  identified(): void
  /** count a report awaiting its commit; call the returned function when it settled */
  track(): () => void
}

interface ConnectionHandler {
  data(chunk: Uint8Array): void
  /** the socket is gone, for whatever reason */
  closed(): void
}

export type ConnectionRefusal = 'total' | 'address'

/** The caps on open device connections; one gate may be shared by several listeners. */
export interface ConnectionGate {
  /** admit a connection from this address, or say which cap it is over */
  admit(address: string): ConnectionRefusal | null
  /** an admitted connection from this address closed */
  release(address: string): void
}

export function createConnectionGate(limits: { maxConnections?: number; maxConnectionsPerAddress?: number } = {}): ConnectionGate {
  const maxTotal = limits.maxConnections ?? DEFAULT_MAX_CONNECTIONS
  const maxPerSource = limits.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS
  const perSource = new Map<string, number>()
  let total = 0
  return {
    admit(address) {
      if (total >= maxTotal) return 'total'
      const source = sourceOf(address)
      const count = perSource.get(source) ?? 0
      if (count >= maxPerSource) return 'address'
      perSource.set(source, count + 1)
      total++
      return null
    },
    release(address) {
      const source = sourceOf(address)
      const count = perSource.get(source)
      if (count === undefined) return
      if (count <= 1) perSource.delete(source)
      else perSource.set(source, count - 1)
      total--
    },
  }
}

export interface TcpListenerOptions {
  pipeline: IngestPipeline
  port: number
  hostname?: string
  clock: Clock
  log: Logger
  idleTimeoutMs?: number
  /** a connection that has identified no device this long after it opened is closed (default 30 s) */
  loginTimeoutMs?: number
  /** the connection caps; without one the listener has its own with the default caps */
  gate?: ConnectionGate
  /** told of each connection closed at once for being over a cap (metrics) */
  onRefused?: (reason: ConnectionRefusal) => void
  /** told of bytes dropped as garbage (metrics) */
  onGarbage?: (bytes: number) => void
  /** the command queue: commands go to the protocol's logged-in devices and their answers come back (none without it) */
  commands?: CommandDelivery
}

export interface TcpListener {
  port: number
  /** open connections */
  readonly connections: number
  /** close the connections idle past the idle timeout, or not logged in past the login timeout, now; returns how many */
  closeIdle(): number
  /** stop accepting, commit and acknowledge what is in flight, then close every connection */
  stop(): Promise<void>
}

interface ConnectionState {
  connection: Connection | null
}

class Connection implements TcpConnection {
  handler: ConnectionHandler | null = null
  readonly openedAt: number
  lastProgress: number
  loggedIn = false
  closed = false
  private outgoing: Uint8Array[] = []
  private outgoingBytes = 0
  private closeWhenFlushed = false
  private inFlight = 0
  private paused = false

  constructor(
    readonly socket: Socket<ConnectionState>,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly name: string,
    /** the peer's address, kept: the socket may not know it any more once it is closed */
    readonly remote: string,
  ) {
    this.openedAt = this.lastProgress = clock.now()
  }

  write(bytes: Uint8Array): void {
    if (this.closed || this.closeWhenFlushed) return
    if (this.outgoing.length > 0) {
      this.outgoing.push(bytes)
      this.outgoingBytes += bytes.length
      if (this.outgoingBytes > MAX_OUTGOING_BYTES) this.terminate('client does not read its acknowledgements')
      return
    }
    const written = this.socket.write(bytes)
    if (written < 0) this.terminate('write failed')
    else if (written < bytes.length) {
      this.outgoing.push(bytes.subarray(written))
      this.outgoingBytes += bytes.length - written
    }
  }

  drain(): void {
    while (this.outgoing.length > 0 && !this.closed) {
      const next = this.outgoing[0]
      const written = this.socket.write(next)
      if (written < 0) return this.terminate('write failed')
      this.outgoingBytes -= Math.max(0, written)
      if (written < next.length) {
        this.outgoing[0] = next.subarray(written)
        return
      }
      this.outgoing.shift()
    }
    if (this.closeWhenFlushed && !this.closed) this.socket.end()
  }

  close(reason: string): void {
    if (this.closed || this.closeWhenFlushed) return
    this.log.debug(`${this.name} closing connection`, { remote: this.remote, reason })
    if (this.outgoing.length > 0) this.closeWhenFlushed = true
    else this.socket.end()
  }

  terminate(reason: string): void {
    if (this.closed) return
    this.log.debug(`${this.name} terminating connection`, { remote: this.remote, reason })
    this.closed = true
    this.socket.terminate()
  }

  progress(): void {
    this.lastProgress = this.clock.now()
  }

  identified(): void {
    this.loggedIn = true
  }

  track(): () => void {
    this.inFlight++
    if (this.inFlight >= MAX_IN_FLIGHT && !this.paused) {
      this.paused = true
      this.socket.pause()
    }
    let done = false
    return () => {
      if (done) return
      done = true
      this.inFlight--
      if (this.paused && this.inFlight <= MAX_IN_FLIGHT / 2 && !this.closed) {
        this.paused = false
        this.socket.resume()
      }
    }
  }
}

/** Serve `protocol` on its port: one session (below) for each connection. */
export function startTcpListener<F, S>(protocol: TcpProtocol<F, S>, options: TcpListenerOptions): TcpListener {
  const { clock, log, pipeline } = options
  const name = protocol.name
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
  const loginTimeoutMs = options.loginTimeoutMs ?? DEFAULT_LOGIN_TIMEOUT_MS
  const gate = options.gate ?? createConnectionGate()
  const open = new Set<Connection>()
  const courier = options.commands && protocol.encodeCommand ? createCommandCourier(protocol, options.commands, { clock, log }) : null
  let accepting = true

  const closed = (socket: Socket<ConnectionState>) => {
    const connection = socket.data?.connection
    if (!connection || !open.has(connection)) return
    open.delete(connection)
    gate.release(connection.remote)
    connection.closed = true
    try {
      connection.handler?.closed()
    } catch (error) {
      log.error(`${name} close handler failed`, { error: (error as Error).message })
    }
  }

  const server: TCPSocketListener<ConnectionState> = Bun.listen<ConnectionState>({
    hostname: options.hostname ?? '0.0.0.0',
    port: options.port,
    // one process a port: a second server must fail to bind (EADDRINUSE), not share the port's connections
    exclusive: true,
    data: { connection: null },
    socket: {
      binaryType: 'uint8array',
      open(socket) {
        if (!accepting) return void socket.terminate()
        const remote = socket.remoteAddress
        const refusal = gate.admit(remote)
        if (refusal !== null) {
          // at once: a descriptor held for a polite close is what the cap is there to save
          log.debug(`${name} connection refused`, { remote, cap: refusal })
          options.onRefused?.(refusal)
          return void socket.terminate()
        }
        const connection = new Connection(socket, clock, log, name, remote)
        socket.data = { connection }
        open.add(connection)
        try {
          connection.handler = deviceSession(protocol, connection, options, courier)
        } catch (error) {
          log.error(`${name} connection setup failed`, { error: (error as Error).message })
          connection.terminate('setup failed')
        }
      },
      data(socket, chunk) {
        const connection = socket.data.connection
        if (!connection || connection.closed || !connection.handler) return
        try {
          connection.handler.data(chunk as Uint8Array)
        } catch (error) {
          // A decoder bug or a hostile frame: this connection goes, the listener stays.
          log.error(`${name} frame handling failed`, { remote: connection.remote, error: (error as Error).message })
          connection.terminate('handler error')
        }
      },
      drain(socket) {
        socket.data.connection?.drain()
      },
      close: closed,
      error(socket, error) {
        log.debug(`${name} socket error`, { error: error.message })
        closed(socket)
      },
    },
  })
  log.info(`${name} listening`, { port: server.port })

  function closeIdle(): number {
    const now = clock.now()
    const idleCutoff = now - idleTimeoutMs
    const loginCutoff = now - loginTimeoutMs
    let count = 0
    for (const connection of open) {
      if (connection.closed) continue
      if (connection.lastProgress <= idleCutoff) connection.terminate('idle timeout')
      else if (!connection.loggedIn && connection.openedAt <= loginCutoff) connection.terminate('no login within the login timeout')
      else continue
      count++
    }
    return count
  }

  const idleTimer = setInterval(closeIdle, Math.max(50, Math.min(idleTimeoutMs / 4, loginTimeoutMs / 4, 10_000)))
  idleTimer.unref?.()

  return {
    port: server.port,
    get connections() {
      return open.size
    },
    closeIdle,
    async stop() {
      if (!accepting) return
      accepting = false
      clearInterval(idleTimer)
      courier?.stop()
      server.stop(false)
      // Commit what is queued; the acks go out from the promise callbacks, before the close.
      pipeline.flush()
      await Bun.sleep(5)
      for (const connection of [...open]) connection.close('server stopping')
      await Bun.sleep(5)
      for (const connection of [...open]) connection.terminate('server stopped')
      server.stop(true)
      // close events may not fire once the listener is gone: settle the sessions ourselves
      for (const connection of [...open]) closed(connection.socket)
    },
  }
}

/**
 * One connection's session: frames from the machine, each decoded by the unit into a Step and
 * carried out. `device` is the session opened for the identifier in `uniqueId`.
 */
function deviceSession<F, S>(protocol: TcpProtocol<F, S>, connection: TcpConnection, options: TcpListenerOptions, courier: CommandCourier<S> | null): ConnectionHandler {
  const { pipeline, clock, log } = options
  const name = protocol.name
  const framing = createFrameMachine(protocol.framing())
  /** what the unit's decoder and command encoder share on this connection, and on no other (protocol.ts) */
  const state = protocol.connectionState()
  let device: DeviceSession | null = null
  /** the connection's identifier: its device's, or a masked unknown one's (then `device` is null) */
  let uniqueId: string | null = null
  /** a session is being opened: later frames wait for it */
  let identifying = false
  let waiting: F[] = []
  /** the device's commands on this connection */
  let commandLine: CommandLine | null = null

  /** Refused by the pipeline (an unknown device, data it will not store): closed politely, after what was written. */
  function refuse(error: unknown): void {
    const unknown = error instanceof UnknownDevice
    if (!unknown) log.warn(`${name} report not stored`, { error: (error as Error)?.message })
    connection.close(unknown ? 'unknown device' : 'report not stored')
  }

  /** A failure in our own handling: this connection goes, nothing else. */
  function broken(error: unknown): void {
    log.error(`${name} connection failed`, { remote: connection.remote, error: (error as Error)?.message })
    connection.terminate('handler error')
  }

  /**
   * Open the session of `id` (what an unknown one is told is rationed by the client's address),
   * then `then()`, then the frames that waited. Masked: no session, but `then()` all the same,
   * with `store` dropping what the connection reports from then on.
   */
  function identify(id: string, then: () => void, refusal: Uint8Array | null): void {
    identifying = true
    const settled = connection.track()
    /** the connection is now `id`'s, its device `opened` (null: masked) */
    const take = (opened: DeviceSession | null) => {
      device?.close()
      device = opened
      uniqueId = id
      identifying = false
      connection.identified()
      // (the line writes nothing before its first await: `then` still answers the login first)
      commandLine?.close()
      commandLine = opened ? (courier?.open(opened.device.key, id, connection, state) ?? null) : null
      then()
      const queued = waiting
      waiting = []
      for (const frame of queued) handle(frame)
    }
    pipeline
      .openSession(id, { source: connection.remote, protocol: protocol.name, builtinModel: protocol.model.id })
      .then(
        (opened) => {
          // the socket went away while the session was being committed
          if (connection.closed) return opened.close()
          take(opened)
        },
        (error) => {
          // past its source's ration an unknown identifier is answered as a known one: the answer says nothing of it
          if (error instanceof MaskedUnknownDevice) return connection.closed ? undefined : take(null)
          waiting = []
          if (refusal && error instanceof UnknownDevice) connection.write(refusal)
          refuse(error)
        },
      )
      .catch(broken)
      .finally(settled)
  }

  /**
   * Commit the report, then send the reply: never before the commit. On a masked connection
   * (no device) the report is dropped and counted, and the reply goes when a commit would have.
   */
  function store(report: DecodedReport, reply: Uint8Array | null): void {
    const settled = connection.track()
    const stored = device ? pipeline.ingest(report) : pipeline.discard({ source: connection.remote })
    stored
      .then(() => {
        if (reply) connection.write(reply)
      }, refuse)
      .catch(broken)
      .finally(settled)
  }

  function carryOut(step: Step): void {
    switch (step.kind) {
      case 'login':
        // the same device logging in again on this connection: a keep-alive
        if (uniqueId !== null && step.uniqueId === uniqueId) return store({ uniqueId: step.uniqueId, fixes: [], events: [] }, step.accept)
        return identify(step.uniqueId, () => step.accept && connection.write(step.accept), step.refuse)
      case 'report': {
        const answered = () => step.commandAnswer && commandLine?.answer(step.commandAnswer)
        if (uniqueId !== null && step.report.uniqueId === uniqueId) {
          answered()
          return store(step.report, step.reply)
        }
        // no login in this protocol, or another device on this connection: the report names it
        return identify(step.report.uniqueId, () => (answered(), store(step.report, step.reply)), null)
      }
      case 'answer':
        if (step.reply) connection.write(step.reply)
        if (step.commandAnswer) commandLine?.answer(step.commandAnswer)
        return
      case 'drop':
        log.debug(`${name} frame dropped`, { remote: connection.remote, reason: step.reason })
        return
      case 'close':
        return connection.close(step.reason)
    }
  }

  function handle(frame: F): void {
    if (connection.closed) return
    if (identifying) {
      waiting.push(frame)
      return
    }
    carryOut(protocol.decode(frame, { now: Math.floor(clock.now() / 1000), uniqueId }, state))
  }

  return {
    data(chunk) {
      for (const item of framing.push(chunk)) {
        if (item.kind === 'frame') {
          // a whole frame, a keep-alive included: the connection is not idle
          connection.progress()
          handle(item.frame)
          continue
        }
        const { error } = item
        if (error.code === 'garbage') options.onGarbage?.((error as { skippedBytes: number }).skippedBytes)
        log.debug(`${name} stream error`, { remote: connection.remote, code: error.code, message: error.message })
        if (error.fatal) return connection.close(error.code)
      }
    },
    closed() {
      waiting = []
      commandLine?.close()
      commandLine = null
      device?.close()
      device = null
    },
  }
}
