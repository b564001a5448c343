/**
 * Meitrack framing. Every frame, text or binary, has one envelope (Meitrack GPRS protocol,
 * "GPRS command format"):
 *
 *   $$ <flag> <length> , <IMEI> , <type> , <data> * <checksum> \r\n        device → server
 *   @@ <flag> <length> , <IMEI> , <type> , <data> * <checksum> \r\n        server → device
 *
 * `flag` is one printable byte (the "data identifier": a device's answer repeats the flag of the
 * command it answers); `length` is decimal, the bytes from the first comma through the CR LF;
 * `checksum` is two uppercase hex digits, the sum of every byte from the first `$` through the `*`,
 * mod 256. `data` is text (AAA reports, answers) or binary (CCC and CCE batches, D00 picture
 * packets): the declared length, not a search for `*`, says where a frame ends, and the checksum
 * says whether it arrived whole. A frame whose envelope does not hold (no `*`, two hex digits and
 * CR LF where its length ends) is garbage up to the next `$$`; one whose checksum fails is
 * dropped whole and counted.
 *
 * One leniency, for text frames only: some firmware miscounts its length (a captured AAA report
 * declares 141 bytes and is 139, its checksum right). A frame whose declared end does not hold
 * the envelope, or lies beyond what has arrived, is ended at the first `*hh CR LF` when every byte
 * before it is printable text and the checksum matches; `lengthMismatch` says so. A binary frame
 * (CCE, CCC, D00) never ends that way: its bytes are not all text.
 */
import type { FrameReader, ReadResult, StreamError } from '../framing'

/** The largest frame kept: batches of 10+ CCE records and picture packets run past 1 KiB. */
export const MEITRACK_MAX_FRAME_BYTES = 4096

const DOLLAR = 0x24
const COMMA = 0x2c
const STAR = 0x2a
const CR = 0x0d
const LF = 0x0a
/** `$$`, the flag and up to 4 length digits, then the comma */
const MAX_HEADER_BYTES = 8

/** One whole frame: what its envelope says, and its bytes. */
export interface MeitrackFrame {
  /** the flag byte, as a character */
  flag: string
  /** the whole frame, `$$` through CR LF (a copy, not a view of the connection's buffer) */
  bytes: Uint8Array
  /** where the data after the first comma begins (the IMEI) */
  bodyStart: number
  /** a text frame ended by its checksum where its declared length disagreed */
  lengthMismatch?: boolean
}

/** Two uppercase hex digits of the sum of `bytes[from, to)` mod 256. */
export function meitrackChecksum(bytes: Uint8Array, from: number, to: number): string {
  let sum = 0
  for (let i = from; i < to; i++) sum = (sum + bytes[i]) & 0xff
  return sum.toString(16).toUpperCase().padStart(2, '0')
}

function hexValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x37
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x57
  return -1
}

type Envelope =
  | { kind: 'frame'; end: number; bodyStart: number; checksumOk: boolean; lengthMismatch?: boolean }
  | { kind: 'wait' }
  | { kind: 'skip' }

/** What starts at `at` (a `$`): a whole envelope, not yet one, or none. */
function readEnvelope(buffer: Uint8Array, at: number, maxFrameBytes: number): Envelope {
  const available = buffer.length - at
  if (available < 2) return { kind: 'wait' }
  if (buffer[at + 1] !== DOLLAR) return { kind: 'skip' }
  if (available < 3) return { kind: 'wait' }
  const flag = buffer[at + 2]
  if (flag < 0x21 || flag > 0x7e) return { kind: 'skip' }
  let length = 0
  let digits = 0
  let position = at + 3
  for (; position < buffer.length; position++) {
    const byte = buffer[position]
    if (byte === COMMA) break
    if (byte < 0x30 || byte > 0x39 || position - at >= MAX_HEADER_BYTES) return { kind: 'skip' }
    length = length * 10 + (byte - 0x30)
    digits++
  }
  if (position >= buffer.length) return { kind: 'wait' }
  // the shortest frame: `,` an IMEI-like id, `,` a type, `*`, two digits, CR LF
  if (digits === 0 || length < 10) return { kind: 'skip' }
  const bodyStart = position + 1 - at
  const end = position + length
  const textEnd = () => {
    const found = checkedTextEnd(buffer, at, Math.min(buffer.length, at + maxFrameBytes))
    return found < 0 ? null : ({ kind: 'frame', end: found, bodyStart, checksumOk: true, lengthMismatch: true } as const)
  }
  if (end - at > maxFrameBytes) return textEnd() ?? { kind: 'skip' }
  if (end > buffer.length) return textEnd() ?? { kind: 'wait' }
  if (buffer[end - 5] !== STAR || buffer[end - 2] !== CR || buffer[end - 1] !== LF) return textEnd() ?? { kind: 'skip' }
  const high = hexValue(buffer[end - 4])
  const low = hexValue(buffer[end - 3])
  if (high < 0 || low < 0) return textEnd() ?? { kind: 'skip' }
  let sum = 0
  for (let i = at; i <= end - 5; i++) sum = (sum + buffer[i]) & 0xff
  return { kind: 'frame', end, bodyStart, checksumOk: sum === high * 16 + low }
}

/**
 * The end of a text frame starting at `at` found by its `*hh CR LF` and a matching checksum, or -1:
 * every byte before the `*` printable ASCII (never `$`, which starts a frame), before `limit`.
 */
function checkedTextEnd(buffer: Uint8Array, at: number, limit: number): number {
  let sum = (buffer[at] + buffer[at + 1]) & 0xff
  for (let i = at + 2; i + 4 < limit; i++) {
    const byte = buffer[i]
    sum = (sum + byte) & 0xff
    if (byte === STAR) {
      const high = hexValue(buffer[i + 1])
      const low = hexValue(buffer[i + 2])
      if (high >= 0 && low >= 0 && buffer[i + 3] === CR && buffer[i + 4] === LF && sum === high * 16 + low) return i + 5
      return -1
    }
    if (byte < 0x20 || byte > 0x7e || byte === DOLLAR) return -1
  }
  return -1
}

/** The framing rules of one connection for the shared framing machine (../framing.ts). */
export function meitrackFrameReader(maxFrameBytes = MEITRACK_MAX_FRAME_BYTES): FrameReader<MeitrackFrame> {
  return {
    unit: 'Meitrack frame',
    maxFrameBytes,
    nextStart(buffer, from) {
      const at = buffer.indexOf(DOLLAR, from)
      return at < 0 ? buffer.length : at
    },
    read(buffer, at): ReadResult<MeitrackFrame, StreamError> {
      const envelope = readEnvelope(buffer, at, maxFrameBytes)
      if (envelope.kind !== 'frame') return envelope
      if (!envelope.checksumOk) {
        return { kind: 'bad', end: envelope.end, error: { code: 'checksum', fatal: false, message: 'a Meitrack frame whose checksum does not match its bytes' } }
      }
      const bytes = buffer.slice(at, envelope.end)
      const frame: MeitrackFrame = { flag: String.fromCharCode(bytes[2]), bytes, bodyStart: envelope.bodyStart }
      if (envelope.lengthMismatch) frame.lengthMismatch = true
      return { kind: 'frame', frame, end: envelope.end }
    },
    checkedAt(buffer, at) {
      const envelope = readEnvelope(buffer, at, maxFrameBytes)
      return envelope.kind === 'frame' && envelope.checksumOk
    },
  }
}
