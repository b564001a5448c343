import { describe, expect, test } from 'bun:test'
import { crc16X25 } from '../../../../src/ingest/protocols/crc'
import { decodeGt06Frame, gt06AlarmCode, type Gt06Message, type Gt06Session } from '../../../../src/ingest/protocols/gt06/decoder'
import { createGt06Parser, GT06_DEFAULT_MAX_BUFFERED_BYTES, type Gt06Frame, type Gt06StreamItem } from '../../../../src/ingest/protocols/gt06/framing'
import { buildGt06Ack, buildGt06Frame, buildGt06TimeResponse } from '../../../../src/ingest/protocols/gt06/replies'
import { concat, hex, seededRandom, toHex } from '../helpers'

// ---- vectors from public documents -----------------------------------------------------------

/** GT06 protocol document, login example (IMEI 123456789012345, serial 1). */
const DOC_LOGIN = hex('78 78 0D 01 01 23 45 67 89 01 23 45 00 01 8C DD 0D 0A')
/** GT06 protocol document, the server's login response to it. */
const DOC_LOGIN_RESPONSE = hex('78 78 05 01 00 01 D9 DC 0D 0A')
/**
 * A GT06 status packet captured from a device, quoted on the Traccar forum ("Differences in alarm
 * report (protocol GT06)"): terminal info 0x40, voltage level 5, GSM level 3, alarm 0x02 (power
 * cut), language 0x01, serial 0x0074, CRC 0x1C3B.
 */
const FORUM_STATUS = hex('78 78 0a 13 40 05 03 02 01 00 74 1c 3b 0d 0a')

const IMEI = '123456789012345'
const LOGGED_IN: Gt06Session = { imei: IMEI }

// ---- builders for hand-made vectors ----------------------------------------------------------

interface GpsInput {
  /** [YY, MM, DD, hh, mm, ss] */
  date: number[]
  satellites: number
  latitude: number
  longitude: number
  speed: number
  course: number
  positioned?: boolean
}

/** The 18-byte GPS block: date, GPS info, lat, lon, speed, course/status. */
function gpsBlock(input: GpsInput): Uint8Array {
  const latitude = Math.round(Math.abs(input.latitude) * 1_800_000)
  const longitude = Math.round(Math.abs(input.longitude) * 1_800_000)
  let courseStatus = input.course & 0x3ff
  if (input.positioned ?? true) courseStatus |= 0x1000
  if (input.longitude < 0) courseStatus |= 0x0800
  if (input.latitude >= 0) courseStatus |= 0x0400
  const out = new Uint8Array(18)
  out.set(input.date, 0)
  out[6] = 0xc0 | input.satellites
  new DataView(out.buffer).setUint32(7, latitude)
  new DataView(out.buffer).setUint32(11, longitude)
  out[15] = input.speed
  new DataView(out.buffer).setUint16(16, courseStatus)
  return out
}

/** MCC 460 (0x01CC), MNC 0, LAC 0x287D, cell 0x001FB8 */
const CELL = hex('01 CC 00 28 7D 00 1F B8')

const PARIS: GpsInput = {
  date: [24, 3, 15, 8, 30, 5],
  satellites: 9,
  latitude: 48.8566,
  longitude: 2.3522,
  speed: 42,
  course: 271,
}
const PARIS_TS = Date.UTC(2024, 2, 15, 8, 30, 5) / 1000

function frameOf(bytes: Uint8Array): Gt06Frame {
  const items = createGt06Parser().push(bytes)
  expect(items).toHaveLength(1)
  const item = items[0]
  if (item.kind !== 'frame') throw new Error(`expected a frame, got ${JSON.stringify(item)}`)
  return item.frame
}

function decodeBytes(bytes: Uint8Array, session: Gt06Session = LOGGED_IN, now?: number): Gt06Message {
  return decodeGt06Frame(frameOf(bytes), session, now === undefined ? {} : { now })
}

function frames(items: Gt06StreamItem[]): Gt06Frame[] {
  return items.flatMap((item) => (item.kind === 'frame' ? [item.frame] : []))
}

function errors(items: Gt06StreamItem[]) {
  return items.flatMap((item) => (item.kind === 'error' ? [item.error] : []))
}

/** A hand-built 0x7979 frame (2-byte length). */
function longFrame(protocol: number, content: Uint8Array, serial: number): Uint8Array {
  const lengthField = 5 + content.length
  const frame = new Uint8Array(lengthField + 6)
  frame.set([0x79, 0x79, lengthField >> 8, lengthField & 0xff, protocol], 0)
  frame.set(content, 5)
  const serialOffset = 5 + content.length
  frame[serialOffset] = serial >> 8
  frame[serialOffset + 1] = serial & 0xff
  const crc = crc16X25(frame, 2, serialOffset + 2)
  frame.set([crc >> 8, crc & 0xff, 0x0d, 0x0a], serialOffset + 2)
  return frame
}

// ---- tests -----------------------------------------------------------------------------------

describe('GT06 login (0x01)', () => {
  test('document example decodes to the 15-digit IMEI and the documented response', () => {
    const frame = frameOf(DOC_LOGIN)
    expect(frame).toEqual({ longFrame: false, protocol: 0x01, content: hex('01 23 45 67 89 01 23 45'), serial: 1 })
    const message = decodeGt06Frame(frame, { imei: null })
    expect(message.kind).toBe('login')
    if (message.kind !== 'login') return
    expect(message.imei).toBe(IMEI)
    expect(toHex(message.ack)).toBe(toHex(DOC_LOGIN_RESPONSE))
  })

  test('buildGt06Ack reproduces the documented login response', () => {
    expect(toHex(buildGt06Ack(0x01, 1))).toBe(toHex(DOC_LOGIN_RESPONSE))
  })

  test('a terminal ID that is not BCD is malformed', () => {
    const message = decodeBytes(buildGt06Frame(0x01, hex('0A 23 45 67 89 01 23 45'), 1), { imei: null })
    expect(message).toMatchObject({ kind: 'invalid', reason: 'malformed' })
  })

  test('a short terminal ID is malformed', () => {
    const message = decodeBytes(buildGt06Frame(0x01, hex('01 23 45'), 1), { imei: null })
    expect(message).toMatchObject({ kind: 'invalid', reason: 'malformed' })
  })
})

describe('GT06 location (0x12 / 0x22)', () => {
  test('0x12 decodes time, position, speed, course, satellites and cell', () => {
    const message = decodeBytes(buildGt06Frame(0x12, concat(gpsBlock(PARIS), CELL), 7))
    expect(message.kind).toBe('report')
    if (message.kind !== 'report') return
    expect(message.ack).toBeNull() // location data is not acknowledged
    expect(message.report.uniqueId).toBe(IMEI)
    expect(message.report.events).toEqual([])
    const [fix] = message.report.fixes
    expect(fix.timestamp).toBe(PARIS_TS)
    expect(fix.latitude).toBeCloseTo(48.8566, 6)
    expect(fix.longitude).toBeCloseTo(2.3522, 6)
    expect(fix.speed).toBe(42)
    expect(fix.course).toBe(271)
    expect(fix.satellites).toBe(9)
    expect(fix.altitude).toBeNull()
    expect(fix.valid).toBe(true)
    expect(fix.attributes).toEqual({ mcc: 460, mnc: 0, lac: 0x287d, cell_id: 0x1fb8, gps_differential: false })
  })

  test('hemisphere bits give the sign in all four quadrants', () => {
    const places: Array<[number, number]> = [
      [48.8566, 2.3522], // N, E: Paris
      [40.7128, -74.006], // N, W: New York
      [-33.8688, 151.2093], // S, E: Sydney
      [-34.6037, -58.3816], // S, W: Buenos Aires
    ]
    for (const [latitude, longitude] of places) {
      const bytes = buildGt06Frame(0x12, concat(gpsBlock({ ...PARIS, latitude, longitude }), CELL), 1)
      const message = decodeBytes(bytes)
      if (message.kind !== 'report') throw new Error('expected report')
      expect(message.report.fixes[0].latitude).toBeCloseTo(latitude, 6)
      expect(message.report.fixes[0].longitude).toBeCloseTo(longitude, 6)
    }
  })

  test('course/status bit 12 clear → fix not valid; bit 13 → differential', () => {
    const block = gpsBlock({ ...PARIS, positioned: false })
    block[16] |= 0x20 // differential positioning
    const message = decodeBytes(buildGt06Frame(0x12, concat(block, CELL), 1))
    if (message.kind !== 'report') throw new Error('expected report')
    expect(message.report.fixes[0].valid).toBe(false)
    expect(message.report.fixes[0].attributes.gps_differential).toBe(true)
  })

  test('0x22 adds ignition, upload mode, re-upload flag and optional mileage', () => {
    const tail = hex('01 03 01 00 01 E2 40') // ACC on, mode 3, re-upload, mileage 123456 m
    const message = decodeBytes(buildGt06Frame(0x22, concat(gpsBlock(PARIS), CELL, tail), 2))
    if (message.kind !== 'report') throw new Error('expected report')
    expect(message.ack).toBeNull()
    expect(message.report.fixes[0].attributes).toMatchObject({
      ignition: true,
      upload_mode: 3,
      reupload: true,
      odometer: 123456,
    })
  })

  test('0x22 without mileage', () => {
    const message = decodeBytes(buildGt06Frame(0x22, concat(gpsBlock(PARIS), CELL, hex('00 00 00')), 2))
    if (message.kind !== 'report') throw new Error('expected report')
    const attributes = message.report.fixes[0].attributes
    expect(attributes).toMatchObject({ ignition: false, upload_mode: 0, reupload: false })
    expect('odometer' in attributes).toBe(false)
  })

  test('MCC bit 15 announces a 2-byte MNC', () => {
    const cell = hex('81 CC 01 0A 28 7D 00 1F B8') // MCC 460, MNC 266
    const message = decodeBytes(buildGt06Frame(0x12, concat(gpsBlock(PARIS), cell), 1))
    if (message.kind !== 'report') throw new Error('expected report')
    expect(message.report.fixes[0].attributes).toMatchObject({ mcc: 460, mnc: 266, lac: 0x287d })
  })

  test('truncated content is malformed, not a throw', () => {
    const message = decodeBytes(buildGt06Frame(0x12, gpsBlock(PARIS).subarray(0, 10), 1))
    expect(message).toMatchObject({ kind: 'invalid', reason: 'malformed', ack: null })
  })

  test('a report before login is refused', () => {
    const message = decodeBytes(buildGt06Frame(0x12, concat(gpsBlock(PARIS), CELL), 1), { imei: null })
    expect(message).toMatchObject({ kind: 'invalid', reason: 'not_logged_in', ack: null })
  })

  test('an impossible date is malformed without a clock, server time with one', () => {
    const block = gpsBlock({ ...PARIS, date: [0, 0, 0, 0, 0, 0] })
    const bytes = buildGt06Frame(0x12, concat(block, CELL), 1)
    expect(decodeBytes(bytes)).toMatchObject({ kind: 'invalid', reason: 'malformed' })
    const message = decodeBytes(bytes, LOGGED_IN, 1_700_000_000)
    if (message.kind !== 'report') throw new Error('expected report')
    expect(message.report.fixes[0].timestamp).toBe(1_700_000_000)
    expect(message.report.fixes[0].attributes.time_source).toBe('server')
  })

  test('31 February is not silently rolled into March', () => {
    const bytes = buildGt06Frame(0x12, concat(gpsBlock({ ...PARIS, date: [24, 2, 31, 0, 0, 0] }), CELL), 1)
    expect(decodeBytes(bytes)).toMatchObject({ kind: 'invalid', reason: 'malformed' })
  })
})

describe('GT06 status (0x13 / 0x23)', () => {
  test('forum capture: terminal info, levels, alarm and ACK', () => {
    const frame = frameOf(FORUM_STATUS)
    expect(frame.serial).toBe(0x74)
    const message = decodeGt06Frame(frame, LOGGED_IN)
    expect(message.kind).toBe('status')
    if (message.kind !== 'status') return
    expect(message.uniqueId).toBe(IMEI)
    expect(message.attributes).toEqual({
      immobilized: false,
      gps_tracking: true,
      terminal_alarm: null,
      charging: false,
      ignition: false,
      armed: false,
      voltage_level: 5,
      gsm_signal: 3,
      language: 1,
      alarm: 'power_cut',
    })
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x13, 0x74)))
  })

  test('every terminal info bit', () => {
    // 1 1 100 1 1 1: immobilised, tracking, SOS, charging, ACC high, armed
    const message = decodeBytes(buildGt06Frame(0x13, hex('E7 06 04 00 02'), 9))
    if (message.kind !== 'status') throw new Error('expected status')
    expect(message.attributes).toEqual({
      immobilized: true,
      gps_tracking: true,
      terminal_alarm: 'sos',
      charging: true,
      ignition: true,
      armed: true,
      voltage_level: 6,
      gsm_signal: 4,
      language: 2,
    })
  })

  test('terminal alarm bits: vibration, power cut, low battery', () => {
    const codes = [0b001, 0b010, 0b011].map((bits) => {
      const message = decodeBytes(buildGt06Frame(0x13, new Uint8Array([bits << 3, 4, 4, 0, 2]), 1))
      return message.kind === 'status' ? message.attributes.terminal_alarm : null
    })
    expect(codes).toEqual(['vibration', 'power_cut', 'low_battery'])
  })

  test('status without the alarm/language bytes', () => {
    const message = decodeBytes(buildGt06Frame(0x13, hex('02 04 03'), 1))
    expect(message).toMatchObject({ kind: 'status', attributes: { ignition: true, voltage_level: 4, gsm_signal: 3 } })
  })

  test('0x23 heartbeat carries a battery voltage in hundredths of a volt', () => {
    const message = decodeBytes(buildGt06Frame(0x23, hex('46 01 9A 04 00 02'), 5))
    if (message.kind !== 'status') throw new Error('expected status')
    expect(message.attributes).toMatchObject({ ignition: true, charging: true, battery_voltage: 4.1, gsm_signal: 4 })
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x23, 5)))
  })
})

describe('GT06 alarm (0x16 / 0x26)', () => {
  /** LBS length 9 + cell, terminal info, voltage, GSM level, alarm, language */
  function alarmContent(gps: GpsInput, info: number, alarmByte: number, gsm = 4): Uint8Array {
    return concat(gpsBlock(gps), hex('09'), CELL, new Uint8Array([info, 5, gsm, alarmByte, 0x02]))
  }

  test('SOS: event with coordinates, cell, estimated dBm; fix; ACK echoing protocol and serial', () => {
    const bytes = buildGt06Frame(0x16, alarmContent(PARIS, 0x46, 0x01), 0x0102)
    expect(bytes[2]).toBe(0x25) // the documented length of an alarm packet
    const message = decodeBytes(bytes)
    if (message.kind !== 'report') throw new Error('expected report')
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x16, 0x0102)))
    const [event] = message.report.events
    expect(event.alarmCode).toBe('sos')
    expect(event.timestamp).toBe(PARIS_TS)
    expect(event.latitude).toBeCloseTo(48.8566, 6)
    expect(event.longitude).toBeCloseTo(2.3522, 6)
    expect(event.speed).toBe(42)
    expect(event.satellites).toBe(9)
    expect(event.mcc).toBe(460)
    expect(event.mnc).toBe(0)
    expect(event.dbm).toBe(-75)
    expect(event.context).toMatchObject({
      alarm_byte: 1,
      gps_valid: true,
      lac: 0x287d,
      cell_id: 0x1fb8,
      ignition: true,
      charging: true,
      gps_tracking: true,
      voltage_level: 5,
      gsm_signal: 4,
      dbm_estimated: true,
      language: 2,
    })
    expect(message.report.fixes).toHaveLength(1)
    expect(message.report.fixes[0].attributes).toMatchObject({ alarm: 'sos', ignition: true })
  })

  test('0x26 (UTC alarm) decodes the same way and is acknowledged with 0x26', () => {
    const message = decodeBytes(buildGt06Frame(0x26, alarmContent(PARIS, 0x00, 0x06, 2), 3))
    if (message.kind !== 'report') throw new Error('expected report')
    expect(message.report.events[0].alarmCode).toBe('overspeed')
    expect(message.report.events[0].dbm).toBe(-97)
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x26, 3)))
  })

  test('without a GPS lock: event without coordinates, no fix', () => {
    const message = decodeBytes(buildGt06Frame(0x16, alarmContent({ ...PARIS, positioned: false }, 0, 0x02), 1))
    if (message.kind !== 'report') throw new Error('expected report')
    expect(message.report.fixes).toEqual([])
    expect(message.report.events[0]).toMatchObject({ alarmCode: 'power_cut', latitude: null, longitude: null })
    expect(message.report.events[0].context.gps_valid).toBe(false)
  })

  test('alarm byte 0 falls back to the terminal-info alarm bits', () => {
    const message = decodeBytes(buildGt06Frame(0x16, alarmContent(PARIS, 0b100 << 3, 0x00), 1))
    if (message.kind !== 'report') throw new Error('expected report')
    expect(message.report.events.map((e) => e.alarmCode)).toEqual(['sos'])
  })

  test('no alarm at all: just the fix, still acknowledged', () => {
    const message = decodeBytes(buildGt06Frame(0x16, alarmContent(PARIS, 0x40, 0x00), 1))
    if (message.kind !== 'report') throw new Error('expected report')
    expect(message.report.events).toEqual([])
    expect(message.report.fixes).toHaveLength(1)
    expect(message.ack).not.toBeNull()
  })

  test('an alarm byte the table does not name is the generic `alarm`, the byte in its context as raw_alarm', () => {
    const message = decodeBytes(buildGt06Frame(0x16, alarmContent(PARIS, 0, 0x77), 1))
    if (message.kind !== 'report') throw new Error('expected report')
    expect(message.report.events).toHaveLength(1)
    expect(message.report.events[0]).toMatchObject({ alarmCode: 'alarm', context: { raw_alarm: '0x77', alarm_byte: 0x77 } })
    expect(message.report.fixes[0].attributes.alarm).toBe('alarm')
    // a named byte carries no raw code
    const named = decodeBytes(buildGt06Frame(0x16, alarmContent(PARIS, 0, 0x01), 2))
    if (named.kind !== 'report') throw new Error('expected report')
    expect(named.report.events[0].alarmCode).toBe('sos')
    expect(named.report.events[0].context).not.toHaveProperty('raw_alarm')
  })

  test('a longer LBS block (as its length byte says) is skipped, not misread', () => {
    const content = concat(gpsBlock(PARIS), hex('0B'), CELL, hex('AA BB'), new Uint8Array([0x02, 3, 1, 0x03, 0x01]))
    const message = decodeBytes(buildGt06Frame(0x16, content, 1))
    if (message.kind !== 'report') throw new Error('expected report')
    expect(message.report.events[0]).toMatchObject({ alarmCode: 'vibration', dbm: -104 })
    expect(message.report.events[0].context).toMatchObject({ ignition: true, voltage_level: 3 })
  })

  test('the whole alarm table (VL03 doc), and `alarm` for the rest', () => {
    const table = Object.fromEntries(
      [
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
        0x16, 0x17, 0x18, 0x19, 0x20, 0x23, 0x25, 0x29, 0x2a, 0x2b, 0x2c, 0x30, 0x32, 0xfe, 0xff, 0x1a, 0x77,
      ].map((b) => [`0x${b.toString(16).padStart(2, '0')}`, gt06AlarmCode(b)]),
    )
    expect(table).toEqual({
      '0x01': 'sos',
      '0x02': 'power_cut',
      '0x03': 'vibration',
      '0x04': 'geofence_enter',
      '0x05': 'geofence_exit',
      '0x06': 'overspeed',
      '0x09': 'movement',
      '0x0a': 'gps_blind_spot_enter',
      '0x0b': 'gps_blind_spot_exit',
      '0x0c': 'tamper',
      '0x0d': 'gps_first_fix',
      '0x0e': 'low_battery',
      '0x0f': 'low_battery',
      '0x10': 'sim_change',
      '0x11': 'power_off',
      '0x12': 'airplane_mode',
      '0x13': 'tamper',
      '0x14': 'door',
      '0x15': 'power_off',
      '0x16': 'sound',
      '0x17': 'rogue_base_station',
      '0x18': 'cover_open',
      '0x19': 'low_battery',
      '0x20': 'deep_sleep',
      '0x23': 'fall',
      '0x25': 'tamper',
      '0x29': 'harsh_acceleration',
      '0x2a': 'harsh_cornering',
      '0x2b': 'harsh_cornering',
      '0x2c': 'collision',
      '0x30': 'harsh_braking',
      '0x32': 'power_cut',
      '0xfe': 'ignition_on',
      '0xff': 'ignition_off',
      '0x1a': 'alarm',
      '0x77': 'alarm',
    })
  })

  test('terminal information alarm values 110 and 111 (alarm byte 0); 101 means nothing', () => {
    const codes = [0b110, 0b111, 0b101].map((bits) => {
      const message = decodeBytes(buildGt06Frame(0x16, alarmContent(PARIS, bits << 3, 0x00), 1))
      if (message.kind !== 'report') throw new Error('expected report')
      return message.report.events.map((e) => e.alarmCode)
    })
    expect(codes).toEqual([['geofence'], ['tamper'], []])
  })

  test('the fence number of 0x27 (0 = fence 1) and the mileage after the status (VL03 doc 0x26 table)', () => {
    const fence = decodeBytes(buildGt06Frame(0x27, concat(alarmContent(PARIS, 0x40, 0x04), hex('02')), 3))
    if (fence.kind !== 'report') throw new Error('expected report')
    expect(fence.report.events[0]).toMatchObject({ alarmCode: 'geofence_enter', context: { fence_number: 3 } })
    expect(toHex(fence.ack!)).toBe(toHex(buildGt06Ack(0x27, 3)))
    const mileage = decodeBytes(buildGt06Frame(0x26, concat(alarmContent(PARIS, 0x40, 0x01), hex('00 01 E2 40')), 4))
    if (mileage.kind !== 'report') throw new Error('expected report')
    expect(mileage.report.fixes[0].attributes).toMatchObject({ odometer: 123456, mcc: 460, lac: 0x287d, alarm: 'sos' })
  })

  test('LBS length 0: no cell, zero filler skipped, the status still read', () => {
    for (const filler of [hex(''), new Uint8Array(8)]) {
      const content = concat(gpsBlock(PARIS), hex('00'), filler, new Uint8Array([0x40, 4, 3, 0x01, 0x02]))
      const message = decodeBytes(buildGt06Frame(0x16, content, 1))
      if (message.kind !== 'report') throw new Error(`expected report, got ${JSON.stringify(message)}`)
      expect(message.report.events[0]).toMatchObject({ alarmCode: 'sos', mcc: null, mnc: null })
      expect('mcc' in message.report.fixes[0].attributes).toBe(false)
      expect(message.network).toBeUndefined()
    }
  })

  test('an LBS length that fits nothing is malformed, not misread', () => {
    // 10 bytes between the length byte and the status: no cell is that long, and 0x30 - 1 > 10
    const content = concat(gpsBlock(PARIS), hex('30'), CELL, hex('AA BB'), new Uint8Array([0x40, 4, 3, 0x01, 0x02]))
    expect(decodeBytes(buildGt06Frame(0x16, content, 1))).toMatchObject({ kind: 'invalid', reason: 'malformed' })
  })
})

describe('GT06 other protocol numbers', () => {
  test('0x8A time request is answered with the server clock when one is given', () => {
    const request = buildGt06Frame(0x8a, new Uint8Array(0), 0x21)
    expect(decodeBytes(request)).toEqual({ kind: 'other', protocol: 0x8a, ack: null })
    const message = decodeBytes(request, LOGGED_IN, Date.UTC(2024, 2, 15, 8, 30, 5) / 1000)
    expect(message.kind).toBe('other')
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Frame(0x8a, hex('18 03 0F 08 1E 05'), 0x21)))
    expect(toHex(buildGt06TimeResponse(0x21, PARIS_TS))).toBe(toHex(message.ack!))
  })

  test('unhandled protocol numbers are ignored without an ACK', () => {
    for (const protocol of [0x15, 0x1a, 0x21, 0x80, 0x8c]) {
      expect(decodeBytes(buildGt06Frame(protocol, hex('01 02 03'), 1))).toEqual({ kind: 'other', protocol, ack: null })
    }
  })
})

describe('GT06 stream splitter', () => {
  const location = buildGt06Frame(0x12, concat(gpsBlock(PARIS), CELL), 2)
  const stream = concat(DOC_LOGIN, location, FORUM_STATUS)

  test('coalesced frames in one chunk', () => {
    const parser = createGt06Parser()
    const items = parser.push(stream)
    expect(errors(items)).toEqual([])
    expect(frames(items).map((f) => f.protocol)).toEqual([0x01, 0x12, 0x13])
    expect(parser.bufferedBytes).toBe(0)
  })

  test('one byte at a time gives the same frames', () => {
    const parser = createGt06Parser()
    const items: Gt06StreamItem[] = []
    for (const byte of stream) items.push(...parser.push(new Uint8Array([byte])))
    expect(errors(items)).toEqual([])
    expect(frames(items)).toEqual(frames(createGt06Parser().push(stream)))
  })

  test('every split point gives the same frames', () => {
    const expected = frames(createGt06Parser().push(stream))
    for (let cut = 1; cut < stream.length; cut++) {
      const parser = createGt06Parser()
      const items = [...parser.push(stream.subarray(0, cut)), ...parser.push(stream.subarray(cut))]
      expect(frames(items)).toEqual(expected)
    }
  })

  test('a partial frame stays buffered until the rest arrives', () => {
    const parser = createGt06Parser()
    expect(parser.push(DOC_LOGIN.subarray(0, 7))).toEqual([])
    expect(parser.bufferedBytes).toBe(7)
    expect(frames(parser.push(DOC_LOGIN.subarray(7)))).toHaveLength(1)
    expect(parser.bufferedBytes).toBe(0)
  })

  test('garbage before, between and after frames is skipped and reported', () => {
    const parser = createGt06Parser()
    const items = parser.push(concat(hex('00 11 22 78'), DOC_LOGIN, hex('0D 0A 79'), FORUM_STATUS, hex('33 44')))
    expect(frames(items).map((f) => f.protocol)).toEqual([0x01, 0x13])
    const skipped = errors(items).map((e) => (e.code === 'garbage' ? e.skippedBytes : -1))
    expect(skipped).toEqual([4, 3, 2])
  })

  test('a false start marker inside garbage does not swallow the next real frame', () => {
    // "78 78 06" looks like a frame header; the stop bits at its declared end are wrong.
    const parser = createGt06Parser()
    const items = parser.push(concat(hex('78 78 06 AA BB'), DOC_LOGIN, FORUM_STATUS))
    expect(frames(items).map((f) => f.protocol)).toEqual([0x01, 0x13])
  })

  test('a length field below the minimum is a false marker', () => {
    const items = createGt06Parser().push(concat(hex('78 78 02'), DOC_LOGIN))
    expect(frames(items).map((f) => f.protocol)).toEqual([0x01])
  })

  test('a trailing half marker is kept, a lone garbage byte is not', () => {
    const parser = createGt06Parser()
    parser.push(hex('55 78'))
    expect(parser.bufferedBytes).toBe(1)
    parser.push(hex('55'))
    expect(parser.bufferedBytes).toBe(0)
  })

  test('bad CRC: the frame is dropped and reported, the next frame still decodes', () => {
    const corrupted = DOC_LOGIN.slice()
    corrupted[5] ^= 0xff
    const items = createGt06Parser().push(concat(corrupted, FORUM_STATUS))
    expect(errors(items)).toEqual([
      expect.objectContaining({ code: 'bad_crc', fatal: false, protocol: 0x01, received: 0x8cdd }),
    ])
    expect(frames(items).map((f) => f.protocol)).toEqual([0x13])
  })

  test('0x7979 frames with a 2-byte length', () => {
    const content = new Uint8Array(300).fill(0x41)
    const bytes = longFrame(0x94, content, 0x0203)
    const items = createGt06Parser().push(concat(bytes, DOC_LOGIN))
    expect(errors(items)).toEqual([])
    const [info, login] = frames(items)
    expect(info).toEqual({ longFrame: true, protocol: 0x94, content, serial: 0x0203 })
    expect(login.protocol).toBe(0x01)
    // information type 0x41 is not one the decoder reads: the packet only keeps the device alive
    expect(decodeGt06Frame(info, LOGGED_IN)).toMatchObject({ kind: 'status', protocol: 0x94, ack: null, status: {}, keepAlive: true })
  })

  test('a frame declared larger than the cap is fatal and the parser stays failed', () => {
    const parser = createGt06Parser()
    const items = parser.push(concat(DOC_LOGIN, hex('79 79 FF FF 01 02 03')))
    expect(frames(items)).toHaveLength(1)
    expect(errors(items)).toEqual([
      expect.objectContaining({ code: 'frame_too_large', fatal: true, maxBytes: GT06_DEFAULT_MAX_BUFFERED_BYTES }),
    ])
    expect(parser.failed).toBe(true)
    expect(parser.bufferedBytes).toBe(0)
    expect(errors(parser.push(DOC_LOGIN))).toEqual([expect.objectContaining({ code: 'frame_too_large' })])
  })

  test('the cap is configurable', () => {
    const parser = createGt06Parser({ maxBufferedBytes: 16 })
    const items = parser.push(DOC_LOGIN) // 18 bytes > 16
    expect(frames(items)).toEqual([])
    expect(errors(items)).toEqual([expect.objectContaining({ code: 'frame_too_large', declaredBytes: 18, maxBytes: 16 })])
    expect(parser.failed).toBe(true)
  })

  test('a slow client trickling a large frame never buffers more than the cap', () => {
    const parser = createGt06Parser()
    const bytes = longFrame(0x94, new Uint8Array(GT06_DEFAULT_MAX_BUFFERED_BYTES - 11), 1)
    expect(bytes.length).toBe(GT06_DEFAULT_MAX_BUFFERED_BYTES)
    let max = 0
    let got = 0
    for (let i = 0; i < bytes.length; i += 7) {
      got += frames(parser.push(bytes.subarray(i, i + 7))).length
      max = Math.max(max, parser.bufferedBytes)
    }
    expect(got).toBe(1)
    expect(max).toBeLessThanOrEqual(GT06_DEFAULT_MAX_BUFFERED_BYTES)
  })

  test('property: random bytes never throw, stay under the cap, and decode without throwing', () => {
    const random = seededRandom(0x6706)
    for (let run = 0; run < 300; run++) {
      const parser = createGt06Parser()
      for (let chunk = 0; chunk < 20; chunk++) {
        const bytes = new Uint8Array(Math.floor(random() * 200))
        for (let i = 0; i < bytes.length; i++) {
          // bias towards marker and stop bytes so framing paths are exercised
          const r = random()
          bytes[i] = r < 0.1 ? 0x78 : r < 0.15 ? 0x79 : r < 0.2 ? 0x0d : r < 0.25 ? 0x0a : Math.floor(random() * 256)
        }
        if (random() < 0.3) bytes.set(stream.subarray(0, Math.min(bytes.length, stream.length)))
        const items = parser.push(bytes)
        for (const frame of frames(items)) decodeGt06Frame(frame, LOGGED_IN, { now: 0 })
        expect(parser.bufferedBytes).toBeLessThanOrEqual(GT06_DEFAULT_MAX_BUFFERED_BYTES)
      }
    }
  })

  test('property: valid frames with random content decode without throwing', () => {
    const random = seededRandom(42)
    for (let run = 0; run < 2000; run++) {
      const protocol = [0x01, 0x12, 0x13, 0x16, 0x22, 0x23, 0x26, 0x8a][run % 8]
      const content = new Uint8Array(Math.floor(random() * 50))
      for (let i = 0; i < content.length; i++) content[i] = Math.floor(random() * 256)
      const message = decodeGt06Frame(frameOf(buildGt06Frame(protocol, content, run)), LOGGED_IN)
      expect(['login', 'report', 'status', 'other', 'invalid']).toContain(message.kind)
    }
  })
})

describe('GT06 decoding rules', () => {
  const NOW = 1_700_000_000

  test("a status packet's alarm byte is an event dated by the server clock; its terminal bits are only state", () => {
    const message = decodeBytes(FORUM_STATUS, LOGGED_IN, NOW)
    if (message.kind !== 'status') throw new Error('expected status')
    expect(message.report.events).toEqual([
      expect.objectContaining({ alarmCode: 'power_cut', timestamp: NOW, latitude: null, longitude: null, dbm: -88 }),
    ])
    expect(message.report.events[0].context).toMatchObject({ alarm_byte: 2, time_source: 'server', voltage_level: 5 })
    expect(message.keepAlive).toBe(false)
    const sosBits = decodeBytes(buildGt06Frame(0x13, hex('60 04 04 00 02'), 2), LOGGED_IN, NOW)
    if (sosBits.kind !== 'status') throw new Error('expected status')
    expect(sosBits.attributes.terminal_alarm).toBe('sos')
    expect(sosBits.report.events).toEqual([])
    // without a clock there is no time to give the event; the state is still kept
    const noClock = decodeBytes(FORUM_STATUS)
    if (noClock.kind !== 'status') throw new Error('expected status')
    expect(noClock.report.events).toEqual([])
    expect(noClock.status).toMatchObject({ voltage_level: 5, gsm_signal: 3 })
  })

  test("a status packet's alarm byte the table does not name is `alarm` with the byte as raw_alarm, never a code of its own", () => {
    // the forum capture's layout (terminal info, voltage level, GSM signal, alarm, language) with alarm byte 0x1F
    const message = decodeBytes(buildGt06Frame(0x13, hex('40 05 03 1F 02'), 3), LOGGED_IN, NOW)
    if (message.kind !== 'status') throw new Error('expected status')
    expect(message.report.events).toEqual([expect.objectContaining({ alarmCode: 'alarm', timestamp: NOW })])
    expect(message.report.events[0].context).toMatchObject({ raw_alarm: '0x1f', alarm_byte: 0x1f, time_source: 'server' })
    expect(message.attributes.alarm).toBe('alarm')
  })

  test('a voltage byte above 6 is a battery percentage; above 100 it is not kept', () => {
    const percent = decodeBytes(buildGt06Frame(0x13, hex('40 5D 04 00 02'), 2))
    expect(percent).toMatchObject({ kind: 'status', status: { battery_level: 93 } })
    const nonsense = decodeBytes(buildGt06Frame(0x13, hex('40 B2 04 00 02'), 2))
    if (nonsense.kind !== 'status') throw new Error('expected status')
    expect('battery_level' in nonsense.status || 'voltage_level' in nonsense.status).toBe(false)
  })

  test('never a fix from bytes that are not one: coordinates, course and date are checked', () => {
    const cases = [
      { ...PARIS, latitude: 90.5 },
      { ...PARIS, longitude: 180.5 },
      { ...PARIS, date: [24, 13, 1, 0, 0, 0] },
      { ...PARIS, date: [24, 1, 1, 24, 0, 0] },
    ]
    for (const input of cases) {
      const bytes = buildGt06Frame(0x12, concat(gpsBlock(input), CELL), 1)
      expect(decodeBytes(bytes, LOGGED_IN, NOW)).toMatchObject({ kind: 'invalid', reason: 'malformed' })
    }
    const block = gpsBlock(PARIS)
    block[16] |= 0x03 // course bits all set: 1023
    block[17] = 0xff
    expect(decodeBytes(buildGt06Frame(0x12, concat(block, CELL), 1), LOGGED_IN, NOW)).toMatchObject({ kind: 'invalid' })
  })

  test('a 4G cell ID beyond what a number holds exactly is null, the rest of the packet kept', () => {
    const cell4g = hex('01 CC 00 00 00 28 7D FF FF FF FF FF FF FF FF')
    const message = decodeBytes(buildGt06Frame(0xa0, concat(gpsBlock(PARIS), cell4g, hex('01 00 00')), 1))
    if (message.kind !== 'report') throw new Error('expected report')
    expect(message.report.fixes[0].attributes).toMatchObject({ mcc: 460, lac: 0x287d, cell_id: null, ignition: true })
  })

  test('an alarm without a date needs the server clock', () => {
    const content = hex('01 CC 00 28 7D 00 1F B8 40 04 04 01 02')
    expect(decodeBytes(buildGt06Frame(0x19, content, 1))).toMatchObject({ kind: 'invalid', reason: 'malformed' })
    expect(decodeBytes(buildGt06Frame(0x19, content, 1), LOGGED_IN, NOW)).toMatchObject({ kind: 'report' })
  })

  test('a cell packet with bytes left over is malformed', () => {
    const cells = concat(hex('18 03 0F 08 1E 05 01 CC 00'), new Uint8Array(7 * 6), hex('FF 00 02'))
    expect(decodeBytes(buildGt06Frame(0x28, cells, 1))).toMatchObject({ kind: 'report', keepAlive: true })
    expect(decodeBytes(buildGt06Frame(0x28, concat(cells, hex('AA')), 1))).toMatchObject({ kind: 'invalid', reason: 'malformed' })
  })

  test('every data packet, old or new, before a login is refused', () => {
    for (const protocol of [0x11, 0x19, 0x27, 0x28, 0x2c, 0x94, 0xa0, 0xa1, 0xa2, 0xa4, 0xa5]) {
      expect(decodeBytes(buildGt06Frame(protocol, hex('01 02 03'), 1), { imei: null })).toMatchObject({ kind: 'invalid', reason: 'not_logged_in' })
    }
  })

  test('only a login is ever taken without a CRC', () => {
    const unchecked = { longFrame: false, protocol: 0x12, content: concat(gpsBlock(PARIS), CELL), serial: 0, lenient: { declaredLength: 13, crcChecked: false } }
    expect(decodeGt06Frame(unchecked, LOGGED_IN)).toMatchObject({ kind: 'invalid', reason: 'malformed' })
  })
})

describe('GT06 lenient framing', () => {
  /** the status packet from the forum, sent with a declared length of 8 and a CRC of what is sent */
  function withDeclaredLength(frame: Uint8Array, declared: number): Uint8Array {
    const copy = frame.slice()
    copy[2] = declared
    const crc = crc16X25(copy, 2, copy.length - 4)
    copy[copy.length - 4] = crc >> 8
    copy[copy.length - 3] = crc & 0xff
    return copy
  }

  test('declared too short or too long, the CRC of the bytes sent right: the frame is taken, however it arrives', () => {
    for (const declared of [0x03, 0x08, 0x0c, 0x40]) {
      const odd = withDeclaredLength(FORUM_STATUS, declared)
      const stream = concat(DOC_LOGIN, odd, FORUM_STATUS)
      const whole = frames(createGt06Parser().push(stream))
      expect(whole.map((f) => [f.protocol, f.lenient?.declaredLength])).toEqual([[0x01, undefined], [0x13, declared], [0x13, undefined]])
      const parser = createGt06Parser()
      const bytewise = [...stream].flatMap((byte) => frames(parser.push(Uint8Array.of(byte))))
      expect(bytewise).toEqual(whole)
    }
  })

  test('a wrong declared length with a wrong CRC is garbage, and costs nothing after it', () => {
    const odd = withDeclaredLength(FORUM_STATUS, 0x08)
    odd[5] ^= 0x01
    const items = createGt06Parser().push(concat(odd, DOC_LOGIN))
    expect(frames(items).map((f) => f.protocol)).toEqual([0x01])
    expect(errors(items).map((e) => e.code)).toEqual(['garbage'])
  })

  test('a cut-off frame whose declared length ends on the next frame: the next frame is kept', () => {
    const location = buildGt06Frame(0x12, concat(gpsBlock(PARIS), CELL), 2)
    // a 0x16 header cut after 2 bytes of content, declaring exactly the bytes up to the end of
    // the location packet: its "stop bytes" are the location's, its CRC is wrong
    const cut = hex(`78 78 ${location.length.toString(16)} 16 00`)
    const items = createGt06Parser().push(concat(cut, location))
    expect(frames(items).map((f) => f.protocol)).toEqual([0x12])
  })

  test('a frame whose stop bytes are still on the way is waited for, not dropped', () => {
    const odd = withDeclaredLength(FORUM_STATUS, 0x08)
    const parser = createGt06Parser()
    expect(parser.push(odd.subarray(0, odd.length - 1))).toEqual([])
    expect(frames(parser.push(odd.subarray(odd.length - 1))).map((f) => f.serial)).toEqual([0x74])
  })
})
