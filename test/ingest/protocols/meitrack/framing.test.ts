/**
 * Meitrack framing over the shared framing machine: frames end where their declared length says
 * and pass their checksum; chunks split anywhere give the same frames; garbage is skipped and
 * counted; a frame whose checksum fails is dropped whole; a connection keeps at most the cap.
 */
import { expect, test } from 'bun:test'
import { createFrameMachine, type StreamItem } from '../../../../src/ingest/protocols/framing'
import { MEITRACK_MAX_FRAME_BYTES, meitrackFrameReader, type MeitrackFrame } from '../../../../src/ingest/protocols/meitrack/framing'
import { seededRandom } from '../../../support/random'
import { concat } from '../helpers'
import { FRAMES, frameNamed, wire } from '../../../fixtures/meitrack/frames'

const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0))
const described = (items: StreamItem<MeitrackFrame>[]) => items.map((item) => (item.kind === 'frame' ? String.fromCharCode(...item.frame.bytes.subarray(0, 24)) : `error:${item.error.code}`))

/** every collected frame that arrives whole and passes its checksum */
const GOOD = FRAMES.filter((frame) => frame.checksum !== 'bad' && frame.name !== 'D00_20')

test('every good collected frame, back to back, comes out whole whatever the chunks', () => {
  const stream = concat(...GOOD.map(wire))
  const whole = createFrameMachine(meitrackFrameReader()).push(stream)
  expect(whole.every((item) => item.kind === 'frame')).toBe(true)
  expect(whole).toHaveLength(GOOD.length)
  const expected = described(whole)

  const random = seededRandom(0x3e17)
  for (let run = 0; run < 20; run++) {
    const machine = createFrameMachine(meitrackFrameReader())
    const items: StreamItem<MeitrackFrame>[] = []
    for (let at = 0; at < stream.length; ) {
      const size = run === 0 ? 1 : 1 + Math.floor(random() * 300)
      items.push(...machine.push(stream.subarray(at, at + size)))
      at += size
    }
    expect(described(items)).toEqual(expected)
    expect(machine.bufferedBytes).toBe(0)
  }
})

test('garbage between frames is skipped and counted; the frames around it are kept', () => {
  const machine = createFrameMachine(meitrackFrameReader())
  const items = machine.push(concat(ascii('hello$$ $x'), wire(frameNamed('AAA_29')), ascii('\r\n\x00\xff$'), wire(frameNamed('CCE_17'))))
  expect(items.map((item) => (item.kind === 'frame' ? item.frame.flag : item.error.code))).toEqual(['garbage', 'T', 'garbage', 'A'])
  expect(machine.skippedBytes).toBe(10 + 5)
})

test('a frame whose checksum fails is dropped whole and reported; the next frame is kept', () => {
  const broken = wire(frameNamed('AAA_29')).slice()
  broken[40] = broken[40] === 0x31 ? 0x32 : 0x31 // one digit of the latitude
  const items = createFrameMachine(meitrackFrameReader()).push(concat(broken, wire(frameNamed('AAA_30'))))
  expect(items.map((item) => (item.kind === 'frame' ? item.frame.flag : item.error.code))).toEqual(['checksum', 'K'])
})

test('a text frame whose declared length is off is ended by its checksum; a binary one is not', () => {
  // AAA_35 declares 141 bytes and is 139: read whole, and the frame after it too
  const items = createFrameMachine(meitrackFrameReader()).push(concat(wire(frameNamed('AAA_35')), wire(frameNamed('AAA_29'))))
  expect(items.map((item) => (item.kind === 'frame' ? `${item.frame.flag}${item.frame.lengthMismatch ? '!' : ''}` : item.error.code))).toEqual(['E!', 'T'])
  // a CCE batch missing one byte of its records is not a frame: garbage up to the next `$$`
  const cce = wire(frameNamed('CCE_17'))
  const short = concat(cce.subarray(0, 60), cce.subarray(61))
  const after = createFrameMachine(meitrackFrameReader()).push(concat(short, wire(frameNamed('AAA_29'))))
  expect(after.map((item) => (item.kind === 'frame' ? item.frame.flag : item.error.code))).toEqual(['garbage', 'T'])
})

test('a connection never keeps more than the cap, whatever length a header declares', () => {
  const machine = createFrameMachine(meitrackFrameReader())
  machine.push(ascii('$$A4090,353358017784062,AAA,'))
  for (let i = 0; i < 50; i++) {
    machine.push(new Uint8Array(200).fill(0x30))
    expect(machine.bufferedBytes).toBeLessThan(MEITRACK_MAX_FRAME_BYTES)
  }
  // a declared length past the cap is garbage at once
  const over = createFrameMachine(meitrackFrameReader())
  over.push(ascii('$$A9999,353358017784062,AAA,1'))
  expect(over.bufferedBytes).toBe(0)
  expect(over.push(wire(frameNamed('AAA_29'))).map((item) => (item.kind === 'frame' ? item.frame.flag : item.error.code))).toEqual(['T'])
})
