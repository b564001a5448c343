/**
 * Watches over a real TCP socket, served by the one session handler through the protocol list: the
 * watch found by its id, imported as the device's serial; LK answered [SG*id*0002*LK] and its
 * battery kept as status; UD a fix; AL an event answered [SG*id*0002*AL]. The frames are those of
 * the captures (test/fixtures/watch), dated by the test's clock (the captures' own dates are years
 * old and would be refused as too old).
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
const WATCH_ID = '8800000015'
const DEVICE = '00000000-0000-4000-9000-000000000000'

let db: EngineWorld
let pipeline: IngestPipeline
let listener: TcpListener

const watch: Protocol = PROTOCOLS.find((protocol) => protocol.name === 'watch')!
const two = (n: number) => String(n).padStart(2, '0')
const ascii = (text: string) => new TextEncoder().encode(text)
const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

/** `[SG*<id>*<length>*<content>]` */
function frame(content: string): Uint8Array {
  return ascii(`[SG*${WATCH_ID}*${content.length.toString(16).toUpperCase().padStart(4, '0')}*${content}]`)
}

/** The UD capture of watch 8800000015 (22.571707 N, 113.8613968 E) at `unixSeconds`, with its status word */
function position(type: string, unixSeconds: number, status = '00000000'): Uint8Array {
  const d = new Date(unixSeconds * 1000)
  const date = two(d.getUTCDate()) + two(d.getUTCMonth() + 1) + two(d.getUTCFullYear() % 100)
  const time = two(d.getUTCHours()) + two(d.getUTCMinutes()) + two(d.getUTCSeconds())
  return frame(`${type},${date},${time},A,22.571707,N,113.8613968,E,12.5,90.0,100,7,60,90,1000,50,${status},4,1,460,0,9360,4082,131,9360,4092,148,9360,4091,143,9360,4153,141`)
}

beforeEach(async () => {
  db = await openFleet([{ imei: '', serial: WATCH_ID }])
  const clock = manualClock(START)
  pipeline = createIngestPipeline({ stores: db.stores, clock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, sweepIntervalMs: 0 })
  if (watch.transport !== 'tcp') throw new Error('the watch protocol is TCP')
  listener = startTcpListener(watch, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', gate: createConnectionGate() })
})

afterEach(async () => {
  await listener.stop()
  await pipeline.stop()
  await db.close()
})

test('the watch protocol is on the protocol list with its port variable and default port', () => {
  expect(watch).toMatchObject({ name: 'watch', transport: 'tcp', portVariable: 'WATCH_PORT', defaultPort: 5093 })
})

test('LK is answered [SG*id*0002*LK] and keeps the battery; UD is a fix of the watch its id names (its serial); AL is an event answered [SG*id*0002*AL]', async () => {
  const now = START / 1000
  const client = await connectClient(listener.port)
  client.send(frame('LK,1200,3,87'))
  expect(decode(await client.read(`[SG*${WATCH_ID}*0002*LK]`.length))).toBe(`[SG*${WATCH_ID}*0002*LK]`)
  const key = (await deviceRow(db, DEVICE)).key
  await untilRead(async () => (await db.stores.statuses.latest(key))?.attributes.battery_level === 87, 2000, 'the status')
  expect((await db.stores.statuses.latest(key))!.attributes).toMatchObject({ steps: 1200, turnovers: 3, battery_level: 87 })

  client.send(position('UD', now - 60))
  await untilRead(async () => (await positionCount(db, DEVICE)) === 1, 2000, 'the fix')
  expect(await firstRow(db, sql`SELECT ts, lat, lon, speed, course FROM positions`)).toEqual({
    ts: now - 60,
    lat: Math.round(22.571707 * 1e7),
    lon: Math.round(113.8613968 * 1e7),
    speed: 125,
    course: 90,
  })
  expect((await deviceRow(db, DEVICE)).connected).toBe(1)
  expect(client.pending).toBe(0)

  // status bit 16: SOS
  client.send(position('AL', now - 30, '00010000'))
  expect(decode(await client.read(`[SG*${WATCH_ID}*0002*AL]`.length))).toBe(`[SG*${WATCH_ID}*0002*AL]`)
  expect(await rows(db, sql`SELECT alarm_code, ts FROM events`)).toEqual([{ alarm_code: 'sos', ts: now - 30 }])
  expect(await positionCount(db, DEVICE)).toBe(2)
  client.end()
})

test('an unknown watch id closes the connection; nothing is stored, nothing answered', async () => {
  const client = await connectClient(listener.port)
  client.send(ascii('[SG*9999999999*0002*LK]'))
  await client.closed
  expect(client.pending).toBe(0)
  expect(await positionCount(db)).toBe(0)
})
