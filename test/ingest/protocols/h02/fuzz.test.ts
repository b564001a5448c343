/**
 * Seeded fuzzing of the H02 framing and decoder: random bytes and mutated real frames give clean
 * refusals (garbage counted, `invalid` messages), never a fix from garbage, never a throw, and the
 * bytes a connection keeps stay under the cap.
 */
import { describe, expect, test } from 'bun:test'
import { decodeH02Frame, type H02Message } from '../../../../src/ingest/protocols/h02/decoder'
import { H02_DEFAULT_MAX_FRAME_BYTES, splitH02Frames, type H02Frame } from '../../../../src/ingest/protocols/h02/framing'
import { seededRandom } from '../../../support/random'
import * as F from './frames'

const TEXT_FRAMES = [F.V1_COSTA_RICA, F.V1_DASH_COORDINATES, F.V1_HEX_CELL, F.V1_BATTERY_FIELD, F.V1_ISSUE_746, F.V1_TWIN, F.V1_NO_DECIMAL_POINT]
const OTHER_TEXT_FRAMES = [F.V4_S20_DONE, F.V4_S1_SOS, F.NBR_SIX_CELLS, F.NBR_DBM, F.LINK_TRACCAR, F.LINK_ISSUE_1173, F.XT_HEARTBEAT]
const BINARY_FRAMES = [F.BINARY_32_TWIN, F.BINARY_45_BOGOTA, F.BINARY_45_SHENZHEN, F.BINARY_42_IMEI, F.BINARY_48_CASABLANCA]

/** Characters that are no digit, hex digit, sign, point, comma, padding space, hemisphere or validity letter. */
const NEVER_IN_A_NUMBER = 'GHIJKLMOPQRTUXYZghijklmopqrtuxyz!"%&\'()+/:;<=>?@[]^_`{|}~'

function decodeAll(frames: H02Frame[], now?: number): H02Message[] {
  return frames.map((frame) => decodeH02Frame(frame, { now, acknowledgeReports: true }))
}

function expectSane(message: H02Message): void {
  if (message.kind === 'invalid') {
    expect(message.reply).toBeNull()
    return
  }
  for (const fix of message.report.fixes) {
    expect(Number.isFinite(fix.timestamp)).toBe(true)
    expect(Math.abs(fix.latitude)).toBeLessThanOrEqual(90)
    expect(Math.abs(fix.longitude)).toBeLessThanOrEqual(180)
    expect(fix.speed === null || (Number.isFinite(fix.speed) && fix.speed >= 0)).toBe(true)
    expect(fix.course === null || (fix.course >= 0 && fix.course <= 360)).toBe(true)
  }
  for (const event of message.report.events) expect(Number.isFinite(event.timestamp)).toBe(true)
}

describe('H02 fuzz', () => {
  test('random bytes, cut at random, through framing and decoder: no fix, no event, no throw, bounded buffer', () => {
    const random = seededRandom(0x4802)
    const alphabet = F.ascii('*$#,.0123456789ABCDEFHQVNSWE\r\n')
    let frames = 0
    for (let run = 0; run < 120; run++) {
      let pending = new Uint8Array(0)
      let binaryFrameBytes: number | null = null
      for (let chunk = 0; chunk < 20; chunk++) {
        const bytes = new Uint8Array(Math.floor(random() * 300))
        // half the bytes from the protocol's own alphabet, so markers and separators are common
        for (let i = 0; i < bytes.length; i++) bytes[i] = random() < 0.5 ? alphabet[Math.floor(random() * alphabet.length)] : Math.floor(random() * 256)
        const buffer = F.concat(pending, bytes)
        const result = splitH02Frames(buffer, { binaryFrameBytes })
        binaryFrameBytes = result.binaryFrameBytes
        pending = buffer.slice(result.consumedBytes)
        expect(pending.length).toBeLessThan(H02_DEFAULT_MAX_FRAME_BYTES)
        frames += result.frames.length
        for (const message of decodeAll(result.frames, 1_700_000_000)) {
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

  test('random text and random bytes handed straight to the decoder: refused, never a fix, never a throw', () => {
    const random = seededRandom(0x4803)
    for (let run = 0; run < 3000; run++) {
      const length = Math.floor(random() * 120)
      let text = '*'
      for (let i = 0; i < length; i++) text += String.fromCharCode(32 + Math.floor(random() * 95))
      const fromText = decodeH02Frame({ kind: 'text', text: `${text}#` }, { now: 0 })
      if (fromText.kind === 'report') expect(fromText.report.fixes).toEqual([])
      const bytes = new Uint8Array(length)
      for (let i = 0; i < length; i++) bytes[i] = Math.floor(random() * 256)
      bytes[0] = 0x24
      const fromBytes = decodeH02Frame({ kind: 'binary', bytes }, { now: 0 })
      expect(fromBytes.kind).toBe('invalid')
    }
  })

  test('a real V1 with a field broken (a character no number holds) is refused, never a fix', () => {
    const random = seededRandom(0x4804)
    for (let run = 0; run < 2000; run++) {
      const frame = TEXT_FRAMES[run % TEXT_FRAMES.length]
      const fields = frame.slice(1, -1).split(',')
      // time, validity, latitude, N/S, longitude, E/W, speed, course, date, status (after maker, id, type)
      const dateOffset = /^\d{6}$/.test(fields[11]) ? 11 : 12
      const core = [3, 4, 5, 6, 7, 8, 9, 10, dateOffset, dateOffset + 1]
      const index = core[Math.floor(random() * core.length)]
      const field = fields[index]
      const at = Math.floor(random() * Math.max(field.length, 1))
      fields[index] = field.slice(0, at) + NEVER_IN_A_NUMBER[Math.floor(random() * NEVER_IN_A_NUMBER.length)] + field.slice(at + 1)
      const message = decodeH02Frame({ kind: 'text', text: `*${fields.join(',')}#` }, { now: 0 })
      expect(message.kind).toBe('invalid')
    }
  })

  test('a real binary frame with a digit broken is garbage to the framing and refused by the decoder', () => {
    const random = seededRandom(0x4805)
    for (let run = 0; run < 2000; run++) {
      const original = F.hex(BINARY_FRAMES[run % BINARY_FRAMES.length])
      const idBytes = original.length === 42 ? 8 : 5
      // id, time, date, latitude and the first longitude bytes are BCD through and through
      const index = 1 + Math.floor(random() * (idBytes + 10))
      const bytes = original.slice()
      const nibble = 0x0a + Math.floor(random() * 6)
      // (the pad digit of an 8-byte id may be F: only its high nibble is a digit for sure)
      const high = random() < 0.5 || (idBytes === 8 && index === 8)
      bytes[index] = high ? (nibble << 4) | (bytes[index] & 0x0f) : (bytes[index] & 0xf0) | nibble
      expect(decodeH02Frame({ kind: 'binary', bytes }).kind).toBe('invalid')
      const split = splitH02Frames(F.concat(bytes, F.ascii(F.XT_HEARTBEAT)))
      expect(split.frames.map((frame) => frame.kind)).toEqual(['text'])
    }
  })

  test('truncated frames are refused', () => {
    for (const frame of [...TEXT_FRAMES, ...OTHER_TEXT_FRAMES]) {
      for (let end = 1; end < frame.length - 1; end++) {
        const message = decodeH02Frame({ kind: 'text', text: frame.slice(0, end) })
        expect(message.kind).toBe('invalid')
      }
    }
    for (const frame of BINARY_FRAMES) {
      const bytes = F.hex(frame)
      for (let end = 0; end < 29; end++) expect(decodeH02Frame({ kind: 'binary', bytes: bytes.subarray(0, end) }).kind).toBe('invalid')
    }
  })

  test('any mutation of real frames (bytes changed, dropped, doubled) never throws and never gives an impossible fix', () => {
    const random = seededRandom(0x4806)
    const seeds = [...[...TEXT_FRAMES, ...OTHER_TEXT_FRAMES].map(F.ascii), ...BINARY_FRAMES.map(F.hex)]
    for (let run = 0; run < 1500; run++) {
      let bytes: Uint8Array = seeds[run % seeds.length].slice()
      for (let edits = 1 + Math.floor(random() * 4); edits > 0; edits--) {
        const at = Math.floor(random() * bytes.length)
        const what = random()
        if (what < 0.5) bytes[at] = Math.floor(random() * 256)
        else if (what < 0.75) bytes = F.concat(bytes.subarray(0, at), bytes.subarray(at + 1))
        else bytes = F.concat(bytes.subarray(0, at + 1), bytes.subarray(at))
      }
      const result = splitH02Frames(bytes)
      expect(result.consumedBytes).toBeLessThanOrEqual(bytes.length)
      for (const message of decodeAll(result.frames, 1_700_000_000)) expectSane(message)
      // and the same bytes handed to the decoder as whatever frame they claim to be
      expectSane(decodeH02Frame(bytes[0] === 0x24 ? { kind: 'binary', bytes } : { kind: 'text', text: new TextDecoder('latin1').decode(bytes) }))
    }
  })
})
