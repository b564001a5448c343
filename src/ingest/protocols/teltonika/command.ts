/**
 * Teltonika commands: a GPRS command in Codec 12 (message type 0x05), and its answer, the Codec 12
 * response (type 0x06), which the decoder reads (decoder.ts, `commandAnswer`). Pure.
 *
 * Teltonika wiki, "Teltonika Data Sending Protocols", Codec 12 (integers big-endian):
 *
 *   00 00 00 00 | data size (4) | 0C | 01 | 05 | command size (4) | command | 01 | CRC (4)
 *
 * data size counts codec id .. quantity 2; the CRC field's low two bytes are CRC-16/IBM
 * (CRC-16/ARC) over the same bytes. The command is the text of an SMS/GPRS command ("getinfo",
 * "setdigout 1"), which the wiki limits to 160 characters; its example, `getinfo`, is
 * 000000000000000F0C010500000007676574696E666F0100004312.
 */
import { crc16Arc } from '../crc'
import type { EncodedCommand } from '../protocol'
import { CODEC_12, MESSAGE_COMMAND } from './decoder'

/** "A single SMS/GPRS command is limited to 160 characters" (Teltonika wiki, SMS/GPRS commands) */
export const TELTONIKA_MAX_COMMAND_BYTES = 160
/** codec id, quantity 1, message type, command size (4) before the command; quantity 2 after it */
const ENVELOPE_BYTES = 8
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/
/**
 * What splits a Teltonika command text: `;` separates the parameters one `setparam` sets
 * (`setparam 2001:apn;2002:user`), so a form value holding one would set another parameter.
 */
export const TELTONIKA_COMMAND_SEPARATORS = [';'] as const

/** The Codec 12 command packet carrying `text`. */
export function encodeTeltonikaCommand(text: string): EncodedCommand {
  if (text.length === 0) return { kind: 'unfit', reason: 'empty text' }
  if (!PRINTABLE_ASCII.test(text)) return { kind: 'unfit', reason: 'Teltonika commands are printable ASCII' }
  if (text.length > TELTONIKA_MAX_COMMAND_BYTES) {
    return { kind: 'unfit', reason: `${text.length} characters, more than the ${TELTONIKA_MAX_COMMAND_BYTES} a Teltonika command may have` }
  }
  const dataBytes = ENVELOPE_BYTES + text.length
  const packet = new Uint8Array(8 + dataBytes + 4)
  const view = new DataView(packet.buffer)
  view.setUint32(4, dataBytes)
  packet[8] = CODEC_12
  packet[9] = 1
  packet[10] = MESSAGE_COMMAND
  view.setUint32(11, text.length)
  for (let i = 0; i < text.length; i++) packet[15 + i] = text.charCodeAt(i)
  packet[15 + text.length] = 1
  view.setUint32(8 + dataBytes, crc16Arc(packet, 8, 8 + dataBytes))
  return { kind: 'frame', bytes: packet }
}
