/**
 * The JT808 decoder on captured frames (test/fixtures/jt808/frames.ts), one per message type: the
 * exact values of a location (0x0200) and a batch (0x0704), the exact answers the terminal waits
 * for (worked out by hand from JT/T 808-2013 §8.1, §8.5 and §8.2), alarms as our codes, and the
 * commands' frames and answers.
 */
import { describe, expect, test } from 'bun:test'
import { answerRef, answerText, encodeJt808Command } from '../../../../src/ingest/protocols/jt808/command'
import { decodeJt808Frame, type Jt808Message } from '../../../../src/ingest/protocols/jt808/decoder'
import { jt808 } from '../../../../src/ingest/protocols/jt808/descriptor'
import { jt808FrameReader, type Jt808Frame } from '../../../../src/ingest/protocols/jt808/framing'
import { createFrameMachine } from '../../../../src/ingest/protocols/framing'
import { byName } from '../../../fixtures/jt808/frames'
import { connectionDecoder, hex, toHex } from '../helpers'
import { framesOf } from './support'

const NOW = Date.UTC(2026, 10, 27) / 1000

function frameOf(name: string): Jt808Frame {
  const frames = framesOf(byName(name))
  expect(frames).toHaveLength(1)
  return frames[0]
}

function decode(name: string, previousAlarmFlags: number | null = null): Jt808Message {
  return decodeJt808Frame(frameOf(name), { now: NOW, previousAlarmFlags })
}

function asReport(message: Jt808Message) {
  if (message.kind !== 'report') throw new Error(`expected a report, got ${message.kind}`)
  return message
}

const utc = (text: string) => Date.parse(text) / 1000

describe('JT808 header', () => {
  test('2013 header: the phone number as its digits, leading zero kept; 2019 header: 10 bytes and the version', () => {
    expect(frameOf('t091')).toMatchObject({ messageId: 0x0200, version2019: false, terminalId: '094027587492', serial: 0x000a, packet: null })
    expect(frameOf('t005')).toMatchObject({ messageId: 0x0100, version2019: true, protocolVersion: 1, terminalId: '00000866496077582164', serial: 0x5218 })
    // firmware that sends no BCD there: its bytes in hex, as Traccar names such a device
    expect(frameOf('t106').terminalId).toBe('4eb6fb4ad628')
  })
})

describe('JT808 location 0x0200', () => {
  test('t091: place (south/west bits), time from GMT+8, speed, mileage; SOS raised; answered 0x8001', () => {
    const message = asReport(decode('t091'))
    expect(message.report.uniqueId).toBe('094027587492')
    expect(message.report.fixes).toEqual([
      {
        timestamp: utc('2013-04-12T08:49:52Z'),
        latitude: 50.871735,
        longitude: -1.255923,
        speed: 2,
        course: 0,
        altitude: 0,
        satellites: null,
        valid: true,
        attributes: { status_flags: '0000000a', ignition: false, alarm_flags: '00000001', odometer: 1800 },
      },
    ])
    expect(message.report.events).toHaveLength(1)
    expect(message.report.events[0]).toMatchObject({ alarmCode: 'sos', timestamp: utc('2013-04-12T08:49:52Z'), latitude: 50.871735, longitude: -1.255923, context: { alarm_bit: 0 } })
    expect(message.alarmFlags).toBe(1)
    expect(toHex(message.reply!)).toBe(toHex(hex('7e80010005094027587492000a000a020000567e')))
  })

  test('an alarm bit already on at the previous location raises nothing again', () => {
    expect(asReport(decode('t091', 0x00000001)).report.events).toEqual([])
  })

  test('satellites (0x31) and signal (0x30) items; unknown items skipped by their length', () => {
    const [fix] = asReport(decode('t083')).report.fixes
    expect(fix).toMatchObject({ latitude: -6.152508, longitude: 106.720475, satellites: 4, valid: true })
    expect(fix.attributes).toMatchObject({ gsm_signal: 27 })
  })

  test("what Traccar asserts of the same frames, where we keep it: 14 satellites (t001's and t006's batches, the 2019 header of t006)", () => {
    expect(asReport(decode('t001')).report.fixes.map((fix) => fix.satellites)).toEqual([14])
    expect(asReport(decode('t006')).report.fixes.map((fix) => fix.satellites)).toEqual([14])
  })

  test('alarm bits map to our codes: bit 7 low_battery (main power undervoltage), bit 8 power_cut; an unlisted one is `alarm` with its name', () => {
    const base = frameOf('t091')
    const withFlags = (flags: number): Jt808Frame => {
      const body = base.body.slice()
      new DataView(body.buffer).setUint32(0, flags)
      return { ...base, body }
    }
    const codes = (flags: number) => asReport(decodeJt808Frame(withFlags(flags), { now: NOW })).report.events.map((event) => [event.alarmCode, event.context.raw_alarm])
    expect(codes(1 << 7)).toEqual([['low_battery', undefined]])
    expect(codes(1 << 8)).toEqual([['power_cut', undefined]])
    expect(codes((1 << 28) | (1 << 29))).toEqual([['movement', undefined], ['collision', undefined]])
    expect(codes(1 << 2)).toEqual([['alarm', 'fatigue_driving']])
    // reserved bits raise nothing
    expect(codes(1 << 16)).toEqual([])
  })

  test('a location at 0/0 is no fix, but the frame is answered and keeps the device alive', () => {
    const message = asReport(decode('t002'))
    expect(message.report.fixes).toEqual([])
    expect(message.reply).not.toBeNull()
  })
})

describe('JT808 batch 0x0704', () => {
  test('t078: eight re-sent locations, each a fix in order; one answer', () => {
    const message = asReport(decode('t078'))
    expect(message.report.fixes).toHaveLength(8)
    expect(message.report.fixes[0]).toEqual({
      timestamp: utc('2016-05-27T01:06:24Z'),
      latitude: 22.639634,
      longitude: 114.031952,
      speed: 0,
      course: 1,
      altitude: 370,
      satellites: null,
      valid: true,
      attributes: { status_flags: '00000003', ignition: true, odometer: 2900 },
    })
    expect(message.report.fixes.map((fix) => fix.timestamp)).toEqual(
      ['01:06:24', '01:06:53', '01:07:27', '01:07:56', '01:08:30', '01:09:00', '01:09:33', '01:10:02'].map((time) => utc(`2016-05-27T${time}Z`)),
    )
    expect(message.report.status).toMatchObject({ ignition: true, odometer: 2900 })
    expect(toHex(message.reply!)).toBe(toHex(hex('7e8001000501356777777707f507f5070400a37e')))
  })
})

describe('JT808 registration, authentication, heartbeat: the answers the terminal waits for', () => {
  test('registration 0x0100: 0x8100 with result 0 and the authentication code; result 4 for an unknown terminal', () => {
    const message = decode('t085')
    expect(message).toMatchObject({ kind: 'login', uniqueId: '013511221122' })
    if (message.kind !== 'login') return
    expect(toHex(message.accept)).toBe(toHex(hex('7e8100000f0135112211220005000500303133353131323231313232bd7e')))
    expect(toHex(message.refuse)).toBe(toHex(hex('7e810000030135112211220005000504b27e')))
  })

  test('a 2019 registration is answered with the 2019 header', () => {
    const message = decode('t005')
    if (message.kind !== 'login') throw new Error('a login')
    expect(toHex(message.accept)).toBe(toHex(hex('7e81004017010000086649607758216452185218003030303030383636343936303737353832313634f57e')))
  })

  test('authentication 0x0102: 0x8001 result 0, or 1 when refused', () => {
    const message = decode('t087')
    expect(message).toMatchObject({ kind: 'login', uniqueId: '013511221122' })
    if (message.kind !== 'login') return
    expect(toHex(message.accept)).toBe(toHex(hex('7e8001000501351122112200060006010200b37e')))
    expect(toHex(message.refuse)).toBe(toHex(hex('7e8001000501351122112200060006010201b27e')))
  })

  test('heartbeat 0x0002: nothing stored, 0x8001 result 0', () => {
    const message = asReport(decode('t093'))
    expect(message.report).toEqual({ uniqueId: '043048325465', fixes: [], events: [] })
    expect(toHex(message.reply!)).toBe(toHex(hex('7e8001000504304832546500b700b7000200f97e')))
  })

  test('a message we do not read (0x0702 driver identity) is answered 0x8001 and stores nothing', () => {
    const message = asReport(decode('t008'))
    expect(message.report.fixes).toEqual([])
    const { serial } = frameOf('t008')
    const [reply] = createFrameMachine(jt808FrameReader()).push(message.reply!)
    expect(reply.kind === 'frame' && Array.from(reply.frame.body)).toEqual([serial >> 8, serial & 0xff, 0x07, 0x02, 0x00])
  })
})

describe('JT808 commands', () => {
  const terminal = '013511221122'

  test('position query, terminal control, a parameter and a text message as frames, their serial from the reference', () => {
    const wire = (plain: string) => toHex(hex(`7e${plain.replace(/\s/g, '')}${xorHex(plain)}7e`))
    const frames = ['8201', '8105:4', '8103:0029=30', '8300:RELAY,1#'].map((text) => {
      const encoded = encodeJt808Command(text, terminal, 0xabcd1234, jt808.connectionState())
      return encoded.kind === 'frame' ? toHex(encoded.bytes) : encoded.reason
    })
    // message id, properties (the body's length), phone, serial 0x1234, body
    expect(frames).toEqual([
      wire(`8201 0000 ${terminal} 1234`),
      wire(`8105 0001 ${terminal} 1234 04`),
      // one parameter: id 0x00000029, 4 bytes, 30
      wire(`8103 000a ${terminal} 1234 01 00000029 04 0000001e`),
      // flag 0x01, then the text
      wire(`8300 0009 ${terminal} 1234 01 ${ascii('RELAY,1#')}`),
    ])
  })

  test('texts of another shape are unfit, and so is a device not named by a phone number', () => {
    for (const text of ['', '8105', '8105:9', '8103:0029=abc', '8300:', '8300:é', '8500:1', 'RESET#']) expect(encodeJt808Command(text, terminal, 1, jt808.connectionState()).kind).toBe('unfit')
    expect(encodeJt808Command('8201', '123456789012345', 1, jt808.connectionState()).kind).toBe('unfit')
  })

  test('a 2019 terminal gets the 2019 header and the text type', () => {
    const encoded = encodeJt808Command('8300:Hi', '00000866496077582164', 7, jt808.connectionState())
    if (encoded.kind !== 'frame') throw new Error('a frame')
    const [item] = createFrameMachine(jt808FrameReader()).push(encoded.bytes)
    expect(item.kind === 'frame' && item.frame).toMatchObject({ messageId: 0x8300, version2019: true, protocolVersion: 1, terminalId: '00000866496077582164', serial: 7 })
    expect(item.kind === 'frame' && Array.from(item.frame.body)).toEqual([0x01, 0x01, 0x48, 0x69])
  })

  test("the terminal's general response 0x0001 names the command by its serial: its reference and result come back", () => {
    // the command and its answer on one connection
    const connection = jt808.connectionState()
    encodeJt808Command('8105:4', terminal, 0x5eed0042, connection)
    // a general response to serial 0x0042, message 0x8105, result 0 (success)
    const response = frameFrom(`0001 0005 ${terminal} 0009 0042 8105 00`)
    const message = asReport(decodeJt808Frame(response, { now: NOW }))
    expect(message.reply).toBeNull()
    expect(message.answer).toEqual({ replySerial: 0x42, replyMessageId: 0x8105, result: 0 })
    expect(answerRef(terminal, message.answer!, connection)).toBe(0x5eed0042)
    expect(answerText(message.answer!)).toBe('8105 success')
    // through the descriptor: a report with the command's answer
    const step = connectionDecoder(jt808, connection)(response, { now: NOW, uniqueId: terminal })
    expect(step).toMatchObject({ kind: 'report', reply: null, commandAnswer: { text: '8105 success', ref: 0x5eed0042 } })
  })
})

function xorHex(text: string): string {
  return hex(text)
    .reduce((check, byte) => check ^ byte, 0)
    .toString(16)
    .padStart(2, '0')
}

function ascii(text: string): string {
  return Array.from(text, (c) => c.charCodeAt(0).toString(16).padStart(2, '0')).join('')
}

/** A frame from its header and body in hex (no escapes needed), its check code computed. */
function frameFrom(text: string): Jt808Frame {
  const plain = text.replace(/\s/g, '')
  const [item] = createFrameMachine(jt808FrameReader()).push(hex(`7e${plain}${xorHex(plain)}7e`))
  if (item.kind !== 'frame') throw new Error('not a frame')
  return item.frame
}
