/**
 * Teltonika frames from Teltonika's documents and from real devices (test/fixtures/teltonika,
 * sources beside each): what they decode to, what is acknowledged, and what is kept as the
 * device's status. Expected values are read off the frames' bytes by hand (see the comments).
 */
import { describe, expect, test } from 'bun:test'
import { crc16Arc } from '../../../../src/ingest/protocols/crc'
import { decodeTeltonikaPacket, type TeltonikaDecodeResult } from '../../../../src/ingest/protocols/teltonika/decoder'
import { createTeltonikaParser, type TeltonikaPacket, type TeltonikaStreamItem } from '../../../../src/ingest/protocols/teltonika/framing'
import { AVL_FROM_DEVICES, CODEC_12_FROM_DEVICES, CODEC_13, WIKI, type SourcedFrame } from '../../../fixtures/teltonika/frames'
import { concat, hex, toHex } from '../helpers'

const IMEI = '356307042441013'
const iso = (seconds: number) => new Date(seconds * 1000).toISOString()

/** The items the framing yields for a frame, after the wiki's IMEI handshake. */
function split(frame: SourcedFrame | Uint8Array): TeltonikaStreamItem[] {
  const parser = createTeltonikaParser()
  parser.push(hex(WIKI.imei.hex))
  return parser.push(frame instanceof Uint8Array ? frame : hex(frame.hex))
}

function onlyPacket(frame: SourcedFrame | Uint8Array): TeltonikaPacket {
  const items = split(frame)
  expect(items.map((item) => item.kind)).toEqual(['packet'])
  return (items[0] as Extract<TeltonikaStreamItem, { kind: 'packet' }>).packet
}

function report(frame: SourcedFrame) {
  const result = decodeTeltonikaPacket(onlyPacket(frame).data, IMEI)
  if (result.kind !== 'report') throw new Error(`expected a report, got ${JSON.stringify(result)}`)
  return result
}

function commandAnswer(result: TeltonikaDecodeResult) {
  if (result.kind !== 'command_answer') throw new Error(`expected a command answer, got ${JSON.stringify(result)}`)
  expect(result.ack).toBeNull() // nothing is sent back for an answer
  return result.commandAnswer
}

/** The data field of a frame (codec id .. quantity 2), whatever its CRC field says. */
const dataField = (frame: SourcedFrame) => hex(frame.hex).subarray(8, -4)

/** The frame with its CRC field recomputed over its data field. */
function withFixedCrc(frame: SourcedFrame): Uint8Array {
  const bytes = hex(frame.hex).slice()
  new DataView(bytes.buffer).setUint32(bytes.length - 4, crc16Arc(bytes.subarray(8, -4)))
  return bytes
}

describe('AVL records from FMB devices', () => {
  test('FMB120 parked, ignition off: position, the FMB1xx permanent IO elements, status, ACK 1', () => {
    // IMEI handshake of the same log: 000F + "864636061979403"
    const handshake = createTeltonikaParser().push(hex(AVL_FROM_DEVICES.fmb120Imei.hex))
    expect(handshake).toEqual([{ kind: 'imei', imei: '864636061979403' }])

    const result = report(AVL_FROM_DEVICES.fmb120)
    expect(toHex(result.ack)).toBe('00 00 00 01')
    const [fix] = result.report.fixes
    // 0000018EE5BDC4F8 ms; lon 03F91BE1, lat 1CD610EB (×1e-7); alt 0127; angle 0162; 0C sats; speed 0
    expect(iso(fix.timestamp)).toBe('2024-04-16T07:10:03.000Z')
    expect(fix).toMatchObject({ latitude: 48.3791083, longitude: 6.6657249, altitude: 295, course: 354, satellites: 12, speed: 0, valid: true })
    // 1-byte: EF 00, F0 00, 15 03, C8 00, 45 01; 2-byte: B5 000B, B6 0007, 42 3188, 43 0FE2, 44 0000;
    // 4-byte: F1 0000514A, 10 00076D30
    expect(fix.attributes).toEqual({
      priority: 0,
      ignition: false,
      movement: false,
      gsm_signal: 3,
      sleep_mode: 0,
      gnss_status: 1,
      pdop: 1.1,
      hdop: 0.7,
      external_voltage: 12.68,
      battery_voltage: 4.066,
      battery_current: 0,
      operator: 20810, // MCC 208 (France), where the coordinates are
      odometer: 486_704,
    })
    expect(result.statuses).toEqual([
      {
        timestamp: fix.timestamp,
        attributes: {
          ignition: false,
          movement: false,
          gsm_signal: 3,
          sleep_mode: 0,
          gnss_status: 1,
          external_voltage: 12.68,
          battery_voltage: 4.066,
          battery_current: 0,
          operator: 20810,
          odometer: 486_704,
        },
      },
    ])
    expect(result.report.events).toEqual([])
  })

  test('FMB920 ignition-on record without a fix: kept invalid, ignition is no alarm', () => {
    const result = report(AVL_FROM_DEVICES.fmb920)
    const [fix] = result.report.fixes
    // lon FDD01392 is negative (two's complement): -3.669515; lat 181D4BAC: 40.45731 (Madrid)
    expect(iso(fix.timestamp)).toBe('2024-06-28T15:12:00.000Z')
    expect(fix).toMatchObject({ latitude: 40.45731, longitude: -3.669515, altitude: 725, satellites: 0, valid: false })
    // event IO EF (239); 1-byte EF 01, F0 01, 01 00; 2-byte 42 31B0, 43 0FCA, 09 002B
    expect(fix.attributes).toEqual({
      priority: 1,
      event_io: 239,
      ignition: true,
      movement: true,
      din1: false,
      external_voltage: 12.72,
      battery_voltage: 4.042,
      ain1: 0.043,
    })
    expect(result.statuses[0].attributes).toMatchObject({ ignition: true, din1: false, ain1: 0.043 })
    expect(result.report.events).toEqual([])
    expect(toHex(result.ack)).toBe('00 00 00 01')
  })

  test('driving with external power plugged (IO 252 = 0): odometer, cell, and unnamed IO kept raw', () => {
    const result = report(AVL_FROM_DEVICES.drivingPlugged)
    const [fix] = result.report.fixes
    expect(iso(fix.timestamp)).toBe('2019-01-04T12:27:19.000Z')
    expect(fix).toMatchObject({ latitude: 48.1523066, longitude: 16.3745183, speed: 83, course: 198, satellites: 15, valid: true })
    expect(fix.attributes).toEqual({
      priority: 0,
      movement: true,
      gsm_signal: 3,
      sleep_mode: 0,
      din1: true,
      io29: 0, // 1D: a BLE sensor slot, not in the FMB1xx names
      unplug: 0,
      external_voltage: 14.233,
      gnss_speed: 83,
      cell_id: 0xf80d,
      lac: 0x426f,
      battery_voltage: 3.976,
      io25: 3000,
      io86: 3000,
      operator: 23201, // MCC 232: Austria, where Vienna is
      odometer: 0x2887e0,
    })
    expect(result.statuses[0].attributes).toMatchObject({ external_power: true, odometer: 2_656_224, cell_id: 63501, lac: 17007 })
    expect(result.report.events).toEqual([])
  })

  test('three records in one packet: ACK 3; the trip-end record carries its event IO', () => {
    const result = report(AVL_FROM_DEVICES.threeRecords)
    expect(toHex(result.ack)).toBe('00 00 00 03')
    expect(result.records.map((r) => r.eventIoId)).toEqual([250, 0, 0])
    expect(result.report.fixes.map((f) => f.speed)).toEqual([0, 9, 97])
    expect(result.report.fixes[0].attributes).toMatchObject({
      event_io: 250,
      trip: 0,
      din1: false,
      din2: false,
      dout1: false,
      dout2: false,
      data_mode: 4,
      external_voltage: 12.961,
      trip_odometer: 6,
      operator: 41001, // MCC 410: Pakistan (24.95 N, 67.14 E)
      io71: 2, // Dallas sensor 4's ID is 8 bytes in the table; a 1-byte 71 is something else, kept raw
    })
    expect(result.statuses[1].attributes).toMatchObject({ din1: true, gsm_signal: 2, data_mode: 5 })
    expect(result.report.events).toEqual([])
  })

  test('Codec 8E with NX elements: VIN and trouble codes kept as hex, nothing lost', () => {
    const result = report(AVL_FROM_DEVICES.codec8eObd)
    const [fix] = result.report.fixes
    expect(iso(fix.timestamp)).toBe('2021-04-08T10:52:26.000Z')
    expect(fix.attributes).toMatchObject({ ignition: true, external_voltage: 14.304, odometer: 41397, trip_odometer: 30, operator: 26201 })
    const text = (value: unknown) => new TextDecoder().decode(hex(String(value)))
    expect(text(fix.attributes.io256)).toBe('WV1ZZZ2EZ86015388')
    expect(text(fix.attributes.io281)).toBe('P0299,P0675,P0674,P0672,P0671,P0471,P2BAC')
  })

  test('the alarm button (event IO 236) becomes an sos event; no fix, so no place', () => {
    const result = report(AVL_FROM_DEVICES.codec8eAlarmButton)
    expect(toHex(result.ack)).toBe('00 00 00 02')
    expect(result.report.fixes.map((f) => f.valid)).toEqual([false, false])
    expect(result.report.events).toEqual([
      {
        timestamp: result.report.fixes[0].timestamp,
        alarmCode: 'sos',
        latitude: null,
        longitude: null,
        speed: 0,
        satellites: 0,
        mcc: null,
        mnc: null,
        dbm: -113, // signal level 0, estimated
        context: { gps_valid: false, course: 0, altitude: 0, io_id: 236, io_value: 1, priority: 1, gsm_signal: 0, dbm_estimated: true },
      },
    ])
    expect(iso(result.report.fixes[0].timestamp)).toBe('2021-05-10T08:19:55.000Z')
    expect(result.statuses[0].attributes).toMatchObject({ battery_level: 1, battery_voltage: 3.414, gnss_status: 2 })
  })
})

describe('command answers (Codec 12, 13, 14)', () => {
  test('wiki Codec 12: the device\'s response to "getinfo" is its text; no ACK', () => {
    const packet = onlyPacket(WIKI.codec12Response)
    expect(packet.codecId).toBe(0x0c)
    const answer = commandAnswer(decodeTeltonikaPacket(packet.data, IMEI))
    expect(answer).toEqual({
      codecId: 0x0c,
      messageType: 0x06,
      text: 'INI:2019/7/22 7:22 RTC:2019/7/22 7:53 RST:2 ERR:1 SR:0 BR:0 CF:0 FG:0 FL:0 TU:0/0 UT:0 SMS:0 NOGPS:0:30 GPS:1 SAT:0 RS:3 RF:65 SF:1 MD:0',
      hex: null,
      timestamp: null,
      imei: null,
      executed: true,
    })
    expect(answer.text).toHaveLength(0x88) // the size field
  })

  test('Codec 12 from devices: forwarded serial text, and binary data shown in hex', () => {
    const ascii = commandAnswer(decodeTeltonikaPacket(onlyPacket(CODEC_12_FROM_DEVICES.serialAscii).data, IMEI))
    expect(ascii).toMatchObject({ text: 'UUUUww06.4;04.2;00.0;00.0;00.0;00.0;00.0;00.0;01.3;00.0;10.7;00.0;SSS\r\n', hex: null })
    const modem = commandAnswer(decodeTeltonikaPacket(onlyPacket(CODEC_12_FROM_DEVICES.modemAnswer).data, IMEI))
    expect(modem.text.startsWith('AT$MSGSND=4,"STGB40,PR,356601060265050,')).toBe(true)
    const binary = commandAnswer(decodeTeltonikaPacket(onlyPacket(CODEC_12_FROM_DEVICES.serialBinary).data, IMEI))
    expect(binary.hex).toBe('010300010015d5c5')
  })

  test('wiki Codec 12 and 14 commands (server → device) are not answers: refused, no ACK', () => {
    for (const frame of [WIKI.codec12Command, WIKI.codec14Command]) {
      expect(decodeTeltonikaPacket(onlyPacket(frame).data, IMEI)).toMatchObject({ kind: 'invalid', reason: 'unsupported_message', ack: null })
    }
  })

  test('wiki Codec 14 ACK: the answer to "getver" and the IMEI it carries', () => {
    const answer = commandAnswer(decodeTeltonikaPacket(onlyPacket(WIKI.codec14Ack).data, IMEI))
    expect(answer).toMatchObject({ codecId: 0x0e, messageType: 0x06, imei: '352093081452251', executed: true, timestamp: null, hex: null })
    expect(answer.text).toBe(
      'Ver:03.18.14_04 GPS:AXN_5.10_3333 Hw:FMB120 Mod:15 IMEI:352093081452251 Init:2018-11-22 7:13 Uptime:17234 MAC:60BDD0016261 SPC:1(0) AXL:0 OBD:0 BL:1.6 BT:4',
    )
  })

  test('wiki Codec 14 nACK: not executed, no text; as published its CRC is wrong, so the framing drops it', () => {
    expect(split(WIKI.codec14Nack)).toEqual([expect.objectContaining({ kind: 'error', error: expect.objectContaining({ code: 'bad_crc', received: 0x32ac }) })])
    const answer = commandAnswer(decodeTeltonikaPacket(onlyPacket(withFixedCrc(WIKI.codec14Nack)).data, IMEI))
    expect(answer).toEqual({ codecId: 0x0e, messageType: 0x11, text: '', hex: null, timestamp: null, imei: '352093081452468', executed: false })
  })

  test('Codec 13: the wiki\'s layout (4-byte time counted in the size)', () => {
    const answer = commandAnswer(decodeTeltonikaPacket(onlyPacket(CODEC_13.hello).data, IMEI))
    expect(answer).toMatchObject({ codecId: 0x0d, messageType: 0x06, text: 'hello lets test\r\n', imei: null })
    expect(iso(answer.timestamp!)).toBe('2023-08-25T04:48:01.000Z') // 64E83281
  })

  test('Codec 13: the older 8-byte millisecond time, and a size counting the text only', () => {
    const legacy = commandAnswer(decodeTeltonikaPacket(onlyPacket(CODEC_13.legacyGetinfo).data, IMEI))
    expect(legacy).toMatchObject({ text: 'getinfo', messageType: 0x05 })
    expect(iso(legacy.timestamp!)).toBe('2019-07-19T13:52:52.000Z') // 0000016C0A81C320 ms
    // published with a CRC that does not match: dropped by the framing, read from its data field
    expect(split(CODEC_13.fmTextOnlySize).map((i) => (i.kind === 'error' ? i.error.code : i.kind))).toEqual(['bad_crc'])
    const textOnly = commandAnswer(decodeTeltonikaPacket(dataField(CODEC_13.fmTextOnlySize), IMEI))
    expect(textOnly).toMatchObject({ text: '#GET DATAORDER\r\n', messageType: 0x05 })
    expect(iso(textOnly.timestamp!)).toBe('2016-03-16T09:15:14.000Z') // 56E92422
  })

  test('command answers between AVL packets on one connection: each recognised in order', () => {
    const items = split(concat(hex(AVL_FROM_DEVICES.fmb120.hex), hex(WIKI.codec12Response.hex), hex('FF'), hex(WIKI.codec14Ack.hex), hex(AVL_FROM_DEVICES.fmb920.hex)))
    const kinds = items.map((item) => (item.kind === 'packet' ? decodeTeltonikaPacket(item.packet.data, IMEI).kind : item.kind))
    expect(kinds).toEqual(['report', 'command_answer', 'keepalive', 'command_answer', 'report'])
  })
})

describe('keep-alive bytes from devices', () => {
  test('0xFF before the IMEI (as Traccar\'s frame decoder test sends it) and between packets', () => {
    const parser = createTeltonikaParser()
    expect(parser.push(hex('FF'))).toEqual([{ kind: 'keepalive', bytes: 1 }])
    expect(parser.push(concat(hex(AVL_FROM_DEVICES.fmb120Imei.hex), hex('FF')))).toEqual([
      { kind: 'imei', imei: '864636061979403' },
      { kind: 'keepalive', bytes: 1 },
    ])
    const items = parser.push(concat(hex(AVL_FROM_DEVICES.fmb120.hex), hex('FF FF')))
    expect(items.map((i) => i.kind)).toEqual(['packet', 'keepalive'])
    expect(parser.bufferedBytes).toBe(0)
    expect(parser.failed).toBe(false)
  })
})
