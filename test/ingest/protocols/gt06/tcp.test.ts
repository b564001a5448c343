/**
 * The new GT06 message types over a real TCP socket, served by the session handler through the
 * protocol list: a JC400 dashcam's 0x95 alarm and a VL103's 0x70 information packet (0x7979)
 * after a login, each stored (fix and event) and answered with the exact bytes the device waits
 * for. The frame bodies are those of Traccar's public GT06 tests (test/fixtures/gt06/frames.ts),
 * dated by the test's clock (their own dates are years old and would be refused as too old).
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { manualClock } from '../../../../src/clock'
import { LivePositions } from '../../../../src/ingest/live'
import { createIngestPipeline, type IngestPipeline } from '../../../../src/ingest/pipeline'
import { PROTOCOLS } from '../../../../src/ingest/protocols'
import { crc16X25 } from '../../../../src/ingest/protocols/crc'
import type { Protocol } from '../../../../src/ingest/protocols/protocol'
import { buildGt06Ack, buildGt06Frame } from '../../../../src/ingest/protocols/gt06/replies'
import { createConnectionGate, startTcpListener, type TcpListener } from '../../../../src/ingest/tcp'
import { silentLogger } from '../../../../src/log'
import { TRACCAR_GT06_FRAMES } from '../../../fixtures/gt06/frames'
import { sql } from 'drizzle-orm'
import type { EngineWorld } from '../../../support/world'
import { openFleet, positionCount, rows, untilRead } from '../../fleet'
import { connectClient, gt06Login } from '../../frames'
import { hex, toHex } from '../helpers'

const START = Date.UTC(2026, 10, 25, 12, 0, 0)
const IMEI = '862798052429087'
const DEVICE = '00000000-0000-4000-9000-000000000000'

let db: EngineWorld
let pipeline: IngestPipeline
let listener: TcpListener

const gt06: Protocol = PROTOCOLS.find((protocol) => protocol.name === 'gt06')!

/** The content (between protocol number and serial) of the public frame at `line` of Traccar's GT06 test. */
function contentOf(line: number): Uint8Array {
  const entry = TRACCAR_GT06_FRAMES.find((frame) => frame.id === `Gt06ProtocolDecoderTest:${line}`)!
  const bytes = hex(entry.hex)
  return bytes.slice(bytes[0] === 0x79 ? 5 : 4, bytes.length - 6)
}

/** A 0x7979 frame, as the VL103 sends its 0x70. */
function longFrame(protocol: number, content: Uint8Array, serial: number): Uint8Array {
  const frame = new Uint8Array(content.length + 11)
  const length = content.length + 5
  frame.set([0x79, 0x79, length >> 8, length & 0xff, protocol])
  frame.set(content, 5)
  const at = 5 + content.length
  frame.set([serial >> 8, serial & 0xff], at)
  const crc = crc16X25(frame, 2, at + 2)
  frame.set([crc >> 8, crc & 0xff, 0x0d, 0x0a], at + 2)
  return frame
}

beforeEach(async () => {
  db = await openFleet([{ imei: IMEI }])
  pipeline = createIngestPipeline({ stores: db.stores, clock: manualClock(START), log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, sweepIntervalMs: 0 })
  if (gt06.transport !== 'tcp') throw new Error('GT06 is a TCP protocol')
  listener = startTcpListener(gt06, { pipeline, clock: manualClock(START), log: silentLogger, port: 0, hostname: '127.0.0.1', gate: createConnectionGate() })
})

afterEach(async () => {
  await listener.stop()
  await pipeline.stop()
  await db.close()
})

test('a JC400 0x95 harsh cornering and a VL103 0x70 removal: stored with their place, answered with the exact bytes', async () => {
  const now = START / 1000
  const client = await connectClient(listener.port)
  client.send(gt06Login(IMEI, 1))
  expect(toHex(await client.read(10))).toBe(toHex(buildGt06Ack(0x01, 1)))

  // the JC400 alarm of line 54, one minute ago: date at bytes 3..8, after the FF FF marker and version
  const dashcam = contentOf(54)
  const minuteAgo = new Date((now - 60) * 1000)
  dashcam.set(
    [minuteAgo.getUTCFullYear() % 100, minuteAgo.getUTCMonth() + 1, minuteAgo.getUTCDate(), minuteAgo.getUTCHours(), minuteAgo.getUTCMinutes(), minuteAgo.getUTCSeconds()],
    3,
  )
  client.send(buildGt06Frame(0x95, dashcam, 0x37))
  expect(toHex(await client.read(10))).toBe(toHex(hex('78 78 05 95 00 37 67 71 0D 0A')))

  // the VL103 information of line 270, thirty seconds ago: the position module's Unix time at byte 14
  const modules = contentOf(270)
  expect(Array.from(modules.subarray(10, 14))).toEqual([0x00, 0x33, 0x00, 0x12])
  new DataView(modules.buffer).setUint32(14, now - 30)
  client.send(longFrame(0x70, modules, 5))
  expect(toHex(await client.read(10))).toBe(toHex(hex('78 78 05 70 00 05 45 FC 0D 0A')))

  await untilRead(async () => (await positionCount(db, DEVICE)) === 2, 2000, 'both fixes')
  const positions = await rows(db, sql`SELECT ts, lat, lon, speed FROM positions ORDER BY ts`)
  expect(positions).toEqual([
    { ts: now - 60, lat: Math.round(43.897038333 * 1e7), lon: Math.round(-79.27096 * 1e7), speed: 440 },
    { ts: now - 30, lat: Math.round(43.894466111 * 1e7), lon: Math.round(-79.27285 * 1e7), speed: 0 },
  ])
  expect(await rows(db, sql`SELECT alarm_code, ts FROM events ORDER BY ts`)).toEqual([
    { alarm_code: 'harsh_cornering', ts: now - 60 },
    { alarm_code: 'tamper', ts: now - 30 },
  ])
  client.end()
})
