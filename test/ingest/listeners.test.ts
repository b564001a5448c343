import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { manualClock, systemClock } from '../../src/clock'
import { LivePositions } from '../../src/ingest/live'
import { startOsmandListener } from '../../src/ingest/protocols/osmand/listener'
import { createIngestPipeline, type IngestPipeline, type PipelineOptions } from '../../src/ingest/pipeline'
import { gt06 } from '../../src/ingest/protocols/gt06/descriptor'
import { teltonika } from '../../src/ingest/protocols/teltonika/descriptor'
import { createConnectionGate, startTcpListener, type TcpListener } from '../../src/ingest/tcp'
import { createLogger, silentLogger } from '../../src/log'
import { type SQL, sql } from 'drizzle-orm'
import type { EngineWorld } from '../support/world'
import { DEVICES, deviceRow, firstRow, openFleet, positionCount, rows, until, untilRead } from './fleet'
import {
  connectClient,
  gt06Alarm,
  gt06Location,
  gt06Login,
  gt06Status,
  hex,
  teltonikaImei,
  teltonikaPacket,
  type AvlRecordInput,
} from './frames'

const START = Date.UTC(2026, 10, 25, 12, 0, 0)
const T = START / 1000
const IDLE_MS = 120_000

let db: EngineWorld
let clock: ReturnType<typeof manualClock>
let pipeline: IngestPipeline

const read = <Row = Record<string, unknown>>(query: SQL) => rows<Row>(db, query)
const first = <Row = Record<string, unknown>>(query: SQL) => firstRow<Row>(db, query)

function newPipeline(options: Partial<PipelineOptions> = {}) {
  return createIngestPipeline({ stores: db.stores, clock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, sweepIntervalMs: 0, ...options })
}

const count = async (query: SQL) => (await first<{ n: number }>(query))!.n
const UNKNOWN_IMEI = '111111111111111'

describe('GT06', () => {
  let listener: TcpListener
  beforeEach(async () => {
    db = await openFleet()
    clock = manualClock(START)
    pipeline = newPipeline()
    listener = startTcpListener(gt06, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', idleTimeoutMs: IDLE_MS })
  })
  afterEach(async () => {
    await listener.stop()
    await pipeline.stop()
    await db.close()
  })

  test('login of a known device: committed, then the ACK of the document', async () => {
    const client = await connectClient(listener.port)
    client.send(gt06Login(DEVICES.parked.imei, 1))
    expect(hex(await client.read(10))).toBe('78 78 05 01 00 01 D9 DC 0D 0A')
    expect(await deviceRow(db, DEVICES.parked.id)).toMatchObject({ connected: 1, connected_at: START })
    client.end()
  })

  test('login of an unknown device: closed without an ACK', async () => {
    const client = await connectClient(listener.port)
    client.send(gt06Login(UNKNOWN_IMEI))
    await client.closed
    expect(client.pending).toBe(0)
  })

  test('GPS, status and alarm frames: stored before their ACK; closing disconnects the device', async () => {
    const client = await connectClient(listener.port)
    client.send(gt06Login(DEVICES.fresh.imei))
    await client.read(10)
    // 0x12 gets no ACK; the status ACK that follows proves it was committed first
    client.send(gt06Location({ timestamp: T - 30, latitude: 52.629151, longitude: -8.661746, speed: 45, course: 270 }, 7))
    client.send(gt06Status(8))
    const statusAck = await client.read(10)
    expect(hex(statusAck)).toStartWith('78 78 05 13 00 08')
    expect(await positionCount(db, DEVICES.fresh.id)).toBe(1)
    const stored = (await first(sql`SELECT lat, lon, speed, course, satellites, flags, attributes FROM positions`)) as Record<string, unknown>
    expect(stored).toMatchObject({ speed: 450, course: 270, satellites: 9, flags: 0 })
    // GT06 carries 1/1,800,000 of a degree: within 6 units of 1e-7
    expect(Math.abs((stored.lat as number) - 526291510)).toBeLessThan(6)
    expect(Math.abs((stored.lon as number) + 86617460)).toBeLessThan(6)
    expect(JSON.parse(stored.attributes as string)).toMatchObject({ mcc: 272, mnc: 1 })
    expect(await deviceRow(db, DEVICES.fresh.id)).toMatchObject({ state: 'moving', connected: 1 })

    client.send(gt06Alarm({ timestamp: T - 10, latitude: 52.63, longitude: -8.66, speed: 0 }, 0x01, 9))
    expect(hex(await client.read(10))).toStartWith('78 78 05 16 00 09')
    const alarm = await first(sql`SELECT alarm_code, ts, latitude, mcc FROM events`)
    expect(alarm).toEqual({ alarm_code: 'sos', ts: T - 10, latitude: 52.63, mcc: 272 })

    client.end()
    await untilRead(async () => (await deviceRow(db, DEVICES.fresh.id)).connected === 0, 2000, 'disconnection')
    expect(await deviceRow(db, DEVICES.fresh.id)).toMatchObject({ state: 'off', disconnected_at: START })
  })

  test('the frames of one connection are queued and answered in order, also while identification reads the identity version', async () => {
    const client = await connectClient(listener.port)
    client.send(gt06Login(DEVICES.fresh.imei, 1))
    await client.read(10)
    // a device changed by this process: the first frame's identification reads the store, the next ones find the device cached
    pipeline.devicesChanged()
    const frames = Array.from({ length: 5 }, (_, i) => gt06Status(i + 2))
    const burst = new Uint8Array(frames.reduce((n, f) => n + f.length, 0))
    frames.reduce((offset, f) => (burst.set(f, offset), offset + f.length), 0)
    client.send(burst)
    const acks = await client.read(10 * frames.length)
    const serials = Array.from({ length: frames.length }, (_, i) => acks[i * 10 + 5])
    expect(serials).toEqual([2, 3, 4, 5, 6])
    client.end()
  })

  test('a frame split across many writes is reassembled', async () => {
    const client = await connectClient(listener.port)
    const login = gt06Login(DEVICES.parked.imei)
    for (const byte of login) {
      client.send(Uint8Array.of(byte))
      await Bun.sleep(1)
    }
    expect((await client.read(10)).length).toBe(10)
    client.end()
  })

  test('a bad CRC drops the frame and garbage is skipped; the connection goes on', async () => {
    const client = await connectClient(listener.port)
    client.send(gt06Login(DEVICES.parked.imei))
    await client.read(10)
    const broken = gt06Status(5)
    broken[broken.length - 3] ^= 0xff
    client.send(broken)
    client.send(Uint8Array.from({ length: 300 }, (_, i) => (i * 37) & 0xff))
    client.send(gt06Status(6))
    expect(hex(await client.read(10))).toStartWith('78 78 05 13 00 06')
    expect(client.isClosed()).toBe(false)
    client.end()
  })

  test('data before login, and an oversized frame, close the connection', async () => {
    const early = await connectClient(listener.port)
    early.send(gt06Status())
    await early.closed
    const huge = await connectClient(listener.port)
    huge.send(Uint8Array.of(0x79, 0x79, 0xff, 0xff, 0x12))
    await huge.closed
    expect(await positionCount(db)).toBe(0)
  })

  test('a client that never finishes its frame is closed after the idle timeout', async () => {
    const slow = await connectClient(listener.port)
    const fine = await connectClient(listener.port)
    fine.send(gt06Login(DEVICES.parked.imei))
    await fine.read(10)
    slow.send(gt06Login(DEVICES.fresh.imei))
    await slow.read(10)
    slow.send(gt06Status().subarray(0, 7))
    await Bun.sleep(20)
    clock.advance(IDLE_MS - 1000)
    fine.send(gt06Status()) // progress resets this one's timer
    await fine.read(10)
    expect(listener.closeIdle()).toBe(0)
    clock.advance(2000)
    expect(listener.closeIdle()).toBe(1)
    await slow.closed
    expect(fine.isClosed()).toBe(false)
    fine.end()
  })

  test('the idle timeout also runs by itself (real clock, short timeout)', async () => {
    const quick = startTcpListener(gt06, { pipeline, clock: systemClock, log: silentLogger, port: 0, hostname: '127.0.0.1', idleTimeoutMs: 200 })
    const slow = await connectClient(quick.port)
    slow.send(Uint8Array.of(0x78, 0x78, 0x11))
    const started = Date.now()
    await slow.closed
    expect(Date.now() - started).toBeLessThan(2000)
    await quick.stop()
  })

  test('a connection that logs in to no device within the login timeout is closed; a logged-in one is not', async () => {
    await listener.stop()
    listener = startTcpListener(gt06, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', idleTimeoutMs: IDLE_MS, loginTimeoutMs: 30_000 })
    const silent = await connectClient(listener.port)
    const device = await connectClient(listener.port)
    device.send(gt06Login(DEVICES.parked.imei))
    await device.read(10)
    clock.advance(29_000)
    expect(listener.closeIdle()).toBe(0)
    clock.advance(1000)
    expect(listener.closeIdle()).toBe(1)
    await silent.closed
    device.send(gt06Status(9))
    expect(hex(await device.read(10))).toStartWith('78 78 05 13 00 09')
    expect(listener.connections).toBe(1)
    device.end()
  })

  test('the login timeout runs by itself (real clock, 1 s)', async () => {
    const quick = startTcpListener(gt06, { pipeline, clock: systemClock, log: silentLogger, port: 0, hostname: '127.0.0.1', loginTimeoutMs: 1000 })
    const silent = await connectClient(quick.port)
    const device = await connectClient(quick.port)
    device.send(gt06Login(DEVICES.parked.imei))
    await device.read(10)
    await silent.closed
    // opened at the same moment, logged in: still served
    device.send(gt06Status(4))
    expect(hex(await device.read(10))).toStartWith('78 78 05 13 00 04')
    device.end()
    await quick.stop()
  })

  test('connections beyond the per-address cap are closed at once; the others are served', async () => {
    await listener.stop()
    const refused: string[] = []
    const gate = createConnectionGate({ maxConnectionsPerAddress: 3 })
    listener = startTcpListener(gt06, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', gate, onRefused: (reason) => refused.push(reason) })
    const admitted = await Promise.all([1, 2, 3].map(() => connectClient(listener.port)))
    await until(() => listener.connections === 3, 2000, 'three connections')
    const extra = await connectClient(listener.port)
    await extra.closed
    expect(refused).toEqual(['address'])
    expect(listener.connections).toBe(3)
    admitted[0].send(gt06Login(DEVICES.parked.imei))
    expect((await admitted[0].read(10)).length).toBe(10)
    // a slot freed is a slot taken again
    admitted[1].end()
    await until(() => listener.connections === 2, 2000, 'the freed slot')
    const next = await connectClient(listener.port)
    next.send(gt06Login(DEVICES.fresh.imei))
    expect((await next.read(10)).length).toBe(10)
    for (const client of [...admitted, next]) client.end()
  })

  test('connections beyond the total cap are closed at once', async () => {
    await listener.stop()
    const refused: string[] = []
    listener = startTcpListener(gt06, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', gate: createConnectionGate({ maxConnections: 2 }), onRefused: (r) => refused.push(r) })
    const admitted = await Promise.all([1, 2].map(() => connectClient(listener.port)))
    await until(() => listener.connections === 2, 2000, 'two connections')
    const extra = await connectClient(listener.port)
    await extra.closed
    expect(refused).toEqual(['total'])
    for (const client of admitted) client.end()
  })

  test('past its ration of unknown IMEIs an address still logs its known devices in; a further unknown IMEI is answered as known and stores nothing', async () => {
    await listener.stop()
    await pipeline.stop()
    pipeline = newPipeline({ unknownIdentifiers: { perSource: 3, windowMs: 60_000 } })
    listener = startTcpListener(gt06, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', idleTimeoutMs: IDLE_MS, loginTimeoutMs: 30_000 })
    for (let i = 0; i < 3; i++) {
      const guess = await connectClient(listener.port)
      guess.send(gt06Login(String(111111111111110 + i), 7))
      await guess.closed
      expect(guess.pending).toBe(0)
    }
    // a known device behind the same address is served as ever
    const known = await connectClient(listener.port)
    known.send(gt06Login(DEVICES.parked.imei, 7))
    const knownAck = hex(await known.read(10))
    expect((await deviceRow(db, DEVICES.parked.id)).connected).toBe(1)
    // a fourth unknown IMEI gets the same ACK, and its frames the answers a device's get
    const masked = await connectClient(listener.port)
    masked.send(gt06Login(String(111111111111119), 7))
    expect(hex(await masked.read(10))).toBe(knownAck)
    masked.send(gt06Location({ timestamp: T - 30, latitude: 52.629151, longitude: -8.661746, speed: 45, course: 270 }, 8))
    masked.send(gt06Alarm({ timestamp: T - 10, latitude: 52.63, longitude: -8.66, speed: 0 }, 0x01, 9))
    expect(hex(await masked.read(10))).toStartWith('78 78 05 16 00 09')
    masked.send(gt06Status(10))
    expect(hex(await masked.read(10))).toStartWith('78 78 05 13 00 0A')
    expect(await positionCount(db)).toBe(0)
    expect(await count(sql`SELECT count(*) AS n FROM events`)).toBe(0)
    expect(await count(sql`SELECT count(*) AS n FROM devices WHERE connected = ${true}`)).toBe(1)
    // the login timeout does not tell it apart from a device; the idle timeout closes it as it would one
    clock.advance(30_000)
    expect(listener.closeIdle()).toBe(0)
    clock.advance(IDLE_MS)
    expect(listener.closeIdle()).toBe(2)
    await masked.closed
    await known.closed
    // a new window: unknown IMEIs are told again
    const later = await connectClient(listener.port)
    later.send(gt06Login(String(111111111111118)))
    await later.closed
    expect(later.pending).toBe(0)
  })

  test('a masked connection that streams 1,000 frames at once gets each answer, in order, and stores nothing', async () => {
    await listener.stop()
    await pipeline.stop()
    pipeline = newPipeline({ unknownIdentifiers: { perSource: 0, windowMs: 60_000 } })
    listener = startTcpListener(gt06, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', idleTimeoutMs: IDLE_MS })
    const masked = await connectClient(listener.port)
    masked.send(gt06Login(UNKNOWN_IMEI, 1))
    await masked.read(10)
    const frames = Array.from({ length: 1000 }, (_, i) => gt06Status((i + 2) & 0xffff))
    const burst = new Uint8Array(frames.reduce((n, f) => n + f.length, 0))
    frames.reduce((offset, f) => (burst.set(f, offset), offset + f.length), 0)
    // more than the 256 reports a connection may have waiting: reading pauses and resumes
    masked.send(burst)
    const acks = await masked.read(10 * 1000, 10_000)
    for (const i of [0, 255, 256, 999]) expect(hex(acks.subarray(i * 10, i * 10 + 6))).toBe(hex(Uint8Array.of(0x78, 0x78, 0x05, 0x13, ((i + 2) >> 8) & 0xff, (i + 2) & 0xff)))
    expect(await positionCount(db)).toBe(0)
    expect(await count(sql`SELECT count(*) AS n FROM devices WHERE connected = ${true}`)).toBe(0)
    expect(pipeline.stats.queued).toBe(0)
    masked.end()
  })

  test('garbage from many clients never kills the listener', async () => {
    let seed = 7
    const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff)
    const clients = await Promise.all(Array.from({ length: 20 }, () => connectClient(listener.port)))
    for (const [i, client] of clients.entries()) {
      const junk = Uint8Array.from({ length: 50 + Math.floor(random() * 2000) }, () => Math.floor(random() * 256))
      // some start like a frame, to reach deeper into the parser
      if (i % 2) junk.set([0x78, 0x78, Math.floor(random() * 256), Math.floor(random() * 256)], 0)
      client.send(junk)
      if (i % 3 === 0) client.end()
    }
    await Bun.sleep(50)
    const client = await connectClient(listener.port)
    client.send(gt06Login(DEVICES.parked.imei))
    expect((await client.read(10)).length).toBe(10)
    client.end()
    for (const c of clients) c.end()
  })
})

describe('Teltonika', () => {
  let listener: TcpListener
  beforeEach(async () => {
    db = await openFleet()
    clock = manualClock(START)
    pipeline = newPipeline()
    listener = startTcpListener(teltonika, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', idleTimeoutMs: IDLE_MS })
  })
  afterEach(async () => {
    await listener.stop()
    await pipeline.stop()
    await db.close()
  })

  const records = (n: number, from = 0): AvlRecordInput[] =>
    Array.from({ length: n }, (_, i) => ({
      timestampMs: (T - 100 + from + i) * 1000,
      latitude: 54.6872 + i * 1e-4,
      longitude: 25.2797,
      altitude: 112,
      angle: 45,
      satellites: 11,
      speed: 50,
      io1: { 239: 1, 21: 4 },
      io2: { 66: 12_800 },
      io4: { 16: 123_456 },
    }))

  async function handshake(imei: string = DEVICES.parked.imei) {
    const client = await connectClient(listener.port)
    client.send(teltonikaImei(imei))
    return { client, answer: await client.read(1) }
  }

  test('IMEI handshake: 01 for a known device, 00 then close for an unknown one', async () => {
    const known = await handshake()
    expect(known.answer[0]).toBe(0x01)
    expect((await deviceRow(db, DEVICES.parked.id)).connected).toBe(1)
    const unknown = await handshake(UNKNOWN_IMEI)
    expect(unknown.answer[0]).toBe(0x00)
    await unknown.client.closed
    known.client.end()
  })

  test('past the address\'s ration an unknown IMEI gets 01 and its packets their record count; nothing is stored', async () => {
    await listener.stop()
    await pipeline.stop()
    pipeline = newPipeline({ unknownIdentifiers: { perSource: 1, windowMs: 60_000 } })
    listener = startTcpListener(teltonika, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', idleTimeoutMs: IDLE_MS })
    const told = await handshake(UNKNOWN_IMEI)
    expect(told.answer[0]).toBe(0x00)
    await told.client.closed
    const masked = await handshake('222222222222222')
    expect(masked.answer[0]).toBe(0x01)
    masked.client.send(teltonikaPacket(records(3)))
    expect(hex(await masked.client.read(4))).toBe('00 00 00 03')
    const known = await handshake()
    expect(known.answer[0]).toBe(0x01)
    known.client.send(teltonikaPacket(records(2)))
    expect(hex(await known.client.read(4))).toBe('00 00 00 02')
    expect(await positionCount(db)).toBe(2)
    expect(await positionCount(db, DEVICES.parked.id)).toBe(2)
    masked.client.end()
    known.client.end()
  })

  test('Codec 8: the ACK is the record count, sent after the commit; IO elements kept as attributes', async () => {
    const { client } = await handshake()
    const packet = records(10)
    packet[3].satellites = 0
    client.send(teltonikaPacket(packet))
    expect(hex(await client.read(4))).toBe('00 00 00 0A')
    expect(await positionCount(db)).toBe(10)
    const rows = await read<{ flags: number; attributes: string; speed: number; altitude: number }>(sql`SELECT flags, attributes, speed, altitude FROM positions ORDER BY ts`)
    expect(rows.map((r) => r.flags)).toEqual([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]) // zero satellites: invalid
    expect(JSON.parse(rows[0].attributes)).toMatchObject({ ignition: true, gsm_signal: 4, external_voltage: 12.8, odometer: 123_456 })
    expect(rows[0]).toMatchObject({ speed: 500, altitude: 112 })
    expect(await deviceRow(db, DEVICES.parked.id)).toMatchObject({ state: 'moving' })
    // what the records say of the device is its status: the newest record's values
    const status = await db.stores.statuses.latest((await deviceRow(db, DEVICES.parked.id)).key)
    expect(status?.attributes).toEqual({ ignition: true, gsm_signal: 4, external_voltage: 12.8, odometer: 123_456 })
    // a re-sent packet is acknowledged again and adds nothing
    client.send(teltonikaPacket(packet))
    expect(hex(await client.read(4))).toBe('00 00 00 0A')
    expect(await positionCount(db)).toBe(10)
    client.end()
  })

  test('a record dated 1970 is acknowledged but not stored; the fresh one beside it is', async () => {
    const { client } = await handshake()
    const [fresh] = records(1)
    client.send(teltonikaPacket([{ ...fresh, timestampMs: 0 }, fresh]))
    expect(hex(await client.read(4))).toBe('00 00 00 02')
    expect(await read(sql`SELECT ts FROM positions`)).toEqual([{ ts: fresh.timestampMs / 1000 }])
    client.end()
  })

  test('Codec 8 Extended, and an alarm IO becomes an event', async () => {
    const { client } = await handshake()
    const [record] = records(1)
    client.send(teltonikaPacket([{ ...record, eventIoId: 252, io1: { ...record.io1, 252: 1 } }], 0x8e))
    expect(hex(await client.read(4))).toBe('00 00 00 01')
    expect(await read(sql`SELECT alarm_code FROM events`)).toEqual([{ alarm_code: 'power_cut' }])
    client.end()
  })

  test('a bad CRC is not acknowledged; the resent packet is', async () => {
    const { client } = await handshake()
    const packet = teltonikaPacket(records(2))
    const broken = packet.slice()
    broken[broken.length - 1] ^= 0x55
    client.send(broken)
    await Bun.sleep(30)
    expect(client.pending).toBe(0)
    expect(await positionCount(db)).toBe(0)
    client.send(packet)
    expect(hex(await client.read(4))).toBe('00 00 00 02')
    client.end()
  })

  test('malformed records, a bad handshake and an oversized packet', async () => {
    const { client } = await handshake()
    // a CRC-valid packet whose records are cut short: dropped, never acknowledged
    const bad = new Uint8Array([0x08, 0x02, 0x00, 0x00, 0x01])
    const packet = new Uint8Array(8 + bad.length + 4)
    new DataView(packet.buffer).setUint32(4, bad.length)
    packet.set(bad, 8)
    const { crc16Arc } = await import('../../src/ingest/protocols/crc')
    new DataView(packet.buffer).setUint32(8 + bad.length, crc16Arc(bad))
    client.send(packet)
    await Bun.sleep(30)
    expect(client.pending).toBe(0)
    expect(client.isClosed()).toBe(false)

    const notDigits = await connectClient(listener.port)
    notDigits.send(Uint8Array.of(0x00, 0x03, 0x41, 0x42, 0x43))
    await notDigits.closed
    const hugeLength = await connectClient(listener.port)
    hugeLength.send(Uint8Array.of(0x7f, 0xff)) // (0xFF before an IMEI is a keep-alive, not a length)
    await hugeLength.closed

    client.send(Uint8Array.of(0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0x08))
    await client.closed
    client.end()
  })

  test('a truncated packet then a disconnect stores nothing; the listener serves the next client', async () => {
    const { client } = await handshake()
    client.send(teltonikaPacket(records(5)).subarray(0, 60))
    await Bun.sleep(20)
    client.end()
    await client.closed
    const next = await handshake(DEVICES.fresh.imei)
    next.client.send(teltonikaPacket(records(3)))
    expect(hex(await next.client.read(4))).toBe('00 00 00 03')
    expect(await positionCount(db)).toBe(3)
    next.client.end()
  })

  test('a slow client that never finishes its packet is closed after the idle timeout', async () => {
    const { client } = await handshake()
    client.send(teltonikaPacket(records(5)).subarray(0, 40))
    await Bun.sleep(20)
    clock.advance(IDLE_MS + 1)
    expect(listener.closeIdle()).toBe(1)
    await client.closed
  })

  test('many concurrent devices: every packet acknowledged with its count', async () => {
    const extra = Array.from({ length: 30 }, (_, i) => ({ imei: String(860000000000000 + i) }))
    await listener.stop()
    await pipeline.stop()
    await db.close()
    db = await openFleet(extra)
    pipeline = newPipeline()
    listener = startTcpListener(teltonika, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1' })
    await Promise.all(
      extra.map(async ({ imei }) => {
        const { client, answer } = await handshake(imei)
        expect(answer[0]).toBe(1)
        for (let p = 0; p < 5; p++) {
          client.send(teltonikaPacket(records(10, p * 10)))
          expect(hex(await client.read(4))).toBe('00 00 00 0A')
        }
        client.end()
      }),
    )
    expect(await positionCount(db)).toBe(30 * 50)
    expect(pipeline.stats.batches).toBeLessThan(30 * 5)
  })
})

describe('OsmAnd', () => {
  let base: string
  let stopListener: () => Promise<void>
  beforeAll(() => {})
  beforeEach(async () => {
    db = await openFleet()
    clock = manualClock(START)
    pipeline = newPipeline()
    const listener = startOsmandListener({ pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', maxBodyBytes: 4096 })
    base = `http://127.0.0.1:${listener.port}`
    stopListener = listener.stop
  })
  afterEach(async () => {
    await stopListener()
    await pipeline.stop()
    await db.close()
  })
  afterAll(() => {})

  test('GET with a query string: 200 once committed; speed in knots becomes km/h', async () => {
    const response = await fetch(`${base}/?id=${DEVICES.phone.serial}&lat=52.629151&lon=-8.661746&timestamp=${T - 5}&speed=10&bearing=90&altitude=20&batt=80`)
    expect(response.status).toBe(200)
    const row = (await first(sql`SELECT ts, lat, lon, speed, course, attributes FROM positions`)) as Record<string, unknown>
    expect(row).toMatchObject({ ts: T - 5, lat: 526291510, lon: -86617460, speed: 185, course: 90 })
    expect(JSON.parse(row.attributes as string)).toMatchObject({ battery_level: 80 })
    expect(await deviceRow(db, DEVICES.phone.id)).toMatchObject({ state: 'moving', connected: 1 })
  })

  test('POST with a form body, and with the JSON of the current Traccar Client', async () => {
    const form = await fetch(base, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `id=${DEVICES.phone.serial}&lat=52.1&lon=-8.1&timestamp=${T - 20}`,
    })
    expect(form.status).toBe(200)
    const json = await fetch(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        device_id: DEVICES.phone.serial,
        location: { timestamp: new Date((T - 10) * 1000).toISOString(), coords: { latitude: 52.2, longitude: -8.2, speed: 10, heading: 45 }, battery: { level: 0.5 } },
      }),
    })
    expect(json.status).toBe(200)
    const rows = await read(sql`SELECT ts, lat, speed FROM positions ORDER BY ts`)
    expect(rows).toEqual([
      { ts: T - 20, lat: 521000000, speed: null },
      { ts: T - 10, lat: 522000000, speed: 360 },
    ])
  })

  test('an alarm parameter becomes an event', async () => {
    expect((await fetch(`${base}/?id=${DEVICES.phone.serial}&lat=52&lon=-8&timestamp=${T}&alarm=sos`)).status).toBe(200)
    expect(await count(sql`SELECT count(*) AS n FROM events`)).toBe(1)
  })

  test('an unknown or unlinked identifier is a 404 (the phone keeps its report); device-independent checks come first', async () => {
    const answer = async (id: string, query = `lat=52&lon=-8&timestamp=${T}`) => {
      const response = await fetch(`${base}/?id=${id}&${query}`)
      return { status: response.status, type: response.headers.get('content-type') }
    }
    expect((await answer(DEVICES.phone.serial)).status).toBe(200)
    expect(await answer('nobody')).toEqual({ status: 404, type: 'application/problem+json' })
    expect(await answer(DEVICES.unlinked.serial)).toEqual({ status: 404, type: 'application/problem+json' })
    // the checks that need no device come before the lookup: the same 400 either way
    const future = `lat=52&lon=-8&timestamp=${T + 2 * 86_400}`
    expect((await answer(DEVICES.phone.serial, future)).status).toBe(400)
    expect((await answer('nobody', future)).status).toBe(400)
    expect(await positionCount(db)).toBe(1)
  })

  test('a fix dated 1970 is refused and not stored; a fresh one is stored', async () => {
    const old = await fetch(`${base}/?id=${DEVICES.phone.serial}&lat=52&lon=-8&timestamp=0`)
    expect(old.status).toBe(400)
    expect(old.headers.get('content-type')).toBe('application/problem+json')
    expect(await positionCount(db)).toBe(0)
    expect((await fetch(`${base}/?id=${DEVICES.phone.serial}&lat=52&lon=-8&timestamp=${T - 60}`)).status).toBe(200)
    expect(await positionCount(db)).toBe(1)
  })

  test('MAX_FIX_AGE_DAYS: a fix older than the configured age is refused, a younger one stored', async () => {
    await stopListener()
    await pipeline.stop()
    pipeline = newPipeline({ maxFixAgeDays: 30 })
    const listener = startOsmandListener({ pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1' })
    stopListener = listener.stop
    const at = (ts: number) => fetch(`http://127.0.0.1:${listener.port}/?id=${DEVICES.phone.serial}&lat=52&lon=-8&timestamp=${ts}`)
    expect((await at(T - 31 * 86_400)).status).toBe(400)
    expect((await at(T - 29 * 86_400)).status).toBe(200)
    expect(await read(sql`SELECT ts FROM positions`)).toEqual([{ ts: T - 29 * 86_400 }])
  })

  test('past its ration of unknown identifiers an address gets 200 for the next ones, stores nothing, and one log line for the burst; its known phones are served', async () => {
    await stopListener()
    await pipeline.stop()
    const lines: Record<string, unknown>[] = []
    const log = createLogger('debug', (line) => lines.push(JSON.parse(line)))
    pipeline = newPipeline({ log, unknownIdentifiers: { perSource: 5, windowMs: 60_000 } })
    const listener = startOsmandListener({ pipeline, clock, log, port: 0, hostname: '127.0.0.1' })
    stopListener = listener.stop
    const report = (id: string) => fetch(`http://127.0.0.1:${listener.port}/?id=${id}&lat=52&lon=-8&timestamp=${T}`)

    const answers: { status: number; type: string | null; body: string }[] = []
    for (let i = 0; i < 12; i++) {
      const response = await report(`guess-${i}`)
      answers.push({ status: response.status, type: response.headers.get('content-type'), body: await response.text() })
    }
    expect(answers.map((a) => a.status)).toEqual([404, 404, 404, 404, 404, 200, 200, 200, 200, 200, 200, 200])
    const known = await report(DEVICES.phone.serial)
    // the same answer, byte for byte
    expect({ status: known.status, type: known.headers.get('content-type'), body: await known.text() }).toEqual(answers[11])
    expect(await read(sql`SELECT device FROM positions`)).toEqual([{ device: (await deviceRow(db, DEVICES.phone.id)).key }])

    // the first unknown identifier at once; the rest of the burst is one line when its window ends
    const refusals = () => lines.filter((l) => l.msg === 'device refused' || String(l.msg).startsWith('unknown device identifiers'))
    expect(refusals()).toEqual([expect.objectContaining({ msg: 'device refused', uniqueId: 'guess-0', source: '127.0.0.1' })])
    clock.advance(60_000)
    pipeline.sweep()
    expect(refusals().slice(1)).toEqual([
      expect.objectContaining({ msg: 'unknown device identifiers: 12 from 127.0.0.1 in the last 60 s', attempts: 12, distinctRefused: 5, masked: 7 }),
    ])
    expect(lines.length).toBeLessThan(5)

    // a new window: an unknown identifier is told again
    expect((await report('guess-11')).status).toBe(404)
    expect(await positionCount(db)).toBe(1)
  })

  test('one unknown identifier retried is never rate-limited (a misconfigured phone does not lock out its address)', async () => {
    await stopListener()
    await pipeline.stop()
    pipeline = newPipeline({ unknownIdentifiers: { perSource: 2, windowMs: 60_000 } })
    const listener = startOsmandListener({ pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1' })
    stopListener = listener.stop
    for (let i = 0; i < 5; i++) expect((await fetch(`http://127.0.0.1:${listener.port}/?id=typo&lat=52&lon=-8&timestamp=${T}`)).status).toBe(404)
    expect((await fetch(`http://127.0.0.1:${listener.port}/?id=${DEVICES.phone.serial}&lat=52&lon=-8&timestamp=${T}`)).status).toBe(200)
    expect(await positionCount(db)).toBe(1)
  })

  test('bad input is 400 naming the parameter; nothing is stored', async () => {
    for (const query of ['lat=52&lon=-8', `id=${DEVICES.phone.serial}&lon=-8`, `id=${DEVICES.phone.serial}&lat=95&lon=-8`, `id=${DEVICES.phone.serial}&lat=abc&lon=-8`]) {
      const response = await fetch(`${base}/?${query}`)
      expect(response.status).toBe(400)
      expect(response.headers.get('content-type')).toBe('application/problem+json')
    }
    const broken = await fetch(base, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"device_id": ' })
    expect(broken.status).toBe(400)
    expect(await positionCount(db)).toBe(0)
  })

  test('a timestamp more than a day ahead is 400', async () => {
    const response = await fetch(`${base}/?id=${DEVICES.phone.serial}&lat=52&lon=-8&timestamp=${T + 2 * 86_400}`)
    expect(response.status).toBe(400)
    expect(await positionCount(db)).toBe(0)
  })

  test('a streamed body is read no further than the limit: 413', async () => {
    let sent = 0
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 64 << 20) return controller.close()
        sent += 1024
        controller.enqueue(new Uint8Array(1024).fill(0x61))
      },
    })
    const response = await fetch(base, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: endless })
    expect(response.status).toBe(413)
    expect(response.headers.get('content-type')).toBe('application/problem+json')
    expect(sent).toBeLessThan(1 << 20)
    expect((await fetch(`${base}/?id=${DEVICES.phone.serial}&lat=52&lon=-8&timestamp=${T}`)).status).toBe(200)
  })

  test('JSON nested 20,000 and 100,000 deep is 400, within the default 1 MiB body limit', async () => {
    const listener = startOsmandListener({ pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1' })
    try {
      for (const body of ['['.repeat(20_000), '['.repeat(100_000) + ']'.repeat(100_000), '{"location":'.repeat(20_000)]) {
        const response = await fetch(`http://127.0.0.1:${listener.port}/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        expect(response.status).toBe(400)
        expect(await response.json()).toMatchObject({ status: 400, detail: expect.stringContaining('deeper than') })
      }
      const declared = await fetch(`http://127.0.0.1:${listener.port}/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat((1 << 20) + 1) })
      expect(declared.status).toBe(413)
    } finally {
      await listener.stop()
    }
  })

  test('a body over the limit is 413; another method is 405', async () => {
    const big = await fetch(base, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `id=${DEVICES.phone.serial}&x=${'a'.repeat(10_000)}` })
    expect(big.status).toBe(413)
    expect(big.headers.get('content-type')).toBe('application/problem+json')
    expect((await fetch(base, { method: 'PUT', body: 'x' })).status).toBe(405)
    // the listener still works
    expect((await fetch(`${base}/?id=${DEVICES.phone.serial}&lat=52&lon=-8&timestamp=${T}`)).status).toBe(200)
  })
})
