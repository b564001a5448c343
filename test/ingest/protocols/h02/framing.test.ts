import { describe, expect, test } from 'bun:test'
import { decodeH02Frame } from '../../../../src/ingest/protocols/h02/decoder'
import { H02_DEFAULT_MAX_FRAME_BYTES, splitH02Frames, type H02Frame } from '../../../../src/ingest/protocols/h02/framing'
import { seededRandom } from '../../../support/random'
import * as F from './frames'

const label = (frame: H02Frame) => (frame.kind === 'text' ? frame.text : Buffer.from(frame.bytes).toString('hex'))

/** A connection: what was not consumed is kept and comes first in the next call, with the learned binary length. */
function feed(chunks: Uint8Array[], maxFrameBytes?: number) {
  let pending = new Uint8Array(0)
  let binaryFrameBytes: number | null = null
  const frames: string[] = []
  let skipped = 0
  let maxPending = 0
  for (const chunk of chunks) {
    const buffer = F.concat(pending, chunk)
    const result = splitH02Frames(buffer, { binaryFrameBytes, maxFrameBytes })
    frames.push(...result.frames.map(label))
    skipped += result.skippedBytes
    binaryFrameBytes = result.binaryFrameBytes
    pending = buffer.slice(result.consumedBytes)
    maxPending = Math.max(maxPending, pending.length)
  }
  return { frames, skipped, pending, maxPending }
}

function chunksAt(bytes: Uint8Array, ...cuts: number[]): Uint8Array[] {
  const bounds = [0, ...cuts, bytes.length]
  return bounds.slice(1).map((end, i) => bytes.subarray(bounds[i], end))
}

const textOf = (frame: string) => frame.trimEnd()
const binaryOf = (frame: string) => frame.toLowerCase()

describe('splitH02Frames', () => {
  test('text and binary frames back to back, CR LF between them not counted as garbage', () => {
    const stream = F.concat(
      F.ascii(F.V1_TH_CRLF),
      F.hex(F.BINARY_32_TWIN),
      F.ascii(F.NBR_SIX_CELLS),
      F.hex(F.BINARY_45_BOGOTA),
      F.ascii(F.LINK_TRACCAR),
      F.hex(F.BINARY_42_IMEI),
      F.ascii(F.V4_S20_DONE),
    )
    const result = splitH02Frames(stream)
    expect(result.frames.map(label)).toEqual([
      textOf(F.V1_TH_CRLF),
      binaryOf(F.BINARY_32_TWIN),
      F.NBR_SIX_CELLS,
      binaryOf(F.BINARY_45_BOGOTA),
      F.LINK_TRACCAR,
      binaryOf(F.BINARY_42_IMEI),
      F.V4_S20_DONE,
    ])
    expect(result.consumedBytes).toBe(stream.length)
    expect(result.skippedBytes).toBe(0)
    expect(result.binaryFrameBytes).toBe(42)
  })

  test('binary lengths: 32 and 45 before the next marker or at the end of the data, longer ones to the end of the data', () => {
    for (const frame of [F.BINARY_32_TWIN, F.BINARY_45_SHENZHEN, F.BINARY_42_IMEI, F.BINARY_48_CASABLANCA]) {
      const alone = splitH02Frames(F.hex(frame))
      expect(alone.frames.map(label)).toEqual([binaryOf(frame)])
      const followed = splitH02Frames(F.concat(F.hex(frame), F.ascii(F.XT_HEARTBEAT)))
      expect(followed.frames.map(label)).toEqual([binaryOf(frame), F.XT_HEARTBEAT])
    }
  })

  test('one device on one connection: cut anywhere, the same frames come out', () => {
    const streams = [
      // text and 32-byte frames of device 2705171109
      F.concat(F.ascii(F.V1_TWIN), F.hex(F.BINARY_32_TWIN), F.ascii(`${F.V1_TWIN}\r\n`), F.hex(F.BINARY_32_TWIN_NEXT)),
      // 42-byte frames
      F.concat(F.hex(F.BINARY_42_IMEI), F.ascii(F.XT_HEARTBEAT), F.hex(F.BINARY_42_IMEI)),
    ]
    for (const stream of streams) {
      const whole = feed([stream]).frames
      expect(whole.length).toBeGreaterThanOrEqual(3)
      for (let cut = 1; cut < stream.length; cut++) {
        const split = feed(chunksAt(stream, cut))
        expect(split.frames).toEqual(whole)
        expect(split.skipped).toBe(0)
      }
      const random = seededRandom(stream.length)
      const cuts: number[] = []
      for (let at = Math.ceil(random() * 5); at < stream.length; at += Math.ceil(random() * 5)) cuts.push(at)
      expect(feed(chunksAt(stream, ...cuts)).frames).toEqual(whole)
    }
  })

  test('45-byte frames: the learned length resolves a cut at byte 32; without it the position survives and the tail is garbage', () => {
    const frame = F.hex(F.BINARY_45_BOGOTA)
    const stream = F.concat(frame, frame)
    const whole = feed([stream]).frames
    expect(whole).toEqual([binaryOf(F.BINARY_45_BOGOTA), binaryOf(F.BINARY_45_BOGOTA)])
    // every cut in the second frame, the length learned from the first
    for (let cut = 46; cut < stream.length; cut++) expect(feed(chunksAt(stream, cut)).frames).toEqual(whole)
    // every cut in the first frame but the one ambiguous byte
    for (let cut = 1; cut < 45; cut++) if (cut !== 32) expect(feed(chunksAt(stream, cut)).frames).toEqual(whole)

    const ambiguous = feed(chunksAt(frame, 32))
    expect(ambiguous.frames).toEqual([F.BINARY_45_BOGOTA.slice(0, 64)])
    expect(ambiguous.skipped).toBe(13)
    const short = decodeH02Frame({ kind: 'binary', bytes: frame.subarray(0, 32) })
    const full = decodeH02Frame({ kind: 'binary', bytes: frame })
    if (short.kind !== 'report' || full.kind !== 'report') throw new Error('expected reports')
    expect(short.report.fixes).toEqual([{ ...full.report.fixes[0], attributes: short.report.fixes[0].attributes }])
  })

  test('garbage before, between and inside frames is skipped and counted; the frames after it are found', () => {
    const stream = F.concat(
      F.ascii('noise'),
      Uint8Array.of(0x00, 0xff), // 7 bytes so far
      F.ascii(F.V1_COSTA_RICA),
      Uint8Array.of(0x24, 0x12, 0x9a), // a `$` whose second byte is not BCD: 3 bytes
      F.ascii('*HQ,12'), // a text frame cut short by the next one: 6 bytes
      F.ascii(F.LINK_TRACCAR),
      F.ascii('#'), // 1 byte
      F.hex(F.BINARY_32_TWIN),
    )
    const result = splitH02Frames(stream)
    expect(result.frames.map(label)).toEqual([F.V1_COSTA_RICA, F.LINK_TRACCAR, binaryOf(F.BINARY_32_TWIN)])
    expect(result.skippedBytes).toBe(7 + 3 + 6 + 1)
    expect(result.consumedBytes).toBe(stream.length)
  })

  test('a text frame with a byte that is not printable is garbage, up to the next marker', () => {
    const broken = F.ascii('*HQ,4210051415,V1,16\u000145')
    const result = splitH02Frames(F.concat(broken, F.ascii(F.LINK_TRACCAR)))
    expect(result.frames.map(label)).toEqual([F.LINK_TRACCAR])
    expect(result.skippedBytes).toBe(broken.length)
  })

  test('an incomplete frame is kept for the next call, not counted', () => {
    const half = F.ascii(F.V1_COSTA_RICA.slice(0, 40))
    expect(splitH02Frames(half)).toEqual({ frames: [], consumedBytes: 0, skippedBytes: 0, binaryFrameBytes: null })
    const halfBinary = F.hex(F.BINARY_32_TWIN).subarray(0, 20)
    expect(splitH02Frames(F.concat(F.ascii(F.XT_HEARTBEAT), halfBinary))).toMatchObject({ consumedBytes: F.XT_HEARTBEAT.length, skippedBytes: 0 })
  })

  test('size cap: a text frame that never ends is dropped as garbage and the buffer stays under the cap', () => {
    const endless = F.ascii(`*HQ,${'7'.repeat(5000)}`)
    const chunks = chunksAt(F.concat(endless, F.ascii(F.LINK_TRACCAR)), ...Array.from({ length: 50 }, (_, i) => (i + 1) * 101))
    const result = feed(chunks)
    expect(result.frames).toEqual([F.LINK_TRACCAR])
    expect(result.skipped).toBe(endless.length)
    expect(result.maxPending).toBeLessThan(H02_DEFAULT_MAX_FRAME_BYTES)
    expect(result.pending.length).toBe(0)

    const small = feed([F.ascii(F.NBR_SIX_CELLS), F.ascii(F.XT_HEARTBEAT)], 64)
    expect(small.frames).toEqual([F.XT_HEARTBEAT])
    expect(small.skipped).toBe(F.NBR_SIX_CELLS.length)
  })

  test('a run of binary markers with valid-looking headers cannot hold more than the cap', () => {
    // `$` and BCD digits forever: every candidate is a header, none ever ends
    const digits = new Uint8Array(4000).fill(0x11)
    for (let i = 0; i < digits.length; i += 97) digits[i] = 0x24
    const result = feed(chunksAt(digits, ...Array.from({ length: 39 }, (_, i) => (i + 1) * 100)))
    expect(result.maxPending).toBeLessThan(H02_DEFAULT_MAX_FRAME_BYTES)
  })
})
