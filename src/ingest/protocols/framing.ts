/**
 * The one framing machine every stream protocol runs on: TCP chunks in, whole frames out. It owns
 * what all of them need and none should write again:
 *
 *   buffering         the bytes after the last whole frame are kept for the next chunk (a chunk
 *                     of whole frames is read in place, not copied);
 *   the size cap      never more than the reader's `maxFrameBytes` is kept: a candidate that
 *                     could only end beyond it is skipped as garbage (or the reader calls it fatal);
 *   resynchronising   garbage is skipped up to the next place a frame may start, and a candidate
 *                     that stalls or fails its check is passed over when a whole, checked frame
 *                     starts inside it (a false start in garbage must not hide the real frame);
 *   counting garbage  bytes that belong to no frame are reported, one item for each run.
 *
 * A protocol brings a FrameReader: where a frame may start, and what starts at a position (a
 * frame and where it ends, "wait for more", "not a frame here", a frame that failed its check,
 * or "this stream cannot be a device of mine"). Readers are pure but for the state a connection
 * accumulates (a handshake seen, a learned frame length): one reader per connection.
 */
import { appendBytes } from './bytes'

/** An error in the stream; `fatal` ones end it (the connection should be closed). */
export interface StreamError {
  code: string
  fatal: boolean
  message: string
}

/** Bytes outside any frame were dropped. */
export interface GarbageError extends StreamError {
  code: 'garbage'
  fatal: false
  skippedBytes: number
}

export type ReadResult<F, E extends StreamError> =
  /** a frame from the position to `end` */
  | { kind: 'frame'; frame: F; end: number }
  /** what has arrived may still become a frame: wait for more bytes */
  | { kind: 'wait' }
  /** no frame starts here: its first byte is garbage */
  | { kind: 'skip' }
  /** bytes up to `end` that are neither a frame nor garbage (separators between frames) */
  | { kind: 'pass'; end: number }
  /** a delimited frame that failed its check (a bad CRC): dropped up to `end`, reported */
  | { kind: 'bad'; end: number; error: E }
  /** the stream cannot go on (a frame declared past the cap, a handshake that is not one) */
  | { kind: 'fatal'; error: E }

export interface FrameReader<F, E extends StreamError = StreamError> {
  /** what a frame is called in messages: "GT06 frame", "AVL packet" */
  readonly unit: string
  /** the largest frame; also the most the machine ever keeps */
  readonly maxFrameBytes: number
  /**
   * The first position at or after `from` where a frame may start, or where the bytes still to
   * come may start one (at most `buffer.length`). Bytes before it are garbage. `boundary`: nothing
   * was skipped since the last frame (some bytes mean something only there).
   */
  nextStart(buffer: Uint8Array, from: number, boundary: boolean): number
  /** What starts at `at` (a position nextStart returned). */
  read(buffer: Uint8Array, at: number): ReadResult<F, E>
  /**
   * Whether a whole frame that passes its check starts at `at`: what resynchronising looks for
   * past a candidate that waits or fails. Without it the machine never looks ahead.
   */
  checkedAt?(buffer: Uint8Array, at: number): boolean
}

export type StreamItem<F, E extends StreamError = StreamError> = { kind: 'frame'; frame: F } | { kind: 'error'; error: E | GarbageError }

/** How many later candidates one resynchronisation examines: bounds the work a client can cause. */
const MAX_RESYNC_CANDIDATES = 16

export interface ScanResult<F, E extends StreamError> {
  items: StreamItem<F, E>[]
  /** bytes the caller may drop; the rest is an incomplete frame */
  consumed: number
  /** of those, bytes that belonged to no frame */
  skipped: number
  /** set when the stream cannot go on */
  fatal: E | null
}

/** A whole, checked frame starting after `from` and before `before`, or -1. */
function resynchronise<F, E extends StreamError>(reader: FrameReader<F, E>, buffer: Uint8Array, from: number, before: number): number {
  if (!reader.checkedAt) return -1
  let candidate = from
  for (let tries = 0; tries < MAX_RESYNC_CANDIDATES; tries++) {
    candidate = reader.nextStart(buffer, candidate, false)
    if (candidate >= before) return -1
    if (reader.checkedAt(buffer, candidate)) return candidate
    candidate++
  }
  return -1
}

/** One pass over `buffer`: the frames and errors in it, in order. Pure but for the reader's state. */
export function scanFrames<F, E extends StreamError>(reader: FrameReader<F, E>, buffer: Uint8Array): ScanResult<F, E> {
  const items: StreamItem<F, E>[] = []
  let position = 0
  let skipped = 0
  /** garbage since the last item */
  let run = 0
  const flushGarbage = () => {
    if (run === 0) return
    items.push({ kind: 'error', error: { code: 'garbage', fatal: false, skippedBytes: run, message: `discarded ${run} byte(s) outside any ${reader.unit}` } })
    run = 0
  }
  const garbage = (bytes: number) => {
    run += bytes
    skipped += bytes
    position += bytes
  }

  while (position < buffer.length) {
    const start = reader.nextStart(buffer, position, run === 0)
    garbage(start - position)
    if (position >= buffer.length) break
    const result = reader.read(buffer, position)
    switch (result.kind) {
      case 'frame':
        flushGarbage()
        items.push({ kind: 'frame', frame: result.frame })
        position = result.end
        continue
      case 'pass':
        position = result.end
        continue
      case 'skip':
        garbage(1)
        continue
      case 'wait': {
        // never keep more than a frame's worth: a candidate that cannot end within it is garbage
        if (buffer.length - position >= reader.maxFrameBytes) {
          garbage(1)
          continue
        }
        // waiting is right unless this start was garbage and a whole frame follows it
        const later = resynchronise(reader, buffer, position + 1, buffer.length)
        if (later < 0) break
        garbage(later - position)
        continue
      }
      case 'bad': {
        // a misframed candidate may hide a whole frame; prefer that over dropping everything
        const inner = resynchronise(reader, buffer, position + 1, result.end)
        if (inner >= 0) {
          garbage(inner - position)
          continue
        }
        flushGarbage()
        items.push({ kind: 'error', error: result.error })
        position = result.end
        continue
      }
      case 'fatal':
        flushGarbage()
        items.push({ kind: 'error', error: result.error })
        return { items, consumed: buffer.length, skipped, fatal: result.error }
    }
    break // only 'wait' without a later frame gets here
  }
  flushGarbage()
  return { items, consumed: position, skipped, fatal: null }
}

export interface FrameMachine<F, E extends StreamError = StreamError> {
  /** Feed the next chunk from the socket; returns every complete frame and error, in order. */
  push(chunk: Uint8Array): StreamItem<F, E>[]
  /** bytes held back waiting for the rest of a frame (never more than the cap) */
  readonly bufferedBytes: number
  /** bytes dropped as garbage so far */
  readonly skippedBytes: number
  /** true after a fatal error; every later push returns that error again */
  readonly failed: boolean
}

/** A connection's framing: the reader's rules over a buffer kept between chunks. */
export function createFrameMachine<F, E extends StreamError>(reader: FrameReader<F, E>): FrameMachine<F, E> {
  let pending: Uint8Array = new Uint8Array(0)
  let fatal: E | null = null
  let skippedBytes = 0
  return {
    push(chunk) {
      if (fatal) return [{ kind: 'error', error: fatal }]
      const buffer = appendBytes(pending, chunk)
      const result = scanFrames(reader, buffer)
      skippedBytes += result.skipped
      fatal = result.fatal
      // slice() copies: what is kept must not pin the (possibly large) chunk it came from
      pending = fatal || result.consumed >= buffer.length ? new Uint8Array(0) : buffer.slice(result.consumed)
      return result.items
    },
    get bufferedBytes() {
      return pending.length
    },
    get skippedBytes() {
      return skippedBytes
    },
    get failed() {
      return fatal !== null
    },
  }
}
