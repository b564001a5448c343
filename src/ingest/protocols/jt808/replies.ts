/**
 * What the server sends a JT/T 808 terminal: the platform general response (0x8001), the
 * registration response (0x8100), and the frame every platform message (commands included) goes
 * out in. A reply carries the terminal's own header form: the 2019 header (version flag, protocol
 * version, 10-byte phone number) to a terminal that sent one, else the 2013 header, and the phone
 * number's bytes as the terminal sent them. Its own serial is the serial of the message it answers
 * (the answer names that serial in its body too): a terminal matches answers by the body, and the
 * same message always gets the same bytes.
 */
import { ESCAPE, FLAG, type Jt808Frame } from './framing'

export const PLATFORM_GENERAL_RESPONSE = 0x8001
export const REGISTRATION_RESPONSE = 0x8100

/** The general response's result byte (JT/T 808-2013 §8.2). */
export const RESULT = { success: 0, failure: 1, messageError: 2, notSupported: 3, alarmConfirmed: 4 } as const

/** The terminal a message goes to: its header form and phone number bytes, as one of its frames carried them. */
export type Jt808Terminal = Pick<Jt808Frame, 'version2019' | 'protocolVersion' | 'phone'>

/** A whole frame, flags and escapes included: `messageId` with `body` to `terminal`, serial `serial`. */
export function buildJt808Frame(messageId: number, terminal: Jt808Terminal, serial: number, body: Uint8Array): Uint8Array {
  const headerBytes = terminal.version2019 ? 17 : 12
  const plain = new Uint8Array(headerBytes + body.length + 1)
  plain[0] = messageId >> 8
  plain[1] = messageId & 0xff
  // properties: the body's length; no encryption, no subpackage; the 2019 flag when the terminal uses it
  const properties = (body.length & 0x3ff) | (terminal.version2019 ? 1 << 14 : 0)
  plain[2] = properties >> 8
  plain[3] = properties & 0xff
  let at = 4
  if (terminal.version2019) plain[at++] = terminal.protocolVersion
  plain.set(terminal.phone, at)
  at += terminal.phone.length
  plain[at++] = (serial >> 8) & 0xff
  plain[at++] = serial & 0xff
  plain.set(body, at)
  at += body.length
  let check = 0
  for (let i = 0; i < at; i++) check ^= plain[i]
  plain[at] = check
  let escapes = 0
  for (const byte of plain) if (byte === FLAG || byte === ESCAPE) escapes++
  const wire = new Uint8Array(plain.length + escapes + 2)
  let out = 0
  wire[out++] = FLAG
  for (const byte of plain) {
    if (byte === FLAG || byte === ESCAPE) {
      wire[out++] = ESCAPE
      wire[out++] = byte === FLAG ? 0x02 : 0x01
    } else {
      wire[out++] = byte
    }
  }
  wire[out] = FLAG
  return wire
}

/** 0x8001: the answered message's serial and id, and the result. */
export function buildGeneralResponse(frame: Jt808Frame, result: number): Uint8Array {
  const body = new Uint8Array([frame.serial >> 8, frame.serial & 0xff, frame.messageId >> 8, frame.messageId & 0xff, result])
  return buildJt808Frame(PLATFORM_GENERAL_RESPONSE, frame, frame.serial, body)
}

/** The registration result: 0 success, 4 "no such terminal in the database" (unknown to the server). */
export const REGISTRATION_RESULT = { success: 0, unknownTerminal: 4 } as const

/** 0x8100: the registration's serial, the result and, on success, the authentication code (ASCII). */
export function buildRegistrationResponse(frame: Jt808Frame, result: number, authCode: string): Uint8Array {
  const code = result === REGISTRATION_RESULT.success ? authCode : ''
  const body = new Uint8Array(3 + code.length)
  body[0] = frame.serial >> 8
  body[1] = frame.serial & 0xff
  body[2] = result
  for (let i = 0; i < code.length; i++) body[3 + i] = code.charCodeAt(i) & 0x7f
  return buildJt808Frame(REGISTRATION_RESPONSE, frame, frame.serial, body)
}
