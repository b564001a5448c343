import { describe, expect, test } from 'bun:test'
import { decodeH02Frame, type H02DecodeOptions, type H02Message } from '../../../../src/ingest/protocols/h02/decoder'
import { h02 } from '../../../../src/ingest/protocols/h02/descriptor'
import { scanFrames } from '../../../../src/ingest/protocols/framing'
import { decodeH02Status, newlyActiveAlarms } from '../../../../src/ingest/protocols/h02/status'
import { connectionDecoder } from '../helpers'
import * as F from './frames'

type Report = Extract<H02Message, { kind: 'report' }>

function text(frame: string, options: H02DecodeOptions = {}): Report {
  const message = decodeH02Frame({ kind: 'text', text: frame.trimEnd() }, options)
  if (message.kind !== 'report') throw new Error(`expected a report, got: ${message.message}`)
  return message
}

function binary(frame: string, options: H02DecodeOptions = {}): Report {
  const message = decodeH02Frame({ kind: 'binary', bytes: F.hex(frame) }, options)
  if (message.kind !== 'report') throw new Error(`expected a report, got: ${message.message}`)
  return message
}

const utc = (year: number, month: number, day: number, hours: number, minutes: number, seconds: number) =>
  Date.UTC(year, month - 1, day, hours, minutes, seconds) / 1000
/** degrees + minutes/60, as the frames print them */
const dm = (degrees: number, minutes: number) => degrees + minutes / 60
const KNOT_KMH = 1.852

describe('H02 V1 (position)', () => {
  test('time, validity, coordinates, speed, course, date and the status word', () => {
    const message = text(F.V1_COSTA_RICA)
    expect(message.type).toBe('V1')
    expect(message.uniqueId).toBe('4210051415')
    expect(message.report.uniqueId).toBe('4210051415')
    const [fix] = message.report.fixes
    expect(fix.timestamp).toBe(utc(2015, 12, 22, 16, 45, 49))
    expect(fix.valid).toBe(true)
    expect(fix.latitude).toBeCloseTo(dm(9, 56.3869), 9)
    expect(fix.longitude).toBeCloseTo(-dm(84, 6.7068), 9)
    expect(fix.speed).toBe(0)
    expect(fix.course).toBe(0)
    expect(fix.altitude).toBeNull()
    expect(fix.satellites).toBeNull()
    expect(message.status?.hex).toBe('FFFFFBFF')
    // FFFFFBFF: only bit 10 at 0, ACC off; nothing to raise
    expect(message.status?.ignition).toBe(false)
    expect(message.report.events).toEqual([])
    expect(fix.attributes).toMatchObject({ maker: 'HQ', status_word: 'FFFFFBFF', ignition: false, external_power: true, armed: false })
  })

  test('the serving cell after the status, in decimal', () => {
    const message = text(F.V1_COSTA_RICA)
    expect(message.network).toEqual({ mcc: 712, mnc: 1, cells: [{ lac: 0, cellId: 0, signal: 6 }] })
    expect(message.report.fixes[0].attributes).toMatchObject({ mcc: 712, mnc: 1, lac: 0, cell_id: 0 })
  })

  test('the serving cell in hex, told apart by the country code (0x106 = 262, where the fix is)', () => {
    const message = text(F.V1_HEX_CELL)
    expect(message.network).toEqual({ mcc: 262, mnc: 0x14, cells: [{ lac: 0x201, cellId: 0x2173, signal: null }] })
    const [fix] = message.report.fixes
    expect(fix.latitude).toBeCloseTo(dm(52, 39.3538), 9)
    expect(fix.longitude).toBeCloseTo(dm(10, 3.5292), 9)
    // knots to km/h
    expect(fix.speed).toBeCloseTo(21.03 * KNOT_KMH, 2)
    expect(fix.course).toBe(312)
    expect(message.status?.ignition).toBe(true)
    // bit 18 at 0 while driving: not an alarm (documents disagree on it; see status.ts)
    expect(message.report.events).toEqual([])
  })

  test('a cell in the hex form of a user report (issue #746): 0x194 = 404, India', () => {
    const message = text(F.V1_ISSUE_746)
    expect(message.uniqueId).toBe('356823036945777')
    expect(message.network).toEqual({ mcc: 404, mnc: 0x65, cells: [{ lac: 0x96, cellId: 0xb78f, signal: null }] })
    expect(message.report.fixes[0].latitude).toBeCloseTo(dm(28, 28.1347), 9)
    expect(message.report.fixes[0].longitude).toBeCloseTo(dm(77, 3.8008), 9)
    expect(message.report.fixes[0].timestamp).toBe(utc(2014, 6, 11, 11, 14, 16))
  })

  test('the -dd-mm.mmmm coordinate form, south and west', () => {
    const [fix] = text(F.V1_DASH_COORDINATES).report.fixes
    expect(fix.latitude).toBeCloseTo(-dm(23, 29.0095), 9)
    expect(fix.longitude).toBeCloseTo(-dm(46, 51.5852), 9)
    expect(fix.speed).toBeCloseTo(2.4 * KNOT_KMH, 2)
    expect(fix.course).toBe(65)
    expect(fix.timestamp).toBe(utc(2015, 3, 7, 3, 1, 49))
  })

  test('coordinates without a decimal point; fields after the status that are not a cell are kept as they came', () => {
    const message = text(F.V1_NO_DECIMAL_POINT)
    const [fix] = message.report.fixes
    expect(fix.latitude).toBeCloseTo(-dm(37, 57.3392), 9)
    expect(fix.longitude).toBeCloseTo(dm(145, 3.7022), 9)
    expect(fix.course).toBe(173)
    expect(message.network).toBeNull()
    expect(message.attributes.extra_fields).toBe(',,9059e2c,8232,4')
  })

  test('an empty validity field is an invalid fix, still stored as such', () => {
    const [fix] = text(F.V1_EMPTY_VALIDITY).report.fixes
    expect(fix.valid).toBe(false)
    expect(fix.latitude).toBeCloseTo(dm(28, 27.61232), 9)
    expect(fix.longitude).toBeCloseTo(dm(77, 3.84822), 9)
  })

  test('a battery field between course and date; bit 19 at 0 (backup battery) raises power_cut', () => {
    const message = text(F.V1_BATTERY_FIELD)
    const [fix] = message.report.fixes
    expect(fix.timestamp).toBe(utc(2018, 9, 8, 5, 40, 48))
    expect(fix.speed).toBeCloseTo(0.5 * KNOT_KMH, 2)
    expect(fix.course).toBe(47)
    expect(message.attributes.battery_level).toBe(4)
    expect(message.status?.externalPower).toBe(false)
    expect(message.report.events.map((event) => event.alarmCode)).toEqual(['power_cut'])
    const [event] = message.report.events
    expect(event.timestamp).toBe(fix.timestamp)
    expect(event.latitude).toBe(fix.latitude)
    expect(event.context).toMatchObject({ status_word: 'EEE7FBDF', status_bit: 19, gps_valid: true })
  })

  test('a device without a position yet keeps alive with its status and cell, and stores no fix', () => {
    const message = text(F.V1_NO_POSITION)
    expect(message.report.fixes).toEqual([])
    expect(message.uniqueId).toBe('353505510948929')
    expect(message.status?.hex).toBe('FFFFF7FF')
    expect(message.network).toEqual({ mcc: 0xf0, mnc: 0xa, cells: [{ lac: 0x11a0, cellId: 0xc0c6, signal: null }] })
    const zeros = text(F.V1_ZEROS)
    expect(zeros.report.fixes).toEqual([])
    expect(zeros.network?.mcc).toBe(0x106)
  })

  test('the binary twin 15 s later is the same place: the binary flags read as A, N, E', () => {
    const [textFix] = text(F.V1_TWIN).report.fixes
    const [binaryFix] = binary(F.BINARY_32_TWIN).report.fixes
    expect(binaryFix.timestamp - textFix.timestamp).toBe(15)
    expect(binaryFix.latitude).toBeCloseTo(textFix.latitude, 9)
    expect(binaryFix.longitude).toBeCloseTo(textFix.longitude, 9)
    expect(binaryFix.valid).toBe(textFix.valid)
  })
})

describe('H02 V4 (command answers)', () => {
  test('the command, the answer fields and the position', () => {
    const message = text(F.V4_S20_DONE)
    expect(message.type).toBe('V4')
    expect(message.uniqueId).toBe('2020916012')
    expect(message.answer).toEqual({ command: 'S20', fields: ['DONE', '130305'] })
    const [fix] = message.report.fixes
    expect(fix.timestamp).toBe(utc(2002, 9, 22, 5, 3, 16))
    expect(fix.latitude).toBeCloseTo(dm(22, 12.8745), 9)
    expect(fix.longitude).toBeCloseTo(dm(113, 46.6574), 9)
    expect(fix.speed).toBeCloseTo(14.28 * KNOT_KMH, 2)
    expect(fix.course).toBe(28)
    expect(message.attributes.maker).toBe('TH')
    expect(message.reply).toBeNull()
  })

  test('an answer with punctuation in it', () => {
    expect(text(F.V4_S23).answer).toEqual({ command: 'S23', fields: ['165.165.33.250:8800', '130305'] })
  })

  test('status bit 1 in an answer raises sos', () => {
    const message = text(F.V4_S1_SOS)
    expect(message.answer?.fields).toEqual(['OK', 'pass_word', '130305'])
    expect(message.report.events.map((event) => event.alarmCode)).toEqual(['sos'])
  })

  test('an answer without a position (hand-made, the shape of a relay answer): answer only, no fix', () => {
    const message = text('*HQ,4210051415,V4,S20,034313,1,1#')
    expect(message.answer).toEqual({ command: 'S20', fields: ['034313', '1', '1'] })
    expect(message.report.fixes).toEqual([])
  })
})

describe('H02 NBR (cell towers)', () => {
  test('mcc, mnc and every cell with lac, cell id and signal; no fix', () => {
    const message = text(F.NBR_SIX_CELLS)
    expect(message.type).toBe('NBR')
    expect(message.uniqueId).toBe('4109179024')
    expect(message.report.fixes).toEqual([])
    expect(message.network).toEqual({
      mcc: 722,
      mnc: 310,
      cells: [
        { lac: 8106, cellId: 32010, signal: 23 },
        { lac: 8101, cellId: 22007, signal: 25 },
        { lac: 8106, cellId: 12010, signal: 23 },
        { lac: 8106, cellId: 22105, signal: 22 },
        { lac: 8101, cellId: 22012, signal: 16 },
        { lac: 8106, cellId: 42010, signal: 5 },
      ],
    })
    expect(message.status?.hex).toBe('FFFFFBFF')
    expect(message.attributes).toMatchObject({ mcc: 722, mnc: 310, lac: 8106, cell_id: 32010, extra_fields: '5' })
  })

  test('signals in dBm are kept negative', () => {
    expect(text(F.NBR_DBM).network?.cells.map((cell) => cell.signal)).toEqual([-67, -67])
  })

  test('a time the device got wrong (69 seconds) does not lose the cells', () => {
    const message = text(F.NBR_BAD_TIME)
    expect(message.network?.mcc).toBe(460)
    expect(message.network?.cells).toHaveLength(4)
  })

  test('an alarm in a frame without a fix is placed at the frame time, without coordinates', () => {
    // hand-made from NBR_SIX_CELLS: status bit 1 at 0
    const message = text(F.NBR_SIX_CELLS.replace('FFFFFBFF', 'FFFFFBFD'))
    expect(message.report.events).toHaveLength(1)
    const [event] = message.report.events
    expect(event.alarmCode).toBe('sos')
    expect(event.timestamp).toBe(utc(2017, 2, 10, 10, 37, 32))
    expect(event.latitude).toBeNull()
    expect(event.mcc).toBe(722)
    expect(event.mnc).toBe(310)
    expect(event.context).toMatchObject({ time_source: 'device', gps_valid: false })
  })

  test('cells that do not add up to the count are refused', () => {
    const message = decodeH02Frame({ kind: 'text', text: '*HQ,4109179024,NBR,103732,722,310,0,6,8106,32010,23,100217,FFFFFBFF#' })
    expect(message.kind).toBe('invalid')
  })
})

describe('H02 LINK (heartbeat)', () => {
  test('signal, satellites, battery, steps and turnovers; no fix', () => {
    const message = text(F.LINK_TRACCAR)
    expect(message.type).toBe('LINK')
    expect(message.report.fixes).toEqual([])
    expect(message.attributes).toMatchObject({ gsm_signal: 20, satellites: 8, battery_level: 67, steps: 0, turnovers: 0, status_word: 'FFFFFBFF' })
  })

  test('the battery of an RF-V8S (issue #1173)', () => {
    const message = text(F.LINK_ISSUE_1173)
    expect(message.uniqueId).toBe('7310028651')
    expect(message.attributes.battery_level).toBe(86)
    expect(message.status?.ignition).toBe(true)
  })
})

describe('H02 other types', () => {
  test('a type not decoded still names its device: a keep-alive with nothing to store', () => {
    const message = text(F.XT_HEARTBEAT)
    expect(message.type).toBe('XT')
    expect(message.uniqueId).toBe('356327080425330')
    expect(message.report).toEqual({ uniqueId: '356327080425330', fixes: [], events: [] })
    expect(message.status).toBeNull()
  })

  test('a frame without an id is refused', () => {
    expect(decodeH02Frame({ kind: 'text', text: '*HQ,,V1,173212,A,2225.78879,S,02829.19021,E,0.00,0,290418,FFFFFBFF#' }).kind).toBe('invalid')
    expect(decodeH02Frame({ kind: 'text', text: '*HQ,4109198974,#' }).kind).toBe('invalid')
  })
})

describe('H02 binary', () => {
  test('45 bytes: id, time, date, position, flags, speed, course, status and the serving cell', () => {
    const message = binary(F.BINARY_45_BOGOTA)
    expect(message.type).toBe('binary')
    expect(message.uniqueId).toBe('4106000826')
    const [fix] = message.report.fixes
    expect(fix.timestamp).toBe(utc(2015, 8, 31, 21, 53, 21))
    expect(fix.valid).toBe(true)
    expect(fix.latitude).toBeCloseTo(dm(4, 41.939), 9)
    expect(fix.longitude).toBeCloseTo(-dm(74, 4.183), 9)
    expect(fix.speed).toBe(0)
    expect(fix.course).toBe(0)
    expect(message.network).toEqual({ mcc: 732, mnc: 12, cells: [{ lac: 0, cellId: 0, signal: null }] })
    expect(message.status?.hex).toBe('FFFFFBFD')
    expect(message.report.events.map((event) => event.alarmCode)).toEqual(['sos'])
    expect(fix.attributes).toMatchObject({ battery_byte: 6, tail_hex: 'ff0015060000002c02dc0c000000001f' })
  })

  test('45 bytes in China: mcc 460, lac and cell id', () => {
    const message = binary(F.BINARY_45_SHENZHEN)
    expect(message.uniqueId).toBe('4109114427')
    expect(message.network).toEqual({ mcc: 460, mnc: 0, cells: [{ lac: 0x262b, cellId: 0x0f17, signal: null }] })
    expect(message.report.fixes[0].latitude).toBeCloseTo(dm(22, 33.983), 9)
    expect(message.report.fixes[0].longitude).toBeCloseTo(dm(114, 2.652), 9)
    expect(message.report.fixes[0].timestamp).toBe(utc(2014, 12, 1, 12, 22, 47))
  })

  test('42 bytes: the 8-byte id is the IMEI (Luhn-valid) and a pad digit', () => {
    const message = binary(F.BINARY_42_IMEI)
    expect(message.uniqueId).toBe('352483084193293')
    const [fix] = message.report.fixes
    expect(fix.timestamp).toBe(utc(2017, 8, 18, 10, 47, 59))
    expect(fix.latitude).toBeCloseTo(dm(26, 27.3359), 9)
    expect(fix.longitude).toBeCloseTo(dm(74, 41.2294), 9)
    expect(fix.speed).toBeCloseTo(24 * KNOT_KMH, 2)
    expect(fix.course).toBe(138)
    expect(message.status?.hex).toBe('FEFFFFFF')
  })

  test('a 48-byte frame of a firmware with a longer tail: the position, the tail kept', () => {
    const message = binary(F.BINARY_48_CASABLANCA)
    const [fix] = message.report.fixes
    expect(fix.latitude).toBeCloseTo(dm(33, 33.5008), 9)
    expect(fix.longitude).toBeCloseTo(-dm(7, 32.0697), 9)
    expect(fix.timestamp).toBe(utc(2015, 10, 16, 5, 20, 19))
    expect(message.network).toBeNull()
    expect(message.attributes.tail_hex).toBe('ff000252776566060000000000000000000049')
  })

  test('a frame that is not BCD where digits belong is refused', () => {
    const bytes = F.hex(F.BINARY_32_TWIN)
    bytes[6] = 0x2a // hours: not a BCD digit pair
    expect(decodeH02Frame({ kind: 'binary', bytes }).kind).toBe('invalid')
    expect(decodeH02Frame({ kind: 'binary', bytes: F.hex(F.BINARY_32_TWIN).subarray(0, 20) }).kind).toBe('invalid')
  })
})

describe('H02 status word and alarms', () => {
  test('negative logic: FFFFFFFF is nothing, each listed bit at 0 is its alarm', () => {
    expect(decodeH02Status(0xffffffff).alarms).toEqual([])
    const cases: [number, string][] = [
      [0, 'vibration'],
      [1, 'sos'],
      [2, 'overspeed'],
      [4, 'geofence_enter'],
      [7, 'geofence_exit'],
      [19, 'power_cut'],
    ]
    for (const [bit, alarm] of cases) expect(decodeH02Status((0xffffffff & ~(1 << bit)) >>> 0).alarms).toEqual([alarm])
    // bits the documents disagree on raise nothing
    for (const bit of [3, 5, 6, 11, 16, 17, 18, 31]) expect(decodeH02Status((0xffffffff & ~(1 << bit)) >>> 0).alarms).toEqual([])
  })

  test('ignition is bit 10 at 1, armed is bit 9 at 0, external power is bit 19 at 1', () => {
    const status = decodeH02Status(0xfff7f9ff)
    expect(status).toMatchObject({ hex: 'FFF7F9FF', ignition: false, armed: true, externalPower: false })
    expect(decodeH02Status(0xffffffff)).toMatchObject({ ignition: true, armed: false, externalPower: true })
  })

  test('an alarm bit held over several frames raises one event, raised again after it clears', () => {
    const sos = 0xfffffbfd
    const clear = 0xfffffbff
    expect(newlyActiveAlarms(sos, null).map((alarm) => alarm.alarmCode)).toEqual(['sos'])
    expect(newlyActiveAlarms(sos, sos)).toEqual([])
    expect(newlyActiveAlarms(clear, sos)).toEqual([])
    expect(newlyActiveAlarms(sos, clear).map((alarm) => alarm.alarmCode)).toEqual(['sos'])

    const first = binary(F.BINARY_45_BOGOTA)
    const again = binary(F.BINARY_45_BOGOTA, { previousStatusWord: first.status?.value })
    expect(first.report.events).toHaveLength(1)
    expect(again.report.events).toEqual([])
  })

  test('an alarm in a frame with no time of its own takes the server clock, or is dropped without one', () => {
    const withoutTime = '*HQ,353505510948929,V1,,V,,N,,E,0.00,0,,FFFFFBFD#'
    expect(text(withoutTime).report.events).toEqual([])
    const [event] = text(withoutTime, { now: 1_700_000_000 }).report.events
    expect(event).toMatchObject({ alarmCode: 'sos', timestamp: 1_700_000_000, latitude: null })
    expect(event.context).toMatchObject({ time_source: 'server' })
  })
})

describe('H02 replies', () => {
  const now = Date.UTC(2023, 10, 14, 22, 13, 20) / 1000
  const ascii = (bytes: Uint8Array | null) => (bytes ? new TextDecoder().decode(bytes) : null)

  test('none by default: the protocol defines no answer to reports', () => {
    for (const frame of [F.V1_COSTA_RICA, F.NBR_SIX_CELLS, F.LINK_TRACCAR, F.V4_S20_DONE]) expect(text(frame, { now }).reply).toBeNull()
    expect(binary(F.BINARY_45_BOGOTA, { now }).reply).toBeNull()
  })

  test('on request, V1 and NBR are confirmed with V4, the type and the server time, in the maker the device used', () => {
    const options = { now, acknowledgeReports: true }
    expect(ascii(text(F.V1_COSTA_RICA, options).reply)).toBe('*HQ,4210051415,V4,V1,20231114221320#')
    expect(ascii(text(F.V1_TH_CRLF, options).reply)).toBe('*TH,2020916012,V4,V1,20231114221320#')
    expect(ascii(text(F.NBR_SIX_CELLS, options).reply)).toBe('*HQ,4109179024,V4,NBR,20231114221320#')
    expect(text(F.LINK_TRACCAR, options).reply).toBeNull()
    expect(text(F.V4_S20_DONE, options).reply).toBeNull()
    expect(binary(F.BINARY_32_TWIN, options).reply).toBeNull()
    // no clock, no time to send
    expect(text(F.V1_COSTA_RICA, { acknowledgeReports: true }).reply).toBeNull()
  })
})

describe('H02 descriptor', () => {
  test('names the protocol, its transport, default port and port variable', () => {
    expect(h02).toMatchObject({ name: 'h02', transport: 'tcp', defaultPort: 5013, portVariable: 'H02_PORT' })
    const [item] = scanFrames(h02.framing(), F.ascii(F.V1_COSTA_RICA)).items
    if (item.kind !== 'frame') throw new Error('no frame')
    const step = connectionDecoder(h02)(item.frame, { now: 1_700_000_000, uniqueId: null })
    expect(step.kind).toBe('report')
  })

  test('a connection keeps the last status word: an alarm bit raises its event when it turns on, not on every frame', () => {
    const decode = connectionDecoder(h02)
    const events = (frame: string) => {
      const [item] = scanFrames(h02.framing(), F.ascii(frame)).items
      if (item.kind !== 'frame') throw new Error('no frame')
      const step = decode(item.frame, { now: 1_700_000_000, uniqueId: null })
      if (step.kind !== 'report') throw new Error(step.kind)
      return step.report.events.map((e) => e.alarmCode)
    }
    const v1 = (status: string) => `*HQ,4209951296,V1,063023,A,2234.0297,N,11405.9101,E,000.00,000,011123,${status}#`
    expect(events(v1('FFFFFFFD'))).toEqual(['sos']) // bit 1 at 0: SOS
    expect(events(v1('FFFFFFFD'))).toEqual([]) // still held: not a new alarm
    expect(events(v1('FFFFFFFF'))).toEqual([])
    expect(events(v1('FFFFFFFD'))).toEqual(['sos'])
  })
})
