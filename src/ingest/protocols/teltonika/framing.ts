/**
 * Teltonika framing, as a reader for the shared framing machine (../framing.ts, which buffers,
 * caps, resynchronises and counts garbage). Session on the wire (integers big-endian):
 *
 *   device → server   [FF …] 00 0F "356307042441013"    keep-alive bytes, 2-byte length + ASCII IMEI
 *   device → server   00 00 00 00 | data length (4) | codec id .. number of data 2 | CRC (4)
 *   device → server   FF                               keep-alive, at any packet boundary
 *
 * The CRC field is 4 bytes whose low 2 hold CRC-16/ARC ("CRC-16/IBM") over codec id .. number of
 * data 2. A connection starts with the handshake, so the reader keeps one piece of state: whether
 * the IMEI has been read. Reference: Teltonika wiki, "Teltonika Data Sending Protocols".
 */
import { crc16Arc } from '../crc'
import { createFrameMachine, type FrameReader, type ReadResult } from '../framing'

/** Default cap on the data field length. A full FMB packet is a few KiB at most. */
export const TELTONIKA_DEFAULT_MAX_PACKET_BYTES = 64 * 1024
/** IMEIs are 15 digits; allow some room for other serials, but not a megabyte of "IMEI". */
const MAX_IMEI_LENGTH = 20
/** codec id + number of data 1 + number of data 2 */
const MIN_DATA_LENGTH = 3
/** preamble (4) + data field length (4) */
const HEADER_BYTES = 8
const CRC_BYTES = 4
/**
 * The keep-alive ("ping") byte. FMB devices with a link-keeping period send a lone 0xFF while
 * they have nothing to report, before the IMEI when they open the link and between packets (seen
 * from an FMB920 every minute, github.com/alim-zanibekov/teltonika issue #2; Traccar's frame
 * decoder test has one before an IMEI). It cannot start a handshake (an IMEI length is < 256, so
 * its first byte is 00) nor a packet (the preamble is 00 00 00 00), so it is never ambiguous there.
 */
const KEEPALIVE_BYTE = 0xff

/** One CRC-checked AVL packet. */
export interface TeltonikaPacket {
  codecId: number
  /** "number of data 1": how many records the packet announces (what the ACK echoes) */
  recordCount: number
  /** the data field: codec id .. number of data 2, as covered by the CRC */
  data: Uint8Array
}

export type TeltonikaStreamError =
  /** bytes outside any packet were discarded while looking for a 4-zero preamble */
  | { code: 'garbage'; fatal: false; skippedBytes: number; message: string }
  /** a complete packet whose CRC did not match: dropped and not acknowledged (the device resends) */
  | { code: 'bad_crc'; fatal: false; expected: number; received: number; message: string }
  /** the handshake is not a 2-byte length + ASCII digits: not a Teltonika device. Close. */
  | { code: 'bad_imei'; fatal: true; message: string }
  /** a data field longer than the cap: hostile or foreign client. Close. */
  | { code: 'packet_too_large'; fatal: true; declaredBytes: number; maxBytes: number; message: string }

/** What the stream carries: the handshake, packets, keep-alive bytes. */
export type TeltonikaFrame =
  | { kind: 'imei'; imei: string }
  | { kind: 'packet'; packet: TeltonikaPacket }
  /** 0xFF bytes where a handshake or packet could start: the device keeping its link open */
  | { kind: 'keepalive'; bytes: number }

export type TeltonikaStreamItem = TeltonikaFrame | { kind: 'error'; error: TeltonikaStreamError }

export interface TeltonikaParser {
  /** Feed the next chunk from the socket; returns the IMEI, packets and errors, in order. */
  push(chunk: Uint8Array): TeltonikaStreamItem[]
  /** the IMEI from the handshake, once received */
  readonly imei: string | null
  /** bytes held back waiting for the rest of the handshake or a packet */
  readonly bufferedBytes: number
  /** true after a fatal error; every later push returns that error again */
  readonly failed: boolean
}

export interface TeltonikaParserOptions {
  maxPacketBytes?: number
}

type ReaderError = Exclude<TeltonikaStreamError, { code: 'garbage' }>
type Read = ReadResult<TeltonikaFrame, ReaderError>

export interface TeltonikaFrameReader extends FrameReader<TeltonikaFrame, ReaderError> {
  /** the IMEI from the handshake, once read */
  readonly imei: string | null
}

function readUint32(buffer: Uint8Array, at: number): number {
  return buffer[at] * 0x1000000 + ((buffer[at + 1] << 16) | (buffer[at + 2] << 8) | buffer[at + 3])
}

/**
 * Index of the next 4-zero preamble at or after `from`; when none is complete, where a possible
 * preamble starts in the trailing zeros (so they are kept).
 */
function findPreamble(buffer: Uint8Array, from: number): number {
  let zeros = 0
  for (let i = from; i < buffer.length; i++) {
    zeros = buffer[i] === 0 ? zeros + 1 : 0
    if (zeros === 4) return i - 3
  }
  return buffer.length - zeros
}

/** The CRC a packet at `start` carries and the one its data gives (the packet assumed whole). */
function packetCrc(buffer: Uint8Array, start: number, dataLength: number): { expected: number; received: number } {
  const dataStart = start + HEADER_BYTES
  const crcAt = dataStart + dataLength
  return {
    expected: crc16Arc(buffer, dataStart, crcAt),
    // the 4-byte field carries the CRC in its low 2 bytes; its high 2 are zero ("first two are
    // zeroes", the wiki), so anything else there is not a packet either
    received: readUint32(buffer, crcAt),
  }
}

const isPreambleAt = (buffer: Uint8Array, at: number) =>
  at + 4 <= buffer.length && buffer[at] === 0 && buffer[at + 1] === 0 && buffer[at + 2] === 0 && buffer[at + 3] === 0

/** A connection's Teltonika rules for the framing machine: the handshake first, then packets. */
export function teltonikaFrameReader(options: TeltonikaParserOptions = {}): TeltonikaFrameReader {
  const maxBytes = options.maxPacketBytes ?? TELTONIKA_DEFAULT_MAX_PACKET_BYTES
  let imei: string | null = null

  const keepAlive = (buffer: Uint8Array, at: number): Read => {
    let end = at
    while (end < buffer.length && buffer[end] === KEEPALIVE_BYTE) end++
    return { kind: 'frame', frame: { kind: 'keepalive', bytes: end - at }, end }
  }

  const handshake = (buffer: Uint8Array, at: number): Read => {
    if (buffer[at] === KEEPALIVE_BYTE) return keepAlive(buffer, at)
    if (buffer.length - at < 2) return { kind: 'wait' }
    const length = (buffer[at] << 8) | buffer[at + 1]
    if (length === 0 || length > MAX_IMEI_LENGTH) {
      return { kind: 'fatal', error: { code: 'bad_imei', fatal: true, message: `IMEI length ${length} is not 1..${MAX_IMEI_LENGTH}` } }
    }
    if (buffer.length - at < 2 + length) return { kind: 'wait' }
    let text = ''
    for (let i = at + 2; i < at + 2 + length; i++) {
      const byte = buffer[i]
      if (byte < 0x30 || byte > 0x39) {
        return { kind: 'fatal', error: { code: 'bad_imei', fatal: true, message: `IMEI byte 0x${byte.toString(16)} is not a digit` } }
      }
      text += String.fromCharCode(byte)
    }
    imei = text
    return { kind: 'frame', frame: { kind: 'imei', imei: text }, end: at + 2 + length }
  }

  return {
    unit: 'AVL packet',
    maxFrameBytes: HEADER_BYTES + maxBytes + CRC_BYTES,
    get imei() {
      return imei
    },
    nextStart(buffer, from, boundary) {
      // before the handshake every byte is the handshake's; keep-alive bytes count only at a
      // packet boundary (inside a run of garbage they are garbage)
      if (imei === null || (boundary && buffer[from] === KEEPALIVE_BYTE)) return from
      return findPreamble(buffer, from)
    },
    checkedAt(buffer, at) {
      if (imei === null || !isPreambleAt(buffer, at) || buffer.length - at < HEADER_BYTES) return false
      const dataLength = readUint32(buffer, at + 4)
      if (dataLength < MIN_DATA_LENGTH || dataLength > maxBytes || buffer.length - at < HEADER_BYTES + dataLength + CRC_BYTES) return false
      const { expected, received } = packetCrc(buffer, at, dataLength)
      return expected === received
    },
    read(buffer, at): Read {
      if (imei === null) return handshake(buffer, at)
      if (buffer[at] === KEEPALIVE_BYTE) return keepAlive(buffer, at)
      // wait for the whole preamble and the length
      if (buffer.length - at < HEADER_BYTES) return { kind: 'wait' }
      const dataLength = readUint32(buffer, at + 4)
      // zeros in garbage, not a packet
      if (dataLength < MIN_DATA_LENGTH) return { kind: 'skip' }
      if (dataLength > maxBytes) {
        return {
          kind: 'fatal',
          error: {
            code: 'packet_too_large',
            fatal: true,
            declaredBytes: dataLength,
            maxBytes,
            message: `AVL packet declares ${dataLength} data bytes, more than the ${maxBytes}-byte limit`,
          },
        }
      }
      const end = at + HEADER_BYTES + dataLength + CRC_BYTES
      if (end > buffer.length) return { kind: 'wait' }
      const { expected, received } = packetCrc(buffer, at, dataLength)
      if (expected !== received) {
        return {
          kind: 'bad',
          end,
          error: { code: 'bad_crc', fatal: false, expected, received, message: `AVL packet dropped: CRC 0x${received.toString(16)}, expected 0x${expected.toString(16)}` },
        }
      }
      const dataStart = at + HEADER_BYTES
      return {
        kind: 'frame',
        end,
        frame: { kind: 'packet', packet: { codecId: buffer[dataStart], recordCount: buffer[dataStart + 1], data: buffer.slice(dataStart, dataStart + dataLength) } },
      }
    },
  }
}

/** A connection's Teltonika framing: the IMEI, packets, keep-alives and stream errors, in order. */
export function createTeltonikaParser(options: TeltonikaParserOptions = {}): TeltonikaParser {
  const reader = teltonikaFrameReader(options)
  const machine = createFrameMachine(reader)
  return {
    push: (chunk) => machine.push(chunk).map((item) => (item.kind === 'frame' ? item.frame : item)),
    get imei() {
      return reader.imei
    },
    get bufferedBytes() {
      return machine.bufferedBytes
    },
    get failed() {
      return machine.failed
    },
  }
}
