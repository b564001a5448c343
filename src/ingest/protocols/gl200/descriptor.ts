/**
 * Queclink @Track text protocol (GV300, GV350, GV55, GV500, GL300, GL500, GB100, …; the GL200 was
 * the first) as a unit: TCP on GL200_PORT (default 5004; 0 turns it off). There is no login: every
 * frame names its device by its IMEI, and the session handler opens the device's session on the
 * first one (an unknown IMEI closes the connection, or is masked past its source's ration).
 *
 * Reports (+RESP, and +BUFF for those the device kept while offline, flagged `buffered`) are
 * stored with every position they carry and their alarms; ignition reports keep the ignition as
 * the device's status. The heartbeat (+ACK:GTHBD) keeps the device alive and is answered
 * +SACK:GTHBD (replies.ts); other +ACK frames answer commands (command.ts).
 */
import type { DecodedReport } from '../../types'
import type { Step, TcpProtocol } from '../protocol'
import { encodeGl200Command, GL200_COMMAND_SEPARATORS, gl200AnswerOf } from './command'
import { decodeGl200Frame } from './decoder'
import { gl200FrameReader } from './framing'
import { gl200Model } from './model'

export const gl200: TcpProtocol<string, null> = {
  name: 'gl200',
  title: 'Queclink @Track (GV300, GL300, GV55, …)',
  transport: 'tcp',
  defaultPort: 5004,
  portVariable: 'GL200_PORT',
  model: gl200Model,
  framing: () => gl200FrameReader(),
  connectionState: () => null,
  decode(frame, { now }): Step {
    const message = decodeGl200Frame(frame, { now })
    if (message.kind === 'invalid') return { kind: 'drop', reason: message.message }
    const report: DecodedReport = Object.keys(message.status).length > 0 ? { ...message.report, status: message.status } : message.report
    return { kind: 'report', report, reply: message.reply, ...(message.ack ? { commandAnswer: gl200AnswerOf(message.ack) } : {}) }
  },
  encodeCommand: (text) => encodeGl200Command(text),
  commandSeparators: GL200_COMMAND_SEPARATORS,
}
