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
import { answerRef, answerText, encodeJt808Command, rememberJt808Terminal, type Jt808CommandState } from './command'
import { decodeJt808Frame } from './decoder'
import { jt808FrameReader, type Jt808Frame } from './framing'
import { jt808Model } from './model'

const reader = jt808FrameReader()

/** What one JT808 connection keeps (protocol.ts): its terminal's header form and the serials its commands went out under, and the last alarm flags. */
export interface Jt808ConnectionState extends Jt808CommandState {
  /** the alarm flags of the connection's last location: an alarm is raised when its bit turns on */
  previousAlarmFlags: number | null
}

export const jt808: TcpProtocol<Jt808Frame, Jt808ConnectionState> = {
  name: 'jt808',
  title: 'JT/T 808',
  transport: 'tcp',
  defaultPort: 5015,
  portVariable: 'JT808_PORT',
  model: jt808Model,
  // the reader keeps no state: one serves every connection
  framing: () => reader,
  connectionState: () => ({ previousAlarmFlags: null, versionOf: null, protocolVersion: 0, sentRefs: new Map() }),
  decode(frame, { now }, state): Step {
    rememberJt808Terminal(state, frame)
    const message = decodeJt808Frame(frame, { now, previousAlarmFlags: state.previousAlarmFlags })
    if (message.kind === 'login') return { kind: 'login', uniqueId: message.uniqueId, accept: message.accept, refuse: message.refuse }
    state.previousAlarmFlags = message.alarmFlags
    const { report, reply, answer } = message
    if (!answer) return { kind: 'report', report, reply }
    const ref = answerRef(report.uniqueId, answer, state)
    return { kind: 'report', report, reply, commandAnswer: { text: answerText(answer), ...(ref === undefined ? {} : { ref }) } }
  },
  encodeCommand: (text, { uniqueId, ref }, state) => encodeJt808Command(text, uniqueId, ref, state),
}
