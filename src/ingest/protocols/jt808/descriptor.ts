/**
 * JT/T 808 (the Chinese road transport standard most 4G trackers speak, 2013 and 2019 headers) as
 * a unit: TCP on JT808_PORT (default 5015; 0 turns it off).
 *
 * The device's identifier is its terminal phone number, the 6 (2013) or 10 (2019) BCD bytes every
 * header carries, written as their digits with the leading zeros the device sends
 * (`013912345678`; a number that is not BCD, as some firmware sends, in lowercase hex). A user
 * imports it as the device's serial (docs/protocols.md). Every frame names its device, so a
 * connection's session opens on its first frame, whatever it is:
 *
 *   registration 0x0100     login; answered 0x8100, result 0 and the authentication code (the
 *                           identifier itself), or result 4 (no such terminal) for an unknown one
 *   authentication 0x0102   login; answered 0x8001, result 0, or 1 for an unknown one
 *   location 0x0200, 0x0704 fixes, alarms (raised when their bit turns on: the connection's decoder
 *                           keeps the last alarm flags), ignition and signal as the device's status
 *   general response 0x0001 a command's answer (command.ts), matched to it by the serial it names
 *   anything else           a sign of life, answered 0x8001
 *
 * Every answer goes out after what the frame carried is committed (the session handler's rule).
 */
import type { Step, TcpProtocol } from '../protocol'
import { answerRef, answerText, encodeJt808Command, rememberJt808Terminal } from './command'
import { decodeJt808Frame } from './decoder'
import { jt808FrameReader, type Jt808Frame } from './framing'
import { jt808Model } from './model'

const reader = jt808FrameReader()

export const jt808: TcpProtocol<Jt808Frame> = {
  name: 'jt808',
  title: 'JT/T 808',
  transport: 'tcp',
  defaultPort: 5015,
  portVariable: 'JT808_PORT',
  model: jt808Model,
  // the reader keeps no state: one serves every connection
  framing: () => reader,
  decoder() {
    /** the alarm flags of this connection's last location: an alarm is raised when its bit turns on */
    let previousAlarmFlags: number | null = null
    return (frame, { now }): Step => {
      rememberJt808Terminal(frame)
      const message = decodeJt808Frame(frame, { now, previousAlarmFlags })
      if (message.kind === 'login') return { kind: 'login', uniqueId: message.uniqueId, accept: message.accept, refuse: message.refuse }
      previousAlarmFlags = message.alarmFlags
      const { report, reply, answer } = message
      if (!answer) return { kind: 'report', report, reply }
      const ref = answerRef(report.uniqueId, answer)
      return { kind: 'report', report, reply, commandAnswer: { text: answerText(answer), ...(ref === undefined ? {} : { ref }) } }
    }
  },
  encodeCommand: (text, { uniqueId, ref }) => encodeJt808Command(text, uniqueId, ref),
}
