/**
 * The Meitrack unit over the frames of Traccar's public tests (test/fixtures/meitrack/frames.ts):
 * every frame through the framing and the decoder as a connection would receive it; the share of
 * position frames stored with the right place and time; exact values for one frame of each
 * message type; the bytes of every answer a device waits for.
 */
import { describe, expect, test } from 'bun:test'
import { createFrameMachine } from '../../../../src/ingest/protocols/framing'
import { PROTOCOLS } from '../../../../src/ingest/protocols'
import { encodeMeitrackCommand, meitrackConnectionState, type MeitrackConnectionState } from '../../../../src/ingest/protocols/meitrack/command'
import { decodeMeitrackFrame, type MeitrackMessage } from '../../../../src/ingest/protocols/meitrack/decoder'
import { meitrackFrameReader, type MeitrackFrame } from '../../../../src/ingest/protocols/meitrack/framing'
import type { Step, TcpProtocol } from '../../../../src/ingest/protocols/protocol'
import { FRAMES, frameNamed, wire, type SourcedFrame } from '../../../fixtures/meitrack/frames'
import { connectionDecoder } from '../helpers'

const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0))
const text = (bytes: Uint8Array | null) => (bytes ? String.fromCharCode(...bytes) : null)
/** a time after every capture */
const NOW = Date.UTC(2026, 10, 27) / 1000

/** The frames a connection gets from `bytes` (errors as their codes). */
function frames(bytes: Uint8Array): (MeitrackFrame | string)[] {
  const machine = createFrameMachine(meitrackFrameReader())
  return machine.push(bytes).map((item) => (item.kind === 'frame' ? item.frame : item.error.code))
}

function decodeOnly(frame: SourcedFrame): MeitrackMessage {
  const [only, ...rest] = frames(wire(frame))
  expect(rest).toEqual([])
  if (typeof only === 'string') throw new Error(`${frame.name}: ${only}`)
  return decodeMeitrackFrame(only, { now: NOW })
}

function report(frame: SourcedFrame): Extract<MeitrackMessage, { kind: 'report' }> {
  const message = decodeOnly(frame)
  if (message.kind !== 'report') throw new Error(`${frame.name}: ${message.message}`)
  return message
}

/**
 * Where and when the first position of each binary batch is, and how many positions it holds.
 * Worked out from the documented layout and checked against what else the frames say: the serving
 * cell's country (MCC) is the country of the place in every one; CCE_2's picture is named
 * 20250607122041 (Brisbane time, UTC+10) for a fix at 02:20:40 UTC; Traccar's own test asserts
 * CCC_49's time and place.
 */
const BATCHES: Record<string, { fixes: number; time: string; latitude: number; longitude: number }> = {
  CCE_1: { fixes: 3, time: '2026-04-03T21:24:53Z', latitude: 33.925621, longitude: -6.91751 }, // Morocco, MCC 604
  CCE_2: { fixes: 1, time: '2025-06-07T02:20:40Z', latitude: -27.257698, longitude: 153.030471 }, // Brisbane, 505
  CCE_3: { fixes: 1, time: '2024-08-21T03:45:47Z', latitude: -6.290546, longitude: 106.809451 }, // Jakarta, 510
  CCE_4: { fixes: 1, time: '2023-12-19T08:21:50Z', latitude: -0.870123, longitude: 116.741464 }, // Borneo, 510
  CCE_5: { fixes: 1, time: '2022-04-13T02:21:19Z', latitude: 22.509975, longitude: 114.056171 }, // Shenzhen, 460
  CCE_6: { fixes: 1, time: '2023-03-27T07:10:25Z', latitude: 22.50987, longitude: 114.056421 }, // Shenzhen, 460
  CCE_7: { fixes: 1, time: '2023-09-06T13:53:55Z', latitude: 55.717031, longitude: 13.21376 }, // Sweden, 240
  CCE_8: { fixes: 3, time: '2023-02-26T00:48:38Z', latitude: -27.263293, longitude: 153.037538 }, // Brisbane, 505
  CCE_9: { fixes: 1, time: '2023-02-20T10:15:43Z', latitude: 22.510033, longitude: 114.05637 }, // Shenzhen, 460
  CCE_11: { fixes: 2, time: '2023-02-01T07:27:53Z', latitude: 22.510221, longitude: 114.055923 }, // Shenzhen, 460
  CCE_12: { fixes: 1, time: '2023-01-05T07:21:25Z', latitude: 22.509874, longitude: 114.05624 }, // Shenzhen, 460
  CCE_13: { fixes: 3, time: '2022-09-09T22:12:28Z', latitude: -37.986346, longitude: 144.456471 }, // Victoria (no cell)
  CCE_15: { fixes: 3, time: '2021-12-20T11:12:18Z', latitude: 26.304076, longitude: 50.203481 }, // Gulf (no cell)
  CCE_17: { fixes: 1, time: '2020-09-30T00:07:45Z', latitude: 1.3562, longitude: 103.739715 }, // Singapore, 525
  CCE_21: { fixes: 1, time: '2018-02-12T00:41:20Z', latitude: 47.068393, longitude: 15.440636 }, // Graz, 232
  CCE_24: { fixes: 3, time: '2017-10-17T06:57:19Z', latitude: 3.343196, longitude: 101.508763 }, // Malaysia, 502
  CCC_49: { fixes: 1, time: '2014-05-24T04:59:49Z', latitude: -7.266504, longitude: 112.743651 }, // Surabaya, 510
  CCC_50: { fixes: 18, time: '2014-01-03T12:56:12Z', latitude: 50.651916, longitude: 14.727517 }, // Czechia, 230
}

/** What a text report says of its own place and time: latitude, longitude, yymmddHHMMSS after the event code. */
function textPosition(frame: SourcedFrame): { time: string; latitude: number; longitude: number } | null {
  const fields = String.fromCharCode(...wire(frame)).split(',')
  const at = fields[2] === 'AAA' ? 4 : fields[2] === 'AFF' ? 5 : -1
  if (at < 0) return null
  const [, yy, mm, dd, hh, mi, ss] = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)$/.exec(fields[at + 2])!
  return { time: `20${yy}-${mm}-${dd}T${hh}:${mi}:${ss}Z`, latitude: Number(fields[at]), longitude: Number(fields[at + 1]) }
}

function expectedOf(frame: SourcedFrame): { fixes: number; time: string; latitude: number; longitude: number } | null {
  if (BATCHES[frame.name]) return BATCHES[frame.name]
  const position = textPosition(frame)
  return position && { fixes: 1, ...position }
}

describe('the collected frames', () => {
  test('at least 85 % of the frames that carry a position are stored with the right place and time', () => {
    let positionFrames = 0
    let stored = 0
    const missed: string[] = []
    for (const frame of FRAMES) {
      const expected = expectedOf(frame)
      if (!expected) continue
      positionFrames++
      const decoded = frames(wire(frame)).flatMap((item) => (typeof item === 'string' ? [] : [decodeMeitrackFrame(item, { now: NOW })]))
      const fixes = decoded.flatMap((message) => (message.kind === 'report' ? message.report.fixes : []))
      const first = fixes[0]
      const right =
        fixes.length === expected.fixes &&
        first !== undefined &&
        first.timestamp === Date.parse(expected.time) / 1000 &&
        Math.abs(first.latitude - expected.latitude) < 1e-9 &&
        Math.abs(first.longitude - expected.longitude) < 1e-9
      if (right) stored++
      else missed.push(frame.name)
    }
    // 48 frames carry a position: every AAA and AFF report, 16 CCE and 2 CCC batches
    expect(positionFrames).toBe(48)
    expect(stored / positionFrames).toBeGreaterThanOrEqual(0.85)
    // the ones missed are exactly the frames edited by hand whose checksum no longer holds
    expect(missed.sort()).toEqual(FRAMES.filter((frame) => frame.checksum === 'bad' && expectedOf(frame)).map((frame) => frame.name).sort())
    expect(stored).toBe(41)
  })

  test('no frame throws; no fix comes from a frame without one; a frame whose checksum fails is dropped whole', () => {
    for (const frame of FRAMES) {
      const items = frames(wire(frame))
      for (const item of items) {
        if (typeof item === 'string') continue
        const message = decodeMeitrackFrame(item, { now: NOW })
        if (!expectedOf(frame) && message.kind === 'report') expect(message.report.fixes).toEqual([])
      }
      if (frame.checksum === 'bad') expect(items.some((item) => typeof item !== 'string')).toBe(false)
    }
  })
})

describe('one frame of each message type', () => {
  test('AAA (T333 SOS, Dominican Republic): the fix, its attributes, the SOS alarm, no answer', () => {
    const message = report(frameNamed('AAA_29'))
    expect(message.type).toBe('AAA')
    expect(message.uniqueId).toBe('869013024733944')
    expect(message.report.fixes).toEqual([
      {
        timestamp: Date.UTC(2017, 1, 20, 14, 29, 12) / 1000,
        latitude: 18.459575,
        longitude: -69.947161,
        speed: 10,
        course: 300,
        altitude: 115,
        satellites: 5,
        valid: true,
        attributes: {
          event: 1,
          hdop: 1.6,
          odometer: 3989,
          run_time_seconds: 187884,
          gsm_signal: 15,
          mcc: 370,
          mnc: 2,
          lac: 0x5337,
          cell_id: 0x2b2c,
          inputs: 1,
          outputs: 0,
          adc1: 0,
          adc2: 0,
          adc3: 0,
          // no protocol version: the ADCs' scale depends on the model, so they are kept raw
          battery_adc: 0x964,
          power_adc: 0xb04,
        },
      },
    ])
    expect(message.report.events).toEqual([
      expect.objectContaining({ alarmCode: 'sos', timestamp: Date.UTC(2017, 1, 20, 14, 29, 12) / 1000, latitude: 18.459575, longitude: -69.947161, mcc: 370, mnc: 2 }),
    ])
    expect(message.report.events[0].context).toMatchObject({ event_code: 1, gps_valid: true })
    expect(message.reply).toBeNull()
    expect(message.answer).toBeNull()
  })

  test('AAA of protocol version 3: battery and power in volts, a temperature, the event data', () => {
    const fix = report(frameNamed('AAA_26')).report.fixes[0]
    expect(fix.attributes).toMatchObject({ protocol_version: 3, battery_voltage: 4.22, power_voltage: 13.93, temperature_1: 27.06, event_data: '00000001' })
  })

  test('AAA with the decimal analog field (volts as sent)', () => {
    expect(report(frameNamed('AAA_16')).report.fixes[0].attributes).toMatchObject({ battery_voltage: 4.33, power_voltage: 12.96 })
  })

  test('AAA whose declared length is 2 bytes off (a good checksum): ended by its checksum and stored', () => {
    const [frame] = frames(wire(frameNamed('AAA_35')))
    expect(typeof frame).not.toBe('string')
    expect((frame as MeitrackFrame).lengthMismatch).toBe(true)
    expect(report(frameNamed('AAA_35')).report.fixes[0]).toMatchObject({ latitude: -1.264521, longitude: 36.801128, timestamp: Date.UTC(2015, 2, 7, 13, 28, 46) / 1000, speed: 0.2, altitude: 1767 })
  })

  test('AAA event 34 (the position A10 asked for) answers the command, with the flag the device repeated', () => {
    const message = report(frameNamed('AAA_44'))
    expect(message.report.fixes).toHaveLength(1)
    expect(message.answer).toEqual({ text: frameNamed('AAA_44').text!.slice(frameNamed('AAA_44').text!.indexOf('AAA,'), -3), flag: '_' })
  })

  test('AFF (an event waiting for its confirmation): the fix, then `AFF,<its number>` with its flag', () => {
    // the published AFF frame was written by hand (IMEI 123123123123123) with a checksum that does
    // not hold; its checksum is corrected here, the frame otherwise as published
    const published = frameNamed('AFF_48').text!.replace(/\*..\r\n$/, '*52\r\n')
    const [frame] = frames(ascii(published))
    const message = decodeMeitrackFrame(frame as MeitrackFrame)
    if (message.kind !== 'report') throw new Error(message.message)
    expect(message.report.fixes[0]).toMatchObject({ timestamp: Date.UTC(2014, 8, 28, 19, 28, 56) / 1000, latitude: 58.588926, longitude: 16.180473, valid: true, satellites: 10 })
    expect(text(message.reply)).toBe('@@J30,123123123123123,AFF,0004*5A\r\n')
  })

  test('CCE (Singapore, a sharp turn): the record, its alarm, and `CCE,<count>` with the batch\'s flag', () => {
    const message = report(frameNamed('CCE_17'))
    expect(message.report.fixes).toEqual([
      {
        timestamp: Date.parse('2020-09-30T00:07:45Z') / 1000,
        latitude: 1.3562,
        longitude: 103.739715,
        speed: 28,
        course: 313,
        altitude: 23,
        satellites: 9,
        valid: true,
        attributes: {
          event: 90,
          gsm_signal: 27,
          hdop: 0.7,
          battery_voltage: 4.14,
          power_voltage: 14.29,
          odometer: 3033701,
          run_time_seconds: 3605922,
          mcc: 525,
          mnc: 3,
          lac: 31402,
          cell_id: 27194890,
        },
      },
    ])
    expect(message.report.events.map((event) => event.alarmCode)).toEqual(['harsh_cornering'])
    expect(text(message.reply)).toBe('@@A27,861585043200862,CCE,1*DE\r\n')
  })

  test('CCC (the older batch): the record Traccar asserts, and `CCC,<count>`', () => {
    const message = report(frameNamed('CCC_49'))
    expect(message.report.fixes).toHaveLength(1)
    expect(message.report.fixes[0]).toMatchObject({ timestamp: Date.parse('2014-05-24T04:59:49Z') / 1000, latitude: -7.266504, longitude: 112.743651, valid: false, satellites: 9 })
    expect(text(message.reply)).toBe('@@X27,369800014090021,CCC,1*E4\r\n')
    expect(text(report(frameNamed('CCC_50')).reply)).toBe('@@G28,369800013460674,CCC,18*1A\r\n')
  })

  test('AAC is echoed with its flag; D00 picture packets and command answers carry no fix', () => {
    const aac = report(frameNamed('AAC_51'))
    expect(text(aac.reply)).toBe('@@z27,861451040910625,AAC,1*0B\r\n')
    expect(aac.report.fixes).toEqual([])
    // the published D00 packet is cut short (1,017 of its 1,086 bytes): its head and a few bytes of picture, made whole
    const body = ',864507031219974,D00,180224072614_C1E109_N1U1D1.jpg,14,0,\xff\xd8\xff\xdb\x00\x84*'
    const [pictureFrame] = frames(ascii(withChecksum(`$$A${body.length + 4}${body}`)))
    const picture = decodeMeitrackFrame(pictureFrame as MeitrackFrame)
    expect(picture).toMatchObject({ kind: 'report', type: 'D00', reply: null, answer: null, report: { fixes: [], events: [] } })
    const d03 = report(frameNamed('D03_31'))
    expect(d03).toMatchObject({ type: 'D03', answer: { text: 'D03,OK', flag: 'D' }, reply: null, report: { fixes: [] } })
    expect(report(frameNamed('D82_10')).answer).toEqual({ text: 'D82,0', flag: 'u' })
  })

  test('external power on and cut are kept in the status; the cut is a power_cut alarm', () => {
    const on = report(frameNamed('CCE_15'))
    expect(on.status.external_power).toBe(true)
    expect(on.report.fixes[0].attributes.event).toBe(22)
    const cut = ascii('$$A999,353358017784062,AAA,23,22.538169,114.075958,100313095653,A,3,21,4,46,5,581,0,148,460|0|27B6|1054,0000,166|204|205|2709|878,*00\r\n')
    const body = String.fromCharCode(...cut).slice(5, -5)
    const withLength = `$$A${body.length + 5}${body}*`
    const sum = [...withLength].reduce((total, c) => (total + c.charCodeAt(0)) & 0xff, 0)
    const [frame] = frames(ascii(`${withLength}${sum.toString(16).toUpperCase().padStart(2, '0')}\r\n`))
    const message = decodeMeitrackFrame(frame as MeitrackFrame)
    expect(message).toMatchObject({ kind: 'report', status: { external_power: false } })
    if (message.kind === 'report') expect(message.report.events.map((event) => event.alarmCode)).toEqual(['power_cut'])
  })
})

describe('no position', () => {
  test('a report at 0,0 (a device before its first position) is no fix; its SOS is still raised, without a place', () => {
    const sealed = withChecksum('$$A124,353358017784062,AAA,1,0.000000,0.000000,100313095653,V,0,21,0,0,0.0,0,0,148,460|0|27B6|1054,0000,166|204|205|2709|878,*')
    const [frame] = frames(ascii(sealed))
    const message = decodeMeitrackFrame(frame as MeitrackFrame, { now: NOW })
    if (message.kind !== 'report') throw new Error(message.message)
    expect(message.report.fixes).toEqual([])
    expect(message.report.events).toEqual([
      expect.objectContaining({ alarmCode: 'sos', timestamp: Date.UTC(2010, 2, 13, 9, 56, 53) / 1000, latitude: null, longitude: null, mcc: 460 }),
    ])
    expect(message.status).toMatchObject({ gsm_signal: 21 })
  })
})

describe('commands', () => {
  test("a command goes out as `@@<flag><length>,<IMEI>,<text>*<checksum>`, the Meitrack document's own example bytes", () => {
    // the document's example is `@@Q25,353358017784062,A10*6A`: the 17th command of a connection takes flag Q
    const connection = meitrackConnectionState()
    expect(encodeMeitrackCommand('A10', '353358017784062', 16, 7, connection)).toEqual({ kind: 'frame', bytes: ascii('@@Q25,353358017784062,A10*6A\r\n') })
    expect(encodeMeitrackCommand('C01,0,12222', '353358017784062', 0, 8, connection)).toEqual({ kind: 'frame', bytes: ascii('@@A33,353358017784062,C01,0,12222*DC\r\n') })
    expect(encodeMeitrackCommand('c01', '353358017784062', 0, 9, connection).kind).toBe('unfit')
    expect(encodeMeitrackCommand('C01,1*2', '353358017784062', 0, 9, connection).kind).toBe('unfit')
    expect(encodeMeitrackCommand(`C02,0,1,${'x'.repeat(1100)}`, '353358017784062', 0, 9, connection).kind).toBe('unfit')
  })

  test("the answer with the command's flag completes that command (its reference); another flag the oldest", () => {
    const meitrack = PROTOCOLS.find((protocol) => protocol.name === 'meitrack') as TcpProtocol<MeitrackFrame, MeitrackConnectionState>
    // the command and the answers on one connection
    const connection = meitrack.connectionState()
    const encoded = meitrack.encodeCommand!('C01,0,12222', { uniqueId: '353358017784062', ref: 0x1234, sequence: 12, now: NOW }, connection)
    expect(text(encoded.kind === 'frame' ? encoded.bytes : null)!.startsWith('@@M33,')).toBe(true)
    const decoder = connectionDecoder(meitrack, connection)
    const answer = (flag: string): Step => {
      const [frame] = frames(ascii(withChecksum(`$$${flag}28,353358017784062,C01,OK*`)))
      return decoder(frame as MeitrackFrame, { now: NOW, uniqueId: null })
    }
    // the device's answer in the document: `$$M28,353358017784062,C01,OK*F9`
    expect(withChecksum('$$M28,353358017784062,C01,OK*')).toBe('$$M28,353358017784062,C01,OK*F9\r\n')
    expect(answer('M')).toMatchObject({ kind: 'report', reply: null, commandAnswer: { text: 'C01,OK', ref: 0x1234 } })
    expect(answer('M')).toMatchObject({ kind: 'report', commandAnswer: { text: 'C01,OK' } })
    expect((answer('M') as Extract<Step, { kind: 'report' }>).commandAnswer!.ref).toBeUndefined()
    // an AAA report with event 34 under a flag no command went out with (a position asked for by SMS) answers nothing
    const [asked] = frames(wire(frameNamed('AAA_44')))
    expect(decoder(asked as MeitrackFrame, { now: NOW, uniqueId: null })).toMatchObject({ kind: 'report', reply: null })
    expect('commandAnswer' in decoder(asked as MeitrackFrame, { now: NOW, uniqueId: null })).toBe(false)
  })
})

function withChecksum(head: string): string {
  const sum = [...head].reduce((total, c) => (total + c.charCodeAt(0)) & 0xff, 0)
  return `${head}${sum.toString(16).toUpperCase().padStart(2, '0')}\r\n`
}
