/**
 * H02 framing: one TCP stream carries two kinds of frame, told apart by their first byte.
 *
 *   text    `*` maker `,` id `,` type `,` … `#`     ASCII, ends at `#` (some firmware adds CR LF)
 *   binary  `$` id (BCD) time date latitude … status [tail]    no length field, no end marker
 *
 * Binary layout (bytes, BCD unless said): `$` (1) · id (5: a 10-digit serial, or 8: the 15-digit
 * IMEI and a pad digit) · hhmmss (3) · ddmmyy (3) · latitude ddmm.mmmm (4) · battery (1, binary)
 * · longitude dddmm.mmmm (4½) + flags (½) · speed knots (1½) + course (1½) · status word (4, hex)
 * · tail. Captured frames come in three lengths: 32 bytes (5-byte id, a 3-byte tail), 42 (8-byte
 * id) and 45 (5-byte id, a tail with the serving cell); a few firmwares send other lengths
 * (46, 48 seen). The protocol has no checksum, so a frame is recognised by its structure: every
 * BCD field must hold decimal digits and the time, date and coordinates must be in range. Random
 * bytes pass that check with a probability of about 10⁻¹⁰, which is what keeps garbage from ever
 * becoming a fix.
 *
 * Where a binary frame ends is decided by what follows it: a known length that ends exactly where
 * the received bytes end, or right before the next frame's marker, wins (the shortest first).
 * Past the longest known length, the frame runs to the next marker or to the end of what was
 * received (capped): an unknown tail is kept, not mistaken for garbage. One case stays ambiguous:
 * exactly 32 bytes received of what will be a 45-byte frame. A device keeps one length, so the
 * caller passes back `binaryFrameBytes` from the previous call and the known length comes first;
 * without it (the first frame of a connection, split by TCP at exactly byte 32) the frame is read
 * as 32 bytes, its position intact, and the 13 bytes that follow are counted as garbage.
 *
 * `h02FrameReader` gives these rules to the shared framing machine (../framing.ts), which a
 * listener runs per connection. `splitH02Frames` is the same as one pure call: it takes everything
 * received and not yet consumed, and returns the complete frames, how many bytes it consumed and
 * how many of those were garbage. The caller keeps `buffer.subarray(consumedBytes)` for the next
 * call; that remainder is never longer than `maxFrameBytes`, whatever a client sends.
 */
import { scanFrames, type FrameReader } from '../framing'

/** Default largest frame; also the most the caller ever has to keep. Real H02 text frames are < 400 bytes. */
export const H02_DEFAULT_MAX_FRAME_BYTES = 1024

const TEXT_MARKER = 0x2a // '*'
const TEXT_END = 0x23 // '#'
const BINARY_MARKER = 0x24 // '$'
const CR = 0x0d
const LF = 0x0a

/** Binary frame lengths seen from real devices, by id width. */
const SHORT_ID_LENGTHS = [32, 45] as const
const LONG_ID_LENGTHS = [42] as const
const LONGEST_KNOWN_BINARY = 45
/** An unknown-length binary frame is cut here at the latest. */
const MAX_BINARY_BYTES = 96
/** Bytes of a 5-byte-id frame before its tail: `$`, id, time, date, position, speed, course, status. */
export const H02_BINARY_SHORT_HEADER_BYTES = 29
/** The same with an 8-byte id. */
export const H02_BINARY_LONG_HEADER_BYTES = 32

export type H02Frame =
  /** the whole frame, `*` through `#`, as ASCII */
  | { kind: 'text'; text: string }
  /** the whole frame, `$` included (a copy, not a view of the caller's buffer) */
  | { kind: 'binary'; bytes: Uint8Array }

export interface H02SplitResult {
  frames: H02Frame[]
  /** bytes the caller may drop (frames, garbage and CR/LF); the rest is an incomplete frame */
  consumedBytes: number
  /** of those, bytes that belonged to no frame */
  skippedBytes: number
  /** the length of the last binary frame (or the one passed in): pass it to the next call of this connection */
  binaryFrameBytes: number | null
}

export interface H02SplitOptions {
  maxFrameBytes?: number
  /** `binaryFrameBytes` of this connection's previous call */
  binaryFrameBytes?: number | null
}

function isBcd(byte: number): boolean {
  return (byte & 0x0f) <= 9 && byte >> 4 <= 9
}

function bcd(byte: number): number {
  return (byte >> 4) * 10 + (byte & 0x0f)
}

/** A printable ASCII byte other than the two markers (a marker inside a text frame starts a new frame). */
function isTextByte(byte: number): boolean {
  return byte >= 0x20 && byte <= 0x7e && byte !== TEXT_MARKER && byte !== BINARY_MARKER
}

function isLetter(byte: number): boolean {
  return (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
}

type HeaderCheck = 'valid' | 'invalid' | 'incomplete'

/**
 * Whether the bytes at `at` (the `$`) begin a binary frame whose id is `idBytes` long. Checks only
 * what has arrived; `incomplete` when nothing contradicts it yet.
 */
export function checkH02BinaryHeader(buffer: Uint8Array, at: number, idBytes: 5 | 8): HeaderCheck {
  const headerBytes = idBytes === 5 ? H02_BINARY_SHORT_HEADER_BYTES : H02_BINARY_LONG_HEADER_BYTES
  const available = Math.min(buffer.length - at, headerBytes)
  for (let offset = 1; offset < available; offset++) {
    if (!binaryByteFits(buffer[at + offset], offset, idBytes)) return 'invalid'
  }
  return available < headerBytes ? 'incomplete' : 'valid'
}

/** Whether `byte` can be the byte at `offset` of a binary frame's header. */
function binaryByteFits(byte: number, offset: number, idBytes: 5 | 8): boolean {
  if (offset <= idBytes) {
    // the 8-byte id is the IMEI and one pad digit, which some firmware may send as F
    return isBcd(byte) || (idBytes === 8 && offset === 8 && byte >> 4 <= 9 && (byte & 0x0f) === 0x0f)
  }
  switch (offset - idBytes) {
    case 1: // hours
      return isBcd(byte) && bcd(byte) <= 23
    case 2: // minutes
    case 3: // seconds
      return isBcd(byte) && bcd(byte) <= 59
    case 4: // day (00 00 00: a device without a date yet; the frame is kept, the fix is not)
      return isBcd(byte) && bcd(byte) <= 31
    case 5: // month
      return isBcd(byte) && bcd(byte) <= 12
    case 7: // latitude degrees
      return isBcd(byte) && bcd(byte) <= 90
    case 8: // latitude minutes
      return isBcd(byte) && bcd(byte) <= 59
    case 11: // battery: a binary value
      return true
    case 12: // longitude: [d d] [d m] [m m] [m m] [m flags]
      return isBcd(byte) && bcd(byte) <= 18
    case 13:
      return isBcd(byte) && (byte & 0x0f) <= 5
    case 16: // the last longitude digit; the low nibble is the flags
      return byte >> 4 <= 9
    default:
      // 6 year, 9-10 latitude minutes, 14-15 longitude minutes, 17-19 speed and course are BCD;
      // 20-23, the status word, is any value
      return offset - idBytes >= 20 || isBcd(byte)
  }
}

/** Whether a frame may start at `at`: the end of the data, or a marker not contradicted by its next byte. */
function boundaryAt(buffer: Uint8Array, at: number): boolean {
  if (at >= buffer.length) return true
  const marker = buffer[at]
  if (marker === TEXT_MARKER) return at + 1 >= buffer.length || isLetter(buffer[at + 1])
  if (marker === BINARY_MARKER) return checkH02BinaryHeader(buffer, at, 5) !== 'invalid' || checkH02BinaryHeader(buffer, at, 8) !== 'invalid'
  return false
}

type Candidate = { end: number } | { wait: true } | { garbage: true }

function binaryCandidate(buffer: Uint8Array, at: number, maxFrameBytes: number, learned: number | null): Candidate {
  const short = checkH02BinaryHeader(buffer, at, 5)
  const long = checkH02BinaryHeader(buffer, at, 8)
  if (short === 'invalid' && long === 'invalid') return { garbage: true }
  if (short === 'incomplete' || (short === 'invalid' && long === 'incomplete')) return { wait: true }
  const known: readonly number[] = short === 'valid' ? SHORT_ID_LENGTHS : LONG_ID_LENGTHS
  // the length this device used before is tried first
  const lengths = learned !== null && known.includes(learned) ? [learned, ...known.filter((length) => length !== learned)] : known
  const available = buffer.length - at
  for (const length of lengths) {
    if (length > maxFrameBytes) break
    if (available < length) return { wait: true }
    if (boundaryAt(buffer, at + length)) return { end: at + length }
  }
  if (available <= LONGEST_KNOWN_BINARY) return { wait: true }
  // Longer than any known frame and no known length fits: run to the next marker, or to what
  // has arrived (a device sends one frame per packet, so the end of a packet is its end).
  const minimum = known[0]
  const limit = Math.min(buffer.length, at + Math.min(MAX_BINARY_BYTES, maxFrameBytes))
  for (let end = at + minimum + 1; end < limit; end++) {
    if ((buffer[end] === TEXT_MARKER || buffer[end] === BINARY_MARKER) && boundaryAt(buffer, end)) return { end }
  }
  return { end: limit }
}

function textCandidate(buffer: Uint8Array, at: number, maxFrameBytes: number): Candidate {
  const limit = Math.min(buffer.length, at + maxFrameBytes)
  for (let i = at + 1; i < limit; i++) {
    const byte = buffer[i]
    if (byte === TEXT_END) return i === at + 1 ? { garbage: true } : { end: i + 1 }
    if (!isTextByte(byte)) return { garbage: true }
  }
  // no `#` within the cap: not a frame (or a hostile one); the marker is dropped as garbage
  return buffer.length - at >= maxFrameBytes ? { garbage: true } : { wait: true }
}

/**
 * The H02 rules for the shared framing machine (../framing.ts). The reader keeps the one thing a
 * connection learns: the length of its binary frames.
 */
export function h02FrameReader(options: H02SplitOptions = {}): FrameReader<H02Frame> & { readonly binaryFrameBytes: number | null } {
  const maxFrameBytes = Math.max(options.maxFrameBytes ?? H02_DEFAULT_MAX_FRAME_BYTES, LONGEST_KNOWN_BINARY)
  let binaryFrameBytes = options.binaryFrameBytes ?? null
  return {
    unit: 'H02 frame',
    maxFrameBytes,
    get binaryFrameBytes() {
      return binaryFrameBytes
    },
    nextStart(buffer, from) {
      for (let at = from; at < buffer.length; at++) {
        const byte = buffer[at]
        if (byte === TEXT_MARKER || byte === BINARY_MARKER || byte === CR || byte === LF) return at
      }
      return buffer.length
    },
    read(buffer, at) {
      const byte = buffer[at]
      // some firmware ends a text frame with CR LF: a separator, not garbage
      if (byte === CR || byte === LF) return { kind: 'pass', end: at + 1 }
      const candidate = byte === TEXT_MARKER ? textCandidate(buffer, at, maxFrameBytes) : binaryCandidate(buffer, at, maxFrameBytes, binaryFrameBytes)
      if ('wait' in candidate) return { kind: 'wait' }
      if ('garbage' in candidate) return { kind: 'skip' }
      if (byte === TEXT_MARKER) return { kind: 'frame', frame: { kind: 'text', text: asciiOf(buffer, at, candidate.end) }, end: candidate.end }
      binaryFrameBytes = candidate.end - at
      return { kind: 'frame', frame: { kind: 'binary', bytes: buffer.slice(at, candidate.end) }, end: candidate.end }
    },
  }
}

export function splitH02Frames(buffer: Uint8Array, options: H02SplitOptions = {}): H02SplitResult {
  const reader = h02FrameReader(options)
  const { items, consumed, skipped } = scanFrames(reader, buffer)
  const frames: H02Frame[] = []
  for (const item of items) if (item.kind === 'frame') frames.push(item.frame)
  return { frames, consumedBytes: consumed, skippedBytes: skipped, binaryFrameBytes: reader.binaryFrameBytes }
}

/** The frame as text (its bytes were checked to be printable ASCII), a slice at a time to bound the arguments. */
function asciiOf(buffer: Uint8Array, start: number, end: number): string {
  let text = ''
  for (let at = start; at < end; at += 4096) text += String.fromCharCode(...buffer.subarray(at, Math.min(end, at + 4096)))
  return text
}
