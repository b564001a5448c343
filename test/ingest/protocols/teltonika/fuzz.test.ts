/**
 * Fuzzing the Teltonika framing and decoder with seeded random and mutated frames: whatever
 * arrives, the result is a clean refusal (an error item, an `invalid` decode) and never a fix
 * that the device did not send; nothing throws out of `push` or `decodeTeltonikaPacket`.
 */
import { describe, expect, test } from 'bun:test'
import { decodeTeltonikaPacket } from '../../../../src/ingest/protocols/teltonika/decoder'
import { createTeltonikaParser, TELTONIKA_DEFAULT_MAX_PACKET_BYTES, type TeltonikaStreamItem } from '../../../../src/ingest/protocols/teltonika/framing'
import { AVL_FROM_DEVICES, CODEC_12_FROM_DEVICES, CODEC_13, WIKI } from '../../../fixtures/teltonika/frames'
import { TRACCAR_FRAMES } from '../../../fixtures/teltonika/traccar'
import { concat, hex, seededRandom } from '../helpers'

const IMEI = '356307042441013'
const ITEM_KINDS = ['imei', 'packet', 'keepalive', 'error']

/** Every published frame whose CRC is right: AVL data and command answers. */
const FRAMES: Uint8Array[] = [
  AVL_FROM_DEVICES.fmb120,
  AVL_FROM_DEVICES.fmb920,
  AVL_FROM_DEVICES.drivingPlugged,
  AVL_FROM_DEVICES.threeRecords,
  AVL_FROM_DEVICES.codec8eObd,
  AVL_FROM_DEVICES.codec8eAlarmButton,
  WIKI.codec12Response,
  WIKI.codec14Ack,
  CODEC_13.hello,
  CODEC_13.legacyGetinfo,
  CODEC_12_FROM_DEVICES.serialAscii,
  CODEC_12_FROM_DEVICES.serialBinary,
  // from Traccar's tests: Codec 7 (GH3000, with and without a GPS element), Codec 8 with a
  // 16-byte IO section (FMB130), Codec 16
  ...['32', '38', '47', '9'].map((place) => TRACCAR_FRAMES.find((f) => f.source === `traccar TeltonikaProtocolDecoderTest.java testDecode #${place}`)!),
].map((frame) => hex(frame.hex))

type Random = () => number
const below = (random: Random, n: number) => Math.floor(random() * n)
const randomBytes = (random: Random, length: number) => Uint8Array.from({ length }, () => below(random, 256))

/**
 * A frame changed somewhere after its preamble: bits flipped, bytes replaced, inserted, removed,
 * the length field altered, cut short with noise after it. Always differs from the original.
 */
function mutate(frame: Uint8Array, random: Random): Uint8Array {
  const at = () => 4 + below(random, frame.length - 4)
  let out: Uint8Array
  switch (below(random, 7)) {
    case 0: {
      out = frame.slice()
      const i = at()
      out[i] ^= 1 << below(random, 8)
      break
    }
    case 1: {
      out = frame.slice()
      const i = at()
      out[i] = (out[i] + 1 + below(random, 255)) & 0xff
      break
    }
    case 2: {
      out = frame.slice()
      for (let n = 2 + below(random, 7); n > 0; n--) out[at()] = below(random, 256)
      break
    }
    case 3: {
      const i = at()
      out = concat(frame.subarray(0, i), randomBytes(random, 1 + below(random, 4)), frame.subarray(i))
      break
    }
    case 4: {
      const i = at()
      out = concat(frame.subarray(0, i), frame.subarray(i + 1 + below(random, 3)))
      break
    }
    case 5: {
      out = frame.slice()
      new DataView(out.buffer).setUint32(4, below(random, frame.length * 2))
      break
    }
    default: {
      const i = at()
      const noise = randomBytes(random, below(random, frame.length - i + 8))
      if (noise.length > 0 && noise[0] === frame[i]) noise[0] ^= 0xff // the cut must change something
      out = concat(frame.subarray(0, i), noise)
    }
  }
  const same = out.length === frame.length && out.every((byte, i) => byte === frame[i])
  return same ? mutate(frame, random) : out
}

/** Push bytes in random chunks; every item must be one of the known kinds. */
function pushInChunks(bytes: Uint8Array, random: Random, parser = createTeltonikaParser()): TeltonikaStreamItem[] {
  const items: TeltonikaStreamItem[] = []
  let offset = 0
  while (offset < bytes.length && !parser.failed) {
    const size = 1 + below(random, 64)
    items.push(...parser.push(bytes.subarray(offset, offset + size)))
    offset += size
  }
  for (const item of items) expect(ITEM_KINDS).toContain(item.kind)
  expect(parser.bufferedBytes).toBeLessThanOrEqual(TELTONIKA_DEFAULT_MAX_PACKET_BYTES + 12)
  return items
}

function loggedIn(): ReturnType<typeof createTeltonikaParser> {
  const parser = createTeltonikaParser()
  parser.push(hex(WIKI.imei.hex))
  return parser
}

describe('Teltonika fuzz', () => {
  test('the published frames themselves all split and decode (the baseline the mutations start from)', () => {
    for (const frame of FRAMES) {
      const items = loggedIn().push(frame)
      expect(items.map((i) => i.kind)).toEqual(['packet'])
      const result = decodeTeltonikaPacket((items[0] as Extract<TeltonikaStreamItem, { kind: 'packet' }>).packet.data, IMEI)
      expect(['report', 'command_answer']).toContain(result.kind)
    }
  })

  test('mutated frames: never a packet, so never a fix, an answer or an ACK', () => {
    const random = seededRandom(0x7e1701)
    let refusals = 0
    for (let run = 0; run < 2400; run++) {
      const frame = FRAMES[run % FRAMES.length]
      const keepAlive = random() < 0.3 ? hex('FF') : new Uint8Array(0)
      const items = pushInChunks(concat(keepAlive, mutate(frame, random)), random, loggedIn())
      expect(items.filter((item) => item.kind === 'packet')).toEqual([])
      refusals += items.filter((item) => item.kind === 'error').length
    }
    // most mutations end in a refusal the connection can log; the rest wait for bytes that never come
    expect(refusals).toBeGreaterThan(1000)
  })

  test('random streams after the handshake, with zeros, keep-alives and pieces of real frames: no fix, no throw', () => {
    const random = seededRandom(0x5eed)
    for (let run = 0; run < 300; run++) {
      const parts: Uint8Array[] = []
      for (let n = 1 + below(random, 6); n > 0; n--) {
        const pick = random()
        if (pick < 0.3) {
          const frame = FRAMES[below(random, FRAMES.length)]
          parts.push(frame.subarray(0, below(random, frame.length))) // never a whole frame
        } else if (pick < 0.4) {
          parts.push(new Uint8Array(1 + below(random, 3)).fill(0xff))
        } else {
          parts.push(Uint8Array.from({ length: below(random, 120) }, () => (random() < 0.4 ? 0 : below(random, 256))))
        }
      }
      const parser = loggedIn()
      for (const item of pushInChunks(concat(...parts), random, parser)) {
        if (item.kind !== 'packet') continue
        const result = decodeTeltonikaPacket(item.packet.data, IMEI)
        if (result.kind === 'report') expect(result.report.fixes).toEqual([])
      }
    }
  })

  test('random handshakes, with and without keep-alives: an IMEI of digits or a refusal, never a throw', () => {
    const random = seededRandom(0x1ee7)
    for (let run = 0; run < 1000; run++) {
      const lead = new Uint8Array(below(random, 3)).fill(0xff)
      const body = random() < 0.5 ? randomBytes(random, below(random, 40)) : concat(hex('000F'), randomBytes(random, 15))
      for (const item of pushInChunks(concat(lead, body), random)) {
        if (item.kind === 'imei') expect(item.imei).toMatch(/^[0-9]{1,20}$/)
        if (item.kind === 'error') expect(item.error.message.length).toBeGreaterThan(0)
      }
    }
  })

  test('random and mutated data fields straight into the decoder: a clean result, JSON-safe, finite', () => {
    const random = seededRandom(0xdec0de)
    const dataFields = FRAMES.map((frame) => frame.subarray(8, -4))
    const codecs = [0x07, 0x08, 0x8e, 0x10, 0x0c, 0x0d, 0x0e]
    for (let run = 0; run < 4000; run++) {
      let data: Uint8Array
      if (run % 2 === 0) {
        data = Uint8Array.from({ length: below(random, 160) }, () => (random() < 0.5 ? below(random, 4) : below(random, 256)))
        if (data.length > 0) data[0] = codecs[run % codecs.length]
      } else {
        const original = dataFields[run % dataFields.length]
        data = original.slice()
        for (let n = 1 + below(random, 4); n > 0; n--) data[below(random, data.length)] = below(random, 256)
        if (random() < 0.3) data = data.subarray(0, below(random, data.length))
      }
      const result = decodeTeltonikaPacket(data, IMEI)
      expect(['report', 'command_answer', 'invalid']).toContain(result.kind)
      if (result.kind === 'invalid') {
        expect(result.ack).toBeNull()
        continue
      }
      if (result.kind === 'command_answer') {
        expect(() => JSON.stringify(result.commandAnswer)).not.toThrow()
        continue
      }
      // without a CRC to guard it a changed record is still a record; it must be a well-formed one
      expect(() => JSON.stringify({ report: result.report, statuses: result.statuses })).not.toThrow()
      for (const fix of result.report.fixes) {
        for (const value of [fix.timestamp, fix.latitude, fix.longitude]) expect(Number.isFinite(value)).toBe(true)
        // null only for a field a Codec 7 record did not send
        for (const value of [fix.speed, fix.course, fix.altitude, fix.satellites]) expect(value === null ? result.codecId : Number.isFinite(value)).toBe(value === null ? 0x07 : true)
        expect(Math.abs(fix.latitude)).toBeLessThanOrEqual(214.7483648)
      }
      // one status a record; one fix a record, but for Codec 7 records without coordinates
      expect(result.statuses).toHaveLength(result.records.length)
      if (result.codecId !== 0x07) expect(result.report.fixes).toHaveLength(result.records.length)
    }
  })
})
