/**
 * A GH3000 personal tracker (Codec 7) over a real TCP socket, served by the one session handler
 * through the protocol list: its records with coordinates are stored as fixes, a record without
 * them only as the device's status, and the packet is answered with its record count after the
 * commit. The records are those of Traccar's Codec 7 frame (test/fixtures/teltonika/traccar.ts,
 * testDecode #32), dated by the test's clock: their own 2015 dates would be refused as too old.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { manualClock } from '../../../../src/clock'
import { LivePositions } from '../../../../src/ingest/live'
import { createIngestPipeline, type IngestPipeline } from '../../../../src/ingest/pipeline'
import { PROTOCOLS } from '../../../../src/ingest/protocols'
import type { Protocol } from '../../../../src/ingest/protocols/protocol'
import { createConnectionGate, startTcpListener, type TcpListener } from '../../../../src/ingest/tcp'
import { silentLogger } from '../../../../src/log'
import { TRACCAR_FRAMES } from '../../../fixtures/teltonika/traccar'
import { sql } from 'drizzle-orm'
import type { EngineWorld } from '../../../support/world'
import { DEVICES, deviceRow, openFleet, positionCount, rows, untilRead } from '../../fleet'
import { connectClient, hex as toHex, teltonikaFrame, teltonikaImei } from '../../frames'
import { hex } from '../helpers'

const START = Date.UTC(2026, 10, 25, 12, 0, 0)
const GH3000_EPOCH_S = Date.UTC(2007, 0, 1) / 1000
/** where each of the frame's 4 records starts in its data field (sizes 8, 22, 22, 29 bytes) */
const RECORD_OFFSETS = [2, 10, 32, 54]

let db: EngineWorld
let pipeline: IngestPipeline
let listener: TcpListener

beforeEach(async () => {
  db = await openFleet()
  const clock = manualClock(START)
  pipeline = createIngestPipeline({ stores: db.stores, clock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, sweepIntervalMs: 0 })
  const teltonika: Protocol = PROTOCOLS.find((protocol) => protocol.name === 'teltonika')!
  if (teltonika.transport !== 'tcp') throw new Error('Teltonika is a TCP protocol')
  listener = startTcpListener(teltonika, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', gate: createConnectionGate() })
})

afterEach(async () => {
  await listener.stop()
  await pipeline.stop()
  await db.close()
})

/** Traccar's Codec 7 frame, record i dated `secondsAgo[i]` before the test's clock, its priority bits kept. */
function gh3000Packet(secondsAgo: number[]): Uint8Array {
  const frame = TRACCAR_FRAMES.find((f) => f.source === 'traccar TeltonikaProtocolDecoderTest.java testDecode #32')!
  const data = hex(frame.hex).slice(8, -4)
  const view = new DataView(data.buffer)
  RECORD_OFFSETS.forEach((at, i) => {
    const priorityBits = view.getUint32(at) & 0xc0000000
    view.setUint32(at, (priorityBits | (START / 1000 - secondsAgo[i] - GH3000_EPOCH_S)) >>> 0)
  })
  return teltonikaFrame(data)
}

test('Codec 7: two fixes stored, the cell record kept as status, ACK 4 after the commit', async () => {
  const now = START / 1000
  const client = await connectClient(listener.port)
  client.send(teltonikaImei(DEVICES.parked.imei))
  expect(toHex(await client.read(1))).toBe('01')

  client.send(gh3000Packet([240, 180, 120, 60]))
  expect(toHex(await client.read(4))).toBe('00 00 00 04')
  await untilRead(async () => (await positionCount(db, DEVICES.parked.id)) === 2, 2000, 'the fixes')
  const stored = await rows(db, sql`SELECT ts, lat, lon, speed, course, altitude, satellites, flags FROM positions ORDER BY ts`)
  // floats 42332A4C / 4193D68C and 423383F5 / 4193624F, as stored (degrees × 1e7, rounded)
  expect(stored).toEqual([
    { ts: now - 180, lat: 447913055, lon: 184797592, speed: 20, course: 0, altitude: 141, satellites: 9, flags: 0 },
    { ts: now - 120, lat: 448788643, lon: 184230022, speed: 0, course: 0, altitude: 157, satellites: 10, flags: 0 },
  ])
  const status = (await db.stores.statuses.latest((await deviceRow(db, DEVICES.parked.id)).key))!
  expect(status.attributes).toMatchObject({ battery_level: 100, battery_voltage: 4.108, operator: 21803, signal_quality: 26, roaming: false })
  client.end()
})
