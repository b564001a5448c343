/**
 * The GT06 decoder against frames real devices sent and frames the manufacturer's documents
 * print (sources in captures.ts): one test per message type, asserting the
 * decoded values and the exact reply bytes.
 */
import { describe, expect, test } from 'bun:test'
import { decodeGt06Frame, type Gt06Message } from '../../../../src/ingest/protocols/gt06/decoder'
import { createGt06Parser, type Gt06Frame } from '../../../../src/ingest/protocols/gt06/framing'
import { buildGt06Ack, buildGt06TimeResponse } from '../../../../src/ingest/protocols/gt06/replies'
import * as F from './captures'
import { hex, toHex } from '../helpers'

const IMEI = '123456789012345'
/** the listener's clock in these tests: 2024-03-15 08:30:05 UTC */
const NOW = Date.UTC(2024, 2, 15, 8, 30, 5) / 1000

function utc(year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  return Date.UTC(year, month - 1, day, hour, minute, second) / 1000
}

function frameOf(text: string): Gt06Frame {
  const items = createGt06Parser().push(hex(text))
  const frames = items.flatMap((item) => (item.kind === 'frame' ? [item.frame] : []))
  expect(items.filter((item) => item.kind === 'error')).toEqual([])
  expect(frames).toHaveLength(1)
  return frames[0]
}

function decode(text: string, imei: string | null = IMEI): Gt06Message {
  return decodeGt06Frame(frameOf(text), { imei }, { now: NOW })
}

function asReport(message: Gt06Message) {
  if (message.kind !== 'report') throw new Error(`expected a report, got ${JSON.stringify(message)}`)
  return message
}

function asStatus(message: Gt06Message) {
  if (message.kind !== 'status') throw new Error(`expected a status, got ${JSON.stringify(message)}`)
  return message
}

const degrees = (raw: number) => raw / 1_800_000

describe('GT06 captures: login (0x01)', () => {
  test('GT06 doc example: IMEI, and the documented response', () => {
    const message = decode(F.DOC_LOGIN, null)
    expect(message).toMatchObject({ kind: 'login', imei: IMEI })
    if (message.kind !== 'login') return
    expect(toHex(message.ack)).toBe(toHex(hex('78 78 05 01 00 01 D9 DC 0D 0A')))
    expect(message.typeIdentifier).toBeUndefined()
  })

  test('VL03 doc example with type code and time zone: the documented response', () => {
    const message = decode(F.VL03_LOGIN, null)
    expect(message).toMatchObject({
      kind: 'login',
      imei: '752533678900242',
      typeIdentifier: 0x7000,
      timeZoneOffsetMinutes: 8 * 60,
      language: 1,
    })
    expect(toHex(message.ack!)).toBe(toHex(hex(F.VL03_LOGIN_RESPONSE)))
  })

  test('real logins: the reply is byte for byte the one Traccar sent (issues #554, #2876)', () => {
    const western = decode(F.ISSUE_554_LOGIN, null)
    expect(western).toMatchObject({ kind: 'login', imei: '864717003664467', typeIdentifier: 0x100f, timeZoneOffsetMinutes: -240, language: 2 })
    expect(toHex(western.ack!)).toBe(toHex(hex(F.ISSUE_554_LOGIN_REPLY)))
    const plain = decode(F.ISSUE_2876_LOGIN, null)
    expect(plain).toMatchObject({ kind: 'login', imei: '355488020947422' })
    expect(toHex(plain.ack!)).toBe(toHex(hex(F.ISSUE_2876_LOGIN_REPLY)))
  })

  test('a login without serial number and CRC is taken and answered with serial 0', () => {
    const frame = frameOf(F.LOGIN_WITHOUT_SERIAL)
    expect(frame.lenient).toEqual({ declaredLength: 0x0d, crcChecked: false })
    const message = decodeGt06Frame(frame, { imei: null })
    expect(message).toMatchObject({ kind: 'login', imei: '359339075005244' })
    if (message.kind !== 'login') return
    expect(toHex(message.ack)).toBe(toHex(buildGt06Ack(0x01, 0)))
    expect(message.typeIdentifier).toBeUndefined() // the unchecked byte after the ID is not read
  })

  test('without serial number, the login is answered even when nothing follows it yet', () => {
    const parser = createGt06Parser()
    const bytes = hex(F.LOGIN_WITHOUT_SERIAL)
    expect(parser.push(bytes.subarray(0, 9))).toEqual([])
    const items = parser.push(bytes.subarray(9))
    expect(items.map((item) => item.kind)).toEqual(['frame'])
    expect(parser.bufferedBytes).toBe(0)
  })
})

describe('GT06 captures: positions (0x12, 0x22, 0xA0)', () => {
  test('0x12 (issue #1727): time, place, speed, course as Traccar logged them; no reply due', () => {
    const message = asReport(decode(F.ISSUE_1727_LOCATION))
    expect(message.ack).toBeNull()
    expect(message.keepAlive).toBe(false)
    const [fix] = message.report.fixes
    expect(fix.timestamp).toBe(utc(2016, 2, 14, 20, 22, 19))
    expect(fix.latitude).toBeCloseTo(41.45768, 5)
    expect(fix.longitude).toBeCloseTo(2.18602, 5)
    expect(fix.speed).toBe(75)
    expect(fix.course).toBe(134)
    expect(fix.satellites).toBe(12)
    expect(fix.valid).toBe(true)
    expect(message.network).toBeUndefined() // its cell is all zeros
  })

  test('0x12 (Traccar tests): the position Traccar asserts, and its cell as network data', () => {
    const message = asReport(decode(F.TRACCAR_LOCATION))
    const [fix] = message.report.fixes
    expect(fix.timestamp).toBe(utc(2015, 10, 20, 14, 21, 11))
    expect(fix.latitude).toBeCloseTo(54.94535, 5)
    expect(fix.longitude).toBeCloseTo(24.01762, 5)
    expect(fix.valid).toBe(true)
    expect(fix.attributes).toEqual({ mcc: 246, mnc: 1, lac: 0x006e, cell_id: 0x0055da, gps_differential: false })
    expect(message.network).toEqual({ cells: [{ mcc: 246, mnc: 1, lac: 0x006e, cell_id: 0x0055da }], wifi: [] })
  })

  test('0x12 with a mileage after the cell', () => {
    const [fix] = asReport(decode(F.TRACCAR_LOCATION_MILEAGE)).report.fixes
    expect(fix.timestamp).toBe(utc(2015, 8, 27, 18, 29, 55))
    expect(fix.attributes).toMatchObject({ mcc: 404, mnc: 7, odometer: 0x0041ee10 })
    expect(fix.speed).toBe(0x20)
  })

  test('0x22 (VL03 doc example): ACC, upload mode and re-upload flag', () => {
    const message = asReport(decode(F.VL03_LOCATION))
    expect(message.ack).toBeNull()
    const [fix] = message.report.fixes
    expect(fix.timestamp).toBe(utc(2015, 12, 29, 2, 51, 5))
    expect(fix.latitude).toBeCloseTo(degrees(0x027ac818), 9)
    expect(fix.longitude).toBeCloseTo(degrees(0x0c465860), 9)
    expect(fix.satellites).toBe(9)
    expect(fix.attributes).toMatchObject({ mcc: 460, mnc: 0, lac: 0x287d, cell_id: 0x1f71, ignition: false, upload_mode: 0, reupload: true })
    expect(message.status).toEqual({ ignition: false })
  })

  test('0xA0 (4G): the 8-byte cell ID, ACC, and the device saying it has no fix', () => {
    const message = asReport(decode(F.TRACCAR_LOCATION_4G))
    expect(message.ack).toBeNull()
    const [fix] = message.report.fixes
    expect(fix.timestamp).toBe(utc(2023, 7, 21, 15, 45, 14))
    expect(fix.latitude).toBeCloseTo(-degrees(0x01635100), 9) // south
    expect(fix.longitude).toBeCloseTo(-degrees(0x041e96d0), 9) // west
    expect(fix.course).toBe(124)
    expect(fix.satellites).toBe(13)
    expect(fix.valid).toBe(false) // course/status bit 12 clear: stored, flagged, never moves the device
    expect(fix.attributes).toMatchObject({ mcc: 724, mnc: 2, lac: 0x912e, cell_id: 0x0718798d, ignition: false, upload_mode: 0x0e, reupload: false })
    expect(message.status).toEqual({ ignition: false })
    expect(message.network?.cells).toEqual([{ mcc: 724, mnc: 2, lac: 0x912e, cell_id: 0x0718798d }])
  })

  test('0xA0 (4G) with ACC on', () => {
    const message = asReport(decode(F.TRACCAR_LOCATION_4G_ACC_ON))
    expect(message.report.fixes[0].attributes).toMatchObject({ ignition: true, upload_mode: 3, lac: 0x9129, cell_id: 0x07186b8f })
    expect(message.report.fixes[0].timestamp).toBe(utc(2023, 7, 4, 17, 34, 38))
  })
})

describe('GT06 captures: status (0x13, 0x23)', () => {
  test('VL03 doc heartbeat: state kept, acknowledged with its serial; the documented reply format', () => {
    const message = asStatus(decode(F.VL03_HEARTBEAT))
    expect(message.status).toEqual({
      ignition: false,
      charging: false,
      external_power: false,
      immobilized: false,
      armed: false,
      gps_tracking: true,
      voltage_level: 4,
      gsm_signal: 4,
    })
    expect(message.keepAlive).toBe(true)
    expect(message.report.events).toEqual([])
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x13, 0x000f)))
    expect(toHex(buildGt06Ack(0x13, 0x0100))).toBe(toHex(hex(F.VL03_HEARTBEAT_RESPONSE)))
  })

  test('real status packets: the reply is byte for byte the one Traccar sent (issues #2133, #4213)', () => {
    const charging = asStatus(decode(F.ISSUE_2133_STATUS))
    expect(charging.status).toMatchObject({ gps_tracking: true, charging: true, external_power: true, voltage_level: 6, gsm_signal: 4 })
    expect(toHex(charging.ack!)).toBe(toHex(hex(F.ISSUE_2133_STATUS_REPLY)))
    const other = asStatus(decode(F.ISSUE_4213_STATUS))
    expect(other.status).toMatchObject({ gps_tracking: false, charging: true, voltage_level: 6, gsm_signal: 3 })
    expect(toHex(other.ack!)).toBe(toHex(hex(F.ISSUE_4213_STATUS_REPLY)))
  })

  test('0x23 heartbeat: battery voltage, acknowledged with 0x23', () => {
    const message = asStatus(decode(F.TRACCAR_HEARTBEAT))
    expect(message.status).toMatchObject({ immobilized: true, gps_tracking: true, battery_voltage: 2.9, gsm_signal: 4 })
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x23, 8)))
  })
})

describe('GT06 captures: alarms with a GPS block (0x16, 0x26, 0x27, 0xA4)', () => {
  test('0x16 vibration: fix, event, status, acknowledged with 0x16 and its serial', () => {
    const message = asReport(decode(F.TRACCAR_ALARM_VIBRATION))
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x16, 0x001c)))
    const [event] = message.report.events
    expect(event).toMatchObject({ alarmCode: 'vibration', timestamp: utc(2015, 12, 29, 10, 43, 33), mcc: 460, mnc: 0, dbm: -75 })
    expect(event.latitude).toBeCloseTo(degrees(0x027ac804), 9)
    expect(event.context).toMatchObject({ alarm_byte: 3, lac: 0x287d, cell_id: 0x1f71, voltage_level: 4, gsm_signal: 4, language: 1 })
    expect(message.report.fixes).toHaveLength(1)
    expect(message.status).toMatchObject({ gps_tracking: true, voltage_level: 4, gsm_signal: 4 })
  })

  test('0x16 without the LBS length byte: its SOS and its cell are read right', () => {
    const message = asReport(decode(F.TRACCAR_ALARM_NO_LBS_LENGTH))
    const [event] = message.report.events
    expect(event.alarmCode).toBe('sos')
    expect(event).toMatchObject({ mcc: 370, mnc: 2, dbm: -75 })
    expect(event.context).toMatchObject({ lac: 0x5336, cell_id: 0x0027db, terminal_alarm: 'sos', external_voltage: 12.52 })
    expect(message.report.events).toHaveLength(1)
    expect(message.report.fixes[0].timestamp).toBe(utc(2023, 7, 10, 21, 14, 36))
    expect(message.status).toMatchObject({ ignition: true, external_voltage: 12.52, gsm_signal: 4 })
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x16, 0x004b)))
  })

  test('0x16 with a 4-byte cell ID (told apart by its length): SOS; battery percentage', () => {
    const sos = asReport(decode(F.TRACCAR_ALARM_WIDE_CELL_SOS))
    expect(sos.report.events.map((e) => e.alarmCode)).toEqual(['sos'])
    expect(sos.network?.cells).toEqual([{ mcc: 310, mnc: 4, lac: 0x81fe, cell_id: 0x066d9b03 }])
    const battery = asReport(decode(F.TRACCAR_ALARM_WIDE_CELL_BATTERY))
    expect(battery.status).toMatchObject({ battery_level: 93 })
    expect(battery.report.events.map((e) => e.alarmCode)).toEqual(['tamper']) // alarm byte 0x13
    expect(battery.report.fixes).toEqual([]) // not positioned
  })

  test('0x16 with alarm byte 0x25 and an LBS length that does not count itself: tamper', () => {
    const message = asReport(decode(F.TRACCAR_ALARM_0X25))
    expect(message.report.events.map((e) => [e.alarmCode, e.context.alarm_byte])).toEqual([['tamper', 0x25]])
    expect(message.report.events[0].latitude).toBeNull() // no fix: no place
    expect(message.network).toBeUndefined() // its cell is empty
  })

  test('terminal information bits 111 with no alarm byte: tamper', () => {
    const message = asReport(decode(F.TRACCAR_ALARM_TERMINAL_111))
    expect(message.report.events.map((e) => e.alarmCode)).toEqual(['tamper'])
    expect(message.report.events[0].context).toMatchObject({ alarm_byte: 0, terminal_alarm: 'tamper' })
  })

  test('0x26 (VL03 doc example): tamper without a fix; acknowledged, documented reply format', () => {
    const message = asReport(decode(F.VL03_ALARM))
    expect(message.report.fixes).toEqual([])
    expect(message.report.events).toHaveLength(1)
    expect(message.report.events[0]).toMatchObject({ alarmCode: 'tamper', timestamp: utc(2015, 12, 29, 3, 11, 38), latitude: null })
    expect(message.status).toMatchObject({ immobilized: true })
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x26, 0x000c)))
    expect(toHex(buildGt06Ack(0x26, 0x001c))).toBe(toHex(hex(F.VL03_ALARM_RESPONSE)))
  })

  test('0x26 with alarm byte 0x0C: tamper', () => {
    const message = asReport(decode(F.TRACCAR_ALARM_0X0C))
    expect(message.report.events[0]).toMatchObject({ alarmCode: 'tamper', mcc: 639, mnc: 20 })
    expect(message.report.events[0].context).toMatchObject({ alarm_byte: 0x0c, lac: 0x084c, cell_id: 0x003842 })
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x26, 0x0007)))
  })

  test('0x27 (VL03 doc example): the fence byte read, acknowledged with 0x27', () => {
    const message = asReport(decode(F.VL03_ALARM_FENCE))
    expect(message.report.events[0].alarmCode).toBe('tamper')
    expect(message.report.events[0].context).toMatchObject({ voltage_level: 2, language: 1 })
    expect('fence_number' in message.report.events[0].context).toBe(false) // 0xFF: none
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x27, 0)))
  })

  test('0x27 with a 2-byte MNC: the cell and the fix', () => {
    const message = asReport(decode(F.TRACCAR_ALARM_FENCE))
    const [fix] = message.report.fixes
    expect(fix.attributes).toMatchObject({ mcc: 310, mnc: 260, lac: 0xcb8a, cell_id: 0x00bef3, alarm: 'tamper', voltage_level: 6, gsm_signal: 3 })
    expect(fix.latitude).toBeCloseTo(degrees(0x04500591), 9)
    expect(fix.longitude).toBeCloseTo(-degrees(0x07f461ae), 9)
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x27, 0x0003)))
  })

  test('0xA4 (4G): the 4G cell, the alarm, acknowledged with 0xA4', () => {
    const message = asReport(decode(F.TRACCAR_ALARM_4G))
    const [event] = message.report.events
    expect(event).toMatchObject({ alarmCode: 'power_off', mcc: 460, mnc: 1, timestamp: utc(2017, 12, 12, 2, 40, 27) })
    expect(event.context).toMatchObject({ alarm_byte: 0x11, lac: 0x260e, cell_id: 0x0615f801, voltage_level: 5, gsm_signal: 4, language: 2 })
    expect(message.report.fixes).toHaveLength(1)
    expect(message.report.fixes[0].course).toBe(0x9c)
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0xa4, 0x0010)))
  })
})

describe('GT06 captures: alarms without a fix (0x19, 0xA5)', () => {
  test('0x19: SOS with no place, dated by the server, with its cell; acknowledged', () => {
    const message = asReport(decode(F.TRACCAR_CELL_ALARM))
    expect(message.report.fixes).toEqual([])
    expect(message.report.events).toEqual([
      expect.objectContaining({ alarmCode: 'sos', timestamp: NOW, latitude: null, longitude: null, mcc: 655, mnc: 10 }),
    ])
    expect(message.report.events[0].context).toMatchObject({ time_source: 'server', lac: 0x29e1, cell_id: 0x0036f1, gps_valid: false })
    expect(message.network?.cells).toEqual([{ mcc: 655, mnc: 10, lac: 0x29e1, cell_id: 0x0036f1 }])
    expect(toHex(message.ack!)).toBe(toHex(buildGt06Ack(0x19, 0x0008)))
  })

  test('0xA5 (4G): tamper; and one with no alarm only keeps the device alive', () => {
    const tamper = asReport(decode(F.TRACCAR_CELL_ALARM_4G))
    expect(tamper.report.events.map((e) => e.alarmCode)).toEqual(['tamper'])
    expect(tamper.network?.cells).toEqual([{ mcc: 302, mnc: 0xd0, lac: 0x75df, cell_id: 0x986615 }])
    expect(toHex(tamper.ack!)).toBe(toHex(buildGt06Ack(0xa5, 0x0019)))
    const quiet = asReport(decode(F.TRACCAR_CELL_STATUS_4G))
    expect(quiet.report).toEqual({ uniqueId: IMEI, fixes: [], events: [] })
    expect(quiet.keepAlive).toBe(true)
    expect(quiet.status).toMatchObject({ charging: true, voltage_level: 5, gsm_signal: 4 })
    expect(toHex(quiet.ack!)).toBe(toHex(buildGt06Ack(0xa5, 0x0005)))
  })
})

describe('GT06 captures: information (0x94), never acknowledged', () => {
  test('type 0x0A: IMSI and ICCID', () => {
    const message = asStatus(decode(F.TRACCAR_INFO_ICCID))
    expect(message.status).toEqual({ imsi: '520050218721401', iccid: '8966051912408052452' })
    expect(message.ack).toBeNull()
    expect(message.keepAlive).toBe(true)
    expect(asStatus(decode(F.ISSUE_4213_INFO_ICCID)).status).toEqual({ imsi: '334020199876078', iccid: '8952020617251318615' })
  })

  test('type 0x00 external voltage, and the bare voltage of a short frame', () => {
    expect(asStatus(decode(F.TRACCAR_INFO_VOLTAGE)).status).toEqual({ external_voltage: 2.37 })
    expect(asStatus(decode(F.TRACCAR_INFO_VOLTAGE_SHORT)).status).toEqual({ external_voltage: 12.59 })
  })

  test('type 0x05 door, with and without a date before the flags', () => {
    expect(asStatus(decode(F.TRACCAR_INFO_DOOR)).status).toEqual({ door: true })
    expect(asStatus(decode(F.TRACCAR_INFO_DOOR_CLOSED)).status).toEqual({ door: false })
  })

  test('type 0x0D fuel sensor: temperature and level', () => {
    expect(asStatus(decode(F.TRACCAR_INFO_FUEL)).status).toEqual({ temperature: 29.6, fuel_level: 8.43 })
  })

  test('type 0x04 status text: its ICCID', () => {
    expect(asStatus(decode(F.TRACCAR_INFO_STATUS_TEXT)).status).toEqual({ iccid: '8997103101008959042' })
  })
})

describe('GT06 captures: cell and Wi-Fi packets keep the device alive and keep their network data', () => {
  test('0x11 with a wrong declared length (issue #1973): taken by its stop bytes and CRC', () => {
    const frame = frameOf(F.ISSUE_1973_WRONG_LENGTH)
    expect(frame.lenient).toEqual({ declaredLength: 0x0a, crcChecked: true })
    const message = asReport(decodeGt06Frame(frame, { imei: IMEI }, { now: NOW }))
    expect(message.keepAlive).toBe(true)
    expect(message.ack).toBeNull()
    expect(message.report).toEqual({ uniqueId: IMEI, fixes: [], events: [] })
    expect(message.network).toEqual({
      timestamp: utc(2016, 5, 24, 10, 20, 46),
      cells: [{ mcc: 602, mnc: 2, lac: 0x0516, cell_id: 0x001f05 }],
      wifi: [],
    })
  })

  test('0x28 (VL03 doc example): the four real cells with their signal, empty slots left out', () => {
    const message = asReport(decode(F.VL03_CELLS))
    expect(message.ack).toBeNull()
    expect(message.network).toEqual({
      timestamp: utc(2016, 1, 13, 2, 2, 2),
      cells: [
        { mcc: 460, mnc: 0, lac: 0x287d, cell_id: 0x1f71, signal: 0x3e },
        { mcc: 460, mnc: 0, lac: 0x287d, cell_id: 0x1f72, signal: 0x31 },
        { mcc: 460, mnc: 0, lac: 0x287d, cell_id: 0x1e23, signal: 0x2d },
        { mcc: 460, mnc: 0, lac: 0x287d, cell_id: 0x1f40, signal: 0x18 },
      ],
      wifi: [],
      timing_advance: 0xff,
    })
  })

  test('0x2C: cells and the Wi-Fi access point', () => {
    const message = asReport(decode(F.TRACCAR_CELLS_WIFI))
    expect(message.network?.cells).toHaveLength(7)
    expect(message.network?.cells[0]).toEqual({ mcc: 310, mnc: 4, lac: 0xcb8a, cell_id: 0x00b177, signal: 0x54 })
    expect(message.network?.wifi).toEqual([{ bssid: '00:18:01:eb:40:39', signal: 0x38 }])
    expect(message.network?.timing_advance).toBe(7)
    expect(message.keepAlive).toBe(true)
  })

  test('0xA1 (4G): 4-byte LACs and 8-byte cell IDs', () => {
    const message = asReport(decode(F.TRACCAR_CELLS_4G))
    expect(message.network?.timestamp).toBe(utc(2017, 11, 4, 19, 9, 56))
    expect(message.network?.cells).toHaveLength(7)
    expect(message.network?.cells[0]).toEqual({ mcc: 460, mnc: 1, lac: 0x25fc, cell_id: 0x0618c102, signal: 1 })
    expect(message.ack).toBeNull()
  })

  test('0xA2 (4G): cells and eight Wi-Fi access points', () => {
    const message = asReport(decode(F.TRACCAR_CELLS_WIFI_4G))
    expect(message.network?.cells[0]).toEqual({ mcc: 460, mnc: 1, lac: 0x254e, cell_id: 0x0615f804, signal: 0 })
    expect(message.network?.wifi).toHaveLength(8)
    expect(message.network?.wifi[0]).toEqual({ bssid: 'f4:83:cd:4d:f4:c0', signal: 0xd7 })
    expect(message.network?.wifi[7]).toEqual({ bssid: '34:96:72:7b:4d:e4', signal: 0xc7 })
    expect(message.keepAlive).toBe(true)
  })
})

describe('GT06 captures: time and streams', () => {
  test('0x8A (VL03 doc example): answered with the server time, byte for byte', () => {
    const now = utc(2015, 12, 29, 0, 0, 21)
    const message = decodeGt06Frame(frameOf(F.VL03_TIME_REQUEST), { imei: IMEI }, { now })
    expect(toHex(message.ack!)).toBe(toHex(hex(F.VL03_TIME_RESPONSE)))
    expect(toHex(buildGt06TimeResponse(6, now))).toBe(toHex(hex(F.VL03_TIME_RESPONSE)))
  })

  test('a real stream of thirteen frames in one read (issue #1532): all decoded, in order', () => {
    const items = createGt06Parser().push(hex(F.ISSUE_1532_STREAM))
    expect(items.every((item) => item.kind === 'frame')).toBe(true)
    const messages = items.flatMap((item) => (item.kind === 'frame' ? [decodeGt06Frame(item.frame, { imei: IMEI }, { now: NOW })] : []))
    expect(messages.map((m) => m.kind)).toEqual(['status', 'status', ...Array(5).fill('report'), 'status', ...Array(5).fill('report')])
    const fixes = messages.flatMap((m) => (m.kind === 'report' ? m.report.fixes : []))
    expect(fixes.map((f) => f.timestamp)).toEqual([...fixes.map((f) => f.timestamp)].sort((a, b) => a - b))
    expect(fixes[0].timestamp).toBe(utc(2015, 11, 16, 23, 33, 19))
    expect(fixes.every((f) => f.valid && f.attributes.mcc === 404)).toBe(true)
  })
})
