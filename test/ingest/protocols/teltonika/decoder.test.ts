import { describe, expect, test } from 'bun:test'
import { decodeTeltonikaPacket, type TeltonikaDecodeResult } from '../../../../src/ingest/protocols/teltonika/decoder'
import { createTeltonikaParser, TELTONIKA_DEFAULT_MAX_PACKET_BYTES, type TeltonikaPacket, type TeltonikaStreamItem } from '../../../../src/ingest/protocols/teltonika/framing'
import { buildTeltonikaAck, teltonikaImeiResponse } from '../../../../src/ingest/protocols/teltonika/replies'
import { concat, hex, seededRandom, toHex } from '../helpers'
import { teltonikaFrame } from '../../frames'

// ---- vectors from the Teltonika wiki ("Codec" page) ------------------------------------------

/** IMEI handshake example: 000F + "356307042441013" */
const WIKI_IMEI = hex('000F333536333037303432343431303133')
/** Codec 8, first example: one record, 5 IO elements, CRC 0xC7CF */
const WIKI_CODEC8_1 = hex(
  '000000000000003608010000016B40D8EA30010000000000000000000000000000000105021503010101425E0F01F10000601A014E0000000000000000010000C7CF',
)
/** Codec 8, second example: one record, 3 IO elements, CRC 0xF22A */
const WIKI_CODEC8_2 = hex(
  '000000000000002808010000016B40D9AD80010000000000000000000000000000000103021503010101425E100000010000F22A',
)
/** Codec 8, third example: two records, CRC 0x252C */
const WIKI_CODEC8_3 = hex(
  '000000000000004308020000016B40D57B480100000000000000000000000000000001010101000000000000016B40D5C198010000000000000000000000000000000101010101000000020000252C',
)
/** Codec 8 Extended example: 2-byte IDs and counts, an empty NX section, CRC 0x2994 */
const WIKI_CODEC8E = hex(
  '000000000000004A8E010000016B412CEE000100000000000000000000000000000000010005000100010100010011001D00010010015E2C880002000B000000003544C87A000E000000001DD7E06A00000100002994',
)
/** Codec 16 example: two records with generation type, CRC 0x5FB3 */
const WIKI_CODEC16 = hex(
  '000000000000005F10020000016BDBC7833000000000000000000000000000000000000B05040200010000030002000B00270042563A00000000016BDBC7871800000000000000000000000000000000000B05040200010000030002000B00260042563A00000200005FB3',
)

const IMEI = '356307042441013'

// ---- builders --------------------------------------------------------------------------------

/** Wrap a data field (codec id .. number of data 2) in preamble, length and CRC. */
const packetOf = teltonikaFrame

interface RecordInput {
  timestampMs: number
  priority?: number
  latitude: number
  longitude: number
  altitude?: number
  angle?: number
  satellites?: number
  speed?: number
  eventIoId?: number
  /** [id, width, value] */
  io?: Array<[number, 1 | 2 | 4 | 8, number | bigint]>
  /** Codec 8E only: [id, bytes] */
  nx?: Array<[number, Uint8Array]>
}

function recordBytes(input: RecordInput, codecId: 0x08 | 0x8e): Uint8Array {
  const wide = codecId === 0x8e
  const parts: number[] = []
  const push = (value: number | bigint, bytes: number) => {
    let big = BigInt.asUintN(bytes * 8, BigInt(value))
    const out: number[] = []
    for (let i = 0; i < bytes; i++) {
      out.unshift(Number(big & 0xffn))
      big >>= 8n
    }
    parts.push(...out)
  }
  push(input.timestampMs, 8)
  push(input.priority ?? 0, 1)
  push(Math.round(input.longitude * 1e7), 4)
  push(Math.round(input.latitude * 1e7), 4)
  push(input.altitude ?? 0, 2)
  push(input.angle ?? 0, 2)
  push(input.satellites ?? 0, 1)
  push(input.speed ?? 0, 2)
  const io = input.io ?? []
  const nx = input.nx ?? []
  push(input.eventIoId ?? 0, wide ? 2 : 1)
  push(io.length + nx.length, wide ? 2 : 1)
  for (const width of [1, 2, 4, 8]) {
    const group = io.filter(([, w]) => w === width)
    push(group.length, wide ? 2 : 1)
    for (const [id, , value] of group) {
      push(id, wide ? 2 : 1)
      push(value, width)
    }
  }
  if (wide) {
    push(nx.length, 2)
    for (const [id, bytes] of nx) {
      push(id, 2)
      push(bytes.length, 2)
      parts.push(...bytes)
    }
  }
  return new Uint8Array(parts)
}

function dataOf(codecId: 0x08 | 0x8e, records: RecordInput[]): Uint8Array {
  return concat(
    new Uint8Array([codecId, records.length]),
    ...records.map((r) => recordBytes(r, codecId)),
    new Uint8Array([records.length]),
  )
}

function packets(items: TeltonikaStreamItem[]): TeltonikaPacket[] {
  return items.flatMap((item) => (item.kind === 'packet' ? [item.packet] : []))
}

function errors(items: TeltonikaStreamItem[]) {
  return items.flatMap((item) => (item.kind === 'error' ? [item.error] : []))
}

/** Split a full packet with a parser that has already seen the handshake. */
function splitOne(bytes: Uint8Array): TeltonikaPacket {
  const parser = createTeltonikaParser()
  parser.push(WIKI_IMEI)
  const items = parser.push(bytes)
  expect(errors(items)).toEqual([])
  const found = packets(items)
  expect(found).toHaveLength(1)
  return found[0]
}

function decodeFull(bytes: Uint8Array): Extract<TeltonikaDecodeResult, { kind: 'report' }> {
  const result = decodeTeltonikaPacket(splitOne(bytes).data, IMEI)
  if (result.kind !== 'report') throw new Error(`expected a report, got ${JSON.stringify(result)}`)
  return result
}

// ---- tests -----------------------------------------------------------------------------------

describe('Teltonika handshake and ACK helpers', () => {
  test('the wiki IMEI packet', () => {
    const parser = createTeltonikaParser()
    expect(parser.push(WIKI_IMEI)).toEqual([{ kind: 'imei', imei: IMEI }])
    expect(parser.imei).toBe(IMEI)
    expect(parser.bufferedBytes).toBe(0)
  })

  test('the IMEI split across chunks, followed by data in the same chunk', () => {
    const parser = createTeltonikaParser()
    expect(parser.push(WIKI_IMEI.subarray(0, 1))).toEqual([])
    expect(parser.push(WIKI_IMEI.subarray(1, 9))).toEqual([])
    const items = parser.push(concat(WIKI_IMEI.subarray(9), WIKI_CODEC8_1))
    expect(items.map((i) => i.kind)).toEqual(['imei', 'packet'])
  })

  test('accept / refuse bytes and the record-count ACK', () => {
    expect(toHex(teltonikaImeiResponse(true))).toBe('01')
    expect(toHex(teltonikaImeiResponse(false))).toBe('00')
    expect(toHex(buildTeltonikaAck(1))).toBe('00 00 00 01')
    expect(toHex(buildTeltonikaAck(0x1234))).toBe('00 00 12 34')
  })

  test('a handshake that is not digits is fatal', () => {
    const parser = createTeltonikaParser()
    const items = parser.push(hex('0003 414243'))
    expect(errors(items)).toEqual([expect.objectContaining({ code: 'bad_imei', fatal: true })])
    expect(parser.failed).toBe(true)
    expect(errors(parser.push(WIKI_CODEC8_1))).toEqual([expect.objectContaining({ code: 'bad_imei' })])
  })

  test('an absurd IMEI length is fatal at once (HTTP request on the Teltonika port)', () => {
    const parser = createTeltonikaParser()
    const items = parser.push(new TextEncoder().encode('GET / HTTP/1.1\r\n'))
    expect(errors(items)).toEqual([expect.objectContaining({ code: 'bad_imei', fatal: true })])
  })

  test('a zero IMEI length is fatal', () => {
    expect(errors(createTeltonikaParser().push(hex('0000')))).toEqual([expect.objectContaining({ code: 'bad_imei' })])
  })
})

describe('Teltonika Codec 8 (wiki examples)', () => {
  test('example 1: one record, GPS zeroed, IO elements of every width', () => {
    const packet = splitOne(WIKI_CODEC8_1)
    expect(packet.codecId).toBe(0x08)
    expect(packet.recordCount).toBe(1)
    const result = decodeTeltonikaPacket(packet.data, IMEI)
    if (result.kind !== 'report') throw new Error('expected report')
    expect(toHex(result.ack)).toBe('00 00 00 01')
    const [record] = result.records
    expect(record.timestampMs).toBe(0x16b40d8ea30)
    expect(record.priority).toBe(1)
    expect(record.eventIoId).toBe(1)
    expect([...record.io.entries()]).toEqual([
      [0x15, 3],
      [0x01, 1],
      [0x42, 0x5e0f],
      [0xf1, 0x601a],
      [0x4e, 0n],
    ])
    const [fix] = result.report.fixes
    expect(result.report.uniqueId).toBe(IMEI)
    expect(fix).toEqual({
      timestamp: Math.floor(0x16b40d8ea30 / 1000),
      latitude: 0,
      longitude: 0,
      speed: 0,
      course: 0,
      altitude: 0,
      satellites: 0,
      valid: false, // zero satellites
      attributes: {
        priority: 1,
        event_io: 1,
        gsm_signal: 3,
        din1: true,
        external_voltage: 24.079,
        operator: 24602,
        ibutton: null, // IO 78 sent as 0: no iButton attached
      },
    })
    expect(new Date(fix.timestamp * 1000).toISOString()).toBe('2019-06-10T10:04:46.000Z')
    expect(result.report.events).toEqual([])
  })

  test('example 2', () => {
    const result = decodeFull(WIKI_CODEC8_2)
    expect(result.report.fixes[0].attributes).toEqual({
      priority: 1,
      event_io: 1,
      gsm_signal: 3,
      din1: true,
      external_voltage: 24.08,
    })
  })

  test('example 3: two records, ACK counts both', () => {
    const result = decodeFull(WIKI_CODEC8_3)
    expect(result.records).toHaveLength(2)
    expect(toHex(result.ack)).toBe('00 00 00 02')
    expect(result.report.fixes.map((f) => f.attributes)).toEqual([
      { priority: 1, event_io: 1, din1: false },
      { priority: 1, event_io: 1, din1: true },
    ])
    expect(result.report.fixes[1].timestamp - result.report.fixes[0].timestamp).toBe(18)
  })
})

describe('Teltonika Codec 8 Extended and Codec 16', () => {
  test('wiki Codec 8E example: 2-byte IDs, N8 values, empty NX', () => {
    const result = decodeFull(WIKI_CODEC8E)
    expect(result.codecId).toBe(0x8e)
    expect(result.report.fixes[0].attributes).toEqual({
      priority: 1,
      event_io: 1,
      din1: true,
      axis_x: 0x1d,
      odometer: 0x015e2c88,
      iccid: '8937002180500686954', // ICCID1 0x3544C87A (893700218) + ICCID2 0x1DD7E06A (500686954)
    })
    expect(toHex(result.ack)).toBe('00 00 00 01')
  })

  test('Codec 8E NX values are kept as hex', () => {
    const data = dataOf(0x8e, [
      {
        timestampMs: 1_700_000_000_000,
        latitude: 54.6872,
        longitude: 25.2797,
        satellites: 7,
        io: [[385, 2, 0x0102]],
        nx: [[10_000, hex('DE AD BE EF')]],
      },
    ])
    const result = decodeFull(packetOf(data))
    expect(result.report.fixes[0].attributes).toMatchObject({ io385: 0x0102, io10000: 'deadbeef' })
  })

  test('wiki Codec 16 example: generation type and 2-byte IDs', () => {
    const result = decodeFull(WIKI_CODEC16)
    expect(result.codecId).toBe(0x10)
    expect(result.records.map((r) => r.generationType)).toEqual([5, 5])
    expect(result.report.fixes[0].attributes).toEqual({
      priority: 0,
      event_io: 11,
      generation_type: 5,
      din1: false,
      din3: false,
      io11: 0x27,
      external_voltage: 22.074,
    })
    expect(toHex(result.ack)).toBe('00 00 00 02')
  })
})

describe('Teltonika record mapping', () => {
  const base: RecordInput = {
    timestampMs: 1_700_000_123_456,
    priority: 0,
    latitude: 54.6872,
    longitude: 25.2797,
    altitude: 112,
    angle: 275,
    satellites: 11,
    speed: 57,
  }

  test('position, units and validity', () => {
    const fix = decodeFull(packetOf(dataOf(0x08, [base]))).report.fixes[0]
    expect(fix).toMatchObject({
      timestamp: 1_700_000_123,
      speed: 57,
      course: 275,
      altitude: 112,
      satellites: 11,
      valid: true,
    })
    expect(fix.latitude).toBeCloseTo(54.6872, 7)
    expect(fix.longitude).toBeCloseTo(25.2797, 7)
  })

  test('signed coordinates in all four hemispheres, negative altitude', () => {
    const places: Array<[number, number]> = [
      [54.6872, 25.2797],
      [40.7128, -74.006],
      [-33.8688, 151.2093],
      [-34.6037, -58.3816],
    ]
    for (const [latitude, longitude] of places) {
      const fix = decodeFull(packetOf(dataOf(0x08, [{ ...base, latitude, longitude, altitude: -28 }]))).report.fixes[0]
      expect(fix.latitude).toBeCloseTo(latitude, 7)
      expect(fix.longitude).toBeCloseTo(longitude, 7)
      expect(fix.altitude).toBe(-28)
    }
  })

  test('named IO attributes with unit conversions', () => {
    const io: RecordInput['io'] = [
      [239, 1, 1],
      [240, 1, 0],
      [21, 1, 4],
      [69, 1, 1],
      [1, 1, 1],
      [179, 1, 0],
      [200, 1, 0],
      [113, 1, 87],
      [66, 2, 12_850],
      [67, 2, 4_012],
      [68, 2, 250],
      [181, 2, 12],
      [182, 2, 9],
      [24, 2, 57],
      [205, 2, 0x1fb8],
      [206, 2, 0x287d],
      [16, 4, 123_456_789],
      [199, 4, 4_321],
      [241, 4, 310_410],
    ]
    const attributes = decodeFull(packetOf(dataOf(0x08, [{ ...base, io }]))).report.fixes[0].attributes
    expect(attributes).toEqual({
      priority: 0,
      ignition: true,
      movement: false,
      gsm_signal: 4,
      gnss_status: 1,
      din1: true,
      dout1: false,
      sleep_mode: 0,
      battery_level: 87,
      external_voltage: 12.85,
      battery_voltage: 4.012,
      battery_current: 0.25,
      pdop: 1.2,
      hdop: 0.9,
      gnss_speed: 57,
      cell_id: 0x1fb8,
      lac: 0x287d,
      odometer: 123_456_789,
      trip_odometer: 4_321,
      operator: 310_410,
    })
  })

  test('8-byte values beyond 2^53 are kept exactly as hex', () => {
    const io: RecordInput['io'] = [[100, 8, 0xfedcba9876543210n]]
    const attributes = decodeFull(packetOf(dataOf(0x08, [{ ...base, io }]))).report.fixes[0].attributes
    expect(attributes.io100).toBe('0xfedcba9876543210')
  })

  test('alarm IOs become events on the record they triggered', () => {
    const records: RecordInput[] = [
      { ...base, eventIoId: 247, io: [[247, 1, 1], [21, 1, 5], [241, 4, 24602]] },
      { ...base, eventIoId: 252, io: [[252, 1, 1]] },
      { ...base, eventIoId: 246, io: [[246, 1, 1]] },
      { ...base, eventIoId: 249, io: [[249, 1, 1]] },
      { ...base, eventIoId: 253, io: [[253, 1, 2], [254, 1, 180]] },
      { ...base, eventIoId: 318, io: [[318, 1, 2]], satellites: 0 },
      // not alarms: the value says "ended", or the IO only rides along on a periodic record
      { ...base, eventIoId: 252, io: [[252, 1, 0]] },
      { ...base, eventIoId: 0, io: [[247, 1, 1]] },
      { ...base, eventIoId: 239, io: [[239, 1, 1]] },
    ]
    const result = decodeFull(packetOf(dataOf(0x8e, records)))
    expect(result.report.fixes).toHaveLength(9)
    const events = result.report.events
    expect(events.map((e) => e.alarmCode)).toEqual([
      'crash',
      'power_cut',
      'towing',
      'jamming',
      'harsh_braking',
      'gnss_jamming',
    ])
    expect(events[0]).toMatchObject({
      timestamp: 1_700_000_123,
      speed: 57,
      satellites: 11,
      mcc: 246,
      mnc: 2,
      dbm: -75,
      context: { io_id: 247, io_value: 1, gps_valid: true, course: 275, altitude: 112, gsm_signal: 5, dbm_estimated: true },
    })
    expect(events[0].latitude).toBeCloseTo(54.6872, 7)
    expect(events[1]).toMatchObject({ mcc: null, mnc: null, dbm: null })
    expect(events[4].context).toMatchObject({ io_value: 2, green_driving_value: 1.8 }) // 180 × 0.01 g
    // no GPS fix: no coordinates on the event
    expect(events[5]).toMatchObject({ latitude: null, longitude: null, context: { io_value: 2, gps_valid: false } })
  })
})

describe('Teltonika FMB1xx IO elements: names, units, status', () => {
  const base: RecordInput = { timestampMs: 1_700_000_123_456, latitude: 54.6872, longitude: 25.2797, satellites: 9, speed: 40 }
  const decodeOne = (input: Partial<RecordInput>, codecId: 0x08 | 0x8e = 0x8e) =>
    decodeFull(packetOf(dataOf(codecId, [{ ...base, ...input }])))

  test('Dallas temperatures are signed tenths of °C; the documented error codes are no temperature', () => {
    const result = decodeOne({
      io: [
        [72, 4, -125], // -12.5 °C (sent as FFFFFF83)
        [73, 4, 215], // 21.5 °C
        [74, 4, 3000], // not connected
        [75, 4, 850], // sensor not ready
      ],
    })
    const { attributes } = result.report.fixes[0]
    expect(attributes).toMatchObject({ temperature1: -12.5, temperature2: 21.5, io74: 3000, io75: 850 })
    expect(attributes).not.toHaveProperty('temperature3')
    expect(result.statuses[0].attributes).toMatchObject({ temperature1: -12.5, temperature2: 21.5 })
    expect(result.records[0].io.get(72)).toBe(-125) // the raw element, signed as the table says
  })

  test('axis values are signed milli-g', () => {
    const { attributes } = decodeOne({ io: [[17, 2, -981], [18, 2, 12], [19, 2, 0xffff]] }).report.fixes[0]
    expect(attributes).toMatchObject({ axis_x: -981, axis_y: 12, axis_z: -1 })
  })

  test('iButton: 16 hex digits, 0 is none attached; an 8-byte id in fewer bytes stays raw', () => {
    expect(decodeOne({ io: [[78, 8, 0x01a2b3c4d5e6f708n]] }).statuses[0].attributes).toEqual({ ibutton: '01a2b3c4d5e6f708' })
    expect(decodeOne({ io: [[78, 8, 0n]] }).report.fixes[0].attributes).toMatchObject({ ibutton: null })
    expect(decodeOne({ io: [[78, 2, 0x1234]] }).report.fixes[0].attributes).toMatchObject({ io78: 0x1234 })
  })

  test('ICCID from its two parts (the second holds the last 10 digits, leading zeros restored)', () => {
    const result = decodeOne({ io: [[11, 8, 8_937_002_180n], [14, 8, 123_456n]] })
    expect(result.report.fixes[0].attributes).toMatchObject({ iccid: '89370021800000123456' })
    expect(result.report.fixes[0].attributes).not.toHaveProperty('io11')
    expect(result.statuses[0].attributes).toEqual({ iccid: '89370021800000123456' })
    // one part alone is not an ICCID: kept raw
    expect(decodeOne({ io: [[11, 8, 893_700_218n]] }).report.fixes[0].attributes).toMatchObject({ io11: 893_700_218 })
  })

  test('a flag that is not 0/1 keeps its raw value; voltages, currents and inputs convert', () => {
    const result = decodeOne({
      io: [
        [239, 1, 2],
        [1, 1, 1],
        [2, 1, 0],
        [3, 1, 1],
        [180, 1, 1],
        [9, 2, 4_850],
        [6, 2, 120],
        [237, 1, 2],
        [248, 1, 2],
        [303, 1, 1],
        [80, 1, 3],
      ],
    })
    expect(result.report.fixes[0].attributes).toMatchObject({
      io239: 2,
      din1: true,
      din2: false,
      din3: true,
      dout2: true,
      ain1: 4.85,
      ain2: 0.12,
      network_type: 2,
      immobilizer: 2,
      instant_movement: true,
      data_mode: 3,
    })
    expect(result.statuses[0].attributes).not.toHaveProperty('ignition')
    expect(result.statuses[0].attributes).not.toHaveProperty('instant_movement') // about the fix, not the device
  })

  test('status: external power from the unplug element, only when the record has it', () => {
    const plugged = decodeOne({ eventIoId: 252, io: [[252, 1, 0], [66, 2, 13_100]] })
    expect(plugged.statuses[0].attributes).toEqual({ external_power: true, external_voltage: 13.1 })
    const unplugged = decodeOne({ eventIoId: 252, io: [[252, 1, 1], [66, 2, 0]] })
    expect(unplugged.statuses[0].attributes).toEqual({ external_power: false, external_voltage: 0 })
    expect(decodeOne({ io: [[66, 2, 13_100]] }).statuses[0].attributes).toEqual({ external_voltage: 13.1 })
  })

  test('one status a record, in record order, at the record\'s time', () => {
    const data = dataOf(0x08, [
      { ...base, timestampMs: 1_700_000_000_000, io: [[239, 1, 0], [16, 4, 1_000]] },
      { ...base, timestampMs: 1_700_000_060_000, io: [[239, 1, 1], [16, 4, 1_450]] },
    ])
    expect(decodeFull(packetOf(data)).statuses).toEqual([
      { timestamp: 1_700_000_000, attributes: { ignition: false, odometer: 1_000 } },
      { timestamp: 1_700_000_060, attributes: { ignition: true, odometer: 1_450 } },
    ])
  })

  test('idling and over-speeding become events on their own records only', () => {
    const result = decodeFull(
      packetOf(
        dataOf(0x8e, [
          { ...base, eventIoId: 251, io: [[251, 1, 1]] },
          { ...base, eventIoId: 251, io: [[251, 1, 0]] }, // idling ended
          { ...base, eventIoId: 255, speed: 97, io: [[255, 1, 97]] },
          { ...base, eventIoId: 0, io: [[255, 1, 97], [251, 1, 1]] }, // riding along on a periodic record
          { ...base, eventIoId: 236, io: [[236, 1, 1]] },
        ]),
      ),
    )
    expect(result.report.events.map((e) => [e.alarmCode, e.context.io_value])).toEqual([
      ['idling', 1],
      ['overspeed', 97],
      ['sos', 1],
    ])
    expect(result.report.fixes[2].attributes).toMatchObject({ overspeeding: 97 })
  })
})

describe('Teltonika invalid packets', () => {
  test('unknown codec is rejected cleanly, with no ACK', () => {
    for (const codecId of [0x00, 0x09, 0x0f, 0x42]) {
      const result = decodeTeltonikaPacket(new Uint8Array([codecId, 1, 0, 1]), IMEI)
      expect(result).toMatchObject({ kind: 'invalid', reason: 'unsupported_codec', codecId, ack: null })
    }
  })

  test('a Codec 12 packet splits like any other and is a command answer, not a report', () => {
    const data = hex('0C 01 06 00000005 68656C6C6F 01') // codec 12, 1 response "hello"
    const packet = splitOne(packetOf(data))
    expect(packet.codecId).toBe(0x0c)
    expect(decodeTeltonikaPacket(packet.data, IMEI)).toMatchObject({ kind: 'command_answer', commandAnswer: { text: 'hello' }, ack: null })
  })

  test('Codec 12/13/14 whose sizes do not add up, or device-side types that do not exist, are refused', () => {
    const cases: Array<[string, string]> = [
      ['0C 01 06 00000006 68656C6C6F 01', 'malformed'], // size 6, 5 bytes
      ['0C 01 06 00000004 68656C6C6F 01', 'malformed'], // size 4, 5 bytes
      ['0C 01 0D 00000001 00 01', 'unsupported_message'], // camera type 0x0D
      ['0D 01 06 00000007 64E83281 68656C6C6F 01', 'malformed'], // 7: neither 9 (time + text) nor 5 (text)
      ['0D 01 06 00000002 6481 01', 'malformed'], // shorter than its timestamp
      ['0D 01 07 00000004 64E83281 01', 'unsupported_message'],
      ['0E 01 06 00000004 03520930 01', 'malformed'], // shorter than its IMEI
      ['0E 01 06 00000008 0352093A81452251 01', 'malformed'], // IMEI nibble A
      ['0E 01 05 00000008 0352093081452251 01', 'unsupported_message'], // a command, not an answer
      ['0C 01 06 000000', 'malformed'], // cut inside the size
    ]
    for (const [data, reason] of cases) {
      expect({ data, result: decodeTeltonikaPacket(hex(data), IMEI) }).toMatchObject({ data, result: { kind: 'invalid', reason, ack: null } })
    }
  })

  test('Codec 13 with an empty text, and a Codec 14 IMEI that begins with 0', () => {
    expect(decodeTeltonikaPacket(hex('0D 01 06 00000004 64E83281 01'), IMEI)).toMatchObject({
      kind: 'command_answer',
      commandAnswer: { text: '', timestamp: 0x64e83281 },
    })
    expect(decodeTeltonikaPacket(hex('0E 01 06 0000000A 0012345678901234 4F4B 01'), IMEI)).toMatchObject({
      kind: 'command_answer',
      commandAnswer: { imei: '012345678901234', text: 'OK', executed: true },
    })
  })

  test('number of data 2 must match number of data 1', () => {
    const data = dataOf(0x08, [{ timestampMs: 0, latitude: 0, longitude: 0 }])
    data[data.length - 1] = 2
    expect(decodeTeltonikaPacket(data, IMEI)).toMatchObject({ kind: 'invalid', reason: 'malformed', ack: null })
  })

  test('truncated records and trailing bytes are malformed', () => {
    const data = WIKI_CODEC8_1.subarray(8, WIKI_CODEC8_1.length - 4)
    expect(decodeTeltonikaPacket(data.subarray(0, 20), IMEI)).toMatchObject({ kind: 'invalid', reason: 'malformed' })
    expect(decodeTeltonikaPacket(concat(data, hex('00')), IMEI)).toMatchObject({ kind: 'invalid', reason: 'malformed' })
    expect(decodeTeltonikaPacket(new Uint8Array(0), IMEI)).toMatchObject({ kind: 'invalid', reason: 'unsupported_codec' })
  })
})

describe('Teltonika stream splitter', () => {
  // keep-alive bytes where devices send them: before the IMEI and between packets
  const stream = concat(hex('FF'), WIKI_IMEI, WIKI_CODEC8_1, hex('FF'), WIKI_CODEC8E, WIKI_CODEC16)

  test('coalesced packets in one chunk', () => {
    const parser = createTeltonikaParser()
    const items = parser.push(stream)
    expect(items.map((i) => i.kind)).toEqual(['keepalive', 'imei', 'packet', 'keepalive', 'packet', 'packet'])
    expect(packets(items).map((p) => p.codecId)).toEqual([0x08, 0x8e, 0x10])
    expect(parser.bufferedBytes).toBe(0)
  })

  test('every split point gives the same items', () => {
    const expected = createTeltonikaParser().push(stream)
    for (let cut = 1; cut < stream.length; cut++) {
      const parser = createTeltonikaParser()
      expect([...parser.push(stream.subarray(0, cut)), ...parser.push(stream.subarray(cut))]).toEqual(expected)
    }
  })

  test('one byte at a time', () => {
    const parser = createTeltonikaParser()
    const items: TeltonikaStreamItem[] = []
    for (const byte of stream) items.push(...parser.push(new Uint8Array([byte])))
    expect(items).toEqual(createTeltonikaParser().push(stream))
  })

  test('garbage between packets is skipped and reported', () => {
    const parser = createTeltonikaParser()
    parser.push(WIKI_IMEI)
    const items = parser.push(concat(hex('42'), WIKI_CODEC8_1, hex('12 34 00 00'), WIKI_CODEC8_2))
    expect(packets(items)).toHaveLength(2)
    expect(errors(items).map((e) => (e.code === 'garbage' ? e.skippedBytes : e.code))).toEqual([1, 4])
  })

  test('0xFF inside garbage is garbage; only at a packet boundary is it a keep-alive', () => {
    const parser = createTeltonikaParser()
    parser.push(WIKI_IMEI)
    const items = parser.push(concat(hex('FF FF'), WIKI_CODEC8_1, hex('12 FF 34'), WIKI_CODEC8_2, hex('FF')))
    expect(items.map((i) => i.kind)).toEqual(['keepalive', 'packet', 'error', 'packet', 'keepalive'])
    expect(items[0]).toEqual({ kind: 'keepalive', bytes: 2 })
    expect(errors(items)).toEqual([expect.objectContaining({ code: 'garbage', skippedBytes: 3 })])
  })

  test('zeros in garbage that look like a preamble do not swallow the next packet', () => {
    const parser = createTeltonikaParser()
    parser.push(WIKI_IMEI)
    // "00 00 00 00 00 00 01 00" announces 256 bytes that never come; the real packet follows.
    const items = parser.push(concat(hex('00 00 00 00 00 00 01 00'), WIKI_CODEC8_2))
    expect(packets(items)).toHaveLength(1)
    expect(parser.bufferedBytes).toBe(0)
  })

  test('a false preamble with a short length hiding a real packet', () => {
    const parser = createTeltonikaParser()
    parser.push(WIKI_IMEI)
    // announces 20 data bytes: complete at once, CRC wrong; the real packet starts inside it
    const items = parser.push(concat(hex('00 00 00 00 00 00 00 14'), WIKI_CODEC8_2))
    expect(packets(items)).toHaveLength(1)
    expect(errors(items).map((e) => e.code)).toEqual(['garbage'])
  })

  test('a run of zeros is garbage, not a packet', () => {
    const parser = createTeltonikaParser()
    parser.push(WIKI_IMEI)
    const items = parser.push(concat(new Uint8Array(16), WIKI_CODEC8_2))
    expect(packets(items)).toHaveLength(1)
  })

  test('bad CRC: dropped and reported, the next packet still splits', () => {
    const corrupted = WIKI_CODEC8_1.slice()
    corrupted[20] ^= 0x01
    const parser = createTeltonikaParser()
    parser.push(WIKI_IMEI)
    const items = parser.push(concat(corrupted, WIKI_CODEC8_2))
    expect(errors(items)).toEqual([expect.objectContaining({ code: 'bad_crc', fatal: false, received: 0xc7cf })])
    expect(packets(items)).toHaveLength(1)
  })

  test('the CRC field\'s high two bytes must be zero, as the wiki gives them', () => {
    const altered = WIKI_CODEC8_2.slice()
    altered[altered.length - 4] = 0x01
    const parser = createTeltonikaParser()
    parser.push(WIKI_IMEI)
    const items = parser.push(altered)
    expect(errors(items)).toEqual([expect.objectContaining({ code: 'bad_crc', expected: 0xf22a, received: 0x0100f22a })])
    expect(packets(items)).toEqual([])
  })

  test('a truncated packet waits for the rest', () => {
    const parser = createTeltonikaParser()
    parser.push(WIKI_IMEI)
    expect(parser.push(WIKI_CODEC8_1.subarray(0, 30))).toEqual([])
    expect(parser.bufferedBytes).toBe(30)
    expect(packets(parser.push(WIKI_CODEC8_1.subarray(30)))).toHaveLength(1)
  })

  test('an oversized data length is fatal', () => {
    const parser = createTeltonikaParser()
    parser.push(WIKI_IMEI)
    const items = parser.push(hex('00000000 00010001 08'))
    expect(errors(items)).toEqual([
      expect.objectContaining({ code: 'packet_too_large', fatal: true, declaredBytes: 65537, maxBytes: TELTONIKA_DEFAULT_MAX_PACKET_BYTES }),
    ])
    expect(parser.failed).toBe(true)
    expect(parser.bufferedBytes).toBe(0)
  })

  test('the cap is configurable', () => {
    const parser = createTeltonikaParser({ maxPacketBytes: 32 })
    parser.push(WIKI_IMEI)
    expect(errors(parser.push(WIKI_CODEC8_1))).toEqual([expect.objectContaining({ code: 'packet_too_large' })])
  })

  test('property: random bytes never throw and stay bounded', () => {
    const random = seededRandom(0x7e17)
    for (let run = 0; run < 300; run++) {
      const parser = createTeltonikaParser()
      parser.push(WIKI_IMEI)
      for (let chunk = 0; chunk < 20 && !parser.failed; chunk++) {
        const bytes = new Uint8Array(Math.floor(random() * 200))
        for (let i = 0; i < bytes.length; i++) bytes[i] = random() < 0.4 ? 0 : Math.floor(random() * 256)
        if (random() < 0.3) bytes.set(WIKI_CODEC8_1.subarray(0, Math.min(bytes.length, WIKI_CODEC8_1.length)))
        for (const packet of packets(parser.push(bytes))) decodeTeltonikaPacket(packet.data, IMEI)
        expect(parser.bufferedBytes).toBeLessThanOrEqual(TELTONIKA_DEFAULT_MAX_PACKET_BYTES + 12)
      }
    }
  })

  test('property: random handshakes never throw', () => {
    const random = seededRandom(99)
    for (let run = 0; run < 500; run++) {
      const bytes = new Uint8Array(Math.floor(random() * 40))
      for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256)
      createTeltonikaParser().push(bytes)
    }
  })

  test('property: random data fields never throw in the decoder', () => {
    const random = seededRandom(7)
    for (let run = 0; run < 3000; run++) {
      const data = new Uint8Array(Math.floor(random() * 120))
      for (let i = 0; i < data.length; i++) data[i] = random() < 0.5 ? Math.floor(random() * 4) : Math.floor(random() * 256)
      if (data.length > 0) data[0] = [0x08, 0x8e, 0x10][run % 3]
      const result = decodeTeltonikaPacket(data, IMEI)
      expect(['report', 'invalid']).toContain(result.kind)
    }
  })
})
