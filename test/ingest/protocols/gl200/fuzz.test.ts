/**
 * Seeded fuzzing of the @Track framing and decoder: random bytes and mutated real frames give clean
 * refusals (garbage counted, `invalid` messages), never a fix from garbage, never a throw, and the
 * bytes a connection keeps stay under the cap.
 */
import { describe, expect, test } from 'bun:test'
import { decodeGl200Frame, type Gl200Message } from '../../../../src/ingest/protocols/gl200/decoder'
import { GL200_MAX_FRAME_BYTES, splitGl200Frames } from '../../../../src/ingest/protocols/gl200/framing'
import { seededRandom } from '../../../support/random'
import { TEXT_FRAMES } from '../../../fixtures/gl200/frames'

const NOW = 1_800_000_000
const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0) & 0xff)
const concat = (a: Uint8Array, b: Uint8Array) => {
  const out = new Uint8Array(a.length + b.length)
  out.set(a)
  out.set(b, a.length)
  return out
}
/** Characters no coordinate or time holds. */
const NEVER_IN_A_NUMBER = 'GHIJKLMNOPQRSTUVWXYZghijklmnopqrstuvwxyz!"%&\'()*/:;<=>?@[]^_`{|}~ '

const HEADS = ['+RESP:GTFRI,', '+BUFF:GTIGN,', '+ACK:GTHBD,', '+ACK:GTRTO,1A0800,860599000773978,'].map(ascii)

function expectSane(message: Gl200Message): void {
  if (message.kind === 'invalid') return
  for (const fix of message.report.fixes) {
    expect(Number.isFinite(fix.timestamp)).toBe(true)
    expect(fix.timestamp).toBeGreaterThanOrEqual(Date.UTC(2000, 0, 1) / 1000)
    expect(Math.abs(fix.latitude)).toBeLessThanOrEqual(90)
    expect(Math.abs(fix.longitude)).toBeLessThanOrEqual(180)
    expect(fix.speed === null || (Number.isFinite(fix.speed) && fix.speed >= 0)).toBe(true)
    expect(fix.course === null || (fix.course >= 0 && fix.course <= 360)).toBe(true)
  }
  for (const event of message.report.events) expect(Number.isFinite(event.timestamp)).toBe(true)
}

describe('@Track fuzz', () => {
  test('random bytes, cut at random, through framing and decoder: no fix, no event, no throw, bounded buffer', () => {
    const random = seededRandom(0x6c20)
    const alphabet = ascii('+RESP:BUFF:ACK:GTFRI,$.-0123456789\r\n\0')
    let frames = 0
    for (let run = 0; run < 120; run++) {
      let pending = new Uint8Array(0)
      for (let chunk = 0; chunk < 20; chunk++) {
        let bytes = new Uint8Array(Math.floor(random() * 400))
        // half the bytes from the protocol's own alphabet, so separators and ends are common
        for (let i = 0; i < bytes.length; i++) bytes[i] = random() < 0.5 ? alphabet[Math.floor(random() * alphabet.length)] : Math.floor(random() * 256)
        // and a head now and then, so frames start
        if (random() < 0.7) bytes = concat(HEADS[Math.floor(random() * HEADS.length)], bytes)
        const buffer = concat(pending, bytes)
        const result = splitGl200Frames(buffer)
        pending = buffer.slice(result.consumedBytes)
        expect(pending.length).toBeLessThan(GL200_MAX_FRAME_BYTES)
        frames += result.frames.length
        for (const frame of result.frames) {
          const message = decodeGl200Frame(frame, { now: NOW })
          if (message.kind === 'report') {
            expect(message.report.fixes).toEqual([])
            expect(message.report.events).toEqual([])
          }
        }
      }
    }
    // the framing paths were exercised, not just skipped over
    expect(frames).toBeGreaterThan(0)
  })

  test('random text after a real head handed straight to the decoder: never a fix, never a throw', () => {
    const random = seededRandom(0x6c21)
    for (let run = 0; run < 3000; run++) {
      const length = Math.floor(random() * 200)
      let text = ['+RESP:GTFRI,', '+BUFF:GTSOS,', '+ACK:GTHBD,', '+RESP:GTERI,060228,862894020180553,'][run % 4]
      for (let i = 0; i < length; i++) text += String.fromCharCode(32 + Math.floor(random() * 95))
      const message = decodeGl200Frame(`${text}$`, { now: NOW })
      if (message.kind === 'report') expect(message.report.fixes).toEqual([])
    }
  })

  test('a real frame with its longitude, latitude or time broken (a character no number holds) gives no fix there', () => {
    const random = seededRandom(0x6c22)
    const single = TEXT_FRAMES.filter((frame) => frame.fixes.length === 1)
    for (let run = 0; run < 2000; run++) {
      const frame = single[run % single.length]
      const fields = frame.text.split(',')
      const [latitude, , time] = frame.fixes[0]
      const timeAt = fields.indexOf(time)
      const index = [timeAt - 2, timeAt - 1, timeAt][Math.floor(random() * 3)]
      const field = fields[index]
      const at = Math.floor(random() * field.length)
      fields[index] = field.slice(0, at) + NEVER_IN_A_NUMBER[Math.floor(random() * NEVER_IN_A_NUMBER.length)] + field.slice(at + 1)
      const message = decodeGl200Frame(fields.join(','), { now: NOW })
      if (message.kind === 'report') expect(message.report.fixes.filter((fix) => fix.latitude === latitude)).toEqual([])
    }
  })

  test('truncated frames never throw and never give a fix past where they were cut', () => {
    for (const frame of TEXT_FRAMES) {
      for (let end = 0; end < frame.text.length - 1; end++) {
        const message = decodeGl200Frame(frame.text.slice(0, end), { now: NOW })
        expectSane(message)
        if (message.kind === 'report') expect(message.report.fixes.length).toBeLessThanOrEqual(frame.fixes.length)
      }
    }
  })

  test('any mutation of real frames (bytes changed, dropped, doubled) never throws and never gives an impossible fix', () => {
    const random = seededRandom(0x6c23)
    const seeds = TEXT_FRAMES.map((frame) => ascii(frame.text.endsWith('$') ? frame.text : `${frame.text}$`))
    for (let run = 0; run < 1500; run++) {
      let bytes: Uint8Array = seeds[run % seeds.length].slice()
      for (let edits = 1 + Math.floor(random() * 4); edits > 0; edits--) {
        const at = Math.floor(random() * bytes.length)
        const what = random()
        if (what < 0.5) bytes[at] = Math.floor(random() * 256)
        else if (what < 0.75) bytes = concat(bytes.subarray(0, at), bytes.subarray(at + 1))
        else bytes = concat(bytes.subarray(0, at + 1), bytes.subarray(at))
      }
      const result = splitGl200Frames(bytes)
      expect(result.consumedBytes).toBeLessThanOrEqual(bytes.length)
      for (const frame of result.frames) expectSane(decodeGl200Frame(frame, { now: NOW }))
      // and the same bytes handed to the decoder as they are
      expectSane(decodeGl200Frame(new TextDecoder('latin1').decode(bytes), { now: NOW }))
    }
  })
})
