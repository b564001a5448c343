/**
 * JT/T 808 framing: where a message starts and ends in the byte stream, as a reader for the shared
 * framing machine (../framing.ts, which buffers, caps, resynchronises and counts garbage).
 *
 *   7E | header | body | check code | 7E          every 7E inside is sent as 7D 02, every 7D as 7D 01
 *
 * The check code is the XOR of the header and body bytes (after unescaping). The header (JT/T
 * 808-2013 §4.4.3 and its 2019 revision):
 *
 *   message id (2) | properties (2) | [protocol version (1)] | terminal phone number (BCD, 6 or 10) | serial (2) | [packet count (2) | packet index (2)]
 *
 * properties: bits 0–9 the body's length, 10–12 its encryption (bit 10: RSA), 13 the subpackage
 * flag (the packet fields follow the serial), 14 the 2019 version flag (the protocol version byte
 * and the 10-byte phone number). A frame is taken when its check code is right; its body is the
 * bytes it holds, even when the declared length disagrees (firmware that miscounts still computes
 * the check code over what it sends). A wrong check code drops the frame: garbage, or a frame that
 * was changed, never becomes a fix or an answer.
 */
import type { FrameReader, ReadResult, StreamError } from '../framing'

export const FLAG = 0x7e
export const ESCAPE = 0x7d

/** Body ≤ 1023 bytes, header ≤ 21, check 1, each byte at most escaped to two, the two flags: the largest real frame is < 2.2 KiB. */
export const JT808_MAX_FRAME_BYTES = 2 * (1023 + 21 + 1) + 2
/** message id, properties, phone (6), serial */
const HEADER_2013_BYTES = 12
/** message id, properties, version, phone (10), serial */
const HEADER_2019_BYTES = 17
const PACKET_FIELDS_BYTES = 4

const SUBPACKAGE_BIT = 1 << 13
const VERSION_BIT = 1 << 14
const ENCRYPTION_MASK = 0x7 << 10

/** One checked message, unescaped and split. */
export interface Jt808Frame {
  messageId: number
  /** the 2019 header (version flag set): replies must carry it too */
  version2019: boolean
  /** the protocol version byte of a 2019 header (0 on 2013 frames) */
  protocolVersion: number
  /** the terminal phone number's bytes as sent (6 or 10): echoed in every reply */
  phone: Uint8Array
  /** the phone number as its nibbles read: the device's identifier (see descriptor.ts) */
  terminalId: string
  serial: number
  /** set when the body is one packet of a long message */
  packet: { count: number; index: number } | null
  /** the body's encryption bits (0: none) */
  encryption: number
  body: Uint8Array
}

export interface Jt808StreamError extends StreamError {
  code: 'bad_check' | 'bad_header'
  fatal: false
}

const HEX = '0123456789abcdef'

/** The phone number as hex nibbles: its decimal digits when BCD, as sent (leading zeros kept). */
export function terminalIdOf(phone: Uint8Array): string {
  let id = ''
  for (const byte of phone) id += HEX[byte >> 4] + HEX[byte & 0x0f]
  return id
}

/** Index of the next 7E at or after `from`, or -1. */
function nextFlag(buffer: Uint8Array, from: number): number {
  return buffer.indexOf(FLAG, from)
}

/** The bytes between the flags at `start` and `end`, unescaped; null when an escape is not 7D 01 or 7D 02. */
export function unescapeJt808(buffer: Uint8Array, start: number, end: number): Uint8Array | null {
  const out = new Uint8Array(end - start)
  let length = 0
  for (let i = start; i < end; i++) {
    const byte = buffer[i]
    if (byte !== ESCAPE) {
      out[length++] = byte
      continue
    }
    const next = buffer[++i]
    if (i >= end || (next !== 0x01 && next !== 0x02)) return null
    out[length++] = next === 0x01 ? ESCAPE : FLAG
  }
  return out.subarray(0, length)
}

type Parsed = { kind: 'frame'; frame: Jt808Frame } | { kind: 'bad'; error: Jt808StreamError }

/** The frame whose escaped content lies between flags at `open` and `close`. */
function parseBetween(buffer: Uint8Array, open: number, close: number): Parsed {
  const bad = (code: Jt808StreamError['code'], message: string): Parsed => ({ kind: 'bad', error: { code, fatal: false, message } })
  const data = unescapeJt808(buffer, open + 1, close)
  if (data === null) return bad('bad_header', 'JT808 frame with an escape that is neither 7D 01 nor 7D 02')
  if (data.length < HEADER_2013_BYTES + 1) return bad('bad_header', `JT808 frame of ${data.length} bytes, shorter than a header`)
  let check = 0
  for (let i = 0; i < data.length - 1; i++) check ^= data[i]
  if (check !== data[data.length - 1]) {
    return bad('bad_check', `JT808 check code ${data[data.length - 1].toString(16)} where the bytes give ${check.toString(16)}`)
  }
  const properties = (data[2] << 8) | data[3]
  const version2019 = (properties & VERSION_BIT) !== 0
  const subpackage = (properties & SUBPACKAGE_BIT) !== 0
  const headerBytes = (version2019 ? HEADER_2019_BYTES : HEADER_2013_BYTES) + (subpackage ? PACKET_FIELDS_BYTES : 0)
  if (data.length - 1 < headerBytes) return bad('bad_header', `JT808 frame of ${data.length} bytes, shorter than its header`)
  const phoneAt = version2019 ? 5 : 4
  const phone = data.slice(phoneAt, phoneAt + (version2019 ? 10 : 6))
  const serialAt = phoneAt + phone.length
  return {
    kind: 'frame',
    frame: {
      messageId: (data[0] << 8) | data[1],
      version2019,
      protocolVersion: version2019 ? data[4] : 0,
      phone,
      terminalId: terminalIdOf(phone),
      serial: (data[serialAt] << 8) | data[serialAt + 1],
      packet: subpackage ? { count: (data[serialAt + 2] << 8) | data[serialAt + 3], index: (data[serialAt + 4] << 8) | data[serialAt + 5] } : null,
      encryption: (properties & ENCRYPTION_MASK) >> 10,
      // a copy: the frame outlives the connection's buffer
      body: data.slice(headerBytes, data.length - 1),
    },
  }
}

/** The JT808 rules for the framing machine; stateless, so one reader may serve every connection. */
export function jt808FrameReader(): FrameReader<Jt808Frame, Jt808StreamError> {
  type Read = ReadResult<Jt808Frame, Jt808StreamError>
  return {
    unit: 'JT808 frame',
    maxFrameBytes: JT808_MAX_FRAME_BYTES,
    nextStart(buffer, from) {
      const flag = nextFlag(buffer, from)
      return flag < 0 ? buffer.length : flag
    },
    checkedAt(buffer, at) {
      if (buffer[at] !== FLAG) return false
      const close = nextFlag(buffer, at + 1)
      return close > at + 1 && close - at < JT808_MAX_FRAME_BYTES && parseBetween(buffer, at, close).kind === 'frame'
    },
    read(buffer, at): Read {
      const close = nextFlag(buffer, at + 1)
      if (close < 0) return buffer.length - at >= JT808_MAX_FRAME_BYTES ? { kind: 'skip' } : { kind: 'wait' }
      // 7E 7E: the first closed a frame we did not see the start of (or is noise); the second may open one
      if (close === at + 1) return { kind: 'skip' }
      const parsed = parseBetween(buffer, at, close)
      // a frame that fails leaves its closing flag, which may open the next frame (a stream joined mid-frame)
      return parsed.kind === 'frame' ? { kind: 'frame', frame: parsed.frame, end: close + 1 } : { kind: 'bad', end: close, error: parsed.error }
    },
  }
}
