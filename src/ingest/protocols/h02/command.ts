/**
 * H02 commands: the text frame the server sends and the V4 frame that answers it (decoder.ts).
 * Pure.
 *
 * The H02 document's "command structure from center sending":
 *
 *   *<maker>,<id>,<command>,<hhmmss>[,<parameter>…]#        e.g. *HQ,4106012736,S20,130305,1,1#
 *
 * with the server's UTC time after the command's name. A model's `send.text` for an H02 device is
 * the command and its parameters, `<command>[,<parameter>…]` (`S20,1,1`): the server puts the
 * maker, the device's id and the time around it. The maker is the one the device's own frames
 * name (`*TH,…` from some firmware), because a device checks it and ignores a command under
 * another ("the Vehicle Tracker will check the Manufacturer name", the document says); HQ, the
 * document's, until the device has named one. The answer is `*HQ,<id>,V4,<command>,<answer…>,<hhmmss of the command>,<V1 body>#`:
 * it names the command but carries no reference the server chose, so it completes the oldest
 * command waiting for an answer.
 */
import type { CommandAnswer, EncodedCommand } from '../protocol'
import type { H02CommandAnswer } from './decoder'
import { H02_DEFAULT_MAX_FRAME_BYTES } from './framing'
import { h02ReplyTime } from './replies'

const DEFAULT_MAKER = 'HQ'

/**
 * What a connection's commands need of its frames: the maker its device last named. Part of the
 * connection's state (descriptor.ts): the decoder writes it, the encoder reads it, and it goes with
 * the connection. A device speaks before it is sent anything (a command waits for a frame that
 * identifies it), so its text frames have named the maker by then; a binary frame names none.
 */
export interface H02MakerState {
  /** the id whose frame last named a maker on this connection (null: none has) */
  makerOf: string | null
  maker: string
}

/** Device `uniqueId` named its maker in a frame on the connection of `state`. */
export function rememberH02Maker(state: H02MakerState, uniqueId: string, maker: string): void {
  state.makerOf = uniqueId
  state.maker = maker
}
/**
 * What splits an H02 command text: `,` separates the parameters, `*` opens a frame and `#` closes
 * it. A form value may bring none of them in.
 */
export const H02_COMMAND_SEPARATORS = [',', '*', '#'] as const

/** a command name, then parameters of printable ASCII without the frame's own `*` and `#` */
const COMMAND_TEXT = /^([A-Za-z0-9]{1,12})(,[\x20-\x22\x24-\x29\x2b-\x7e]*)?$/

/**
 * The frame carrying `text` (`<command>[,<parameter>…]`) to device `uniqueId`, under the maker its
 * frames on this connection named (`state`); unfit when it is not of that shape or the frame would
 * be longer than an H02 frame (1 KiB).
 */
export function encodeH02Command(text: string, uniqueId: string, unixSeconds: number, state: H02MakerState): EncodedCommand {
  const shape = COMMAND_TEXT.exec(text)
  if (!shape) {
    return { kind: 'unfit', reason: 'an H02 command is its name (letters, digits) and its parameters after commas, printable ASCII without * or #' }
  }
  const [, name, parameters = ''] = shape
  const maker = state.makerOf === uniqueId ? state.maker : DEFAULT_MAKER
  const frame = `*${maker},${uniqueId},${name},${h02ReplyTime(unixSeconds).slice(8)}${parameters}#`
  if (frame.length > H02_DEFAULT_MAX_FRAME_BYTES) {
    return { kind: 'unfit', reason: `an H02 frame of ${frame.length} bytes, more than the ${H02_DEFAULT_MAX_FRAME_BYTES} of one frame` }
  }
  return { kind: 'frame', bytes: new TextEncoder().encode(frame) }
}

/** A V4 answer as the command queue keeps it: the command it answers, then its fields as sent. */
export function h02AnswerOf(answer: H02CommandAnswer): CommandAnswer {
  return { text: [answer.command, ...answer.fields].join(',') }
}
