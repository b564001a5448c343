/**
 * Seeded fuzzing of the JT808 framing and decoder: random bytes and mutated real frames give clean
 * refusals (garbage counted, bad check codes), never a fix or an event from garbage, never a
 * throw; frames whose check code is made right but whose body is random never throw and never give
 * an impossible fix; the bytes a connection keeps stay under the cap.
 */
import { describe, expect, test } from 'bun:test'
import { createFrameMachine } from '../../../../src/ingest/protocols/framing'
import { jt808 } from '../../../../src/ingest/protocols/jt808/descriptor'
import { decodeJt808Frame, type Jt808Message } from '../../../../src/ingest/protocols/jt808/decoder'
import { JT808_MAX_FRAME_BYTES, jt808FrameReader, type Jt808Frame } from '../../../../src/ingest/protocols/jt808/framing'
import { seededRandom } from '../../../support/random'
import { byName, JT808_FRAMES } from '../../../fixtures/jt808/frames'
import { concat, connectionDecoder, hex } from '../helpers'
import { framesOf, onTheWire } from './support'

const NOW = 1_790_000_000
/** the captured frames our framing reads (a right check code) */
const SEEDS = JT808_FRAMES.filter((capture) => framesOf(capture).length > 0).map((capture) => hex(capture.hex))
/** a real location's basic block (t091's body, after its 1 + 12 bytes of flag and header) */
const BASIC_BLOCK = hex(byName('t091').hex).subarray(13, 41)

function expectSane(message: Jt808Message): void {
  if (message.kind === 'login') {
    expect(message.accept.length).toBeGreaterThan(0)
    return
  }
  for (const fix of message.report.fixes) {
    expect(Number.isFinite(fix.timestamp)).toBe(true)
    expect(Math.abs(fix.latitude)).toBeLessThanOrEqual(90)
    expect(Math.abs(fix.longitude)).toBeLessThanOrEqual(180)
    expect(fix.latitude !== 0 || fix.longitude !== 0).toBe(true)
    expect(fix.speed === null || (Number.isFinite(fix.speed) && fix.speed >= 0)).toBe(true)
    expect(fix.course === null || (fix.course >= 0 && fix.course <= 360)).toBe(true)
  }
  for (const event of message.report.events) expect(Number.isFinite(event.timestamp)).toBe(true)
}

/** `plain` (header and body, unescaped) as a frame with its check code right. */
function withCheck(plain: Uint8Array): Uint8Array {
  const check = plain.reduce((x, byte) => x ^ byte, 0)
  return onTheWire(concat(Uint8Array.of(0x7e), plain, Uint8Array.of(check, 0x7e)))
}

describe('JT808 fuzz', () => {
  test('random bytes, cut at random, through framing and decoder: no fix, no event, no throw, bounded buffer', () => {
    const random = seededRandom(0x808)
    let frames = 0
    for (let run = 0; run < 150; run++) {
      const parser = createFrameMachine(jt808FrameReader())
      const decode = connectionDecoder(jt808)
      for (let chunk = 0; chunk < 20; chunk++) {
        const bytes = new Uint8Array(Math.floor(random() * 400))
        // flags and escapes are common, so the framing paths are exercised
        for (let i = 0; i < bytes.length; i++) bytes[i] = random() < 0.1 ? (random() < 0.5 ? 0x7e : 0x7d) : Math.floor(random() * 256)
        for (const item of parser.push(bytes)) {
          if (item.kind !== 'frame') continue
          frames++
          const step = decode(item.frame, { now: NOW, uniqueId: null })
          if (step.kind === 'report') {
            expect(step.report.fixes).toEqual([])
            expect(step.report.events).toEqual([])
          }
        }
        expect(parser.bufferedBytes).toBeLessThan(JT808_MAX_FRAME_BYTES)
      }
    }
    // about one random candidate in 256 passes the check code: the decoder was reached, and refused it
    expect(frames).toBeGreaterThan(0)
  })

  test('a real frame with one byte changed fails its check code: no fix from it', () => {
    const random = seededRandom(0x809)
    for (let run = 0; run < 3000; run++) {
      const original = SEEDS[run % SEEDS.length]
      const bytes = original.slice()
      const at = 1 + Math.floor(random() * (bytes.length - 2))
      bytes[at] ^= 1 + Math.floor(random() * 255)
      if (bytes[at] === 0x7e) continue // a new flag splits the frame: covered by the next test
      const frames = createFrameMachine(jt808FrameReader())
        .push(onTheWire(bytes))
        .flatMap((item) => (item.kind === 'frame' ? [item.frame] : []))
      expect(frames).toEqual([])
    }
  })

  test('any mutation of real frames (bytes changed, dropped, doubled) never throws and never gives an impossible fix', () => {
    const random = seededRandom(0x80a)
    for (let run = 0; run < 2000; run++) {
      let bytes: Uint8Array = SEEDS[run % SEEDS.length].slice()
      for (let edits = 1 + Math.floor(random() * 4); edits > 0; edits--) {
        const at = Math.floor(random() * bytes.length)
        const what = random()
        if (what < 0.5) bytes[at] = Math.floor(random() * 256)
        else if (what < 0.75) bytes = concat(bytes.subarray(0, at), bytes.subarray(at + 1))
        else bytes = concat(bytes.subarray(0, at + 1), bytes.subarray(at))
      }
      for (const item of createFrameMachine(jt808FrameReader()).push(bytes)) {
        if (item.kind === 'frame') expectSane(decodeJt808Frame(item.frame, { now: NOW }))
      }
    }
  })

  test('frames with a right check code and a random body (every message id we read) never throw and never give an impossible fix', () => {
    const random = seededRandom(0x80b)
    const ids = [0x0001, 0x0002, 0x0100, 0x0102, 0x0200, 0x0201, 0x0704, 0x0900]
    for (let run = 0; run < 4000; run++) {
      const id = ids[run % ids.length]
      const body = new Uint8Array(Math.floor(random() * 120))
      for (let i = 0; i < body.length; i++) body[i] = Math.floor(random() * 256)
      // half the time a real location's first 28 bytes, so the items that follow are what is random
      if (run % 2 === 0 && body.length >= 33 && (id === 0x0200 || id === 0x0704)) body.set(BASIC_BLOCK, id === 0x0704 ? 5 : 0)
      const properties = body.length | (random() < 0.2 ? 1 << 14 : 0) | (random() < 0.1 ? 1 << 13 : 0)
      const header = properties & (1 << 14) ? hex('01 00000000013511221122') : hex('013511221122')
      const plain = concat(Uint8Array.of(id >> 8, id & 0xff, properties >> 8, properties & 0xff), header, Uint8Array.of(0, run & 0xff), body)
      const items = createFrameMachine(jt808FrameReader()).push(withCheck(plain))
      for (const item of items) if (item.kind === 'frame') expectSane(decodeJt808Frame(item.frame as Jt808Frame, { now: NOW, previousAlarmFlags: null }))
    }
  })
})
