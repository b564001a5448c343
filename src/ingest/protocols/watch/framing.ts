/**
 * Watch framing: `[<maker>*<id>*<length>*<content>]`, some makers with a serial number before the
 * length (`[ZJ*<id>*<serial>*<length>*<content>]`). A frame runs from `[` to the `]` that closes
 * it, counting brackets: a Wi-Fi name may hold a bracketed text (`[LG_Wall-Mount A/C]`), and the
 * binary content of voice messages escapes its brackets (`}` 0x02, `}` 0x03), so a raw `]` at depth
 * zero always ends a frame. The length field is not trusted to frame (devices count differently);
 * the decoder reads it. A connection never keeps more than WATCH_MAX_FRAME_BYTES: a longer frame
 * (a voice message or a photo, not kept) is skipped as garbage.
 */
import type { FrameReader } from '../framing'

export const WATCH_MAX_FRAME_BYTES = 16 * 1024

const OPEN = 0x5b
const CLOSE = 0x5d

function asciiOf(buffer: Uint8Array, start: number, end: number): string {
  let text = ''
  for (let at = start; at < end; at += 4096) text += String.fromCharCode(...buffer.subarray(at, Math.min(end, at + 4096)))
  return text
}

/** The watch rules for the shared framing machine (../framing.ts): a frame is its text, brackets included. */
export function watchFrameReader(): FrameReader<string> {
  return {
    unit: 'watch frame',
    maxFrameBytes: WATCH_MAX_FRAME_BYTES,
    nextStart(buffer, from) {
      const at = buffer.indexOf(OPEN, from)
      return at < 0 ? buffer.length : at
    },
    read(buffer, at) {
      const limit = Math.min(buffer.length, at + WATCH_MAX_FRAME_BYTES)
      let depth = 0
      for (let end = at; end < limit; end++) {
        const byte = buffer[end]
        if (byte === OPEN) depth++
        else if (byte === CLOSE && --depth === 0) return { kind: 'frame', frame: asciiOf(buffer, at, end + 1), end: end + 1 }
      }
      return buffer.length - at >= WATCH_MAX_FRAME_BYTES ? { kind: 'skip' } : { kind: 'wait' }
    },
    checkedAt(buffer, at) {
      // a whole frame with a well-formed header: what resynchronising may prefer over a stalled `[`
      if (buffer[at] !== OPEN) return false
      const header = /^\[[0-9A-Za-z]{2}\*[0-9A-Za-z]{1,20}\*[0-9A-Fa-f]{4}\*/.test(asciiOf(buffer, at, Math.min(buffer.length, at + 40)))
      if (!header) return false
      const close = buffer.indexOf(CLOSE, at)
      return close > at && close - at < WATCH_MAX_FRAME_BYTES && buffer.subarray(at + 1, close).indexOf(OPEN) < 0
    },
  }
}
