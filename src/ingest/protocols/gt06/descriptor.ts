/**
 * GT06 / Concox / Jimi and their clones, 2G and 4G, as a unit: TCP on GT06_PORT (default 5023).
 *
 *   login 0x01          the connection's device (accept: the ACK; unknown: closed)
 *   positions, alarms   stored, then ACKed where the devices wait for it (alarms, 0x95 dashcam
 *                       alarms, 0x70 modules, AZ735's 0x7979 packets); positions and cell
 *                       packets need none
 *   0x13/0x23/0x94      what they say of the device (battery, power, signal, ignition, ICCID, …)
 *                       kept as its status, their alarm byte as an event; ACKed after the commit
 *   cell / Wi-Fi        keep the device alive; their cells and access points kept in its status
 *   0x8A time request   answered at once with the server's time
 *   0x15/0x21 answers   a command's answer (command.ts), matched to it by the server flag it echoes;
 *                       one that spells out a position (to WHERE) is also stored as a fix
 *   anything before a login closes the connection.
 *
 * Commands go out as online commands (0x80): printable ASCII, at most 243 characters.
 */
import type { DecodedReport } from '../../types'
import { networkStatus } from '../network'
import type { Step, TcpProtocol } from '../protocol'
import { decodeGt06Answer, encodeGt06Command, GT06_COMMAND_SEPARATORS, isGt06Answer, positionOfGt06Answer } from './command'
import { decodeGt06Frame, type Gt06Message } from './decoder'
import { gt06FrameReader, type Gt06Frame } from './framing'
import { gt06Model } from './model'

/** What a decoded message is to the session: its report gets the device status the packet carried. */
function gt06Step(message: Gt06Message): Step {
  switch (message.kind) {
    case 'login':
      return { kind: 'login', uniqueId: message.imei, accept: message.ack, refuse: null }
    case 'report':
    case 'status': {
      const status = { ...message.status, ...(message.report.fixes.length === 0 ? networkStatus(message.network) : {}) }
      const report: DecodedReport = Object.keys(status).length > 0 ? { ...message.report, status } : message.report
      return { kind: 'report', report, reply: message.ack }
    }
    case 'other':
      return { kind: 'answer', reply: message.ack }
    case 'invalid':
      return message.reason === 'not_logged_in' ? { kind: 'close', reason: 'data before login' } : { kind: 'drop', reason: message.message }
  }
}

/** A terminal's answer to a command: nothing to store, nothing to send back. */
function answerStep(frame: Gt06Frame, uniqueId: string | null): Step {
  if (uniqueId === null) return { kind: 'drop', reason: 'command answer before a login' }
  const answer = decodeGt06Answer(frame)
  if (answer === null) return { kind: 'drop', reason: `GT06 command answer (0x${frame.protocol.toString(16)}) that does not add up` }
  // an answer that spells out a position (to WHERE) is also a fix
  const fix = positionOfGt06Answer(answer.text)
  if (fix) return { kind: 'report', report: { uniqueId, fixes: [fix], events: [] }, reply: null, commandAnswer: answer }
  return { kind: 'answer', reply: null, commandAnswer: answer }
}

const reader = gt06FrameReader()

export const gt06: TcpProtocol<Gt06Frame, null> = {
  name: 'gt06',
  title: 'GT06 / Concox',
  transport: 'tcp',
  defaultPort: 5023,
  portVariable: 'GT06_PORT',
  model: gt06Model,
  // the GT06 reader keeps no state: one serves every connection
  framing: () => reader,
  // nothing is carried from one frame to the next: the answers echo the command's reference
  connectionState: () => null,
  decode: (frame, { now, uniqueId }) =>
    isGt06Answer(frame.protocol) && frame.lenient?.crcChecked !== false ? answerStep(frame, uniqueId) : gt06Step(decodeGt06Frame(frame, { imei: uniqueId }, { now })),
  // the server flag is the command's reference: the answer echoes it
  encodeCommand: (text, { ref, sequence }) => encodeGt06Command(text, ref, sequence),
  commandSeparators: GT06_COMMAND_SEPARATORS,
}
