/**
 * The @Track decoder over the public frames (test/fixtures/gl200/frames.ts): the share of frames
 * with a position stored at the right place and time, nothing from frames without one, and one
 * frame of each message type decoded field by field (values worked out by hand from the frame).
 */
import { describe, expect, test } from 'bun:test'
import { encodeGl200Command, gl200AnswerOf } from '../../../../src/ingest/protocols/gl200/command'
import { decodeGl200Frame, type Gl200Message } from '../../../../src/ingest/protocols/gl200/decoder'
import { frameStarting, TEXT_FRAMES, type ExpectedFix } from '../../../fixtures/gl200/frames'

const NOW = 1_800_000_000
const utc = (year: number, month: number, day: number, hours: number, minutes: number, seconds: number) => Date.UTC(year, month - 1, day, hours, minutes, seconds) / 1000
/** yyyyMMddHHmmss (UTC) as Unix seconds, read here independently of the decoder */
const unix = (text: string) => utc(+text.slice(0, 4), +text.slice(4, 6), +text.slice(6, 8), +text.slice(8, 10), +text.slice(10, 12), +text.slice(12, 14))

function decode(text: string): Extract<Gl200Message, { kind: 'report' }> {
  const message = decodeGl200Frame(text, { now: NOW })
  if (message.kind !== 'report') throw new Error(`not decoded: ${message.message}`)
  return message
}

function storedRight(message: Gl200Message, expected: readonly ExpectedFix[]): boolean {
  if (message.kind !== 'report' || message.report.fixes.length !== expected.length) return false
  return expected.every(([latitude, longitude, time], i) => {
    const fix = message.report.fixes[i]
    return Math.abs(fix.latitude - latitude) < 1e-9 && Math.abs(fix.longitude - longitude) < 1e-9 && fix.timestamp === unix(time)
  })
}

describe('the public frames', () => {
  test('at least 85% of the frames with a position give every position, at the right place and time', () => {
    const withPosition = TEXT_FRAMES.filter((frame) => frame.fixes.length > 0)
    const right = withPosition.filter((frame) => storedRight(decodeGl200Frame(frame.text, { now: NOW }), frame.fixes))
    // the figure the report gives: 147 of 147 frames today
    console.log(`@Track: ${right.length} of ${withPosition.length} frames with a position stored right (${TEXT_FRAMES.length} frames collected)`)
    expect(withPosition.length).toBeGreaterThan(140)
    expect(right.length / withPosition.length).toBeGreaterThanOrEqual(0.85)
  })

  test('no frame throws; a frame without a position gives no fix', () => {
    const without = TEXT_FRAMES.filter((frame) => frame.fixes.length === 0)
    expect(without.length).toBeGreaterThan(30)
    for (const frame of TEXT_FRAMES) expect(() => decodeGl200Frame(frame.text, { now: NOW })).not.toThrow()
    for (const frame of without) {
      const message = decodeGl200Frame(frame.text, { now: NOW })
      if (message.kind === 'report') expect({ text: frame.text, fixes: message.report.fixes }).toEqual({ text: frame.text, fixes: [] })
    }
  })

  test('every frame names its device by the IMEI (or the MEID of CDMA units)', () => {
    for (const frame of TEXT_FRAMES) {
      const message = decodeGl200Frame(frame.text, { now: NOW })
      expect(message.kind).toBe('report')
      if (message.kind === 'report') expect(message.uniqueId).toMatch(/^(\d{15}|[0-9A-F]{14})$/)
    }
  })
})

describe('one frame of each message type', () => {
  test('GTFRI: the fixed report, speed km/h, course, altitude, the serving cell', () => {
    const message = decode(frameStarting('+RESP:GTFRI,060228,862894020180553,,,10').text)
    expect(message).toMatchObject({ head: 'RESP', type: 'GTFRI', uniqueId: '862894020180553', reply: null, ack: null })
    expect(message.report.fixes).toEqual([
      {
        timestamp: utc(2016, 3, 9, 11, 35, 48),
        latitude: -17.720434,
        longitude: -62.899703,
        speed: 20,
        course: 147,
        altitude: 329.7,
        satellites: null,
        valid: true,
        attributes: { message: 'GTFRI', gps_accuracy: 1, mcc: 736, mnc: 3, lac: 0x6aae, cell_id: 0x3381 },
      },
    ])
    expect(message.report.events).toEqual([])
  })

  test('GTFRI with four positions in one report: four fixes, in order', () => {
    const message = decode(frameStarting('+RESP:GTFRI,1A0900,860599000306845').text)
    expect(message.report.fixes.map(({ latitude, longitude, timestamp, speed, course }) => [latitude, longitude, timestamp, speed, course])).toEqual([
      [47.681639, 8.611466, utc(2018, 12, 14, 13, 46, 3), 2.1, 0],
      [47.681846, 8.6116, utc(2018, 12, 14, 13, 46, 19), 5.7, 34],
      [47.681983, 8.611893, utc(2018, 12, 14, 13, 46, 33), 4.4, 62],
      [47.68204, 8.612236, utc(2018, 12, 14, 13, 46, 48), 4.8, 78],
    ])
  })

  test('+BUFF: stored the same, flagged buffered', () => {
    const message = decode(frameStarting('+BUFF:GTFRI,8020040200,866314060249032').text)
    expect(message.head).toBe('BUFF')
    expect(message.report.fixes).toMatchObject([{ latitude: -33.524718, longitude: -71.596533, timestamp: utc(2023, 9, 26, 20, 3, 38), attributes: { buffered: true, gps_accuracy: 3 } }])
  })

  test('GPS accuracy 0: the last known position, kept as not valid', () => {
    const message = decode(frameStarting('+RESP:GTFRI,DE0114,865284041308986').text)
    expect(message.report.fixes).toMatchObject([{ latitude: 34.032081, longitude: -117.678624, valid: false, attributes: { gps_accuracy: 0 } }])
  })

  test('GTERI (extended, with a digital-fuel mask) of a GV350M', () => {
    const message = decode(frameStarting('+RESP:GTERI,F10413,862599050544301').text)
    expect(message.report.fixes).toMatchObject([
      { latitude: 33.89664, longitude: -117.484369, timestamp: utc(2024, 9, 19, 2, 0, 58), speed: 98.2, course: 93, altitude: 216.4, valid: true, attributes: { mcc: 311, mnc: 480 } },
    ])
  })

  test('GTCAN: the position after the CAN fields', () => {
    const message = decode(frameStarting('+RESP:GTCAN,270703,867162025056839').text)
    expect(message.report.fixes).toMatchObject([{ latitude: 32.543697, longitude: -116.886007, timestamp: utc(2018, 10, 31, 20, 29, 59), speed: 88.6, course: 104, altitude: 117.6 }])
  })

  test('GTIGN: ignition on, an event at the fix and the ignition kept as status', () => {
    const message = decode(frameStarting('+BUFF:GTIGN,6E0202,868589060169789').text)
    expect(message.report.fixes).toMatchObject([
      { latitude: -33.393457, longitude: -70.616413, timestamp: utc(2024, 6, 10, 20, 17, 12), speed: 0, course: 105, altitude: 532.2, valid: true, attributes: { ignition: true, buffered: true } },
    ])
    expect(message.status).toEqual({ ignition: true })
    expect(message.report.events).toMatchObject([
      { alarmCode: 'ignition_on', timestamp: utc(2024, 6, 10, 20, 17, 12), latitude: -33.393457, longitude: -70.616413, mcc: 730, mnc: 1, context: { buffered: true } },
    ])
  })

  test('GTIGN at GPS accuracy 0: the event keeps its time but no place', () => {
    const message = decode(frameStarting('+RESP:GTIGN,060228,862894020180553').text)
    expect(message.report.fixes).toMatchObject([{ latitude: -17.800608, longitude: -63.158195, valid: false, speed: 0.2, course: 189, altitude: 420 }])
    expect(message.report.events).toMatchObject([{ alarmCode: 'ignition_on', timestamp: utc(2016, 3, 9, 2, 29, 51), latitude: null, longitude: null }])
  })

  test('GTIGF without a position: ignition off at the server\'s time, no fix', () => {
    const message = decode(frameStarting('+RESP:GTIGF,500101,868570000393782').text)
    expect(message.report.fixes).toEqual([])
    expect(message.status).toEqual({ ignition: false })
    expect(message.report.events).toMatchObject([{ alarmCode: 'ignition_off', timestamp: NOW, latitude: null, longitude: null, context: { time_source: 'server' } }])
  })

  test('GTSOS: sos at the fix', () => {
    const message = decode(frameStarting('+RESP:GTSOS,020102').text)
    expect(message.report.events).toMatchObject([{ alarmCode: 'sos', timestamp: utc(2009, 2, 14, 1, 32, 54), latitude: 31.222073, longitude: 121.354335, speed: 4.3 }])
  })

  test('GTHBM: harsh braking (type 0) and harsh cornering (type 2)', () => {
    expect(decode(frameStarting('+RESP:GTHBM,4B0101').text).report.events).toMatchObject([{ alarmCode: 'harsh_braking' }])
    expect(decode(frameStarting('+RESP:GTHBM,BD0214').text).report.events).toMatchObject([{ alarmCode: 'harsh_cornering', latitude: 6.666228, longitude: -1.601826 }])
    expect(decode(frameStarting('+RESP:GTHBM,0F0100,135790246811220,,,11').text).report.events).toMatchObject([{ alarmCode: 'harsh_acceleration' }])
  })

  test('GTPFA: power off; GTPNA: power on, which has no code of ours, as `alarm` with its name', () => {
    expect(decode(frameStarting('+RESP:GTPFA').text).report).toMatchObject({ fixes: [], events: [{ alarmCode: 'power_off', timestamp: NOW }] })
    expect(decode(frameStarting('+RESP:GTPNA,F50201').text).report).toMatchObject({ fixes: [], events: [{ alarmCode: 'alarm', context: { raw_alarm: 'GTPNA' } }] })
  })

  test('GTBPL: low backup battery; GTMPN: main power back', () => {
    expect(decode(frameStarting('+RESP:GTBPL,110100').text).report.events).toMatchObject([{ alarmCode: 'low_battery', latitude: null, context: { gps_valid: false } }])
    expect(decode(frameStarting('+RESP:GTMPN').text).report.events).toMatchObject([{ alarmCode: 'alarm', context: { raw_alarm: 'GTMPN' } }])
  })

  test('GTGEO and GTSPD (frames in the document\'s layout, <report id><report type> before the position): the type decides', () => {
    const report = (type: string, idType: string) =>
      decode(`+RESP:${type},02010B,135790246811220,,,${idType},1,1,4.3,92,70.0,121.354335,31.222073,20090214013254,0460,0000,18d8,6141,00,,20090214093254,11F0$`).report.events.map((event) => event.alarmCode)
    expect(report('GTGEO', '01')).toEqual(['geofence_enter'])
    expect(report('GTGEO', '10')).toEqual(['geofence_exit'])
    expect(report('GTSPD', '00')).toEqual(['overspeed'])
    expect(report('GTSPD', '01')).toEqual([])
  })

  test('GTSTT, GTRTL, GTOBD: a fix, no alarm', () => {
    for (const prefix of ['+RESP:GTSTT,060228', '+RESP:GTRTL,DF0200', '+RESP:GTOBD,360701']) {
      const message = decode(frameStarting(prefix).text)
      expect(message.report.fixes.length).toBe(1)
      expect(message.report.events).toEqual([])
    }
  })

  test('GTTRI of a firmware without the protocol version: the IMEI right after the type', () => {
    const message = decode(frameStarting('+RESP:GTTRI').text)
    expect(message.uniqueId).toBe('862370030005908')
    expect(message.report.fixes).toMatchObject([{ latitude: -34.084002, longitude: 18.8211, timestamp: utc(2017, 6, 7, 15, 20, 24) }])
  })

  test('GTINF: the device is there, no fix', () => {
    const message = decode(frameStarting('+RESP:GTINF,1A0800').text)
    expect(message.report).toEqual({ uniqueId: '860599000773978', fixes: [], events: [] })
  })

  test('+ACK:GTHBD: the heartbeat is answered +SACK:GTHBD,<version>,<count>$, exactly', () => {
    const message = decode(frameStarting('+ACK:GTHBD').text)
    expect(message.report.fixes).toEqual([])
    expect(message.ack).toBeNull()
    expect(new TextDecoder().decode(message.reply!)).toBe('+SACK:GTHBD,1A0401,11F0$')
  })

  test('+ACK:GTRTO: the answer to a command, its fields between the device name and the send time', () => {
    const message = decode(frameStarting('+ACK:GTRTO').text)
    expect(message.ack).toEqual({ command: 'GTRTO', fields: ['VER', 'FFFF'] })
    expect(gl200AnswerOf(message.ack!)).toEqual({ text: 'GTRTO,VER,FFFF' })
    expect(message.reply).toBeNull()
  })
})

describe('frames that are not @Track', () => {
  test('another head, a type that is not GTxxx, no IMEI: invalid, with a reason', () => {
    for (const text of ['+SACK:11F0$', '+RESP:XYZ,1A0401,135790246811220,,20100214093254,11F0$', '+RESP:GTFRI,1A0401,12345,,0$', '*HQ,4210051415,V1#', '']) {
      const message = decodeGl200Frame(text, { now: NOW })
      expect(message.kind).toBe('invalid')
    }
  })

  test('coordinates out of range or an impossible time: no fix', () => {
    const base = '+RESP:GTFRI,060228,862894020180553,,,10,1,1,20.0,147,329.7,LON,LAT,TIME,0736,0003,6AAE,3381,00,913.3,,,,0,220101,,,,20160309073554,132B$'
    for (const [lon, lat, time] of [
      ['-182.899703', '-17.720434', '20160309113548'],
      ['-62.899703', '-97.720434', '20160309113548'],
      ['-62.899703', '-17.720434', '20160231113548'],
      ['-62.899703', '-17.720434', '20161309113548'],
      ['-62.899703', '-17.720434', '20160309246048'],
    ]) {
      expect(decode(base.replace('LON', lon).replace('LAT', lat).replace('TIME', time)).report.fixes).toEqual([])
    }
  })
})

describe('commands', () => {
  test('an AT+GT command is sent as it is, its `$` added when left out', () => {
    const bytes = (text: string) => {
      const encoded = encodeGl200Command(text)
      return encoded.kind === 'frame' ? new TextDecoder().decode(encoded.bytes) : encoded.kind
    }
    expect(bytes('AT+GTRTO=gv300,1,,,,,,FFFF$')).toBe('AT+GTRTO=gv300,1,,,,,,FFFF$')
    expect(bytes('AT+GTOUT=gv300,1,,,0,0,0,0,0,0,0,,,,,,,FFFF')).toBe('AT+GTOUT=gv300,1,,,0,0,0,0,0,0,0,,,,,,,FFFF$')
    // another shape, a `$` inside, a control character: not sent
    expect(bytes('RELAY,1#')).toBe('unfit')
    expect(bytes('AT+GTRTO=gv300,1$AT+GTRTO=gv300,3$')).toBe('unfit')
    expect(bytes('AT+GTRTO=gv300\r\n,1$')).toBe('unfit')
  })
})
