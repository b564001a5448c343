/**
 * Seeded fuzzing of the watch framing and decoder: random bytes and mutated captures give clean
 * refusals, never a throw, never a fix from garbage or an impossible one, and the bytes a
 * connection keeps stay under the cap.
 */
import { describe, expect, test } from 'bun:test'
import { createFrameMachine, type FrameMachine } from '../../../../src/ingest/protocols/framing'
import { decodeWatchFrame, type WatchMessage } from '../../../../src/ingest/protocols/watch/decoder'
import { WATCH_MAX_FRAME_BYTES, watchFrameReader } from '../../../../src/ingest/protocols/watch/framing'
import { seededRandom } from '../../../support/random'
import { CAPTURES } from '../../../fixtures/watch/frames'

const latin1 = (value: string) => Uint8Array.from(value, (char) => char.charCodeAt(0) & 0xff)
const POSITIONS = CAPTURES.filter((capture) => capture.positions.length === 1 && capture.text.startsWith('[') && capture.text.indexOf('[', 1) < 0).map((capture) => capture.text)

function expectSane(message: WatchMessage): void {
  if (message.kind !== 'report') return
  for (const fix of message.report.fixes) {
    expect(Number.isFinite(fix.timestamp)).toBe(true)
    expect(Math.abs(fix.latitude)).toBeLessThanOrEqual(90)
    expect(Math.abs(fix.longitude)).toBeLessThanOrEqual(180)
    expect(fix.speed === null || Number.isFinite(fix.speed)).toBe(true)
  }
  for (const event of message.report.events) expect(Number.isFinite(event.timestamp)).toBe(true)
}

function framesOf(machine: FrameMachine<string>, bytes: Uint8Array): string[] {
  return machine.push(bytes).flatMap((item) => (item.kind === 'frame' ? [item.frame] : []))
}

describe('watch fuzz', () => {
  test('random bytes, cut at random, through framing and decoder: no fix, no throw, bounded buffer', () => {
    const random = seededRandom(0x5093)
    const alphabet = latin1('[]*,.0123456789ABCDEFSGUDLKNW')
    let frames = 0
    for (let run = 0; run < 100; run++) {
      const machine = createFrameMachine(watchFrameReader())
      for (let chunk = 0; chunk < 20; chunk++) {
        const bytes = new Uint8Array(Math.floor(random() * 400))
        for (let i = 0; i < bytes.length; i++) bytes[i] = random() < 0.6 ? alphabet[Math.floor(random() * alphabet.length)] : Math.floor(random() * 256)
        for (const frame of framesOf(machine, bytes)) {
          frames++
          const message = decodeWatchFrame(frame)
          if (message.kind === 'report') expect(message.report.fixes).toEqual([])
        }
        expect(machine.bufferedBytes).toBeLessThan(WATCH_MAX_FRAME_BYTES)
      }
    }
    expect(frames).toBeGreaterThan(0)
  })

  test('random printable content after a valid header: never a throw, never an impossible fix', () => {
    const random = seededRandom(0x5094)
    for (let run = 0; run < 3000; run++) {
      let content = ['UD', 'UD2', 'AL', 'LK', 'heart', 'bphrt'][run % 6]
      const length = Math.floor(random() * 150)
      for (let i = 0; i < length; i++) content += random() < 0.25 ? ',' : String.fromCharCode(32 + Math.floor(random() * 95))
      expectSane(decodeWatchFrame(`[SG*8800000015*${content.length.toString(16).padStart(4, '0')}*${content}]`))
    }
  })

  test('a captured position with a coordinate broken (a letter in it) gives no fix', () => {
    const random = seededRandom(0x5095)
    for (let run = 0; run < 2000; run++) {
      const frame = POSITIONS[run % POSITIONS.length]
      const fields = frame.split(',')
      // the type, date, time, validity, latitude (4), N/S, longitude (6)
      const index = random() < 0.5 ? 4 : 6
      const field = fields[index]
      const at = Math.floor(random() * field.length)
      fields[index] = field.slice(0, at) + 'GHJKQXZ'[Math.floor(random() * 7)] + field.slice(at + 1)
      const message = decodeWatchFrame(fields.join(','))
      expect(message.kind === 'report' ? message.report.fixes : []).toEqual([])
    }
  })

  test('any mutation of the captures (bytes changed, dropped, doubled) never throws and never gives an impossible fix', () => {
    const random = seededRandom(0x5096)
    const seeds = CAPTURES.map((capture) => latin1(capture.text))
    for (let run = 0; run < 2000; run++) {
      let bytes = seeds[run % seeds.length].slice()
      for (let edits = 1 + Math.floor(random() * 4); edits > 0; edits--) {
        const at = Math.floor(random() * bytes.length)
        const what = random()
        if (what < 0.5) bytes[at] = Math.floor(random() * 256)
        else if (what < 0.75) bytes = Uint8Array.from([...bytes.subarray(0, at), ...bytes.subarray(at + 1)])
        else bytes = Uint8Array.from([...bytes.subarray(0, at + 1), ...bytes.subarray(at)])
      }
      for (const frame of framesOf(createFrameMachine(watchFrameReader()), bytes)) expectSane(decodeWatchFrame(frame))
      expectSane(decodeWatchFrame(new TextDecoder('latin1').decode(bytes)))
    }
  })
})
