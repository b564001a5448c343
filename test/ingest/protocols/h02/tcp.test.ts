/**
 * H02 over a real TCP socket, served by the one session handler through the protocol list: the
 * device is found by the id its frames carry (serial or IMEI), a V1 frame is a fix, a status-word
 * alarm an event (raised when its bit turns on), NBR and LINK keep it connected and its status.
 * The frame bodies are those of the captured frames in frames.ts, dated by the test's clock (the
 * captures' own dates are years old and would be refused as too old).
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { manualClock } from '../../../../src/clock'
import { LivePositions } from '../../../../src/ingest/live'
import { createIngestPipeline, type IngestPipeline } from '../../../../src/ingest/pipeline'
import { PROTOCOLS } from '../../../../src/ingest/protocols'
import type { Protocol } from '../../../../src/ingest/protocols/protocol'
import { createConnectionGate, startTcpListener, type TcpListener } from '../../../../src/ingest/tcp'
import { silentLogger } from '../../../../src/log'
import { type SQL, sql } from 'drizzle-orm'
import type { EngineWorld } from '../../../support/world'
import { deviceRow, firstRow, openFleet, positionCount, rows, untilRead } from '../../fleet'
import { connectClient } from '../../frames'

const START = Date.UTC(2026, 10, 25, 12, 0, 0)
/** a Sinotrack known by its 10-digit serial, and a Coban known by its IMEI */
const SERIAL_ID = '4210051415'
const IMEI_ID = '359710049011111'
const SERIAL_DEVICE = '00000000-0000-4000-9000-000000000000'
const IMEI_DEVICE = '00000000-0000-4000-9000-000000000001'

let db: EngineWorld
let clock: ReturnType<typeof manualClock>
let pipeline: IngestPipeline
let listener: TcpListener

const h02: Protocol = PROTOCOLS.find((protocol) => protocol.name === 'h02')!
const two = (n: number) => String(n).padStart(2, '0')
/** hhmmss and ddmmyy of a Unix time */
function stamp(unixSeconds: number): { time: string; date: string } {
  const d = new Date(unixSeconds * 1000)
  return { time: two(d.getUTCHours()) + two(d.getUTCMinutes()) + two(d.getUTCSeconds()), date: two(d.getUTCDate()) + two(d.getUTCMonth() + 1) + two(d.getUTCFullYear() % 100) }
}
/** The Costa Rica V1 capture (frames.ts V1_COSTA_RICA), at `unixSeconds`, with a status word */
function v1(id: string, unixSeconds: number, status = 'FFFFFBFF'): Uint8Array {
  const { time, date } = stamp(unixSeconds)
  return new TextEncoder().encode(`*HQ,${id},V1,${time},A,0956.3869,N,08406.7068,W,010.00,090,${date},${status},712,01,0,0,6#\r\n`)
}
/** The UK NBR capture (frames.ts NBR_DBM), at `unixSeconds` */
function nbr(id: string, unixSeconds: number): Uint8Array {
  const { time, date } = stamp(unixSeconds)
  return new TextEncoder().encode(`*HQ,${id},NBR,${time},234,10,0,2,21580,27766,-67,21580,27766,-67,${date},FFFFFBFF,6#`)
}
/** The LINK capture (frames.ts LINK_TRACCAR): signal 20, 8 satellites, battery 67 % */
function link(id: string, unixSeconds: number): Uint8Array {
  const { time, date } = stamp(unixSeconds)
  return new TextEncoder().encode(`*HQ,${id},LINK,${time},20,8,67,0,0,${date},FFFFFBFF#`)
}

beforeEach(async () => {
  db = await openFleet([{ imei: '', serial: SERIAL_ID }, { imei: IMEI_ID }])
  clock = manualClock(START)
  pipeline = createIngestPipeline({ stores: db.stores, clock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, sweepIntervalMs: 0 })
  if (h02.transport !== 'tcp') throw new Error('H02 is a TCP protocol')
  listener = startTcpListener(h02, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', gate: createConnectionGate() })
})

afterEach(async () => {
  await listener.stop()
  await pipeline.stop()
  await db.close()
})

const count = async (query: SQL) => Number((await firstRow<{ n: number }>(db, query))!.n)

test('H02 is on the protocol list with its port variable and default port', () => {
  expect(h02).toMatchObject({ name: 'h02', transport: 'tcp', portVariable: 'H02_PORT', defaultPort: 5013 })
})

test('a V1 frame is stored as a fix of the device its serial names; an alarm bit is an event when it turns on', async () => {
  const now = START / 1000
  const client = await connectClient(listener.port)
  client.send(v1(SERIAL_ID, now - 60))
  await untilRead(async () => (await positionCount(db, SERIAL_DEVICE)) === 1, 2000, 'the fix')
  const stored = await firstRow(db, sql`SELECT ts, lat, lon, speed, course, flags, attributes FROM positions`) as Record<string, unknown>
  // 09°56.3869' N, 084°06.7068' W; 10 knots = 18.52 km/h
  expect(stored).toMatchObject({ ts: now - 60, lat: Math.round((9 + 56.3869 / 60) * 1e7), lon: Math.round(-(84 + 6.7068 / 60) * 1e7), speed: 185, course: 90, flags: 0 })
  expect(JSON.parse(stored.attributes as string)).toMatchObject({ status_word: 'FFFFFBFF', ignition: false, mcc: 712 })
  expect(await deviceRow(db, SERIAL_DEVICE)).toMatchObject({ connected: 1, state: 'moving' })

  // bit 1 of the status word at 0: SOS, once; the same word again raises nothing more
  client.send(v1(SERIAL_ID, now - 50, 'FFFFFBFD'))
  client.send(v1(SERIAL_ID, now - 40, 'FFFFFBFD'))
  await untilRead(async () => (await positionCount(db, SERIAL_DEVICE)) === 3, 2000, 'the alarm fixes')
  expect(await rows(db, sql`SELECT alarm_code, ts, latitude FROM events`)).toEqual([{ alarm_code: 'sos', ts: now - 50, latitude: 9 + 56.3869 / 60 }])
  // H02 answers nothing by default
  expect(client.pending).toBe(0)
  client.end()
  await untilRead(async () => (await deviceRow(db, SERIAL_DEVICE)).connected === 0, 2000, 'the disconnection')
})

test('the device is found by IMEI too; NBR keeps it connected and keeps its cells, LINK its battery and signal', async () => {
  const now = START / 1000
  const client = await connectClient(listener.port)
  client.send(v1(IMEI_ID, now - 10))
  await untilRead(async () => (await positionCount(db, IMEI_DEVICE)) === 1, 2000, 'the fix')
  const key = (await deviceRow(db, IMEI_DEVICE)).key

  // quiet for most of OFFLINE_AFTER, then cell towers and a heartbeat: not a fix, but a sign of life
  clock.advance(500_000)
  client.send(nbr(IMEI_ID, now + 490))
  client.send(link(IMEI_ID, now + 495))
  await untilRead(async () => ((await db.stores.statuses.latest(key))?.attributes.battery_level ?? null) === 67, 2000, 'the status')
  clock.advance(200_000)
  expect(pipeline.sweep()).toBe(0)
  expect((await deviceRow(db, IMEI_DEVICE)).connected).toBe(1)
  expect(await positionCount(db, IMEI_DEVICE)).toBe(1)
  const status = (await db.stores.statuses.latest(key))!
  expect(status.attributes).toMatchObject({
    cells: [
      { mcc: 234, mnc: 10, lac: 21580, cell_id: 27766, signal: -67 },
      { mcc: 234, mnc: 10, lac: 21580, cell_id: 27766, signal: -67 },
    ],
    gsm_signal: 20,
    satellites: 8,
    battery_level: 67,
    ignition: false,
    status_word: 'FFFFFBFF',
  })
  // and without a sign of life OFFLINE_AFTER disconnects it
  clock.advance(600_000)
  expect(pipeline.sweep()).toBe(1)
  client.end()
})

test('an unknown id closes the connection; nothing is stored', async () => {
  const client = await connectClient(listener.port)
  client.send(v1('9999999999', START / 1000 - 10))
  await client.closed
  expect(await count(sql`SELECT count(*) AS n FROM positions`)).toBe(0)
})

test("past the address's ration an unknown id keeps its connection, as a device's, and stores nothing; the address's known devices are served", async () => {
  await listener.stop()
  await pipeline.stop()
  pipeline = createIngestPipeline({ stores: db.stores, clock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, sweepIntervalMs: 0, unknownIdentifiers: { perSource: 1 } })
  if (h02.transport !== 'tcp') throw new Error('H02 is a TCP protocol')
  listener = startTcpListener(h02, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', gate: createConnectionGate() })
  const told = await connectClient(listener.port)
  told.send(v1('9999999999', START / 1000 - 10))
  await told.closed
  const masked = await connectClient(listener.port)
  masked.send(v1('9999999998', START / 1000 - 10))
  masked.send(link('9999999998', START / 1000 - 5))
  const known = await connectClient(listener.port)
  known.send(v1(SERIAL_ID, START / 1000 - 10))
  await untilRead(async () => (await positionCount(db, SERIAL_DEVICE)) === 1, 2000, 'the known fix')
  // the masked connection's frames went the way of the known one's (a frame sent after them is in), and it is still open
  masked.send(v1('9999999998', START / 1000 - 3))
  known.send(v1(SERIAL_ID, START / 1000 - 4))
  await untilRead(async () => (await positionCount(db, SERIAL_DEVICE)) === 2, 2000, 'the second known fix')
  await pipeline.afterCommit()
  expect(masked.isClosed()).toBe(false)
  expect(await positionCount(db)).toBe(2)
  // the known device's status only
  expect(await count(sql`SELECT count(*) AS n FROM device_status`)).toBe(1)
  masked.end()
  known.end()
})
