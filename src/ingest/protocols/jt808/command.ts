/**
 * JT/T 808 commands: the platform messages a model's `send.text` names, and the terminal's
 * answers. A command's text is `<message id>[:<argument>]`, one of:
 *
 *   8201                       position query: the terminal answers 0x0201, a location (stored as a fix)
 *   8105:<word>[;<params>]     terminal control: the command word (1–7: 4 reset, 5 factory reset, …),
 *                              then its parameters as the standard writes them (`;`-separated ASCII)
 *   8103:<param id>=<number>   set one numeric parameter (id in hex, a DWORD value): `8103:0029=30`
 *                              sets the default reporting interval to 30 s
 *   8300:<text>                text message, flag 0x01 (printable ASCII; a 2019 terminal also gets
 *                              text type 1, "notice"): firmware that reads its SMS commands there
 *                              takes them this way
 *
 * The frame's serial is the low 16 bits of the command's reference. The terminal's general
 * response (0x0001) names that serial: the answer is matched back to the command through it
 * (`answerRef`), and its result (0 success, 1 failure, 2 message error, 3 not supported) is the
 * answer's text. Pure, but for the connection's state (protocol.ts), which these functions are
 * given: what the terminal's frames on the connection showed (its header form) and which reference
 * went out under which serial on it.
 */
import type { EncodedCommand } from '../protocol'
import type { Jt808Answer } from './decoder'
import type { Jt808Frame } from './framing'
import { buildJt808Frame, type Jt808Terminal } from './replies'

/** the longest body a frame carries unsplit (the properties' 10-bit length) */
const MAX_BODY_BYTES = 1023
/** serials kept for their answers on one connection, as many as the command line keeps references (../../commands.ts) */
const MAX_SENT_SERIALS = 32

/** What a connection's commands share with its decoder (part of the connection's state, descriptor.ts). */
export interface Jt808CommandState {
  /** the terminal whose frame last showed a 2019 header on this connection (null: none has), and that header's protocol version */
  versionOf: string | null
  protocolVersion: number
  /** `<identifier>/<serial>` → the reference of the command sent under that serial on this connection, oldest first */
  sentRefs: Map<string, number>
}

/** A terminal's frame showed its header form: commands to it on this connection use the same. */
export function rememberJt808Terminal(state: Jt808CommandState, frame: Jt808Frame): void {
  if (!frame.version2019) return
  state.versionOf = frame.terminalId
  state.protocolVersion = frame.protocolVersion
}

/** The terminal of `uniqueId`: its phone number's bytes from the identifier's nibbles (12 of a 2013 header, 20 of a 2019 one). */
function terminalOf(uniqueId: string, state: Jt808CommandState): Jt808Terminal | null {
  if (!/^[0-9a-f]{12}$|^[0-9a-f]{20}$/.test(uniqueId)) return null
  const phone = new Uint8Array(uniqueId.length / 2)
  for (let i = 0; i < phone.length; i++) phone[i] = Number.parseInt(uniqueId.slice(i * 2, i * 2 + 2), 16)
  const version2019 = phone.length === 10
  // a 2019 terminal that has shown no header on this connection: version 1, the revision's first
  const protocolVersion = !version2019 ? 0 : state.versionOf === uniqueId ? state.protocolVersion : 1
  return { version2019, protocolVersion, phone }
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/
const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0))

/** The message id and body a command text names; a reason when it names none. */
function bodyOf(text: string, terminal: Jt808Terminal): { messageId: number; body: Uint8Array } | string {
  if (!PRINTABLE_ASCII.test(text)) return 'JT808 command texts are printable ASCII'
  const colon = text.indexOf(':')
  const id = colon < 0 ? text : text.slice(0, colon)
  const argument = colon < 0 ? null : text.slice(colon + 1)
  switch (id) {
    case '8201':
      return argument === null ? { messageId: 0x8201, body: new Uint8Array(0) } : 'a position query (8201) takes no argument'
    case '8105': {
      const shape = argument === null ? null : /^([1-7])(?:;(.*))?$/.exec(argument)
      if (!shape) return 'terminal control is 8105:<command word 1-7>[;<parameters>]'
      return { messageId: 0x8105, body: Uint8Array.from([Number(shape[1]), ...ascii(shape[2] ?? '')]) }
    }
    case '8103': {
      const shape = argument === null ? null : /^([0-9A-Fa-f]{1,8})=([0-9]{1,10})$/.exec(argument)
      const value = shape ? Number(shape[2]) : NaN
      if (!shape || value > 0xffffffff) return 'a parameter is 8103:<parameter id in hex>=<number up to 4294967295>'
      const body = new Uint8Array(10)
      const view = new DataView(body.buffer)
      body[0] = 1
      view.setUint32(1, Number.parseInt(shape[1], 16))
      body[5] = 4
      view.setUint32(6, value)
      return { messageId: 0x8103, body }
    }
    case '8300': {
      if (!argument) return 'a text message is 8300:<text>'
      // flag 0x01; the 2019 revision adds the text type (1: notice) after it
      const head = terminal.version2019 ? [0x01, 0x01] : [0x01]
      return { messageId: 0x8300, body: Uint8Array.from([...head, ...ascii(argument)]) }
    }
  }
  return 'a JT808 command is 8201, 8105:<word>[;<parameters>], 8103:<parameter id>=<number> or 8300:<text>'
}

/** The frame carrying the command `text` to the terminal `uniqueId` on the connection of `state`, its serial drawn from `ref`. */
export function encodeJt808Command(text: string, uniqueId: string, ref: number, state: Jt808CommandState): EncodedCommand {
  const terminal = terminalOf(uniqueId, state)
  if (!terminal) return { kind: 'unfit', reason: 'the device did not name itself by a JT808 phone number' }
  const shaped = bodyOf(text, terminal)
  if (typeof shaped === 'string') return { kind: 'unfit', reason: shaped }
  if (shaped.body.length > MAX_BODY_BYTES) return { kind: 'unfit', reason: `a body of ${shaped.body.length} bytes, more than the ${MAX_BODY_BYTES} of one frame` }
  const serial = ref & 0xffff
  const key = `${uniqueId}/${serial}`
  state.sentRefs.delete(key)
  state.sentRefs.set(key, ref)
  if (state.sentRefs.size > MAX_SENT_SERIALS) state.sentRefs.delete(state.sentRefs.keys().next().value!)
  return { kind: 'frame', bytes: buildJt808Frame(shaped.messageId, terminal, serial, shaped.body) }
}

/** The reference of the command a terminal's answer names by its serial, when it was sent on this connection. */
export function answerRef(uniqueId: string, answer: Jt808Answer, state: Jt808CommandState): number | undefined {
  return state.sentRefs.size === 0 ? undefined : state.sentRefs.get(`${uniqueId}/${answer.replySerial}`)
}

const RESULT_WORDS = ['success', 'failure', 'message error', 'not supported', 'alarm confirmed']

/** The answer as the command queue keeps it: the message answered and its result, `8105 success`. */
export function answerText(answer: Jt808Answer): string {
  if (answer.replyMessageId === 0x8201) return '8201 position'
  return `${answer.replyMessageId.toString(16).padStart(4, '0')} ${RESULT_WORDS[answer.result] ?? `result ${answer.result}`}`
}
