/**
 * H02 (Sinotrack, Coban and their clones) as a unit: TCP on H02_PORT (default 5013; 0 turns it
 * off). There is no login: every frame names its device by its id, a 10-digit serial or the
 * 15-digit IMEI, and the session handler opens the device's session on the first one (an unknown
 * id closes the connection, or is masked past its source's ration like any login).
 *
 * The connection's state keeps the device's last status word, so an alarm bit raises its event
 * when it turns on and not on every frame that repeats it (status.ts), and the maker its frames
 * name, which its commands go out under. What a frame says of the
 * device (the status word's ignition, arming and power, LINK's signal, battery and counters,
 * NBR's cell towers) is kept as the device's status. Nothing is answered by default (replies.ts).
 *
 * Commands (command.ts): `send.text` is `<command>[,<parameter>…]`, sent as
 * `*<maker>,<id>,<command>,<hhmmss>[,…]#` (the maker the device's frames name); a V4 frame is the answer, and its fix is stored as any other.
 */
import type { DecodedReport } from '../../types'
import { networkStatus } from '../network'
import type { Step, TcpProtocol } from '../protocol'
import { encodeH02Command, H02_COMMAND_SEPARATORS, h02AnswerOf, rememberH02Maker, type H02MakerState } from './command'
import { decodeH02Frame, type H02Message } from './decoder'
import { h02FrameReader, type H02Frame } from './framing'
import { h02Model } from './model'
import { h02StatusAttributes } from './status'

/** attributes of LINK and V1 frames that describe the device rather than a fix */
const DEVICE_ATTRIBUTES = ['battery_level', 'battery_byte', 'gsm_signal', 'satellites', 'steps', 'turnovers'] as const

function deviceStatus(message: Extract<H02Message, { kind: 'report' }>): Record<string, unknown> | undefined {
  const status: Record<string, unknown> = message.status ? h02StatusAttributes(message.status) : {}
  for (const key of DEVICE_ATTRIBUTES) if (message.attributes[key] !== undefined) status[key] = message.attributes[key]
  if (message.network && message.report.fixes.length === 0) {
    const { mcc, mnc, cells } = message.network
    Object.assign(status, networkStatus({ cells: cells.map(({ lac, cellId, signal }) => ({ mcc, mnc, lac, cell_id: cellId, ...(signal === null ? {} : { signal }) })) }))
  }
  return Object.keys(status).length > 0 ? status : undefined
}

/** What one H02 connection keeps (protocol.ts): the maker for its commands, and the device's last status word. */
export interface H02ConnectionState extends H02MakerState {
  /** alarms are raised when their bit turns on */
  previousStatusWord: number | null
}

export const h02: TcpProtocol<H02Frame, H02ConnectionState> = {
  name: 'h02',
  title: 'H02 (Sinotrack, Coban)',
  transport: 'tcp',
  defaultPort: 5013,
  portVariable: 'H02_PORT',
  model: h02Model,
  // the reader learns the length of the connection's binary frames: one a connection
  framing: () => h02FrameReader(),
  connectionState: () => ({ previousStatusWord: null, makerOf: null, maker: '' }),
  decode(frame, { now }, state): Step {
    const message = decodeH02Frame(frame, { now, previousStatusWord: state.previousStatusWord })
    if (message.kind === 'invalid') return { kind: 'drop', reason: message.message }
    state.previousStatusWord = message.status?.value ?? state.previousStatusWord
    if (typeof message.attributes.maker === 'string') rememberH02Maker(state, message.uniqueId, message.attributes.maker)
    const status = deviceStatus(message)
    const report: DecodedReport = status ? { ...message.report, status } : message.report
    return { kind: 'report', report, reply: message.reply, ...(message.answer ? { commandAnswer: h02AnswerOf(message.answer) } : {}) }
  },
  encodeCommand: (text, { uniqueId, now }, state) => encodeH02Command(text, uniqueId, now, state),
  commandSeparators: H02_COMMAND_SEPARATORS,
}
