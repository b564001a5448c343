/**
 * Teltonika listener (TELTONIKA_PORT). Per connection: the IMEI handshake (01 once the session
 * of a known device is committed; 00 and close for an unknown one, and for any from a source over
 * its unknown-identifier limit), then AVL packets in Codec 8, 8E or 16, each acknowledged with
 * its record count (4 bytes, big-endian) after the commit. A packet with a bad CRC or that does
 * not decode is not acknowledged: the device resends it. An invalid handshake, an oversized
 * packet or no handshake within the login timeout closes the connection.
 */
import type { Clock } from '../clock'
import type { Logger } from '../log'
import { decodeTeltonikaPacket } from './protocols/teltonika/decoder'
import { createTeltonikaParser, type TeltonikaPacket } from './protocols/teltonika/framing'
import { teltonikaImeiResponse } from './protocols/teltonika/replies'
import { TooManyUnknownDevices, UnknownDevice, type DeviceSession, type IngestPipeline } from './pipeline'
import { reportFailures, startTcpListener, type ConnectionGate, type ConnectionHandler, type ConnectionRefusal, type TcpConnection, type TcpListener } from './tcp'

export interface TeltonikaListenerOptions {
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

export function startTeltonikaListener(options: TeltonikaListenerOptions): TcpListener {
  const { pipeline, log } = options
  return startTcpListener({
    name: 'teltonika',
    port: options.port,
    hostname: options.hostname,
    clock: options.clock,
    log,
    idleTimeoutMs: options.idleTimeoutMs,
    loginTimeoutMs: options.loginTimeoutMs,
    gate: options.gate,
    onRefused: options.onRefused,
    drain: () => pipeline.flush(),
    connect: (connection) => teltonikaConnection(connection, pipeline, log),
  })
}

function teltonikaConnection(connection: TcpConnection, pipeline: IngestPipeline, log: Logger): ConnectionHandler {
  const parser = createTeltonikaParser()
  let imei: string | null = null
  let device: DeviceSession | null = null
  /** packets that arrived before the handshake was settled (a device should wait for 01) */
  let waiting: TeltonikaPacket[] = []

  const { refuse, broken } = reportFailures(connection, log, 'teltonika')

  function handshake(candidate: string): void {
    const settled = connection.track()
    pipeline
      .openSession(candidate, { source: connection.remote })
      .then(
        (opened) => {
          if (connection.closed) return opened.close()
          device = opened
          imei = candidate
          connection.identified()
          connection.write(teltonikaImeiResponse(true))
          const queued = waiting
          waiting = []
          for (const packet of queued) handle(packet)
        },
        (error) => {
          waiting = []
          // over the unknown-identifier limit: the same 00, so the answer says nothing of the IMEI
          if (error instanceof UnknownDevice || error instanceof TooManyUnknownDevices) connection.write(teltonikaImeiResponse(false))
          refuse(error)
        },
      )
      .catch(broken)
      .finally(settled)
  }

  function handle(packet: TeltonikaPacket): void {
    if (connection.closed) return
    if (imei === null) {
      waiting.push(packet)
      return
    }
    const decoded = decodeTeltonikaPacket(packet.data, imei)
    if (decoded.kind === 'invalid') {
      log.debug('teltonika packet dropped', { remote: connection.remote, reason: decoded.message })
      return
    }
    // a command answer needs no reply; keeping it comes with sending commands
    if (decoded.kind === 'command_answer') return
    const ack = decoded.ack
    const settled = connection.track()
    pipeline
      .ingest(decoded.report)
      .then(() => connection.write(ack), refuse)
      .catch(broken)
      .finally(settled)
  }

  return {
    data(chunk) {
      for (const item of parser.push(chunk)) {
        switch (item.kind) {
          case 'imei':
            connection.progress()
            handshake(item.imei)
            break
          case 'packet':
            connection.progress()
            handle(item.packet)
            break
          case 'keepalive':
            // the device keeping its link open while it has nothing to send: not idle
            connection.progress()
            break
          case 'error':
            log.debug('teltonika stream error', { remote: connection.remote, code: item.error.code, message: item.error.message })
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
