/**
 * Every frame of Traccar's public Teltonika tests (test/fixtures/teltonika/traccar.ts) through the
 * unit as a connection runs it: the framing after an IMEI handshake, then the unit's decoder step.
 * The measure of issue 23: of the records whose GPS element carries a fix, at least 85% are stored
 * with their place and time; every AVL packet is answered with its exact record count; nothing
 * throws; no fix comes from a record that has none. Expected places and times are in the fixture,
 * read off the bytes apart from the product's decoder.
 */
import { describe, expect, test } from 'bun:test'
import type { Step } from '../../../../src/ingest/protocols/protocol'
import { teltonika } from '../../../../src/ingest/protocols/teltonika/descriptor'
import { createTeltonikaParser } from '../../../../src/ingest/protocols/teltonika/framing'
import type { DecodedFix } from '../../../../src/ingest/types'
import { TRACCAR_FRAMES, type ExpectedRecord, type TraccarFrame } from '../../../fixtures/teltonika/traccar'
import { teltonikaFrame } from '../../frames'
import { connectionDecoder, hex, toHex } from '../helpers'

const IMEI = '356307042441013'
const HANDSHAKE = hex('000F333536333037303432343431303133')
const COORDINATE_TOLERANCE = 1e-6

/** The steps a connection takes for a frame, after the handshake (and the frame's items). */
function run(bytes: Uint8Array): { steps: Step[]; itemKinds: string[] } {
  const parser = createTeltonikaParser()
  parser.push(HANDSHAKE)
  const decode = connectionDecoder(teltonika)
  const steps: Step[] = []
  const itemKinds: string[] = []
  for (const item of parser.push(bytes)) {
    itemKinds.push(item.kind === 'error' ? `error:${item.error.code}` : item.kind)
    if (item.kind === 'error') continue
    steps.push(decode(item, { now: 1_800_000_000, uniqueId: item.kind === 'imei' ? null : IMEI }))
  }
  return { steps, itemKinds }
}

const reports = (steps: Step[]) => steps.filter((s): s is Extract<Step, { kind: 'report' }> => s.kind === 'report')
const isoOf = (fix: DecodedFix) => new Date(fix.timestamp * 1000).toISOString().replace('.000Z', 'Z')

/** Whether a valid fix of `fixes` has this record's place and time. */
function stored(record: ExpectedRecord, fixes: DecodedFix[]): boolean {
  return fixes.some(
    (fix) =>
      fix.valid &&
      isoOf(fix) === record.time &&
      Math.abs(fix.latitude - record.latitude!) <= COORDINATE_TOLERANCE &&
      Math.abs(fix.longitude - record.longitude!) <= COORDINATE_TOLERANCE,
  )
}

const tcpFrames = TRACCAR_FRAMES.filter((frame) => frame.transport === 'tcp')
const isAvl = (frame: TraccarFrame) => frame.records !== undefined

interface Tally {
  withFix: number
  stored: number
}

/** Runs every frame as published; returns the measure. Assertions on answers and fixes along the way. */
function measure(frames: TraccarFrame[]): Tally {
  const tally: Tally = { withFix: 0, stored: 0 }
  for (const frame of frames) {
    const { steps } = run(hex(frame.hex))
    const fixes = reports(steps).flatMap((step) => step.report.fixes)
    for (const record of frame.records ?? []) {
      if (!record.fix) continue
      tally.withFix++
      if (stored(record, fixes)) tally.stored++
    }
  }
  return tally
}

describe("Traccar's Teltonika frames, as a connection receives them", () => {
  test('the collection: every frame of both test files, TCP and UDP counted apart', () => {
    expect(TRACCAR_FRAMES).toHaveLength(54)
    // TeltonikaProtocolDecoderTest's one connectionless frame: our listener is TCP only
    expect(TRACCAR_FRAMES.filter((frame) => frame.transport === 'udp').map((frame) => frame.source)).toEqual([
      expect.stringContaining('testDecodeConnectionless #1'),
    ])
    expect(tcpFrames.filter(isAvl)).toHaveLength(38)
    expect(tcpFrames.flatMap((frame) => frame.records ?? []).filter((record) => record.fix)).toHaveLength(100)
  })

  test('at least 85% of the records with a fix are stored with their place and time', () => {
    const tally = measure(tcpFrames)
    expect(tally.stored / tally.withFix).toBeGreaterThanOrEqual(0.85)
  })

  test('every sound AVL packet: its records as fixes, its exact record count answered, no fix where the record has none', () => {
    for (const frame of tcpFrames.filter((f) => isAvl(f) && !f.brokenEnvelope)) {
      const { steps } = run(hex(frame.hex))
      const [step] = reports(steps)
      expect({ source: frame.source, kind: step?.kind }).toEqual({ source: frame.source, kind: 'report' })
      const records = frame.records!
      expect({ source: frame.source, reply: toHex(step.reply!) }).toEqual({
        source: frame.source,
        reply: toHex(Uint8Array.of(0, 0, 0, records.length)),
      })
      const fixes = step.report.fixes
      expect({ source: frame.source, valid: fixes.filter((fix) => fix.valid).length }).toEqual({
        source: frame.source,
        valid: records.filter((record) => record.fix).length,
      })
      for (const record of records.filter((r) => r.fix)) expect({ source: frame.source, record, stored: stored(record, fixes) }).toEqual({ source: frame.source, record, stored: true })
    }
  })

  test('a published frame whose envelope is broken is not acknowledged; its data field, in a sound envelope, is read', () => {
    const broken = tcpFrames.filter((frame) => frame.brokenEnvelope)
    expect(broken.length).toBeGreaterThan(0)
    for (const frame of broken) {
      // the device resends what is not acknowledged: nothing stored, nothing answered
      const { steps } = run(hex(frame.hex))
      expect({ source: frame.source, reports: reports(steps).length }).toEqual({ source: frame.source, reports: 0 })
      if (!frame.records) continue
      const data = frame.repairedData ? hex(frame.repairedData) : hex(frame.hex).subarray(8, -4)
      const [step] = reports(run(teltonikaFrame(data)).steps)
      expect({ source: frame.source, reply: step && toHex(step.reply!) }).toEqual({
        source: frame.source,
        reply: toHex(Uint8Array.of(0, 0, 0, frame.records.length)),
      })
      for (const record of frame.records.filter((r) => r.fix)) expect({ source: frame.source, record, stored: stored(record, step.report.fixes) }).toEqual({ source: frame.source, record, stored: true })
    }
  })

  test('frames that are not AVL data (handshakes, keep-alives, command answers, camera packets) store no fix and never throw', () => {
    for (const frame of tcpFrames.filter((f) => !isAvl(f))) {
      const { steps } = run(hex(frame.hex))
      expect({ source: frame.source, fixes: reports(steps).flatMap((s) => s.report.fixes).length }).toEqual({ source: frame.source, fixes: 0 })
    }
  })
})

describe('exact values, one frame of each layout the issue names', () => {
  /** The unit's report for a frame of Traccar's decoder test, as a connection gets it. */
  function reportOf(place: string): Extract<Step, { kind: 'report' }> {
    const frame = TRACCAR_FRAMES.find((f) => f.source === `traccar TeltonikaProtocolDecoderTest.java testDecode #${place}`)
    if (!frame) throw new Error(place)
    const [step] = reports(run(hex(frame.hex)).steps)
    if (!step) throw new Error(`no report from #${place}`)
    return step
  }
  /** 32 bits as an IEEE 754 float, as the GH3000 sends coordinates */
  const float = (bits: string) => new DataView(hex(bits).buffer).getFloat32(0)
  const iso = (seconds: number) => new Date(seconds * 1000).toISOString()

  test('Codec 7 (GH3000): a status record, two fixes, a cell record; ACK 4', () => {
    const step = reportOf('32')
    expect(toHex(step.reply!)).toBe('00 00 00 04')
    const { fixes } = step.report
    // record 2: time 50AA17F3 (priority 01, 0x10AA17F3 s after 2007-01-01), global mask 03, GPS mask 1F:
    // lat 42332A4C, lon 4193D68C (floats), alt 008D, angle 00, speed 02, satellites 09; IO F0=01
    expect(fixes).toHaveLength(2) // records 1 (mask 02: IO only) and 4 (GPS mask C0: signal, operator) have no coordinates
    expect(iso(fixes[0].timestamp)).toBe('2015-11-10T21:51:47.000Z')
    expect(fixes[0]).toEqual({
      timestamp: fixes[0].timestamp,
      latitude: float('42332A4C'),
      longitude: float('4193D68C'),
      altitude: 141,
      course: 0,
      speed: 2,
      satellites: 9,
      valid: true,
      attributes: { priority: 1, movement: true },
    })
    expect(fixes[0].latitude).toBeCloseTo(44.791306, 6) // Bosnia, where the operator code says (218 03)
    expect(fixes[1]).toMatchObject({ latitude: float('423383F5'), longitude: float('4193624F'), altitude: 157, speed: 0, satellites: 10, valid: true })
    expect(iso(fixes[1].timestamp)).toBe('2015-11-10T22:06:34.000Z')
    // record 4, 50AA1C23: signal 1A, operator 0000552B; IO 01=64, F4=00, DD=00, F0=01; 43=100C; 05=00000005
    expect(step.report.status).toEqual({ movement: true, signal_quality: 26, operator: 21803, battery_level: 100, roaming: false, battery_voltage: 4.108 })
    expect(step.report.events).toEqual([])
  })

  test('Codec 7 (GH3000) with the SOS IO: an sos event at the fix, or without a place when the record has none', () => {
    // a GH3000 record as the layout gives it: priority 2, 2015-11-10T21:51:47Z, GPS mask 1F, IO 222 (DE) = 1
    const data = hex('07 01  90AA17F3 03 1F 42332A4C 4193D68C 008D 00 02 09 01 DE 01  01')
    const [step] = reports(run(teltonikaFrame(data)).steps)
    expect(step.report.events).toMatchObject([{ alarmCode: 'sos', timestamp: 1_447_192_307, latitude: float('42332A4C'), context: { io_id: 222, priority: 2 } }])
    const noPlace = hex('07 01  90AA17F3 02 01 DE 01  01')
    const [without] = reports(run(teltonikaFrame(noPlace)).steps)
    expect(without.report.fixes).toEqual([])
    expect(without.report.events).toMatchObject([{ alarmCode: 'sos', timestamp: 1_447_192_307, latitude: null, longitude: null }])
    expect(toHex(without.reply!)).toBe('00 00 00 01')
  })

  test('Codec 8 with a 16-byte IO section (FMB130, 11 records): place, time, IO, ACK 11', () => {
    const step = reportOf('47')
    expect(toHex(step.reply!)).toBe('00 00 00 0B')
    expect(step.report.fixes).toHaveLength(11)
    const [fix] = step.report.fixes
    // 0000015AB5642A88 ms; lon D5DB1769, lat EC01D70A (signed × 1e-7); alt 020A; angle 00E3; 04 sats; speed 0004
    expect(iso(fix.timestamp)).toBe('2017-03-09T23:25:25.000Z')
    expect(fix).toMatchObject({ latitude: -33.5423734, longitude: -70.7061911, altitude: 522, course: 227, satellites: 4, speed: 4, valid: true })
    // 1-byte: 01 01, 02 00, 03 00, 04 00, 60 00; 2-byte: 09 0010, 0A 0001, 0B 0000, 13 0000, 42 2F13, 18 0003;
    // 4-byte: C7 00000000, F7 00000000; 8-byte: none; 16-byte: CB, 16 zero bytes
    expect(fix.attributes).toEqual({
      priority: 0,
      din1: true,
      din2: false,
      din3: false,
      io4: 0,
      io96: 0,
      ain1: 0.016,
      io10: 1,
      io11: 0,
      axis_z: 0,
      external_voltage: 12.051,
      gnss_speed: 3,
      trip_odometer: 0,
      crash_detection: 0,
      io203: '00'.repeat(16),
    })
    expect(iso(step.report.fixes[10].timestamp)).toBe('2017-03-09T23:32:19.000Z')
  })

  test('Codec 8E from an FMB130 with an EYE sensor: its temperature, signed, in °C', () => {
    const step = reportOf('45')
    // 2-byte element 2A30 (10800) = FB5D: -1187 hundredths of a degree
    expect(step.report.fixes[0].attributes).toMatchObject({ eye_temperature1: -11.87 })
    expect(step.report.status).toMatchObject({ eye_temperature1: -11.87 })
  })

  test('Codec 16 (generation type, 2-byte IO ids): harsh braking, ACK 4', () => {
    const step = reportOf('9')
    expect(toHex(step.reply!)).toBe('00 00 00 04')
    const [fix] = step.report.fixes
    // 000001735ACE37F8 ms; lon 00E3B933, lat 1C71E290; alt 0069; angle 00E2; 11 sats; speed 0051;
    // event IO 00FD (green driving type), generation type 07 (periodical)
    expect(iso(fix.timestamp)).toBe('2020-07-17T03:25:31.000Z')
    expect(fix).toMatchObject({ latitude: 47.7225616, longitude: 1.4924083, altitude: 105, course: 226, satellites: 17, speed: 81, valid: true })
    expect(fix.attributes).toMatchObject({
      event_io: 253,
      generation_type: 7,
      din1: true,
      ignition: true,
      movement: true,
      gsm_signal: 4,
      green_driving_type: 2, // 00FD 02
      green_driving_value: 0.31, // 00FE 1F
      operator: 20820, // France, where the place is
      io113: 4_294_806_661, // 4 bytes where the FMB table has a 1-byte battery %: another family's element, kept raw
    })
    expect(fix.attributes.battery_level).toBeUndefined()
    expect(step.report.events.map((event) => event.alarmCode)).toEqual(['harsh_braking', 'harsh_braking', 'harsh_braking', 'harsh_cornering'])
    expect(step.report.events[0]).toMatchObject({ timestamp: fix.timestamp, latitude: 47.7225616, mcc: 208, mnc: 20 })
  })
})
