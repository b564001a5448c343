/**
 * GPS103 commands: `**,imei:<IMEI>,<code>[,<parameter>…];`, the TK102/TK103 "GPRS Data Protocol"
 * document's form for what the monitoring centre sends (B a position now, C,<interval> positions
 * every interval, D stop them, E cancel the alarm, J/K cut and restore fuel, L/M arm and disarm).
 * A model's `send.text` is `<code>[,<parameter>…]`: the server puts the IMEI around it. The
 * devices send no answer that names a command (a B is answered by an ordinary position), so a
 * command stays `sent` until its wait for an answer ends.
 */
import type { EncodedCommand } from '../protocol'

/** `,` separates parameters, `;` ends a message and `*` opens one: a form value may bring none of them in. */
export const GPS103_COMMAND_SEPARATORS = [',', ';', '*'] as const

/** a code of letters and digits, then parameters of printable ASCII without `;` or `*` */
const COMMAND_TEXT = /^[A-Za-z0-9]{1,12}(,[\x20-\x29\x2b-\x3a\x3c-\x7e]*)*$/
const MAX_COMMAND_BYTES = 256

export function encodeGps103Command(text: string, uniqueId: string): EncodedCommand {
  if (!COMMAND_TEXT.test(text)) return { kind: 'unfit', reason: 'a GPS103 command is its code (letters, digits) and its parameters after commas, printable ASCII without ; or *' }
  const frame = `**,imei:${uniqueId},${text};`
  if (frame.length > MAX_COMMAND_BYTES) return { kind: 'unfit', reason: `a GPS103 command of ${frame.length} bytes, more than ${MAX_COMMAND_BYTES}` }
  return { kind: 'frame', bytes: new TextEncoder().encode(frame) }
}
