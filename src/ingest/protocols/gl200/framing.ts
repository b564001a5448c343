/**
 * @Track text framing: a frame is `+RESP:…$`, `+BUFF:…$` or `+ACK:…$`, printable ASCII ending at
 * the first `$` (some firmware ends a frame with NUL instead, and some adds CR LF after it: both
 * are separators). The protocol has no length field and no checksum in text mode (the last field,
 * the count number, is a sequence, not a check), so a frame is recognised by its head and its
 * characters. Anything else is garbage, skipped and counted: the binary variant's frames (`+RSP`,
 * `+EVT`, `+LGN`, `+ACK` without a colon, … with binary bytes) among them, which this server does
 * not decode. A connection never keeps more than GL200_MAX_FRAME_BYTES.
 *
 * `gl200FrameReader` gives these rules to the shared framing machine (../framing.ts);
 * `splitGl200Frames` is the same as one pure call, for tests.
 */
import { scanFrames, type FrameReader } from '../framing'
import { GL200_MAX_FRAME_CHARS } from './decoder'

/** Real frames are under 1 KiB (a GTCAN with every CAN field is the longest); a frame past this is garbage. */
export const GL200_MAX_FRAME_BYTES = GL200_MAX_FRAME_CHARS

const PLUS = 0x2b
const DOLLAR = 0x24
const CR = 0x0d
const LF = 0x0a
const NUL = 0x00
const HEADS = ['+RESP:', '+BUFF:', '+ACK:'].map((head) => Uint8Array.from(head, (c) => c.charCodeAt(0)))

/** The length of the head at `at`, 0 when none starts there, -1 when too few bytes have arrived to tell. */
function headAt(buffer: Uint8Array, at: number): number {
  let undecided = false
  for (const head of HEADS) {
    let i = 0
    while (i < head.length && at + i < buffer.length && buffer[at + i] === head[i]) i++
    if (i === head.length) return head.length
    if (at + i === buffer.length) undecided = true
  }
  return undecided ? -1 : 0
}

export function gl200FrameReader(): FrameReader<string> {
  return {
    unit: '@Track frame',
    maxFrameBytes: GL200_MAX_FRAME_BYTES,
    nextStart(buffer, from) {
      for (let at = from; at < buffer.length; at++) {
        const byte = buffer[at]
        if (byte === PLUS || byte === CR || byte === LF || byte === NUL) return at
      }
      return buffer.length
    },
    read(buffer, at) {
      const first = buffer[at]
      if (first === CR || first === LF || first === NUL) return { kind: 'pass', end: at + 1 }
      const head = headAt(buffer, at)
      if (head < 0) return { kind: 'wait' }
      if (head === 0) return { kind: 'skip' }
      const limit = Math.min(buffer.length, at + GL200_MAX_FRAME_BYTES)
      for (let i = at + head; i < limit; i++) {
        const byte = buffer[i]
        if (byte === DOLLAR) return { kind: 'frame', frame: asciiOf(buffer, at, i + 1), end: i + 1 }
        if (byte === NUL) return { kind: 'frame', frame: asciiOf(buffer, at, i), end: i }
        if (byte < 0x20 || byte > 0x7e) return { kind: 'skip' }
        // a head inside: this one never ended (a `+` may appear in a frame, a head may not)
        if (byte === PLUS && headAt(buffer, i) > 0) return { kind: 'skip' }
      }
      // no end within the cap: not a frame (or a hostile one); its `+` is dropped as garbage
      return buffer.length - at >= GL200_MAX_FRAME_BYTES ? { kind: 'skip' } : { kind: 'wait' }
    },
  }
}

export function splitGl200Frames(buffer: Uint8Array): { frames: string[]; consumedBytes: number; skippedBytes: number } {
  const { items, consumed, skipped } = scanFrames(gl200FrameReader(), buffer)
  const frames: string[] = []
  for (const item of items) if (item.kind === 'frame') frames.push(item.frame)
  return { frames, consumedBytes: consumed, skippedBytes: skipped }
}

/** The frame as text (its bytes were checked to be printable ASCII). */
function asciiOf(buffer: Uint8Array, start: number, end: number): string {
  let text = ''
  for (let i = start; i < end; i += 1024) text += String.fromCharCode(...buffer.subarray(i, Math.min(end, i + 1024)))
  return text
}
