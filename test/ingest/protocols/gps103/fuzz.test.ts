/**
 * Seeded fuzzing of the GPS103 framing and decoder: random bytes and mutated captures give clean
 * refusals, never a throw, never a fix from garbage or an impossible one, and the bytes a
 * connection keeps stay under the cap.
 */
import { describe, expect, test } from 'bun:test'
import { createFrameMachine } from '../../../../src/ingest/protocols/framing'
import { decodeGps103Frame, type Gps103Message } from '../../../../src/ingest/protocols/gps103/decoder'
import { GPS103_MAX_FRAME_BYTES, gps103FrameReader } from '../../../../src/ingest/protocols/gps103/framing'
import { seededRandom } from '../../../support/random'
import { CAPTURES } from '../../../fixtures/gps103/frames'

const POSITIONS = CAPTURES.filter((capture) => capture.position).map((capture) => capture.text.replace(/[;*]$/, ''))

function expectSane(message: Gps103Message): void {
  if (message.kind !== 'report') return
  for (const fix of message.report.fixes) {
    expect(Number.isFinite(fix.timestamp)).toBe(true)
    expect(Math.abs(fix.latitude)).toBeLessThanOrEqual(90)
    expect(Math.abs(fix.longitude)).toBeLessThanOrEqual(180)
    expect(fix.speed === null || Number.isFinite(fix.speed)).toBe(true)
  }
  for (const event of message.report.events) expect(Number.isFinite(event.timestamp)).toBe(true)
}

describe('GPS103 fuzz', () => {
  test('random bytes, cut at random, through framing and decoder: no fix, no throw, bounded buffer', () => {
    const random = seededRandom(0x103)
    const alphabet = new TextEncoder().encode('imei:,;*#0123456789.ANSEWFL \r\n')
    let frames = 0
    for (let run = 0; run < 100; run++) {
      const machine = createFrameMachine(gps103FrameReader())
      for (let chunk = 0; chunk < 20; chunk++) {
        const bytes = new Uint8Array(Math.floor(random() * 400))
        for (let i = 0; i < bytes.length; i++) bytes[i] = random() < 0.6 ? alphabet[Math.floor(random() * alphabet.length)] : Math.floor(random() * 256)
        for (const item of machine.push(bytes)) {
          if (item.kind !== 'frame') continue
          frames++
          const message = decodeGps103Frame(item.frame, { now: 1_700_000_000 })
          if (message.kind === 'report') expect(message.report.fixes).toEqual([])
        }
        expect(machine.bufferedBytes).toBeLessThan(GPS103_MAX_FRAME_BYTES)
      }
    }
    expect(frames).toBeGreaterThan(0)
  })

  test('random printable text after imei:<IMEI>, handed to the decoder: never a throw, never an impossible fix', () => {
    const random = seededRandom(0x104)
    for (let run = 0; run < 3000; run++) {
      let text = 'imei:359586015829802,'
      const length = Math.floor(random() * 150)
      for (let i = 0; i < length; i++) text += random() < 0.2 ? ',' : String.fromCharCode(32 + Math.floor(random() * 95))
      expectSane(decodeGps103Frame(text, { now: 0 }))
    }
  })

  test('a captured position with a coordinate broken (a letter in it) gives no fix', () => {
    const random = seededRandom(0x105)
    for (let run = 0; run < 2000; run++) {
      const fields = POSITIONS[run % POSITIONS.length].split(',')
      const coordinates = fields.flatMap((field, index) => (/^-?\d+\.\d+$/.test(field) && (/^\d{3,5}\.\d+$/.test(field) || /^-\d/.test(field)) ? [index] : []))
      const index = coordinates[Math.floor(random() * Math.min(2, coordinates.length))]
      const field = fields[index]
      const at = Math.floor(random() * field.length)
      fields[index] = field.slice(0, at) + 'GHJKQXZ'[Math.floor(random() * 7)] + field.slice(at + 1)
      const message = decodeGps103Frame(fields.join(','), { now: 0 })
      expect(message.kind === 'report' ? message.report.fixes : []).toEqual([])
    }
  })

  test('any mutation of the captures (bytes changed, dropped, doubled) never throws and never gives an impossible fix', () => {
    const random = seededRandom(0x106)
    const seeds = CAPTURES.map((capture) => new TextEncoder().encode(capture.text))
    for (let run = 0; run < 3000; run++) {
      let bytes = seeds[run % seeds.length].slice()
      for (let edits = 1 + Math.floor(random() * 4); edits > 0; edits--) {
        const at = Math.floor(random() * bytes.length)
        const what = random()
        const next = new Uint8Array(bytes.length + 1)
        if (what < 0.5) bytes[at] = Math.floor(random() * 256)
        else if (what < 0.75) bytes = Uint8Array.from([...bytes.subarray(0, at), ...bytes.subarray(at + 1)])
        else {
          next.set(bytes.subarray(0, at + 1))
          next.set(bytes.subarray(at), at + 1)
          bytes = next
        }
      }
      const machine = createFrameMachine(gps103FrameReader())
      for (const item of machine.push(bytes)) if (item.kind === 'frame') expectSane(decodeGps103Frame(item.frame, { now: 1_700_000_000 }))
      expectSane(decodeGps103Frame(new TextDecoder('latin1').decode(bytes), { now: 1_700_000_000 }))
    }
  })
})
