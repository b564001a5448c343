/**
 * GPS103 over a real TCP socket, served by the one session handler through the protocol list: the
 * log on answered LOAD, the heartbeat ON, a tracker report stored as a fix of the device its IMEI
 * names (on a connection that never logged on too), an SOS stored as an event and answered with
 * the alarm's cancel. The frames are those of the captures (test/fixtures/gps103), dated by the
 * test's clock (the captures' own dates are years old and would be refused as too old).
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { manualClock } from '../../../../src/clock'
import { LivePositions } from '../../../../src/ingest/live'
import { createIngestPipeline, type IngestPipeline } from '../../../../src/ingest/pipeline'
import { PROTOCOLS } from '../../../../src/ingest/protocols'
import type { Protocol } from '../../../../src/ingest/protocols/protocol'
import { createConnectionGate, startTcpListener, type TcpListener } from '../../../../src/ingest/tcp'
import { silentLogger } from '../../../../src/log'
import { sql } from 'drizzle-orm'
import type { EngineWorld } from '../../../support/world'
import { deviceRow, firstRow, openFleet, positionCount, rows, untilRead } from '../../fleet'
import { connectClient } from '../../frames'

const START = Date.UTC(2026, 10, 25, 12, 0, 0)
const IMEI = '359586015829802'
const DEVICE = '00000000-0000-4000-9000-000000000000'

let db: EngineWorld
let pipeline: IngestPipeline
let listener: TcpListener

const gps103: Protocol = PROTOCOLS.find((protocol) => protocol.name === 'gps103')!
const two = (n: number) => String(n).padStart(2, '0')
const ascii = (text: string) => new TextEncoder().encode(text)

/**
 * The SOS capture's layout (`imei:…,help me,0809231429,13554900601,F,062947.294,A,2234.4026,N,11354.3277,E,0.00,;`)
 * at `unixSeconds`, its local time field 3 h ahead of UTC as a device set to UTC+3 sends it.
 */
function report(keyword: string, unixSeconds: number): Uint8Array {
  const utc = new Date(unixSeconds * 1000)
  const local = new Date((unixSeconds + 3 * 3600) * 1000)
  const localField = two(local.getUTCFullYear() % 100) + two(local.getUTCMonth() + 1) + two(local.getUTCDate()) + two(local.getUTCHours()) + two(local.getUTCMinutes())
  const gpsTime = `${two(utc.getUTCHours())}${two(utc.getUTCMinutes())}${two(utc.getUTCSeconds())}.000`
  return ascii(`imei:${IMEI},${keyword},${localField},13554900601,F,${gpsTime},A,2234.4026,N,11354.3277,E,10.00,90;`)
}

beforeEach(async () => {
  db = await openFleet([{ imei: IMEI }])
  const clock = manualClock(START)
  pipeline = createIngestPipeline({ stores: db.stores, clock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, sweepIntervalMs: 0 })
  if (gps103.transport !== 'tcp') throw new Error('GPS103 is a TCP protocol')
  listener = startTcpListener(gps103, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', gate: createConnectionGate() })
})

afterEach(async () => {
  await listener.stop()
  await pipeline.stop()
  await db.close()
})

test('GPS103 is on the protocol list with its port variable and default port', () => {
  expect(gps103).toMatchObject({ name: 'gps103', transport: 'tcp', portVariable: 'GPS103_PORT', defaultPort: 5001 })
})

test('log on is answered LOAD and the heartbeat ON; a tracker report is a fix at its UTC time; help me is an SOS answered **,imei:<IMEI>,E;', async () => {
  const now = START / 1000
  const client = await connectClient(listener.port)
  client.send(ascii(`##,imei:${IMEI},A;`))
  expect(new TextDecoder().decode(await client.read(4))).toBe('LOAD')
  client.send(ascii(`${IMEI};`))
  expect(new TextDecoder().decode(await client.read(2))).toBe('ON')

  client.send(report('tracker', now - 60))
  await untilRead(async () => (await positionCount(db, DEVICE)) === 1, 2000, 'the fix')
  const stored = await firstRow(db, sql`SELECT ts, lat, lon, speed, course FROM positions`)
  // 22°34.4026' N, 113°54.3277' E; 10 knots = 18.52 km/h
  expect(stored).toEqual({ ts: now - 60, lat: Math.round((22 + 34.4026 / 60) * 1e7), lon: Math.round((113 + 54.3277 / 60) * 1e7), speed: 185, course: 90 })
  expect((await deviceRow(db, DEVICE)).connected).toBe(1)
  expect(client.pending).toBe(0)

  client.send(report('help me', now - 30))
  expect(new TextDecoder().decode(await client.read(`**,imei:${IMEI},E;`.length))).toBe(`**,imei:${IMEI},E;`)
  expect(await rows(db, sql`SELECT alarm_code, ts FROM events`)).toEqual([{ alarm_code: 'sos', ts: now - 30 }])
  expect(await positionCount(db, DEVICE)).toBe(2)
  client.end()
})

test('a report on a connection that never logged on opens the device by the IMEI it names; an unknown IMEI closes the connection', async () => {
  const client = await connectClient(listener.port)
  client.send(report('tracker', START / 1000 - 10))
  await untilRead(async () => (await positionCount(db, DEVICE)) === 1, 2000, 'the fix')
  client.end()
  const stranger = await connectClient(listener.port)
  stranger.send(ascii('##,imei:999999999999999,A;'))
  await stranger.closed
  expect(stranger.pending).toBe(0)
  expect(await positionCount(db)).toBe(1)
})
