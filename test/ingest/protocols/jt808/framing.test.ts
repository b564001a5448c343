/**
 * JT808 framing on the stream: escapes undone (Traccar's Jt808FrameDecoderTest cases), frames split
 * across chunks or sent together, garbage before and between them skipped and counted, a frame
 * with a wrong check code dropped without losing the next one, the buffer capped.
 */
import { describe, expect, test } from 'bun:test'
import { createFrameMachine } from '../../../../src/ingest/protocols/framing'
import { JT808_MAX_FRAME_BYTES, jt808FrameReader, unescapeJt808 } from '../../../../src/ingest/protocols/jt808/framing'
import { byName, FRAMING_CASES } from '../../../fixtures/jt808/frames'
import { concat, hex, toHex } from '../helpers'
import { onTheWire } from './support'

const machine = () => createFrameMachine(jt808FrameReader())
const framesIn = (items: ReturnType<ReturnType<typeof machine>['push']>) => items.flatMap((item) => (item.kind === 'frame' ? [item.frame] : []))
const errorsIn = (items: ReturnType<ReturnType<typeof machine>['push']>) => items.flatMap((item) => (item.kind === 'error' ? [item.error.code] : []))

/** t093 (a heartbeat) and t091 (a location), as a device sends them */
const HEARTBEAT = onTheWire(hex(byName('t093').hex))
const LOCATION = onTheWire(hex(byName('t091').hex))

describe('JT808 framing', () => {
  test("7D 02 is 7E and 7D 01 is 7D (Traccar's frame decoder cases)", () => {
    for (const { wire, frame } of FRAMING_CASES) {
      const bytes = hex(wire)
      const start = bytes.indexOf(0x7e)
      expect(toHex(Uint8Array.from([0x7e, ...unescapeJt808(bytes, start + 1, bytes.length - 1)!, 0x7e]))).toBe(toHex(hex(frame)))
    }
    // an escape that is neither: not a frame
    expect(unescapeJt808(hex('307d0308'), 0, 4)).toBeNull()
  })

  test('a frame whose body holds 7E and 7D (escaped on the wire) reads back whole', () => {
    // t106: its phone number and body hold 7E bytes
    const capture = byName('t106')
    const wire = onTheWire(hex(capture.hex))
    expect(wire.length).toBeGreaterThan(hex(capture.hex).length)
    const [frame] = framesIn(machine().push(wire))
    expect(frame).toMatchObject({ messageId: 0x0200, terminalId: '4eb6fb4ad628' })
  })

  test('frames together in one chunk, and one split at every byte', () => {
    expect(framesIn(machine().push(concat(HEARTBEAT, LOCATION, HEARTBEAT))).map((frame) => frame.messageId)).toEqual([0x0002, 0x0200, 0x0002])
    for (let cut = 1; cut < LOCATION.length; cut++) {
      const parser = machine()
      expect(framesIn(parser.push(LOCATION.subarray(0, cut)))).toEqual([])
      const [frame] = framesIn(parser.push(LOCATION.subarray(cut)))
      expect(frame.messageId).toBe(0x0200)
      expect(parser.bufferedBytes).toBe(0)
    }
  })

  test('garbage before a frame (the 24 24 of Traccar\'s case, a half frame) is skipped and counted', () => {
    const parser = machine()
    const items = parser.push(concat(hex('2424'), LOCATION.subarray(20), HEARTBEAT))
    expect(framesIn(items).map((frame) => frame.messageId)).toEqual([0x0002])
    expect(parser.skippedBytes).toBeGreaterThan(0)
  })

  test('a wrong check code drops the frame, reported, and the next frame is read', () => {
    const broken = LOCATION.slice()
    broken[20] ^= 0x01
    const items = machine().push(concat(broken, HEARTBEAT))
    expect(errorsIn(items)).toContain('bad_check')
    expect(framesIn(items).map((frame) => frame.messageId)).toEqual([0x0002])
  })

  test('7E 7E between frames (a flag shared or doubled) loses nothing', () => {
    const items = machine().push(concat(HEARTBEAT, hex('7e'), LOCATION))
    expect(framesIn(items).map((frame) => frame.messageId)).toEqual([0x0002, 0x0200])
  })

  test('a flag never closed is not kept past the largest frame', () => {
    const parser = machine()
    parser.push(hex('7e'))
    for (let i = 0; i < 10; i++) parser.push(new Uint8Array(1000).fill(0x31))
    expect(parser.bufferedBytes).toBeLessThan(JT808_MAX_FRAME_BYTES)
    expect(framesIn(parser.push(HEARTBEAT)).map((frame) => frame.messageId)).toEqual([0x0002])
  })

  test('a subpackaged frame: its packet count and index, the body read after them', () => {
    // message 0x0801 (multimedia upload), packet 1 of 3, body 01 02
    const plain = hex('0801 2002 013511221122 0009 0003 0001 0102')
    const check = plain.reduce((x, byte) => x ^ byte, 0)
    const [frame] = framesIn(machine().push(concat(hex('7e'), plain, Uint8Array.of(check), hex('7e'))))
    expect(frame).toMatchObject({ messageId: 0x0801, packet: { count: 3, index: 1 }, serial: 9 })
    expect(Array.from(frame.body)).toEqual([1, 2])
  })
})
