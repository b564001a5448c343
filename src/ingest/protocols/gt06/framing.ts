/**
 * GT06 framing: where a frame starts and ends in the byte stream, as a reader for the shared
 * framing machine (../framing.ts, which buffers, caps, resynchronises and counts garbage).
 *
 *   start   length      protocol  content  serial  crc  stop
 *   78 78   1 byte      1 byte    N bytes  2       2    0D 0A     length = 5 + N
 *   79 79   2 bytes     1 byte    N bytes  2       2    0D 0A     (long frames, same meaning)
 *
 * The CRC is CRC-16/X.25 ("CRC-ITU" in the documents) over the length field(s) through the
 * serial number. A frame is taken when its declared length ends on the stop bytes and its CRC is
 * right; as real firmware needs, also when its declared length is wrong but the stop bytes and
 * the CRC of what it sent are right, and a login sent without serial and CRC (see
 * findLenientFrame). Garbage would have to pass the CRC to become anything but a login.
 */
import { crc16X25 } from '../crc'
import { createFrameMachine, type FrameMachine, type FrameReader, type ReadResult, type StreamItem } from '../framing'

export const SHORT_START = 0x78
export const LONG_START = 0x79
export const STOP_1 = 0x0d
export const STOP_2 = 0x0a
/** protocol number (1) + serial (2) + CRC (2): the smallest legal length field */
export const MIN_LENGTH_FIELD = 5
const LOGIN_PROTOCOL = 0x01
/** the terminal ID of a login: the IMEI in 8 BCD bytes */
export const TERMINAL_ID_BYTES = 8

/** Default cap on buffered bytes; also the largest frame accepted. Real GT06 frames are < 1 KiB. */
export const GT06_DEFAULT_MAX_BUFFERED_BYTES = 4096

/** One CRC-checked frame, stripped of its envelope. */
export interface Gt06Frame {
  /** true for a 0x7979 frame (2-byte length field) */
  longFrame: boolean
  protocol: number
  /** the information content: the bytes between the protocol number and the serial number */
  content: Uint8Array
  /** information serial number, echoed in the acknowledgement */
  serial: number
  /**
   * Present only on a frame taken although it broke the format, as real firmware does: its
   * declared length was wrong but the stop bytes and (when `crcChecked`) the CRC of the bytes
   * it sent were right; or a login that came with neither serial number nor CRC
   * (`crcChecked: false`, `serial` 0). The decoder takes nothing but a login unchecked.
   */
  lenient?: { declaredLength: number; crcChecked: boolean }
}

export type Gt06StreamError =
  /** bytes that were not part of any frame were discarded while looking for a start marker */
  | { code: 'garbage'; fatal: false; skippedBytes: number; message: string }
  /** a complete, well-delimited frame whose CRC did not match: it is dropped, not acknowledged */
  | { code: 'bad_crc'; fatal: false; protocol: number; expected: number; received: number; message: string }
  /**
   * a frame declared longer than the buffer cap. The stream cannot be trusted any more (a
   * hostile or foreign client): the listener should close the connection. The parser stays
   * failed and buffers nothing more.
   */
  | { code: 'frame_too_large'; fatal: true; declaredBytes: number; maxBytes: number; message: string }

type Gt06ReaderError = Exclude<Gt06StreamError, { code: 'garbage' }>

export type Gt06StreamItem = StreamItem<Gt06Frame, Gt06ReaderError>

export type Gt06Parser = FrameMachine<Gt06Frame, Gt06ReaderError>

export interface Gt06ParserOptions {
  maxBufferedBytes?: number
}

function isStartByte(byte: number): boolean {
  return byte === SHORT_START || byte === LONG_START
}

function isMarkerAt(buffer: Uint8Array, at: number): boolean {
  return at + 1 < buffer.length && isStartByte(buffer[at]) && buffer[at + 1] === buffer[at]
}

/** Index of the next 0x7878 or 0x7979 at or after `from`, or -1. */
function findStartMarker(buffer: Uint8Array, from: number): number {
  for (let i = from; i + 1 < buffer.length; i++) {
    const byte = buffer[i]
    if (isStartByte(byte) && buffer[i + 1] === byte) return i
  }
  return -1
}

/** How many 0D 0A pairs a lenient parse examines after one start marker: bounds the work a client can cause. */
const MAX_STOP_CANDIDATES = 8
/** How many later markers `mayStillEnd` examines for a whole frame. */
const MAX_LATER_CANDIDATES = 16

/** Whether a whole frame, with its stop bytes and right CRC where its length says, starts at `at`. */
function isCompleteFrame(buffer: Uint8Array, at: number, maxBytes: number): boolean {
  if (!isMarkerAt(buffer, at)) return false
  const longFrame = buffer[at] === LONG_START
  const headerBytes = longFrame ? 4 : 3
  if (buffer.length - at < headerBytes) return false
  const lengthField = longFrame ? (buffer[at + 2] << 8) | buffer[at + 3] : buffer[at + 2]
  const end = at + headerBytes + lengthField + 2
  return (
    lengthField >= MIN_LENGTH_FIELD &&
    end - at <= maxBytes &&
    end <= buffer.length &&
    buffer[end - 2] === STOP_1 &&
    buffer[end - 1] === STOP_2 &&
    crc16X25(buffer, at + 2, end - 4) === ((buffer[end - 4] << 8) | buffer[end - 3])
  )
}

/** Whether a whole frame starts at a marker after `from` (the first MAX_LATER_CANDIDATES markers). */
function hasCompleteFrameAfter(buffer: Uint8Array, from: number, maxBytes: number): boolean {
  let candidate = findStartMarker(buffer, from)
  for (let tries = 0; candidate >= 0 && tries < MAX_LATER_CANDIDATES; tries++) {
    if (isCompleteFrame(buffer, candidate, maxBytes)) return true
    candidate = findStartMarker(buffer, candidate + 1)
  }
  return false
}

/** Whether `count` bytes from `from` are all BCD digits (a terminal ID, an IMEI). */
export function isBcd(buffer: Uint8Array, from: number, count: number): boolean {
  for (let i = from; i < from + count; i++) if (buffer[i] >> 4 > 9 || (buffer[i] & 0x0f) > 9) return false
  return true
}

function hasStopAfter(buffer: Uint8Array, from: number): boolean {
  for (let i = from; i + 1 < buffer.length; i++) if (buffer[i] === STOP_1 && buffer[i + 1] === STOP_2) return true
  return false
}

/**
 * A frame at `start` whose declared length is wrong, found by its stop bytes instead: the first
 * 0D 0A after the protocol number where the CRC of the bytes actually sent is right (firmware
 * that miscounts its length still computes the CRC over what it sends; a GT06 "LBS" packet
 * declaring 0x0A for 19 bytes, quoted in Traccar issue #1973, is one). Or a login of 8 BCD bytes
 * and at most 2 more with no CRC at all, which some firmware sends (Traccar's GT06 test data
 * `78780d010359339075005244340d0a`): a login names a device, it is not data, and the unknown
 * identifier ration guards it like any other. Garbage would have to pass the CRC, so it never
 * becomes a fix.
 *
 * `settled`: the frame's declared end is not in the buffer yet, so more bytes may be on the way;
 * then only a candidate that ends the buffer or is followed by a start marker is taken (a device
 * that miscounts sends nothing more until it is answered).
 */
function findLenientFrame(
  buffer: Uint8Array,
  start: number,
  maxBytes: number,
  settled: boolean,
): { frame: Gt06Frame; end: number } | null {
  const longFrame = buffer[start] === LONG_START
  const headerBytes = longFrame ? 4 : 3
  const protocolAt = start + headerBytes
  if (protocolAt >= buffer.length) return null
  const declaredLength = longFrame ? (buffer[start + 2] << 8) | buffer[start + 3] : buffer[start + 2]
  const protocol = buffer[protocolAt]
  const last = Math.min(buffer.length, start + maxBytes) - 1
  let tries = 0
  for (let p = protocolAt + 1; p < last; p++) {
    if (buffer[p] !== STOP_1 || buffer[p + 1] !== STOP_2) continue
    if (++tries > MAX_STOP_CANDIDATES) return null
    const end = p + 2
    const quiet = end === buffer.length || isMarkerAt(buffer, end)
    if (!settled && !quiet) continue
    const actualLength = p - protocolAt
    if (actualLength >= MIN_LENGTH_FIELD && crc16X25(buffer, start + 2, p - 2) === ((buffer[p - 2] << 8) | buffer[p - 1])) {
      return {
        end,
        frame: {
          longFrame,
          protocol,
          content: buffer.slice(protocolAt + 1, p - 4),
          serial: (buffer[p - 4] << 8) | buffer[p - 3],
          lenient: { declaredLength, crcChecked: true },
        },
      }
    }
    const idBytes = p - protocolAt - 1
    if (
      protocol === LOGIN_PROTOCOL &&
      quiet &&
      idBytes >= TERMINAL_ID_BYTES &&
      idBytes <= TERMINAL_ID_BYTES + 2 &&
      isBcd(buffer, protocolAt + 1, TERMINAL_ID_BYTES)
    ) {
      return {
        end,
        frame: {
          longFrame,
          protocol,
          content: buffer.slice(protocolAt + 1, p),
          serial: 0,
          lenient: { declaredLength, crcChecked: false },
        },
      }
    }
  }
  return null
}

const hex2 = (value: number) => value.toString(16).padStart(2, '0')
const hex4 = (value: number) => value.toString(16).padStart(4, '0')

/** The GT06 rules for the framing machine; stateless, so one reader may serve every connection. */
export function gt06FrameReader(options: Gt06ParserOptions = {}): FrameReader<Gt06Frame, Gt06ReaderError> {
  const maxBytes = options.maxBufferedBytes ?? GT06_DEFAULT_MAX_BUFFERED_BYTES
  type Read = ReadResult<Gt06Frame, Gt06ReaderError>
  const lenient = (buffer: Uint8Array, start: number, settled: boolean): Read | null => {
    const found = findLenientFrame(buffer, start, maxBytes, settled)
    return found ? { kind: 'frame', frame: found.frame, end: found.end } : null
  }
  /**
   * A frame whose declared length is wrong may still be arriving: while no 0D 0A follows its
   * marker and no complete frame starts after it, wait (at most the cap) rather than drop it.
   */
  const mayStillEnd = (buffer: Uint8Array, start: number): boolean =>
    buffer.length - start < maxBytes && !hasStopAfter(buffer, start + 2) && !hasCompleteFrameAfter(buffer, start + 1, maxBytes)

  return {
    unit: 'GT06 frame',
    maxFrameBytes: maxBytes,
    nextStart(buffer, from) {
      const marker = findStartMarker(buffer, from)
      if (marker >= 0) return marker
      // keep a trailing first half of a possible marker
      return buffer.length > from && isStartByte(buffer[buffer.length - 1]) ? buffer.length - 1 : buffer.length
    },
    checkedAt: (buffer, at) => isCompleteFrame(buffer, at, maxBytes),
    read(buffer, start): Read {
      const longFrame = buffer[start] === LONG_START
      const headerBytes = longFrame ? 4 : 3
      if (buffer.length - start < headerBytes) return { kind: 'wait' } // the length field
      const lengthField = longFrame ? (buffer[start + 2] << 8) | buffer[start + 3] : buffer[start + 2]
      if (lengthField < MIN_LENGTH_FIELD) {
        // cannot be a real frame unless its stop bytes say otherwise: else the marker was data
        return lenient(buffer, start, true) ?? (mayStillEnd(buffer, start) ? { kind: 'wait' } : { kind: 'skip' })
      }
      const frameBytes = headerBytes + lengthField + 2
      if (frameBytes > maxBytes) {
        return (
          lenient(buffer, start, true) ?? {
            kind: 'fatal',
            error: {
              code: 'frame_too_large',
              fatal: true,
              declaredBytes: frameBytes,
              maxBytes,
              message: `GT06 frame declares ${frameBytes} bytes, more than the ${maxBytes}-byte limit`,
            },
          }
        )
      }
      // A device that declares more than it sends waits for an answer: take the frame by its
      // stop bytes if they are clear (the machine also looks for a whole frame further on).
      if (buffer.length - start < frameBytes) return lenient(buffer, start, false) ?? { kind: 'wait' }
      const end = start + frameBytes
      if (buffer[end - 2] !== STOP_1 || buffer[end - 1] !== STOP_2) {
        // misframed: the "marker" was inside garbage, unless the stop bytes are elsewhere
        return lenient(buffer, start, true) ?? (mayStillEnd(buffer, start) ? { kind: 'wait' } : { kind: 'skip' })
      }
      const crcOffset = end - 4
      const received = (buffer[crcOffset] << 8) | buffer[crcOffset + 1]
      const expected = crc16X25(buffer, start + 2, crcOffset)
      const protocol = buffer[start + headerBytes]
      if (received !== expected) {
        // (a cut-off frame whose declared length ends on the next frame's stop bytes: the
        // machine finds the next frame whole inside it and keeps that)
        return {
          kind: 'bad',
          end,
          error: {
            code: 'bad_crc',
            fatal: false,
            protocol,
            expected,
            received,
            message: `GT06 frame (protocol 0x${hex2(protocol)}) dropped: CRC 0x${hex4(received)}, expected 0x${hex4(expected)}`,
          },
        }
      }
      const serialOffset = crcOffset - 2
      return {
        kind: 'frame',
        end,
        frame: {
          longFrame,
          protocol,
          // slice() copies: a frame must not pin the (possibly large) chunk it came from
          content: buffer.slice(start + headerBytes + 1, serialOffset),
          serial: (buffer[serialOffset] << 8) | buffer[serialOffset + 1],
        },
      }
    },
  }
}

/** A connection's GT06 framing: arbitrary TCP chunks in, CRC-checked frames and stream errors out. */
export function createGt06Parser(options: Gt06ParserOptions = {}): Gt06Parser {
  return createFrameMachine(gt06FrameReader(options))
}
