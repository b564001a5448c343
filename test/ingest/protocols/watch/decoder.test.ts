/**
 * The watch unit on the frames watches sent (test/fixtures/watch): every capture through the
 * framing and the decoder, the share of positions stored at the right place and time, exact values
 * for one frame of each message type, and the replies the watches wait for.
 */
import { describe, expect, test } from 'bun:test'
import { createFrameMachine } from '../../../../src/ingest/protocols/framing'
import type { Step } from '../../../../src/ingest/protocols/protocol'
import { encodeWatchCommand, rememberWatchDialect } from '../../../../src/ingest/protocols/watch/command'
import { decodeWatchFrame, type WatchMessage } from '../../../../src/ingest/protocols/watch/decoder'
import { watch } from '../../../../src/ingest/protocols/watch/descriptor'
import { watchFrameReader } from '../../../../src/ingest/protocols/watch/framing'
import { CAPTURES } from '../../../fixtures/watch/frames'
import { connectionDecoder } from '../helpers'

const text = (bytes: Uint8Array | null) => (bytes === null ? null : new TextDecoder().decode(bytes))
const iso = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString().replace('.000', '')
const latin1 = (value: string) => Uint8Array.from(value, (char) => char.charCodeAt(0))

function framesOf(stream: string): string[] {
  const machine = createFrameMachine(watchFrameReader())
  return machine.push(latin1(stream)).flatMap((item) => (item.kind === 'frame' ? [item.frame] : []))
}

function report(message: WatchMessage) {
  if (message.kind !== 'report') throw new Error(`expected a report, got ${JSON.stringify(message)}`)
  return message
}

/** The Step the unit's connection decoder gives a frame, its reply as text. */
function step(frame: string): Step & { replyText: string | null } {
  const result = connectionDecoder(watch)(frame, { now: 0, uniqueId: null })
  return { ...result, replyText: 'reply' in result ? text(result.reply) : null }
}

describe('watch captures', () => {
  test('of the captured frames that carry a position, at least 85% are stored at the right place and time; none throws; no fix from a frame without one', () => {
    let withPosition = 0
    let stored = 0
    const missed: string[] = []
    for (const capture of CAPTURES) {
      const fixes = framesOf(capture.text).flatMap((frame) => {
        const message = decodeWatchFrame(frame)
        return message.kind === 'report' ? message.report.fixes : []
      })
      withPosition += capture.positions.length
      if (capture.positions.length === 0) {
        expect(fixes).toEqual([])
        continue
      }
      capture.positions.forEach((position, i) => {
        const fix = fixes[i]
        if (fix && iso(fix.timestamp) === position.time && Math.abs(fix.latitude - position.latitude) < 1e-6 && Math.abs(fix.longitude - position.longitude) < 1e-6) stored++
        else missed.push(capture.text)
      })
      expect(fixes.length).toBe(capture.positions.length)
    }
    console.log(`watch: ${stored} of ${withPosition} captured positions stored at the right place and time${missed.length ? `; missed: ${missed.join(' | ')}` : ''}`)
    expect(withPosition).toBeGreaterThanOrEqual(25)
    expect(stored / withPosition).toBeGreaterThanOrEqual(0.85)
  })

  test('UD: the fix (km/h, course, altitude, satellites), battery, signal, steps and the cells as status; no reply', () => {
    const frame = '[SG*8800000015*0087*UD,220414,134652,A,22.571707,N,113.8613968,E,0.1,0.0,100,7,60,90,1000,50,0000,4,1,460,0,9360,4082,131,9360,4092,148,9360,4091,143,9360,4153,141]'
    const message = report(decodeWatchFrame(frame))
    expect(message.replyContent).toBeNull()
    expect(message.report.fixes).toEqual([
      { timestamp: Date.UTC(2014, 3, 22, 13, 46, 52) / 1000, latitude: 22.571707, longitude: 113.8613968, speed: 0.1, course: 0, altitude: 100, satellites: 7, valid: true, attributes: { battery_level: 90, steps: 1000 } },
    ])
    expect(message.report.events).toEqual([])
    expect(message.report.status).toEqual({
      gsm_signal: 60,
      battery_level: 90,
      steps: 1000,
      turnovers: 50,
      cells: [
        { mcc: 460, mnc: 0, lac: 9360, cell_id: 4082, signal: 131 },
        { mcc: 460, mnc: 0, lac: 9360, cell_id: 4092, signal: 148 },
        { mcc: 460, mnc: 0, lac: 9360, cell_id: 4091, signal: 143 },
        { mcc: 460, mnc: 0, lac: 9360, cell_id: 4153, signal: 141 },
      ],
    })
    expect(step(frame)).toMatchObject({ kind: 'report', replyText: null })
  })

  test('UD2 (a position kept while offline) is stored as any, marked buffered; S and W signs; Wi-Fi access points kept', () => {
    const message = report(decodeWatchFrame('[3G*6105117105*008D*UD2,210716,231601,V,-33.480366,N,-70.7630692,E,0.00,0.0,0.0,0,100,34,0,0,00000000,3,255,730,2,29731,54315,167,29731,54316,162,29731,54317,145]'))
    expect(message.report.fixes).toEqual([
      expect.objectContaining({ timestamp: Date.UTC(2016, 6, 21, 23, 16, 1) / 1000, latitude: -33.480366, longitude: -70.7630692, valid: false, attributes: { buffered: true, battery_level: 34, steps: 0 } }),
    ])
    const wifi = report(decodeWatchFrame('[3G*2104134718*00A1*UD_WCDMA,161019,134938,A,43.373367,N,71.157615,W,22.0,350.206,279.717,17,28,79,0,0,00000000,1,1,310,410,23999,132013696,28,1,Home2,60:45:cb:cb:34:68,-93,8.263865]'))
    expect(wifi.report.fixes[0]).toMatchObject({ latitude: 43.373367, longitude: -71.157615, speed: 22, course: 350.206, altitude: 279.717, satellites: 17 })
    expect(wifi.report.status).toMatchObject({ cells: [{ mcc: 310, mnc: 410, lac: 23999, cell_id: 132013696, signal: 28 }], wifi: [{ mac: '60:45:cb:cb:34:68', signal: -93 }] })
  })

  test('AL: the alarm of its status bits at the fix, answered [..*AL]; a watch without a fix raises it without a place; ZJ watches get their serial number back', () => {
    const fall = '[3G*8308373902*0080*AL,230817,095346,A,47.083950,N,15.4821850,E,7.60,273.8,0.0,4,15,44,0,0,00200010,2,255,232,1,7605,42530,118,7605,58036,119,0,65.8]'
    const message = report(decodeWatchFrame(fall))
    expect(message.report.events).toEqual([expect.objectContaining({ alarmCode: 'fall', timestamp: Date.UTC(2017, 7, 23, 9, 53, 46) / 1000, latitude: 47.08395, longitude: 15.482185, mcc: 232, mnc: 1 })])
    expect(step(fall).replyText).toBe('[3G*8308373902*0002*AL]')

    const sos = '[3G*6907919734*003e*AL_LTE,170525,214118,V,0,N,0,E,0,0,0,0,0,22,0,0,00010000,0,0,0]'
    const noFix = report(decodeWatchFrame(sos))
    expect(noFix.report.fixes).toEqual([])
    expect(noFix.report.events).toEqual([expect.objectContaining({ alarmCode: 'sos', timestamp: Date.UTC(2025, 4, 17, 21, 41, 18) / 1000, latitude: null })])
    expect(step(sos).replyText).toBe('[3G*6907919734*0002*AL]')

    const removed = '[ZJ*689466020014198*0003*0113*AL,221121,085515,V,00.000000,N,000.000000,E,0,0,0,0,0,44,0,0,00100000,1,255,460,0,16399,234887445,0,6,WIFI00,68:77:24:1b:e7:a7,-59]'
    expect(report(decodeWatchFrame(removed)).report.events.map((event) => event.alarmCode)).toEqual(['tamper'])
    expect(step(removed).replyText).toBe('[ZJ*689466020014198*0003*0002*AL]')

    // an AL without a known bit is still an alarm, stored as `alarm` with its status
    const plain = report(decodeWatchFrame('[SG*9051007430*0058*AL,120117,145602,V,40.058413,N,76.336618,W,11.519,188,99,00,01,80,0,50,00000000,0,1,0,0,,10]'))
    expect(plain.report.events).toEqual([expect.objectContaining({ alarmCode: 'alarm', context: expect.objectContaining({ raw_alarm: 'status 00000000' }) })])
    // a UD repeating an alarm bit raises nothing: the AL did
    expect(report(decodeWatchFrame(fall.replace('*AL,', '*UD,'))).report.events).toEqual([])
  })

  test('LK is answered [..*LK] and keeps steps, turnovers and battery; TKQ and INIT are answered; health values are status', () => {
    const link = '[3G*4700186508*000B*LK,0,10,100]'
    expect(report(decodeWatchFrame(link)).report).toEqual({ uniqueId: '4700186508', fixes: [], events: [], status: { steps: 0, turnovers: 10, battery_level: 100 } })
    expect(step(link).replyText).toBe('[3G*4700186508*0002*LK]')
    expect(step('[SG*8800000015*0002*LK]').replyText).toBe('[SG*8800000015*0002*LK]')
    expect(report(decodeWatchFrame('[SG*9081000548*0009*LK,0,100]')).report.status).toEqual({ steps: 0, battery_level: 100 })
    expect(step('[ZJ*014111001350304*0034*0009*LK,0,0,19]').replyText).toBe('[ZJ*014111001350304*0034*0002*LK]')
    expect(step('[3G*8800000015*0003*TKQ]').replyText).toBe('[3G*8800000015*0003*TKQ]')
    expect(step('[3G*8800000015*0004*INIT]').replyText).toBe('[3G*8800000015*0006*INIT,1]')
    expect(report(decodeWatchFrame('[3G*6005412902*0008*heart,71]')).report.status).toEqual({ heart_rate: 71 })
    expect(report(decodeWatchFrame('[3G*4700609403*0013*bphrt,120,79,73,,,,]')).report.status).toEqual({ blood_pressure_high: 120, blood_pressure_low: 79, heart_rate: 73 })
    expect(report(decodeWatchFrame('[3G*9705141740*000B*oxygen,0,98]')).report.status).toEqual({ blood_oxygen: 98 })
    expect(report(decodeWatchFrame('[ZJ*5678901234*0001*0009*TEMP,36.5]')).report.status).toEqual({ body_temperature: 36.5 })
    expect(report(decodeWatchFrame('[3G*2104326058*000E*btemp2,1,35.29]')).report.status).toEqual({ body_temperature: 35.29 })
  })

  test('text that is no watch frame is dropped', () => {
    expect(decodeWatchFrame('[SG*]').kind).toBe('invalid')
    expect(decodeWatchFrame('hello').kind).toBe('invalid')
    expect(decodeWatchFrame('[SG*8800000015*0087*UD,220414,134652,A,92.571707,N,113.8613968,E,0.1,0.0,100,7,60,90,1000,50,0000,0]').kind).toBe('invalid')
    expect(step('[SG*8800000015*0087*UD,990414,134652,A]').kind).toBe('drop')
  })
})

describe('watch framing', () => {
  test('frames run from [ to the ] that closes it, nested brackets included; several in one chunk or one byte at a time; garbage before them skipped', () => {
    const nested = '[3G*880900242*0020*UD,x,[LG_Wall-Mount A/C]e725,-82]'
    expect(framesOf(`junk[SG*1*0002*LK]${nested}[3G*1*0003*TKQ]`)).toEqual(['[SG*1*0002*LK]', nested, '[3G*1*0003*TKQ]'])
    const machine = createFrameMachine(watchFrameReader())
    const frames: string[] = []
    for (const byte of latin1('[SG*1*0002*LK][SG*2*0002*LK]')) for (const item of machine.push(Uint8Array.of(byte))) if (item.kind === 'frame') frames.push(item.frame)
    expect(frames).toEqual(['[SG*1*0002*LK]', '[SG*2*0002*LK]'])
    // a stray [ does not hide the whole frame after it
    expect(framesOf('[garbage[SG*1*0002*LK]')).toContain('[SG*1*0002*LK]')
  })
})

describe('watch commands', () => {
  test('a command is framed as the watch frames its own (its maker, its serial number); texts with *, [ or ] are unfit; every built-in command fits', () => {
    const sent = (result: ReturnType<typeof encodeWatchCommand>) => (result.kind === 'frame' ? text(result.bytes) : result.kind)
    // each watch on its own connection, with that connection's state
    const [first, second, third] = [watch.connectionState(), watch.connectionState(), watch.connectionState()]
    expect(sent(encodeWatchCommand('CR', '9000000001', first))).toBe('[SG*9000000001*0002*CR]')
    rememberWatchDialect(second, report(decodeWatchFrame('[3G*9000000002*0002*LK]')).header)
    expect(sent(encodeWatchCommand('UPLOAD,600', '9000000002', second))).toBe('[3G*9000000002*000A*UPLOAD,600]')
    rememberWatchDialect(third, report(decodeWatchFrame('[ZJ*9000000003*0034*0002*LK]')).header)
    expect(sent(encodeWatchCommand('CR', '9000000003', third))).toBe('[ZJ*9000000003*0001*0002*CR]')
    expect(sent(encodeWatchCommand('CR]', '9000000001', first))).toBe('unfit')
    expect(sent(encodeWatchCommand('SOS1,*1', '9000000001', first))).toBe('unfit')
    const values: Record<string, string> = { seconds: '600', slot: '1', phone: '+31612345678', language: '1', zone: '5.5' }
    for (const command of watch.model.commands) {
      expect(sent(encodeWatchCommand(command.send.text.replace(/\{(\w+)\}/g, (_, name: string) => values[name]), '9000000001', first))).not.toBe('unfit')
    }
  })

  test("a frame echoing a command's name answers the command waiting", () => {
    const echo = connectionDecoder(watch)('[3G*9000000002*0002*CR]', { now: 0, uniqueId: null })
    expect(echo).toMatchObject({ kind: 'report', reply: null, commandAnswer: { text: 'CR' } })
    expect(connectionDecoder(watch)('[3G*9000000002*0002*LK]', { now: 0, uniqueId: null })).not.toHaveProperty('commandAnswer')
    expect(watch).toMatchObject({ name: 'watch', portVariable: 'WATCH_PORT', defaultPort: 5093 })
  })
})
