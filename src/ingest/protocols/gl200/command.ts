/**
 * @Track commands: the AT text the server sends and the +ACK that answers it (decoder.ts). Pure.
 *
 * A model's `send.text` for a Queclink device is the whole command, `AT+GT<xxx>=<parameters>$`
 * (the `$` may be left out: it is added); it is sent as it is. The device answers
 * `+ACK:GT<xxx>,<version>,<IMEI>,<name>,…,<serial number>,<send time>,<count>$`: it names the
 * command but no reference the server chose (the serial number is the model's FFFF), so it
 * completes the oldest command waiting for an answer (commands/queue). The heartbeat, +ACK:GTHBD,
 * answers nothing of ours.
 */
import type { CommandAnswer, EncodedCommand } from '../protocol'
import type { Gl200CommandAck } from './decoder'
import { GL200_MAX_FRAME_BYTES } from './framing'

/** `,` separates the parameters and `$` ends the command: a form value may bring neither in */
export const GL200_COMMAND_SEPARATORS = [',', '$'] as const

/** AT+GT, the command's name, `=`, then printable ASCII without `$`, and the closing `$` */
const COMMAND_TEXT = /^AT\+GT[A-Z0-9]{3}=[\x20-\x23\x25-\x7e]*\$?$/

export function encodeGl200Command(text: string): EncodedCommand {
  if (!COMMAND_TEXT.test(text)) {
    return { kind: 'unfit', reason: 'an @Track command is AT+GT<xxx>=<parameters>$, printable ASCII with no $ before its end' }
  }
  const frame = text.endsWith('$') ? text : `${text}$`
  if (frame.length > GL200_MAX_FRAME_BYTES) return { kind: 'unfit', reason: `an @Track command of ${frame.length} bytes, more than ${GL200_MAX_FRAME_BYTES}` }
  return { kind: 'frame', bytes: new TextEncoder().encode(frame) }
}

/** A +ACK as the command queue keeps it: the command it answers, then its fields as sent. */
export function gl200AnswerOf(ack: Gl200CommandAck): CommandAnswer {
  return { text: [ack.command, ...ack.fields].join(',') }
}
