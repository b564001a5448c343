/**
 * Fuzzing the GT06 splitter and decoder (seeded, so every run is the same run): random byte
 * streams, real frames mutated on the wire, and well-framed packets of every known protocol
 * number with random content. What must hold: nothing throws, nothing is buffered beyond the
 * cap, garbage never becomes a fix, and a mutated frame never costs the frames around it.
 */
import { describe, expect, test } from 'bun:test'
import type { DecodedFix } from '../../../../src/ingest/types'
import { decodeGt06Frame, PROTOCOL, type Gt06Message } from '../../../../src/ingest/protocols/gt06/decoder'
import { createGt06Parser, GT06_DEFAULT_MAX_BUFFERED_BYTES } from '../../../../src/ingest/protocols/gt06/framing'
import { buildGt06Frame } from '../../../../src/ingest/protocols/gt06/replies'
import { TRACCAR_GT06_FRAMES } from '../../../fixtures/gt06/frames'
import * as F from './captures'
import { concat, hex, seededRandom } from '../helpers'

const SESSION = { imei: '123456789012345' }
const NOW = Date.UTC(2024, 2, 15, 8, 30, 5) / 1000
const KINDS = ['login', 'report', 'status', 'other', 'invalid']

/** every capture that is a single frame, and every frame of Traccar's public GT06 tests published with its right CRC */
const CAPTURES = [
  ...Object.entries(F)
    .filter(([name, value]) => typeof value === 'string' && !name.endsWith('_RESPONSE') && !name.endsWith('_REPLY') && name !== 'ISSUE_1532_STREAM')
    .map(([, value]) => hex(value)),
  ...TRACCAR_GT06_FRAMES.filter((entry) => !entry.crcWrong)
    .map((entry) => hex(entry.hex))
    .filter((bytes) => createGt06Parser().push(bytes).filter((item) => item.kind === 'frame').length === 1),
]

/** Split `bytes` into random chunks, feed them to a fresh parser, decode every frame. */
function run(bytes: Uint8Array, random: () => number): { messages: Gt06Message[]; maxBuffered: number; failed: boolean } {
  const parser = createGt06Parser()
  const messages: Gt06Message[] = []
  let maxBuffered = 0
  for (let at = 0; at < bytes.length; ) {
    const size = 1 + Math.floor(random() * 64)
    for (const item of parser.push(bytes.subarray(at, at + size))) {
      if (item.kind === 'frame') messages.push(decodeGt06Frame(item.frame, SESSION, { now: NOW }))
    }
    maxBuffered = Math.max(maxBuffered, parser.bufferedBytes)
    at += size
  }
  return { messages, maxBuffered, failed: parser.failed }
}

function fixesOf(messages: Gt06Message[]): DecodedFix[] {
  return messages.flatMap((message) => (message.kind === 'report' ? message.report.fixes : []))
}

/** what makes a fix a place: a mutated frame may only ever yield the places of real frames */
function placeOf(fix: DecodedFix): string {
  return JSON.stringify([fix.timestamp, fix.latitude, fix.longitude, fix.speed, fix.course, fix.valid])
}

const REAL_PLACES = new Set(CAPTURES.flatMap((bytes) => fixesOf(run(bytes, seededRandom(1)).messages).map(placeOf)))

function randomBytes(random: () => number, length: number): Uint8Array {
  const bytes = new Uint8Array(length)
  for (let i = 0; i < length; i++) {
    // biased towards markers, stop bytes and the login number so the framing paths are exercised
    const r = random()
    bytes[i] =
      r < 0.08 ? 0x78 : r < 0.12 ? 0x79 : r < 0.18 ? 0x0d : r < 0.24 ? 0x0a : r < 0.27 ? 0x01 : Math.floor(random() * 256)
  }
  return bytes
}

type Mutation = (frame: Uint8Array, random: () => number) => Uint8Array

const at = (random: () => number, length: number) => Math.floor(random() * length)

/** Mutations CRC-16 always detects (any error burst of at most 16 bits) or that break framing. */
const DETECTED: Record<string, Mutation> = {
  'one byte changed': (frame, random) => {
    const copy = frame.slice()
    const i = at(random, copy.length)
    copy[i] ^= 1 + Math.floor(random() * 255)
    return copy
  },
  'a burst of up to 16 bits flipped': (frame, random) => {
    const copy = frame.slice()
    const bit = at(random, copy.length * 8 - 16)
    const width = 1 + at(random, 16)
    for (let b = bit; b < bit + width; b++) if (b === bit || b === bit + width - 1 || random() < 0.5) copy[b >> 3] ^= 0x80 >> (b & 7)
    return copy
  },
  'length field changed': (frame, random) => {
    const copy = frame.slice()
    copy[copy[0] === 0x79 ? 3 : 2] ^= 1 + Math.floor(random() * 255)
    return copy
  },
  truncated: (frame, random) => frame.subarray(0, at(random, frame.length)),
}

/** Mutations a CRC only catches with odds of 65535 in 65536. */
const SHIFTING: Record<string, Mutation> = {
  'one byte deleted': (frame, random) => {
    const i = at(random, frame.length)
    return concat(frame.subarray(0, i), frame.subarray(i + 1))
  },
  'one byte inserted': (frame, random) => {
    const i = at(random, frame.length)
    return concat(frame.subarray(0, i), Uint8Array.of(Math.floor(random() * 256)), frame.subarray(i))
  },
  'spliced into another frame': (frame, random) => {
    const other = CAPTURES[at(random, CAPTURES.length)]
    return concat(frame.subarray(0, at(random, frame.length)), other.subarray(at(random, other.length)))
  },
}

describe('GT06 fuzz', () => {
  test('random streams: no throw, never over the cap, never a fix', () => {
    const random = seededRandom(0x67060001)
    let frames = 0
    for (let run_ = 0; run_ < 400; run_++) {
      const { messages, maxBuffered } = run(randomBytes(random, 200 + at(random, 3000)), random)
      frames += messages.length
      expect(maxBuffered).toBeLessThanOrEqual(GT06_DEFAULT_MAX_BUFFERED_BYTES)
      expect(fixesOf(messages)).toEqual([])
      for (const message of messages) expect(KINDS).toContain(message.kind)
    }
    expect(frames).toBeLessThan(5) // what little gets through the CRC is refused or harmless
  })

  test('real frames with errors a CRC always catches: no frame at all, so no fix', () => {
    const random = seededRandom(0x67060002)
    for (const [name, mutate] of Object.entries(DETECTED)) {
      for (let trial = 0; trial < 600; trial++) {
        const original = CAPTURES[trial % CAPTURES.length]
        const mutated = mutate(original, random)
        const { messages } = run(mutated, random)
        const changed = mutated.length !== original.length || mutated.some((byte, i) => byte !== original[i])
        if (changed) {
          // the start marker or a stop byte can be hit too: then it is garbage, still no frame.
          // Only a login that never had a CRC (LOGIN_WITHOUT_SERIAL) can still come through.
          const data = messages.filter((message) => message.kind !== 'login')
          expect({ name, frame: Buffer.from(mutated).toString('hex'), data }).toEqual({ name, frame: Buffer.from(mutated).toString('hex'), data: [] })
        }
        expect(fixesOf(messages)).toEqual([])
      }
    }
  })

  test('real frames with bytes deleted, inserted or spliced: only ever the places of real frames', () => {
    const random = seededRandom(0x67060003)
    for (const [name, mutate] of Object.entries(SHIFTING)) {
      for (let trial = 0; trial < 1500; trial++) {
        const mutated = mutate(CAPTURES[trial % CAPTURES.length], random)
        const { messages } = run(mutated, random)
        for (const message of messages) expect(KINDS).toContain(message.kind)
        for (const fix of fixesOf(messages)) expect({ name, place: placeOf(fix), real: REAL_PLACES.has(placeOf(fix)) }).toMatchObject({ real: true })
      }
    }
  })

  test('a mutated frame between two real ones never costs its neighbours', () => {
    const random = seededRandom(0x67060004)
    const positions = CAPTURES.filter((bytes) => fixesOf(run(bytes, random).messages).some((fix) => fix.valid))
    const mutations = [...Object.values(DETECTED), ...Object.values(SHIFTING)]
    for (let trial = 0; trial < 1500; trial++) {
      const before = positions[at(random, positions.length)]
      const after = positions[at(random, positions.length)]
      const middle = mutations[trial % mutations.length](CAPTURES[at(random, CAPTURES.length)], random)
      const result = run(concat(before, middle, after), random)
      const places = fixesOf(result.messages).map(placeOf)
      for (const place of fixesOf(run(before, random).messages).map(placeOf)) expect(places).toContain(place)
      // A cut-off 0x7979 header before a 0x7878 frame declares 0x7878 bytes: over the cap, so
      // the connection is closed as hostile (and the device reconnects). Otherwise nothing is lost.
      if (!result.failed) for (const place of fixesOf(run(after, random).messages).map(placeOf)) expect(places).toContain(place)
      for (const place of places) expect(REAL_PLACES.has(place)).toBe(true)
    }
  })

  test('well-framed packets of every protocol number with random content: no throw, no fix', () => {
    const random = seededRandom(0x67060005)
    const protocols = [...Object.values(PROTOCOL), 0x15, 0x21, 0x80]
    let decoded = 0
    for (let trial = 0; trial < 20_000; trial++) {
      const protocol = protocols[trial % protocols.length]
      const content = new Uint8Array(at(random, 120))
      for (let i = 0; i < content.length; i++) content[i] = Math.floor(random() * 256)
      const items = createGt06Parser().push(buildGt06Frame(protocol, content, trial & 0xffff))
      for (const item of items) {
        if (item.kind !== 'frame') continue
        for (const session of [SESSION, { imei: null }]) {
          const message = decodeGt06Frame(item.frame, session, { now: NOW })
          expect(KINDS).toContain(message.kind)
          if (message.kind === 'report') expect(message.report.fixes).toEqual([])
          if (message.kind !== 'invalid') decoded++
        }
      }
    }
    expect(decoded).toBeGreaterThan(0) // some random content is a valid status or cell packet
  })
})
