/**
 * GPS103 framing: text messages, each ended by `;` (the documents' form), a line end (CR LF or
 * LF, from firmware that drops the `;`) or `*` (the `imei:…,---,*` variant). No checksum, no
 * length: a frame is the text up to its end mark, without it and without leading spaces or line
 * ends. A connection never keeps more than GPS103_MAX_FRAME_BYTES: a run that reaches it without
 * an end mark is garbage, skipped to the next end mark.
 */
import type { FrameReader } from '../framing'

/** the longest frame: the photo packets (`vr`, hex) reach about 1.1 KiB; positions are under 200 bytes */
export const GPS103_MAX_FRAME_BYTES = 2048

const SEMICOLON = 0x3b
const LF = 0x0a
const CR = 0x0d
const STAR = 0x2a
const SPACE = 0x20

function isEnd(byte: number): boolean {
  return byte === SEMICOLON || byte === LF || byte === STAR
}

/** The frame's text: latin1 (the bytes are ASCII in every known frame), CR and leading blanks dropped. */
function textOf(buffer: Uint8Array, start: number, end: number): string {
  let from = start
  while (from < end && (buffer[from] === SPACE || buffer[from] === CR || buffer[from] === LF)) from++
  let to = end
  while (to > from && buffer[to - 1] === CR) to--
  let text = ''
  for (let at = from; at < to; at += 4096) text += String.fromCharCode(...buffer.subarray(at, Math.min(to, at + 4096)))
  return text
}

/** The GPS103 rules for the shared framing machine (../framing.ts): frames are strings, possibly empty (two end marks in a row). */
export function gps103FrameReader(): FrameReader<string> {
  return {
    unit: 'GPS103 frame',
    maxFrameBytes: GPS103_MAX_FRAME_BYTES,
    nextStart(buffer, from, boundary) {
      if (boundary) return from
      // after garbage a frame starts only past the next end mark
      for (let at = from; at < buffer.length; at++) if (isEnd(buffer[at])) return at + 1
      return buffer.length
    },
    read(buffer, at) {
      const limit = Math.min(buffer.length, at + GPS103_MAX_FRAME_BYTES)
      for (let end = at; end < limit; end++) {
        if (!isEnd(buffer[end])) continue
        const text = textOf(buffer, at, end)
        // end marks in a row (`;` then CR LF) are separators, not frames
        if (text.length === 0) return { kind: 'pass', end: end + 1 }
        return { kind: 'frame', frame: text, end: end + 1 }
      }
      return buffer.length - at >= GPS103_MAX_FRAME_BYTES ? { kind: 'skip' } : { kind: 'wait' }
    },
  }
}
