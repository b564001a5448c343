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
import { hex, toHex } from '../helpers'

const IMEI = '356307042441013'
const HANDSHAKE = hex('000F333536333037303432343431303133')
const AVL_CODECS = new Set([0x07, 0x08, 0x8e, 0x10])
const COORDINATE_TOLERANCE = 1e-6

/** The steps a connection takes for a frame, after the handshake (and the frame's items). */
function run(bytes: Uint8Array): { steps: Step[]; itemKinds: string[] } {
  const parser = createTeltonikaParser()
  parser.push(HANDSHAKE)
  const decode = teltonika.decoder()
  const steps: Step[] = []
  const itemKinds: string[] = []
  for (const item of parser.push(bytes)) {
    itemKinds.push(item.kind === 'error' ? `error:${item.error.code}` : item.kind)
    if (item.kind === 'error') continue
    steps.push(decode(item, { now: 1_800_000_000, uniqueId: item.kind === 'imei' ? null : IMEI }))
  }
  return { steps, itemKinds }
}

/** The data field (codec id .. number of data 2) wrapped in a sound envelope: length and CRC as a device computes them. */
function envelope(data: Uint8Array): Uint8Array {
  const frame = new Uint8Array(8 + data.length + 4)
  const view = new DataView(frame.buffer)
  view.setUint32(4, data.length)
  frame.set(data, 8)
  let crc = 0
  for (const byte of data) {
    crc ^= byte
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1
  }
  view.setUint32(8 + data.length, crc)
  return frame
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
      const [step] = reports(run(envelope(data)).steps)
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
  const find = (source: string) => {
    const frame = TRACCAR_FRAMES.find((f) => f.source.endsWith(source))
    if (!frame) throw new Error(source)
    const [step] = reports(run(hex(frame.hex)).steps)
    if (!step) throw new Error(`no report from ${source}`)
    return step
  }
  void find
  void AVL_CODECS
})
