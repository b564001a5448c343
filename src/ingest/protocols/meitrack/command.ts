/**
 * Meitrack commands. A model's `send.text` is `<command>[,<parameter>…]` (`C01,0,12222`); the
 * server sends `@@<flag><length>,<IMEI>,<command>[,…]*<checksum>\r\n` (replies.ts). The device's
 * answer is a `$$` frame of the same command type with the same flag (`$$M28,<IMEI>,C01,OK*F9`),
 * or, for A10, an AAA report with event 34 and the same flag. The flag is the only reference
 * the device echoes, so each command takes one (a letter, from the connection's sequence) and the
 * server remembers which command it stood for: an answer whose flag names a command completes
 * that one, any other the oldest waiting.
 */
import type { EncodedCommand } from '../protocol'
import { buildMeitrackFrame } from './replies'
import { RememberedByDevice } from '../remembered'

/** What splits a Meitrack command text: `,` between parameters, `*` before the checksum. */
export const MEITRACK_COMMAND_SEPARATORS = [',', '*'] as const
/** The largest command frame sent. */
const MAX_COMMAND_BYTES = 1024
/** a command type (three letters or digits), then parameters of printable ASCII without `*` */
const COMMAND_TEXT = /^([A-Z0-9]{3})(,[\x20-\x29\x2b-\x7e]*)?$/
const FLAGS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
/** `<IMEI> <flag>` → the reference of the command sent under that flag */
const sentFlags = new RememberedByDevice<number>()

/** The flag of a connection's `sequence`-th command. */
export function meitrackCommandFlag(sequence: number): string {
  return FLAGS[Math.abs(Math.trunc(sequence)) % FLAGS.length]
}

/** The frame carrying `text` to device `imei`; unfit when the text is not of the command shape or too long. */
export function encodeMeitrackCommand(text: string, imei: string, sequence: number, ref: number): EncodedCommand {
  const shape = COMMAND_TEXT.exec(text)
  if (!shape) {
    return { kind: 'unfit', reason: 'a Meitrack command is its type (three capital letters or digits, as A10 or C01) and its parameters after commas, printable ASCII without *' }
  }
  const flag = meitrackCommandFlag(sequence)
  const bytes = buildMeitrackFrame(flag, imei, text)
  if (bytes.length > MAX_COMMAND_BYTES) return { kind: 'unfit', reason: `a Meitrack frame of ${bytes.length} bytes, more than the ${MAX_COMMAND_BYTES} a command may take` }
  sentFlags.set(`${imei} ${flag}`, ref)
  return { kind: 'frame', bytes }
}

/** The reference of the command sent to `imei` under `flag`, when one was (and forgets it). */
export function meitrackAnsweredRef(imei: string, flag: string): number | undefined {
  return sentFlags.take(`${imei} ${flag}`)
}
