/**
 * Meitrack (T366, T333, MVT and other `$$` trackers) as a unit: TCP on MEITRACK_PORT (default
 * 5020; 0 turns it off). There is no login: every frame names its device by its IMEI, and the
 * session handler opens the device's session on the first one (an unknown IMEI closes the
 * connection, or is masked past its source's ration like any login).
 *
 * AAA and AFF reports and CCC/CCE batches are stored; the batches and AFF are confirmed after the
 * commit (decoder.ts), AAC is echoed. A frame of any other type is a command's answer, as is an
 * AAA report with event 34 (A10's); its flag names the command it answers (command.ts).
 */
import type { Step, TcpProtocol } from '../protocol'
import { encodeMeitrackCommand, MEITRACK_COMMAND_SEPARATORS, meitrackAnsweredRef } from './command'
import { decodeMeitrackFrame } from './decoder'
import { meitrackFrameReader, type MeitrackFrame } from './framing'
import { meitrackModel } from './model'

export const meitrack: TcpProtocol<MeitrackFrame> = {
  name: 'meitrack',
  title: 'Meitrack (T366, T333, MVT)',
  transport: 'tcp',
  defaultPort: 5020,
  portVariable: 'MEITRACK_PORT',
  model: meitrackModel,
  framing: () => meitrackFrameReader(),
  decoder() {
    return (frame, { now }): Step => {
      const message = decodeMeitrackFrame(frame, { now })
      if (message.kind === 'invalid') return { kind: 'drop', reason: message.message }
      const status = Object.keys(message.status).length > 0 ? message.status : undefined
      const report = status ? { ...message.report, status } : message.report
      const commandAnswer = message.answer
        ? (() => {
            const ref = meitrackAnsweredRef(message.uniqueId, message.answer.flag)
            return ref === undefined ? { text: message.answer.text } : { text: message.answer.text, ref }
          })()
        : undefined
      return { kind: 'report', report, reply: message.reply, ...(commandAnswer ? { commandAnswer } : {}) }
    }
  },
  encodeCommand: (text, { uniqueId, sequence, ref }) => encodeMeitrackCommand(text, uniqueId, sequence, ref),
  commandSeparators: MEITRACK_COMMAND_SEPARATORS,
}
