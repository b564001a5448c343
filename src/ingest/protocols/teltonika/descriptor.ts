/**
 * Teltonika (FMB, FMC, FMM, …) as a unit: TCP on TELTONIKA_PORT (default 5027).
 *
 *   0xFF keep-alive     a sign of life, nothing sent back
 *   IMEI handshake      the connection's device: 01 once its session is committed; 00 and closed
 *                       for an unknown one (past its source's ration: 01, its data dropped)
 *   AVL data            (Codec 7, 8, 8E, 16) each record a fix (a Codec 7 record without coordinates:
 *                       none), alarm IOs as events, what the records say of the device
 *                       kept as its status (oldest first, so the newest record's values win); the
 *                       record count sent back after the commit; a packet that does not decode is
 *                       not acknowledged (the device resends it)
 *   command answers     a Codec 12 response (type 0x06) completes the command sent (the oldest
 *                       waiting for its answer: Codec 12 carries no reference); Codec 13 and 14
 *                       messages are recognised and dropped (the server sends no Codec 14 command)
 *
 * Commands go out in Codec 12 (command.ts): printable ASCII, at most 160 characters.
 */
import type { Step, TcpProtocol } from '../protocol'
import { encodeTeltonikaCommand, TELTONIKA_COMMAND_SEPARATORS } from './command'
import { CODEC_12, decodeTeltonikaPacket, MESSAGE_RESPONSE, type TeltonikaStatus } from './decoder'
import { teltonikaFrameReader, type TeltonikaFrame } from './framing'
import { teltonikaModel } from './model'
import { teltonikaImeiResponse } from './replies'

const ACCEPT = teltonikaImeiResponse(true)
const REFUSE = teltonikaImeiResponse(false)

/** The records' statuses as one, in time order: a later record's value wins. */
function mergedStatus(statuses: readonly TeltonikaStatus[]): Record<string, unknown> | undefined {
  if (statuses.length === 0) return undefined
  const ordered = statuses.length > 1 ? [...statuses].sort((a, b) => a.timestamp - b.timestamp) : statuses
  const merged: Record<string, unknown> = {}
  for (const status of ordered) Object.assign(merged, status.attributes)
  return Object.keys(merged).length > 0 ? merged : undefined
}

function teltonikaStep(frame: TeltonikaFrame, uniqueId: string | null): Step {
  switch (frame.kind) {
    case 'keepalive':
      return { kind: 'answer', reply: null }
    case 'imei':
      return { kind: 'login', uniqueId: frame.imei, accept: ACCEPT, refuse: REFUSE }
    case 'packet': {
      // the framing yields the handshake first: a packet without a device is after a refusal
      if (uniqueId === null) return { kind: 'drop', reason: 'packet without a device' }
      const decoded = decodeTeltonikaPacket(frame.packet.data, uniqueId)
      if (decoded.kind === 'invalid') return { kind: 'drop', reason: decoded.message }
      if (decoded.kind === 'command_answer') {
        const answer = decoded.commandAnswer
        // the answer to our Codec 12 command; a binary answer (RS232 data) is kept as its hex
        if (answer.codecId === CODEC_12 && answer.messageType === MESSAGE_RESPONSE) {
          return { kind: 'answer', reply: null, commandAnswer: { text: answer.hex ?? answer.text } }
        }
        return { kind: 'drop', reason: `codec 0x${decoded.codecId.toString(16)} message, not an answer to a command of ours` }
      }
      const status = mergedStatus(decoded.statuses)
      return { kind: 'report', report: status ? { ...decoded.report, status } : decoded.report, reply: decoded.ack }
    }
  }
}

export const teltonika: TcpProtocol<TeltonikaFrame, null> = {
  name: 'teltonika',
  title: 'Teltonika',
  transport: 'tcp',
  defaultPort: 5027,
  portVariable: 'TELTONIKA_PORT',
  model: teltonikaModel,
  // the reader keeps whether the handshake was read: one a connection
  framing: () => teltonikaFrameReader(),
  connectionState: () => null,
  decode: (frame, { uniqueId }) => teltonikaStep(frame, uniqueId),
  encodeCommand: (text) => encodeTeltonikaCommand(text),
  commandSeparators: TELTONIKA_COMMAND_SEPARATORS,
}
