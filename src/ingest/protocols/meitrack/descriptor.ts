/**
 * Meitrack (T366, T333, MVT and other `$$` trackers) as a unit: TCP on MEITRACK_PORT (default
 * 5020; 0 turns it off). There is no login: every frame names its device by its IMEI, and the
 * session handler opens the device's session on the first one (an unknown IMEI closes the
 * connection, or is masked past its source's ration like any login).
 *
 * AAA and AFF reports and CCC/CCE batches are stored; the batches and AFF are confirmed after the
 * commit (decoder.ts), AAC is echoed. A frame of any other type is a command's answer, as is an
 * AAA report with event 34 under the flag of a command the server sent (A10's); the flag names
 * the command answered (command.ts).
 */
import type { Step, TcpProtocol } from '../protocol'
import { encodeMeitrackCommand, MEITRACK_COMMAND_SEPARATORS, meitrackAnsweredRef, meitrackConnectionState, type MeitrackConnectionState } from './command'
import { decodeMeitrackFrame } from './decoder'
import { meitrackFrameReader, type MeitrackFrame } from './framing'
import { meitrackModel } from './model'

export const meitrack: TcpProtocol<MeitrackFrame, MeitrackConnectionState> = {
  name: 'meitrack',
  title: 'Meitrack (T366, T333, MVT)',
  transport: 'tcp',
  defaultPort: 5020,
  portVariable: 'MEITRACK_PORT',
  model: meitrackModel,
  framing: () => meitrackFrameReader(),
  // the flags the connection's commands went out under (command.ts)
  connectionState: meitrackConnectionState,
  decode(frame, { now }, state): Step {
    const message = decodeMeitrackFrame(frame, { now })
    if (message.kind === 'invalid') return { kind: 'drop', reason: message.message }
    const status = Object.keys(message.status).length > 0 ? message.status : undefined
    const report = status ? { ...message.report, status } : message.report
    const ref = message.answer ? meitrackAnsweredRef(message.uniqueId, message.answer.flag, state) : undefined
    // an AAA report with event 34 answers A10 only under a flag the server sent a command with:
    // a position asked for by SMS or a keypad is not the answer to whatever command waits
    const commandAnswer =
      !message.answer || (message.type === 'AAA' && ref === undefined) ? undefined : ref === undefined ? { text: message.answer.text } : { text: message.answer.text, ref }
    return { kind: 'report', report, reply: message.reply, ...(commandAnswer ? { commandAnswer } : {}) }
  },
  encodeCommand: (text, { uniqueId, sequence, ref }, state) => encodeMeitrackCommand(text, uniqueId, sequence, ref, state),
  commandSeparators: MEITRACK_COMMAND_SEPARATORS,
}
