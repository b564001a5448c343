/**
 * GT06 / Concox listener (GT06_PORT). Per connection: frames from the splitter, then
 *   login 0x01         → known device: session opened and committed, then ACK; unknown, or a
 *                        source over its unknown-identifier limit (sources.ts): close
 *   GPS 0x12 / 0x22    → fixes (the protocol expects no ACK)
 *   status 0x13 / 0x23 → keep-alive, ACK after commit
 *   alarm 0x16 / 0x26  → fix + event, ACK after commit
 *   time 0x8A          → the server's time
 * A bad CRC or garbage drops bytes; an oversized frame, data before login, no login within the
 * login timeout or an unknown device closes the connection. Frames after a login wait until the login is settled, because the
 * decoder needs the session's IMEI; reports are then pipelined (each acked after its commit,
 * in order, since the pipeline settles reports in the order it received them).
 */
import type { Clock } from '../clock'
import type { Logger } from '../log'
import { decodeGt06Frame, type Gt06Session } from './protocols/gt06/decoder'
import { createGt06Parser, type Gt06Frame } from './protocols/gt06/framing'
import type { DeviceSession, IngestPipeline } from './pipeline'
import { reportFailures, startTcpListener, type ConnectionGate, type ConnectionHandler, type ConnectionRefusal, type TcpConnection, type TcpListener } from './tcp'

export interface Gt06ListenerOptions {
  pipeline: IngestPipeline
  clock: Clock
  log: Logger
  port: number
  hostname?: string
  idleTimeoutMs?: number
  loginTimeoutMs?: number
  gate?: ConnectionGate
  onRefused?: (reason: ConnectionRefusal) => void
}

export function startGt06Listener(options: Gt06ListenerOptions): TcpListener {
  const { pipeline, clock, log } = options
  return startTcpListener({
    name: 'gt06',
    port: options.port,
    hostname: options.hostname,
    clock,
    log,
    idleTimeoutMs: options.idleTimeoutMs,
    loginTimeoutMs: options.loginTimeoutMs,
    gate: options.gate,
    onRefused: options.onRefused,
    drain: () => pipeline.flush(),
    connect: (connection) => gt06Connection(connection, pipeline, clock, log),
  })
}

function gt06Connection(connection: TcpConnection, pipeline: IngestPipeline, clock: Clock, log: Logger): ConnectionHandler {
  const parser = createGt06Parser()
  const session: Gt06Session = { imei: null }
  let device: DeviceSession | null = null
  /** frames that arrived while a login was being committed */
  let waiting: Gt06Frame[] = []
  let loggingIn = false

  const { refuse, broken } = reportFailures(connection, log, 'gt06')

  function login(imei: string, ack: Uint8Array): void {
    if (device && session.imei === imei) {
      // the same device logging in again on this connection: a keep-alive
      const settled = connection.track()
      pipeline.ingest({ uniqueId: imei, fixes: [], events: [] }).then(() => connection.write(ack), refuse).catch(broken).finally(settled)
      return
    }
    loggingIn = true
    const settled = connection.track()
    pipeline
      .openSession(imei, { source: connection.remote })
      .then(
        (opened) => {
          // the socket went away while the login was being committed
          if (connection.closed) return opened.close()
          device?.close()
          device = opened
          session.imei = imei
          connection.identified()
          connection.write(ack)
          loggingIn = false
          const queued = waiting
          waiting = []
          for (const frame of queued) handle(frame)
        },
        (error) => {
          waiting = []
          refuse(error)
        },
      )
      .catch(broken)
      .finally(settled)
  }

  function handle(frame: Gt06Frame): void {
    if (connection.closed) return
    if (loggingIn) {
      waiting.push(frame)
      return
    }
    const message = decodeGt06Frame(frame, session, { now: Math.floor(clock.now() / 1000) })
    switch (message.kind) {
      case 'login':
        return login(message.imei, message.ack)
      case 'report':
      case 'status': {
        const report = message.kind === 'report' ? message.report : { uniqueId: message.uniqueId, fixes: [], events: [] }
        const ack = message.ack
        const settled = connection.track()
        pipeline
          .ingest(report)
          .then(() => {
            if (ack) connection.write(ack)
          }, refuse)
          .catch(broken)
          .finally(settled)
        return
      }
      case 'other':
        if (message.ack) connection.write(message.ack)
        return
      case 'invalid':
        if (message.reason === 'not_logged_in') return connection.close('data before login')
        log.debug('gt06 frame dropped', { remote: connection.remote, reason: message.message })
        return
    }
  }

  return {
    data(chunk) {
      for (const item of parser.push(chunk)) {
        if (item.kind === 'frame') {
          connection.progress()
          handle(item.frame)
        } else {
          log.debug('gt06 stream error', { remote: connection.remote, code: item.error.code, message: item.error.message })
          if (item.error.fatal) return connection.close(item.error.code)
        }
      }
    },
    closed() {
      waiting = []
      device?.close()
      device = null
    },
  }
}
