/**
 * GT06 commands: the server's online command (protocol 0x80) and the terminal's answers (0x15, and
 * 0x21 from newer models). Pure.
 *
 * Online command, server → terminal, in a 0x7878 frame ("GPS Tracker Communication Protocol
 * (GT06N)" and "(JM-VL03)", Concox, "online command"):
 *
 *   78 78 | length | 80 | command length (1) | server flag (4) | command (M, ASCII) | language (2) | serial (2) | CRC | 0D 0A
 *
 * where command length = 4 + M (the flag and the text) and language is 0x0002, English (0x0001
 * is Chinese: it picks the language of the answer). The server flag is the server's own: the
 * terminal copies it into its answer, which is how an answer names the command it answers.
 *
 * Answers, terminal → server, not acknowledged:
 *
 *   0x15  command length (1) | server flag (4) | answer (length − 4, ASCII) | [language (2)]
 *   0x21  server flag (4) | encoding (1: 0x01 ASCII, 0x02 UTF-16BE) | answer (to the serial)
 */
import type { DecodedFix } from '../../types'
import type { CommandAnswer, EncodedCommand } from '../protocol'
import type { Gt06Frame } from './framing'
import { MIN_LENGTH_FIELD } from './framing'
import { buildGt06Frame } from './replies'

export const GT06_COMMAND_PROTOCOL = 0x80
/** the terminal's answer (every model) */
export const GT06_ANSWER_PROTOCOL = 0x15
/** the terminal's answer with its encoding (newer models, often in a 0x7979 frame) */
export const GT06_ANSWER_ENCODED_PROTOCOL = 0x21
const LANGUAGE_ENGLISH = 0x0002
const SERVER_FLAG_BYTES = 4
const LANGUAGE_BYTES = 2
/**
 * The longest text an online command carries: a 0x7878 frame's one-byte length (255) less the
 * protocol number, serial and CRC (MIN_LENGTH_FIELD), the command length byte, the flag and the
 * language.
 */
export const GT06_MAX_COMMAND_BYTES = 0xff - MIN_LENGTH_FIELD - 1 - SERVER_FLAG_BYTES - LANGUAGE_BYTES

/**
 * What splits a GT06 command text: `#` ends a command (a terminal reads `A#B#` as two) and `,`
 * separates its parameters (`TIMER,10,30#`). A form value may not bring either in.
 */
export const GT06_COMMAND_SEPARATORS = ['#', ','] as const

/** printable ASCII: what the documents' command texts are, and all a terminal is known to read */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

/** The online command (0x80) carrying `text`, with `serverFlag` for its answer to echo. */
export function encodeGt06Command(text: string, serverFlag: number, serial: number): EncodedCommand {
  if (text.length === 0) return { kind: 'unfit', reason: 'empty text' }
  if (!PRINTABLE_ASCII.test(text)) return { kind: 'unfit', reason: 'GT06 commands are printable ASCII' }
  if (text.length > GT06_MAX_COMMAND_BYTES) {
    return { kind: 'unfit', reason: `${text.length} characters, more than the ${GT06_MAX_COMMAND_BYTES} a GT06 online command carries` }
  }
  const content = new Uint8Array(1 + SERVER_FLAG_BYTES + text.length + LANGUAGE_BYTES)
  const view = new DataView(content.buffer)
  content[0] = SERVER_FLAG_BYTES + text.length
  view.setUint32(1, serverFlag >>> 0)
  for (let i = 0; i < text.length; i++) content[1 + SERVER_FLAG_BYTES + i] = text.charCodeAt(i)
  view.setUint16(1 + SERVER_FLAG_BYTES + text.length, LANGUAGE_ENGLISH)
  return { kind: 'frame', bytes: buildGt06Frame(GT06_COMMAND_PROTOCOL, content, serial & 0xffff) }
}

export const isGt06Answer = (protocol: number) => protocol === GT06_ANSWER_PROTOCOL || protocol === GT06_ANSWER_ENCODED_PROTOCOL

/** The answer a 0x15 or 0x21 frame carries, with the server flag it echoes; null when its content does not add up. */
export function decodeGt06Answer(frame: Gt06Frame): Required<CommandAnswer> | null {
  const { content } = frame
  const view = new DataView(content.buffer, content.byteOffset, content.byteLength)
  if (frame.protocol === GT06_ANSWER_PROTOCOL) {
    if (content.length < 1 + SERVER_FLAG_BYTES) return null
    const length = content[0]
    // the length counts the flag; what follows the answer is the language, when the model sends it
    if (length < SERVER_FLAG_BYTES || 1 + length > content.length) return null
    return { ref: view.getUint32(1), text: textOf(content.subarray(1 + SERVER_FLAG_BYTES, 1 + length), 'ascii') }
  }
  if (frame.protocol === GT06_ANSWER_ENCODED_PROTOCOL) {
    if (content.length < SERVER_FLAG_BYTES + 1) return null
    const encoding = content[SERVER_FLAG_BYTES]
    const body = content.subarray(SERVER_FLAG_BYTES + 1)
    return { ref: view.getUint32(0), text: textOf(body, encoding === 0x02 ? 'utf-16be' : 'ascii') }
  }
  return null
}

/** The answer as text: UTF-16BE when the terminal says so, else bytes as UTF-8 (ASCII is), NULs some firmware pads with dropped. */
function textOf(bytes: Uint8Array, encoding: 'ascii' | 'utf-16be'): string {
  let text: string
  if (encoding === 'utf-16be') {
    text = ''
    for (let i = 0; i + 1 < bytes.length; i += 2) text += String.fromCharCode((bytes[i] << 8) | bytes[i + 1])
  } else {
    text = new TextDecoder('utf-8', { fatal: false }).decode(bytes)
  }
  return text.replace(/\u0000+$/, '')
}

/**
 * "Current position!Lat:N54.739332,Lon:E25.273270,Course:126.53,Speed:0.0000,DateTime:2017-05-26
 * 10:27:47": the answer some models give to a position request (WHERE, in a 0x21 capture of
 * Traccar's GT06 tests). Degrees with their hemisphere, course, speed (km/h, the protocol's
 * unit), the date and time in UTC as the GPS block has them.
 */
const ANSWER_POSITION =
  /^Current position!Lat:([NS])(\d{1,2}(?:\.\d+)?),Lon:([EW])(\d{1,3}(?:\.\d+)?),Course:(\d+(?:\.\d+)?),Speed:(\d+(?:\.\d+)?),DateTime:(\d{4})-(\d{2})-(\d{2}) +(\d{2}):(\d{2}):(\d{2})/

/** The position a command answer spells out, as a fix; null when it spells out none (or one out of range). */
export function positionOfGt06Answer(text: string): DecodedFix | null {
  const match = ANSWER_POSITION.exec(text)
  if (!match) return null
  const latitude = Number(match[2]) * (match[1] === 'S' ? -1 : 1)
  const longitude = Number(match[4]) * (match[3] === 'W' ? -1 : 1)
  const course = Number(match[5])
  const [year, month, day, hour, minute, second] = match.slice(7, 13).map(Number)
  const millis = Date.UTC(year, month - 1, day, hour, minute, second)
  const date = new Date(millis)
  if (Math.abs(latitude) > 90 || Math.abs(longitude) > 180 || course > 360 || date.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) {
    return null
  }
  return {
    timestamp: millis / 1000,
    latitude,
    longitude,
    speed: Number(match[6]),
    course,
    altitude: null,
    satellites: null,
    valid: true,
    attributes: { source: 'command_answer' },
  }
}
