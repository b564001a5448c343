/**
 * The GPS103 unit on the frames devices sent (test/fixtures/gps103): every frame through the
 * framing and the decoder, the share of positions stored at the right place and time, exact values
 * for one frame of each message type, and the answers the devices wait for.
 */
import { describe, expect, test } from 'bun:test'
import { createFrameMachine } from '../../../../src/ingest/protocols/framing'
import { encodeGps103Command } from '../../../../src/ingest/protocols/gps103/command'
import { decodeGps103Frame, type Gps103Message } from '../../../../src/ingest/protocols/gps103/decoder'
import { gps103 } from '../../../../src/ingest/protocols/gps103/descriptor'
import { gps103FrameReader } from '../../../../src/ingest/protocols/gps103/framing'
import type { Step } from '../../../../src/ingest/protocols/protocol'
import { CAPTURES } from '../../../fixtures/gps103/frames'
import { connectionDecoder } from '../helpers'

const NOW = 1_700_000_000
const text = (bytes: Uint8Array | null) => (bytes === null ? null : new TextDecoder().decode(bytes))
const iso = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString().replace('.000', '')

/** The frames a byte stream holds, through the shared framing machine. */
function framesOf(stream: string): string[] {
  const machine = createFrameMachine(gps103FrameReader())
  return machine.push(new TextEncoder().encode(stream)).flatMap((item) => (item.kind === 'frame' ? [item.frame] : []))
}

/** A capture as sent: with an end mark when the capture did not keep one. */
const asSent = (frame: string) => (/[;*]$/.test(frame) ? frame : `${frame};`)

function report(message: Gps103Message) {
  if (message.kind !== 'report') throw new Error(`expected a report, got ${JSON.stringify(message)}`)
  return message
}

describe('GPS103 captures', () => {
  test('of the captured frames that carry a position, at least 85% are stored at the right place and time; none throws; no fix from a frame without one', () => {
    let withPosition = 0
    let stored = 0
    const missed: string[] = []
    for (const capture of CAPTURES) {
      const frames = framesOf(asSent(capture.text))
      expect(frames.length).toBe(1)
      const message = decodeGps103Frame(frames[0], { now: NOW })
      const fixes = message.kind === 'report' ? message.report.fixes : []
      if (!capture.position) {
        expect(fixes).toEqual([])
        continue
      }
      withPosition++
      const fix = fixes[0]
      const right =
        fixes.length === 1 &&
        iso(fix.timestamp) === capture.position.time &&
        Math.abs(fix.latitude - capture.position.latitude) < 1e-5 &&
        Math.abs(fix.longitude - capture.position.longitude) < 1e-5
      if (right) stored++
      else missed.push(capture.text)
    }
    console.log(`gps103: ${stored} of ${withPosition} captured positions stored at the right place and time${missed.length ? `; missed: ${missed.join(' | ')}` : ''}`)
    expect(withPosition).toBeGreaterThanOrEqual(50)
    expect(stored / withPosition).toBeGreaterThanOrEqual(0.85)
  })

  test('a tracker position: place, time (local date moved to UTC), knots to km/h, course, and the tail (altitude, ignition, door, fuel, temperature)', () => {
    const message = report(decodeGps103Frame('imei:868683026321020,tracker,181217080106,,F,080102.000,A,3227.3057,N,11649.4754,W,0.00,0,,0,0,0.00%,0,+11', { now: NOW }))
    expect(message.reply).toBeNull()
    expect(message.report).toEqual({
      uniqueId: '868683026321020',
      fixes: [
        {
          timestamp: Date.UTC(2018, 11, 17, 8, 1, 2) / 1000,
          latitude: 32 + 27.3057 / 60,
          longitude: -(116 + 49.4754 / 60),
          speed: 0,
          course: 0,
          altitude: null,
          satellites: null,
          valid: true,
          attributes: { ignition: false, door: false, fuel_level: 0, temperature: 11 },
        },
      ],
      events: [],
    })
    // 65.26 knots, course 271.82; local 16:29 for 18:29 UTC (the previous day's date in UTC)
    const driving = report(decodeGps103Frame('imei:359710049090138,tracker,160629022948,,F,182949.000,A,4043.8839,N,11328.8029,W,65.26,271.82,,1,0,31.37%,51442,', { now: NOW }))
    expect(driving.report.fixes[0]).toMatchObject({ timestamp: Date.UTC(2016, 5, 28, 18, 29, 49) / 1000, speed: 65.26 * 1.852, course: 271.82, attributes: { ignition: true, fuel_level: 31.37 } })
  })

  test('help me is an SOS at the fix, answered **,imei:<IMEI>,E; (the device stops repeating it); the other alarm keywords raise our codes', () => {
    const sos = report(decodeGps103Frame('imei:359586015829802,help me,0809231429,13554900601,F,062947.294,A,2234.4026,N,11354.3277,E,0.00,', { now: NOW }))
    expect(sos.reply).toBe('**,imei:359586015829802,E;')
    expect(sos.report.fixes).toHaveLength(1)
    expect(sos.report.events).toEqual([
      expect.objectContaining({ alarmCode: 'sos', timestamp: Date.UTC(2008, 8, 23, 6, 29, 47) / 1000, latitude: 22 + 34.4026 / 60, longitude: 113 + 54.3277 / 60, speed: 0 }),
    ])
    const codes: Record<string, string> = {
      'low battery': 'low_battery',
      stockade: 'geofence',
      move: 'movement',
      speed: 'overspeed',
      'ac alarm': 'power_cut',
      'door alarm': 'door',
      'sensor alarm': 'vibration',
      'accident alarm': 'collision',
      'acc on': 'ignition_on',
      'acc off': 'ignition_off',
    }
    for (const [keyword, code] of Object.entries(codes)) {
      const message = report(decodeGps103Frame(`imei:359586015829802,${keyword},0809231429,,F,062947.294,A,2234.4026,N,11354.3277,E,0.00,`, { now: NOW }))
      expect(message.report.events.map((event) => event.alarmCode)).toEqual([code])
      expect(message.reply).toBeNull()
    }
    // an alarm the product has no code for is stored as `alarm` with the device's word
    const bonnet = report(decodeGps103Frame('imei:353451044508750,bonnet alarm,0809231929,,F,055403.000,A,2233.1870,N,11354.3067,E,0.00,,', { now: NOW }))
    expect(bonnet.report.events).toEqual([expect.objectContaining({ alarmCode: 'alarm', context: expect.objectContaining({ raw_alarm: 'bonnet alarm' }) })])
    // a plain position raises nothing
    expect(report(decodeGps103Frame('imei:353451044508750,tracker,0809231929,,F,055403.000,A,2233.1870,N,11354.3067,E,0.00,,')).report.events).toEqual([])
  })

  test('a frame without GPS (L) is no fix: its alarm is raised at the server time, its serving cell kept as status', () => {
    const message = report(decodeGps103Frame('imei:864895030279986,ac alarm,180404174252,,L,,,296a,,51f7,,,', { now: NOW }))
    expect(message.report.fixes).toEqual([])
    expect(message.report.events).toEqual([expect.objectContaining({ alarmCode: 'power_cut', timestamp: NOW, latitude: null, longitude: null })])
    expect(message.report.status).toEqual({ cells: [{ lac: 0x296a, cell_id: 0x51f7 }] })
    const sos = report(decodeGps103Frame('imei:359710049075097,help me,,,L,,,113b,,558f,,,,,0,0,,,', { now: NOW }))
    expect(sos.reply).toBe('**,imei:359710049075097,E;')
    expect(sos.report.events.map((event) => event.alarmCode)).toEqual(['sos'])
  })

  test('log on is answered LOAD, the bare IMEI heartbeat ON; a heartbeat glued to a report is both', () => {
    expect(decodeGps103Frame('##,imei:359586015829802,A')).toEqual({ kind: 'login', uniqueId: '359586015829802', reply: 'LOAD' })
    expect(decodeGps103Frame('359586015829802')).toEqual({ kind: 'heartbeat', uniqueId: '359586015829802', reply: 'ON' })
    const glued = report(decodeGps103Frame('359769031878322imei:359769031878322,tracker,1602160718,2,F,221811.000,A,1655.2193,S,14546.6722,E,0.00,,'))
    expect(glued.reply).toBe('ON')
    expect(glued.report.fixes[0]).toMatchObject({ timestamp: Date.UTC(2016, 1, 15, 22, 18, 11) / 1000, latitude: -(16 + 55.2193 / 60), longitude: 145 + 46.6722 / 60 })
  })

  test('the OBD report is the engine values as status, no fix', () => {
    const message = report(decodeGps103Frame('imei:359710049090138,OBD,160629022949,51442,0.00,15.88,5632,122,40.39%,95,0.00%,2101,13.80,,,,'))
    expect(message.report.fixes).toEqual([])
    expect(message.report.status).toEqual({
      odometer_km: 51442,
      fuel_consumption: 15.88,
      engine_hours: 5632,
      obd_speed: 122,
      engine_load: 40.39,
      coolant_temperature: 95,
      throttle: 0,
      rpm: 2101,
      battery_voltage: 13.8,
    })
    expect(report(decodeGps103Frame('imei:359710049057798,OBD,161003192752,1785,,,0,54,96.47%,75,20.00%,1892,0.00,P0134,P0571,,')).report.status).toMatchObject({ dtcs: ['P0134', 'P0571'] })
  })

  test('the `*` variant: decimal degrees, its own date, satellites', () => {
    const [frame] = framesOf('imei:861359038609986,Equipo 1,---,------,----,214734,241018,26,1,-33.42317,-70.61930,067,229,0674,1.00,08,0,1,---,*')
    expect(report(decodeGps103Frame(frame)).report.fixes).toEqual([
      {
        timestamp: Date.UTC(2018, 9, 24, 21, 47, 34) / 1000,
        latitude: -33.42317,
        longitude: -70.6193,
        speed: 67,
        course: 229,
        altitude: 674,
        satellites: 8,
        valid: true,
        attributes: { hdop: 1, ignition: false, gsm_signal: 26 },
      },
    ])
  })

  test('a photo packet and text that is no GPS103 frame are dropped', () => {
    expect(decodeGps103Frame('imei:864180034124375,vr,0c00fa011ea05a03d7').kind).toBe('invalid')
    expect(decodeGps103Frame('hello').kind).toBe('invalid')
    expect(decodeGps103Frame('imei:abc,tracker,1302110948,,F,144807.000,A,0805.6615,S,07859.9763,W,0.00,,').kind).toBe('invalid')
    expect(decodeGps103Frame('imei:353451047570260,tracker,1302110948,,F,144807.000,A,0875.6615,S,07859.9763,W,0.00,,').kind).toBe('invalid')
  })
})

describe('GPS103 framing', () => {
  test('frames end at ;, a line end or *; a stream of several, in pieces, gives each once; garbage past the cap is skipped', () => {
    expect(framesOf('##,imei:359586015829802,A;359586015829802;imei:1,x,y\r\nimei:2,a,b;\r\n')).toEqual(['##,imei:359586015829802,A', '359586015829802', 'imei:1,x,y', 'imei:2,a,b'])
    const machine = createFrameMachine(gps103FrameReader())
    const bytes = new TextEncoder().encode('##,imei:359586015829802,A;359586015829802;')
    const frames: string[] = []
    for (const byte of bytes) for (const item of machine.push(Uint8Array.of(byte))) if (item.kind === 'frame') frames.push(item.frame)
    expect(frames).toEqual(['##,imei:359586015829802,A', '359586015829802'])
    const flood = createFrameMachine(gps103FrameReader())
    const items = flood.push(new TextEncoder().encode(`${'x'.repeat(5000)};359586015829802;`))
    expect(items.filter((item) => item.kind === 'frame').map((item) => (item.kind === 'frame' ? item.frame : null))).toEqual(['359586015829802'])
    expect(flood.bufferedBytes).toBe(0)
  })
})

describe('GPS103 unit', () => {
  test('the connection decoder: log on and heartbeat open the session (LOAD, ON), an SOS report answers E, a drop for garbage', () => {
    const decode = connectionDecoder(gps103)
    const context = { now: NOW, uniqueId: null }
    const login = decode('##,imei:359586015829802,A', context) as Extract<Step, { kind: 'login' }>
    expect({ ...login, accept: text(login.accept) }).toEqual({ kind: 'login', uniqueId: '359586015829802', accept: 'LOAD', refuse: null })
    const beat = decode('359586015829802', context) as Extract<Step, { kind: 'login' }>
    expect(text(beat.accept)).toBe('ON')
    const sos = decode('imei:359586015829802,help me,0809231429,13554900601,F,062947.294,A,2234.4026,N,11354.3277,E,0.00,', context) as Extract<Step, { kind: 'report' }>
    expect(sos.kind).toBe('report')
    expect(text(sos.reply)).toBe('**,imei:359586015829802,E;')
    expect(decode('nonsense', context).kind).toBe('drop')
  })

  test('commands are **,imei:<IMEI>,<code>[,…]; texts with ; or * are unfit; every built-in command fits', () => {
    const encoded = encodeGps103Command('C,30s', '359586015829802')
    expect(encoded.kind === 'frame' && text(encoded.bytes)).toBe('**,imei:359586015829802,C,30s;')
    expect(encodeGps103Command('B;J', '359586015829802').kind).toBe('unfit')
    expect(encodeGps103Command('B*', '359586015829802').kind).toBe('unfit')
    expect(encodeGps103Command('', '359586015829802').kind).toBe('unfit')
    for (const command of gps103.model.commands) {
      const filled = command.send.text.replace('{interval}', '05m')
      expect(encodeGps103Command(filled, '359586015829802').kind).toBe('frame')
    }
    expect(gps103).toMatchObject({ name: 'gps103', portVariable: 'GPS103_PORT', defaultPort: 5001 })
  })
})
