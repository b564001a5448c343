/**
 * Meitrack commands. A model's `send.text` is `<command>[,<parameter>…]` (`C01,0,12222`); the
 * server sends `@@<flag><length>,<IMEI>,<command>[,…]*<checksum>\r\n` (replies.ts). The device's
 * answer is a `$$` frame of the same command type with the same flag (`$$M28,<IMEI>,C01,OK*F9`),
 * or, for A10, an AAA report with event 34 and the same flag. The flag is the only reference
 * the device echoes, so each command takes one (a letter, from the connection's sequence) and the
 * connection's state remembers which command it stood for: an answer on the same connection whose
 * flag names a command completes that one, any other the oldest waiting.
 */
import type { EncodedCommand } from '../protocol'
import { buildMeitrackFrame } from './replies'

/** What splits a Meitrack command text: `,` between parameters, `*` before the checksum. */
export const MEITRACK_COMMAND_SEPARATORS = [',', '*'] as const
/** The largest command frame sent. */
const MAX_COMMAND_BYTES = 1024
/** a command type (three letters or digits), then parameters of printable ASCII without `*` */
const COMMAND_TEXT = /^([A-Z0-9]{3})(,[\x20-\x29\x2b-\x7e]*)?$/
const FLAGS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** A connection's state (protocol.ts): `<IMEI> <flag>` → the reference of the command sent under that flag on it, oldest first. */
export interface MeitrackConnectionState {
  sentFlags: Map<string, number>
}

export function meitrackConnectionState(): MeitrackConnectionState {
  return { sentFlags: new Map() }
}

/** The flag of a connection's `sequence`-th command. */
export function meitrackCommandFlag(sequence: number): string {
  return FLAGS[Math.abs(Math.trunc(sequence)) % FLAGS.length]
}

/** The frame carrying `text` to device `imei` on the connection of `state`; unfit when the text is not of the command shape or too long. */
export function encodeMeitrackCommand(text: string, imei: string, sequence: number, ref: number, state: MeitrackConnectionState): EncodedCommand {
  const shape = COMMAND_TEXT.exec(text)
  if (!shape) {
    return { kind: 'unfit', reason: 'a Meitrack command is its type (three capital letters or digits, as A10 or C01) and its parameters after commas, printable ASCII without *' }
  }
  const flag = meitrackCommandFlag(sequence)
  const bytes = buildMeitrackFrame(flag, imei, text)
  if (bytes.length > MAX_COMMAND_BYTES) return { kind: 'unfit', reason: `a Meitrack frame of ${bytes.length} bytes, more than the ${MAX_COMMAND_BYTES} a command may take` }
  const key = `${imei} ${flag}`
  state.sentFlags.delete(key)
  state.sentFlags.set(key, ref)
  // a flag taken again stands for its newest command; beyond one a flag, the oldest goes
  if (state.sentFlags.size > FLAGS.length) state.sentFlags.delete(state.sentFlags.keys().next().value!)
  return { kind: 'frame', bytes }
}

/** The reference of the command sent to `imei` under `flag` on this connection, when one was (and forgets it: an answer completes its command once). */
export function meitrackAnsweredRef(imei: string, flag: string, state: MeitrackConnectionState): number | undefined {
  if (state.sentFlags.size === 0) return undefined
  const key = `${imei} ${flag}`
  const ref = state.sentFlags.get(key)
  state.sentFlags.delete(key)
  return ref
}
