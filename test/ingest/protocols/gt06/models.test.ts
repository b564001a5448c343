/**
 * The GT06 message types and model variants beyond the Concox documents, one real frame of each
 * (test/fixtures/gt06/frames.ts, from Traccar's public GT06 tests): the exact values stored and
 * the exact answer. Values worked out by hand from the bytes; where Traccar's test asserts one
 * (a driver ID, engine hours, an altitude, an alarm), it agrees.
 */
import { describe, expect, test } from 'bun:test'
import { crc16X25 } from '../../../../src/ingest/protocols/crc'
import { decodeGt06Frame, type Gt06Message } from '../../../../src/ingest/protocols/gt06/decoder'
import { gt06 } from '../../../../src/ingest/protocols/gt06/descriptor'
import { createGt06Parser } from '../../../../src/ingest/protocols/gt06/framing'
import type { DecodedFix } from '../../../../src/ingest/types'
import { TRACCAR_GT06_FRAMES } from '../../../fixtures/gt06/frames'
import { connectionDecoder, hex, toHex } from '../helpers'

const IMEI = '359339075005244'
/** the listener's clock in these tests: 2024-03-15 08:30:05 UTC */
const NOW = Date.UTC(2024, 2, 15, 8, 30, 5) / 1000

/** Decode the frame of Traccar's GT06 test at `line` (its CRC recomputed when it was published wrong). */
function decodeLine(line: number): Extract<Gt06Message, { kind: 'report' }> {
  const entry = TRACCAR_GT06_FRAMES.find((frame) => frame.id === `Gt06ProtocolDecoderTest:${line}`)
  if (!entry) throw new Error(`no frame at line ${line}`)
  const bytes = hex(entry.hex)
  if (entry.crcWrong) {
    const crc = crc16X25(bytes, 2, bytes.length - 4)
    bytes[bytes.length - 4] = crc >> 8
    bytes[bytes.length - 3] = crc & 0xff
  }
  const items = createGt06Parser().push(bytes)
  expect(items.map((item) => item.kind)).toEqual(['frame'])
  if (items[0].kind !== 'frame') throw new Error('no frame')
  const message = decodeGt06Frame(items[0].frame, { imei: IMEI }, { now: NOW })
  if (message.kind !== 'report') throw new Error(`expected a report, got ${JSON.stringify(message)}`)
  return message
}

interface Place {
  time: string
  latitude: number
  longitude: number
  speed: number
  course: number
  valid?: boolean
  altitude?: number | null
}

function expectFix(fix: DecodedFix | undefined, place: Place, attributes: Record<string, unknown> = {}): void {
  expect(fix).toBeDefined()
  expect(new Date(fix!.timestamp * 1000).toISOString()).toBe(place.time)
  expect(fix!.latitude).toBeCloseTo(place.latitude, 5)
  expect(fix!.longitude).toBeCloseTo(place.longitude, 5)
  expect({ speed: fix!.speed, course: fix!.course, valid: fix!.valid }).toEqual({ speed: place.speed, course: place.course, valid: place.valid ?? true })
  if (place.altitude !== undefined) expect(fix!.altitude).toBe(place.altitude)
  expect(fix!.attributes).toMatchObject(attributes)
}

const ack = (text: string) => toHex(hex(text))

describe('GT06 0x95: dashcam alarms and events (JC100, JC400, JC450)', () => {
  test('JC400 form (FF FF, version): place, speed, external voltage, the video files, harsh cornering; answered', () => {
    const message = decodeLine(54)
    expectFix(
      message.report.fixes[0],
      { time: '2024-11-13T03:20:06.000Z', latitude: 43.897038, longitude: -79.27096, speed: 44, course: 169 },
      {
        external_voltage: 13.8,
        event: 0x92,
        event_files:
          'EVENT_862798052429087_00000000_2024_11_12_22_20_06_I_56.mp4,EVENT_862798052429087_00000000_2024_11_12_22_20_06_F_55.mp4',
      },
    )
    expect(message.report.events.map((event) => event.alarmCode)).toEqual(['harsh_cornering'])
    expect(toHex(message.ack!)).toBe(ack('78 78 05 95 00 37 67 71 0D 0A'))
  })

  test('7-byte form: the event at its date, no place: harsh acceleration; answered', () => {
    const message = decodeLine(553)
    expect(message.report.fixes).toEqual([])
    expect(message.report.events).toMatchObject([{ alarmCode: 'harsh_acceleration', timestamp: Date.UTC(2019, 9, 2, 9, 50, 28) / 1000, latitude: null }])
    expect(toHex(message.ack!)).toBe(ack('78 78 05 95 00 01 33 C4 0D 0A'))
  })

  test('JC100 form (no satellites, no speed): harsh braking, SOS and collision at their place', () => {
    const braking = decodeLine(561)
    expectFix(braking.report.fixes[0], { time: '2020-10-06T14:34:08.000Z', latitude: 50, longitude: 19, speed: 0, course: 197 }, { event: 0x91 })
    expect(braking.report.events.map((event) => event.alarmCode)).toEqual(['harsh_braking'])
    expect(toHex(braking.ack!)).toBe(ack('78 78 05 95 00 00 22 4D 0D 0A'))
    expect(decodeLine(565).report.events.map((event) => event.alarmCode)).toEqual(['sos'])
    expect(decodeLine(569).report.events.map((event) => event.alarmCode)).toEqual(['collision'])
  })
})

describe('GT06 0x70: VL103 information modules', () => {
  test('the position module with its altitude, the removal event, battery voltage, ICCID, network; answered in a 0x7878 frame', () => {
    const message = decodeLine(270)
    expectFix(
      message.report.fixes[0],
      { time: '2019-09-15T13:18:16.000Z', latitude: 43.894466, longitude: -79.27285, speed: 0, course: 277, altitude: 213 },
      { event: 0x12, battery_voltage: 3.7, iccid: '89012608522933976266' },
    )
    expect(message.report.events).toMatchObject([{ alarmCode: 'tamper', latitude: 43.894466111111115 }])
    // its cell module names the network (MCC 302, MNC 610) but no cell (LAC and cell ID zero)
    expect(message.report.events[0]).toMatchObject({ mcc: 302, mnc: 610 })
    expect(message.network).toBeUndefined()
    expect(toHex(message.ack!)).toBe(ack('78 78 05 70 00 05 45 FC 0D 0A'))
  })

  test('information without a position module keeps the device alive and is answered', () => {
    const message = decodeLine(32)
    expect(message.report.fixes).toEqual([])
    expect(toHex(message.ack!)).toBe(ack('78 78 05 70 1E A4 FE FE 0D 0A'))
  })
})

describe('GT06 0x16 from TRX16I / VL103 and others', () => {
  test('an LBS length not counting itself, then the RFID card after the tail', () => {
    const message = decodeLine(648)
    expectFix(message.report.fixes[0], { time: '2025-12-29T14:59:03.000Z', latitude: 22.602073, longitude: 113.832036, speed: 0, course: 0 }, {
      driver_unique_id: 'c3000001453f9201',
      mcc: 460,
      lac: 0x25ef,
      cell_id: 0x40e88c,
    })
    expect(toHex(message.ack!)).toBe(ack('78 78 05 16 00 27 94 78 0D 0A'))
  })

  test('an LBS length of 0 with a stray byte among the 45 that fill its place', () => {
    const message = decodeLine(248)
    expectFix(message.report.fixes[0], { time: '2020-05-28T21:02:04.000Z', latitude: 22.991977, longitude: 113.383277, speed: 83, course: 175 }, { voltage_level: 6 })
    expect(toHex(message.ack!)).toBe(ack('78 78 05 16 00 4B 3D 12 0D 0A'))
  })
})

describe('GT06 low battery alarms in 0x19, 0xA4, 0x27 (frames published with their CRC edited)', () => {
  test('each raises low_battery and is answered', () => {
    const cell = decodeLine(142)
    expect(cell.report.events).toMatchObject([{ alarmCode: 'low_battery', mcc: 302 }])
    expect(toHex(cell.ack!)).toBe(ack('78 78 05 19 00 56 BC B1 0D 0A'))
    const fence4g = decodeLine(146)
    expect(fence4g.report.events).toMatchObject([{ alarmCode: 'low_battery', latitude: 29.670202222222223 }])
    expect(toHex(fence4g.ack!)).toBe(ack('78 78 05 A4 01 90 73 6E 0D 0A'))
    const fence = decodeLine(150)
    expect(fence.report.events.map((event) => event.alarmCode)).toEqual(['low_battery'])
    expect(toHex(fence.ack!)).toBe(ack('78 78 05 27 00 00 1D B7 0D 0A'))
  })
})

describe('GT06 0x22 / 0x25 of the NT series and XT40', () => {
  test('NT20 0x22: source, IMEI and device date before the GPS block; engine hours, voltages', () => {
    const message = decodeLine(597)
    expectFix(message.report.fixes[0], { time: '2024-12-06T20:32:56.000Z', latitude: -29.755007, longitude: -57.085939, speed: 0, course: 94 }, {
      external_voltage: 24.36,
      battery_voltage: 4,
      engine_hours_ms: 22_140_000,
      ignition: true,
    })
    expect(message.ack).toBeNull()
  })

  test('XT40 0x25: the same, then the driver card', () => {
    const message = decodeLine(611)
    expectFix(message.report.fixes[0], { time: '2025-09-09T16:14:15.000Z', latitude: -23.46324, longitude: -46.878231, speed: 0, course: 0 }, {
      external_voltage: 12.97,
      battery_voltage: 4.2,
      engine_hours_ms: 1412 * 60_000,
      driver_unique_id: '0235313030363538303642444603',
      mcc: 724,
    })
  })
})

describe('GT06 positions of other models', () => {
  test('0x36 (VL103 with a card reader): odometer, voltages, engine hours, card', () => {
    const message = decodeLine(637)
    expectFix(message.report.fixes[0], { time: '2025-12-29T15:23:36.000Z', latitude: 22.602109, longitude: 113.832, speed: 0, course: 0 }, {
      odometer: 100,
      external_voltage: 13,
      battery_voltage: 4,
      engine_hours_ms: 360_000,
      driver_unique_id: 'c3000001453f9201',
    })
  })

  test('0x34 (X1): data word, GPS, odometer, cell, driver, voltages', () => {
    const message = decodeLine(300)
    expectFix(message.report.fixes[0], { time: '2018-10-09T02:09:58.000Z', latitude: 29.113232, longitude: 48.12319, speed: 0, course: 341 }, {
      odometer: 1_450_313,
      driver_unique_id: '4892715',
      external_voltage: 14.28,
      battery_voltage: 4.19,
      mcc: 419,
    })
  })

  test('0x31 (SL4X): altitude in metres', () => {
    expectFix(decodeLine(89).report.fixes[0], { time: '2024-06-19T01:43:57.000Z', latitude: -22.89278, longitude: -47.094444, speed: 0, course: 0, altitude: 678 }, { mcc: 724, mnc: 10 })
  })

  test('0x32 (SL4X): cell, status tail and altitude', () => {
    const message = decodeLine(85)
    expectFix(message.report.fixes[0], { time: '2024-06-19T01:38:28.000Z', latitude: -22.892754, longitude: -47.094412, speed: 0, course: 0, altitude: 687 }, { ignition: true, mcc: 724 })
    expect(message.ack).toBeNull()
  })

  test('0x32 in a 0x7979 frame (AZ735): GPS after a length byte; answered in a 0x7979 frame', () => {
    const message = decodeLine(408)
    expectFix(message.report.fixes[0], { time: '2017-06-23T12:27:24.000Z', latitude: -6.133382, longitude: 106.995049, speed: 0, course: 53 })
    expect(toHex(message.ack!)).toBe(ack('79 79 00 05 32 00 BC ED D1 0D 0A'))
    const withoutGps = decodeLine(399)
    expect(withoutGps.report.fixes).toEqual([])
    expect(toHex(withoutGps.ack!)).toBe(ack('79 79 00 05 32 01 21 BB 65 0D 0A'))
  })

  test('0x37: cell, ignition, then the odometer module', () => {
    expectFix(decodeLine(238).report.fixes[0], { time: '2020-08-13T05:00:10.000Z', latitude: -6.135882, longitude: 106.79224, speed: 0, course: 0 }, { odometer: 9000, mcc: 510, reupload: true })
  })

  test('0xA2 under 100 bytes (LW4G): 4G cell, voltages, odometer', () => {
    const message = decodeLine(58)
    expectFix(message.report.fixes[0], { time: '2024-11-15T15:52:07.000Z', latitude: 3.501628, longitude: -76.504233, speed: 0, course: 106 }, {
      mcc: 732,
      mnc: 101,
      cell_id: 0x095674c9,
      battery_level: 42,
      odometer: 19_249,
    })
  })

  test('0x10 (GK310): the GPS block', () => {
    expectFix(decodeLine(508).report.fixes[0], { time: '2014-01-09T03:35:14.000Z', latitude: -34.304377, longitude: -58.975278, speed: 0, course: 0 })
  })

  test('0x11 of 28 bytes (GK310): GPS and a cell with a 2-byte MNC', () => {
    expectFix(decodeLine(194).report.fixes[0], { time: '2021-11-11T02:44:48.000Z', latitude: 43.970484, longitude: -79.263956, speed: 0, course: 0 }, { mcc: 302, mnc: 720, cell_id: 0x0084890c })
  })

  test('0x24 of 41 bytes (SR411 mini): ignition and voltages', () => {
    expectFix(decodeLine(177).report.fixes[0], { time: '2022-06-26T16:54:00.000Z', latitude: -22.907096, longitude: -43.1312, speed: 0, course: 70 }, {
      ignition: true,
      external_voltage: 12.61,
      battery_voltage: 4.04,
    })
  })

  test('0x1E (JI09) and 0x2A (address request): the GPS block', () => {
    expectFix(decodeLine(511).report.fixes[0], { time: '2014-03-17T11:05:17.000Z', latitude: -16.543998, longitude: -68.074275, speed: 2, course: 166 })
    const request = decodeLine(547)
    expectFix(request.report.fixes[0], { time: '2015-12-29T07:17:57.000Z', latitude: 23.11168, longitude: 114.409244, speed: 0, course: 216 })
    expect(request.ack).toBeNull()
  })

  test('0x61 (iButton): IMEI, GPS, cell, the driver key as a number', () => {
    expectFix(decodeLine(28).report.fixes[0], { time: '2025-10-30T13:56:06.000Z', latitude: -25.082746, longitude: -50.168727, speed: 0, course: 0 }, { driver_unique_id: '20534657', mcc: 724 })
  })

  test('0x17 of 35 bytes: GPS, cell, RFID card', () => {
    expectFix(decodeLine(93).report.fixes[0], { time: '2024-06-14T02:24:49.000Z', latitude: 22.666069, longitude: 113.818036, speed: 0, course: 0 }, { driver_unique_id: 'bf0000012ca7e001' })
  })

  test('0x12 with the IMEI first (QH302R)', () => {
    expectFix(decodeLine(623).report.fixes[0], { time: '2026-02-12T10:30:50.000Z', latitude: 13.48894, longitude: 144.82304, speed: 44, course: 250 }, { mcc: 310 })
  })

  test('0x38 with a block that says "not positioned": its last place, flagged not valid', () => {
    expectFix(decodeLine(40).report.fixes[0], { time: '2025-05-14T14:12:38.000Z', latitude: 9.89775, longitude: -84.102996, speed: 0, course: 171, valid: false })
  })

  test('0x22 with an empty GPS block (not positioned, zeros): no fix', () => {
    expect(decodeLine(330).report.fixes).toEqual([])
  })

  test('0x21 command answer that spells out a position: the answer, and a fix', () => {
    const entry = TRACCAR_GT06_FRAMES.find((frame) => frame.id === 'Gt06ProtocolDecoderTest:444')!
    const items = createGt06Parser().push(hex(entry.hex))
    if (items[0].kind !== 'frame') throw new Error('no frame')
    const step = connectionDecoder(gt06)(items[0].frame, { now: NOW, uniqueId: IMEI })
    if (step.kind !== 'report') throw new Error(`expected a report, got ${JSON.stringify(step)}`)
    expect(step.commandAnswer?.text).toStartWith('Current position!Lat:N54.739332')
    expect(step.reply).toBeNull()
    expectFix(step.report.fixes[0], { time: '2017-05-26T10:27:47.000Z', latitude: 54.739332, longitude: 25.27327, speed: 0, course: 126.53 })
  })
})
