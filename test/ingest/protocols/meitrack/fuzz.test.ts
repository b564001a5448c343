/**
 * Seeded fuzzing of the Meitrack framing and decoder: random bytes and mutated real frames give
 * clean refusals (garbage counted, `invalid` messages), never a fix from garbage, never a throw,
 * and the bytes a connection keeps stay under the cap.
 */
import { describe, expect, test } from 'bun:test'
import { createFrameMachine } from '../../../../src/ingest/protocols/framing'
import { decodeMeitrackFrame, type MeitrackMessage } from '../../../../src/ingest/protocols/meitrack/decoder'
import { MEITRACK_MAX_FRAME_BYTES, meitrackChecksum, meitrackFrameReader, type MeitrackFrame } from '../../../../src/ingest/protocols/meitrack/framing'
import { seededRandom } from '../../../support/random'
import { FRAMES, wire } from '../../../fixtures/meitrack/frames'

const NOW = Date.UTC(2026, 10, 27) / 1000
const SEEDS = FRAMES.filter((frame) => frame.checksum !== 'bad' && frame.name !== 'D00_20').map(wire)
const TEXT_REPORTS = FRAMES.filter((frame) => frame.checksum !== 'bad' && frame.text?.includes(',AAA,')).map((frame) => frame.text!.replace(/\r\n$/, ''))

function expectSane(message: MeitrackMessage): void {
  if (message.kind === 'invalid') return
  for (const fix of message.report.fixes) {
    expect(Number.isFinite(fix.timestamp)).toBe(true)
    expect(fix.timestamp).toBeLessThanOrEqual(NOW + 86_400)
    expect(Math.abs(fix.latitude)).toBeLessThanOrEqual(90)
    expect(Math.abs(fix.longitude)).toBeLessThanOrEqual(180)
    expect(fix.speed === null || (Number.isFinite(fix.speed) && fix.speed >= 0)).toBe(true)
    expect(fix.course === null || (fix.course >= 0 && fix.course <= 360)).toBe(true)
  }
  for (const event of message.report.events) expect(Number.isFinite(event.timestamp)).toBe(true)
}

/** a frame of `body` (from the first comma through `*`) with its length and checksum right */
function sealed(flag: string, body: string): Uint8Array {
  const head = `$$${flag}${body.length + 4}${body}`
  const bytes = Uint8Array.from(head, (c) => c.charCodeAt(0) & 0xff)
  const checksum = meitrackChecksum(bytes, 0, bytes.length)
  return Uint8Array.from(`${head}${checksum}\r\n`, (c) => c.charCodeAt(0))
}

function decodeStream(bytes: Uint8Array): MeitrackMessage[] {
  const machine = createFrameMachine(meitrackFrameReader())
  return machine.push(bytes).flatMap((item) => (item.kind === 'frame' ? [decodeMeitrackFrame(item.frame, { now: NOW })] : []))
}

describe('Meitrack fuzz', () => {
  test('random bytes, cut at random, through framing and decoder: no fix, no throw, bounded buffer', () => {
    const random = seededRandom(0x4d01)
    const alphabet = Uint8Array.from('$$,*0123456789ABCDEFAAA|.\r\n', (c) => c.charCodeAt(0))
    for (let run = 0; run < 120; run++) {
      const machine = createFrameMachine(meitrackFrameReader())
      for (let chunk = 0; chunk < 20; chunk++) {
        const bytes = new Uint8Array(Math.floor(random() * 400))
        for (let i = 0; i < bytes.length; i++) bytes[i] = random() < 0.5 ? alphabet[Math.floor(random() * alphabet.length)] : Math.floor(random() * 256)
        for (const item of machine.push(bytes)) {
          if (item.kind !== 'frame') continue
          const message = decodeMeitrackFrame(item.frame, { now: NOW })
          if (message.kind === 'report') expect(message.report.fixes).toEqual([])
        }
        expect(machine.bufferedBytes).toBeLessThan(MEITRACK_MAX_FRAME_BYTES)
      }
    }
  })

  test('random text sealed with a right length and checksum: refused or a report without a fix, never a throw', () => {
    const random = seededRandom(0x4d02)
    for (let run = 0; run < 3000; run++) {
      let body = ',353358017784062,'
      body += ['AAA', 'AFF', 'CCC', 'CCE', 'AAC', 'C01', 'D00'][run % 7] + ','
      const length = Math.floor(random() * 160)
      for (let i = 0; i < length; i++) body += String.fromCharCode(random() < 0.3 ? 0x2c : 32 + Math.floor(random() * 95))
      const messages = decodeStream(sealed('A', `${body.replaceAll('*', '#')}*`))
      expect(messages).toHaveLength(1)
      for (const message of messages) {
        expectSane(message)
        if (message.kind === 'report') expect(message.report.fixes).toEqual([])
      }
    }
  })

  test('a real AAA report with a core field broken (a character no number holds), resealed, is refused', () => {
    const random = seededRandom(0x4d03)
    const noNumber = 'GHIJKLMNOPQRSTUWXYZghijklmnopqrstuwxyz!"%&\'()+/:;<=>?@[]^_`{}~'
    for (let run = 0; run < 2000; run++) {
      const frame = TEXT_REPORTS[run % TEXT_REPORTS.length]
      const comma = frame.indexOf(',')
      const fields = frame.slice(comma, frame.lastIndexOf('*')).split(',')
      // after the empty one before the first comma, the IMEI and AAA: event, latitude, longitude, time, validity, satellites … run time
      const index = 3 + Math.floor(random() * 13)
      const field = fields[index]
      const at = Math.floor(random() * Math.max(field.length, 1))
      fields[index] = field.slice(0, at) + noNumber[Math.floor(random() * noNumber.length)] + field.slice(at + 1)
      const messages = decodeStream(sealed(frame[2], `${fields.join(',')}*`))
      expect(messages.map((message) => message.kind)).toEqual(['invalid'])
    }
  })

  test('any mutation of real frames (bytes changed, dropped, doubled) never throws and never gives an impossible fix', () => {
    const random = seededRandom(0x4d04)
    for (let run = 0; run < 2000; run++) {
      let bytes: Uint8Array = SEEDS[run % SEEDS.length].slice()
      for (let edits = 1 + Math.floor(random() * 4); edits > 0; edits--) {
        const at = Math.floor(random() * bytes.length)
        const what = random()
        if (what < 0.5) bytes[at] = Math.floor(random() * 256)
        else if (what < 0.75) bytes = Uint8Array.from([...bytes.subarray(0, at), ...bytes.subarray(at + 1)])
        else bytes = Uint8Array.from([...bytes.subarray(0, at + 1), ...bytes.subarray(at)])
      }
      for (const message of decodeStream(bytes)) expectSane(message)
      // and the same bytes handed straight to the decoder, as a frame the framing never checked
      const frame: MeitrackFrame = { flag: 'A', bytes, bodyStart: Math.max(0, bytes.indexOf(0x2c) + 1) }
      expectSane(decodeMeitrackFrame(frame, { now: NOW }))
    }
  })

  test('mutated binary batches, resealed so the framing passes them: refused or sane, never a throw', () => {
    const random = seededRandom(0x4d05)
    const batches = FRAMES.filter((frame) => frame.checksum !== 'bad' && (frame.name.startsWith('CCE') || frame.name.startsWith('CCC'))).map(wire)
    for (let run = 0; run < 2000; run++) {
      const original = batches[run % batches.length]
      const start = original.indexOf(0x2c, original.indexOf(0x2c) + 1) + 5 // past `,CCE,`
      const body = original.slice(start, original.length - 5)
      for (let edits = 1 + Math.floor(random() * 3); edits > 0; edits--) body[Math.floor(random() * body.length)] = Math.floor(random() * 256)
      const head = String.fromCharCode(...original.subarray(original.indexOf(0x2c), start))
      const messages = decodeStream(sealed(String.fromCharCode(original[2]), `${head}${String.fromCharCode(...body)}*`))
      for (const message of messages) expectSane(message)
    }
  })
})
