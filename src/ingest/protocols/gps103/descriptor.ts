/**
 * GPS103 (Coban TK103/TK303 and the GPS103 clones) as a unit: TCP on GPS103_PORT (default 5001;
 * 0 turns it off). The device logs on with `##,imei:<IMEI>,A` (answered LOAD), beats with its bare
 * IMEI (answered ON), and names itself in every report (`imei:<IMEI>,…`), so a report on a
 * connection that has not logged on opens the device's session as a log-on would. A `help me`
 * (SOS) report is answered `**,imei:<IMEI>,E;` once it is stored, which stops the device repeating
 * it. Commands: command.ts.
 */
import type { Step, TcpProtocol } from '../protocol'
import { encodeGps103Command, GPS103_COMMAND_SEPARATORS } from './command'
import { decodeGps103Frame } from './decoder'
import { gps103FrameReader } from './framing'
import { gps103Model } from './model'

const encoder = new TextEncoder()
const LOAD = encoder.encode('LOAD')
const ON = encoder.encode('ON')

export const gps103: TcpProtocol<string, null> = {
  name: 'gps103',
  title: 'GPS103 (Coban TK103/TK303)',
  transport: 'tcp',
  defaultPort: 5001,
  portVariable: 'GPS103_PORT',
  model: gps103Model,
  framing: () => gps103FrameReader(),
  connectionState: () => null,
  decode(frame, { now }): Step {
    const message = decodeGps103Frame(frame, { now })
    switch (message.kind) {
      case 'invalid':
        return { kind: 'drop', reason: message.reason }
      // a heartbeat is a log-on too: a device that reconnects may beat before it logs on again
      case 'login':
      case 'heartbeat':
        return { kind: 'login', uniqueId: message.uniqueId, accept: message.kind === 'login' ? LOAD : ON, refuse: null }
      case 'report':
        return { kind: 'report', report: message.report, reply: message.reply === null ? null : encoder.encode(message.reply) }
    }
  },
  encodeCommand: (text, { uniqueId }) => encodeGps103Command(text, uniqueId),
  commandSeparators: GPS103_COMMAND_SEPARATORS,
}
