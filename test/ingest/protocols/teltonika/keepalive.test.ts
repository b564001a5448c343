/**
 * The Teltonika keep-alive over a real TCP socket: a device that sends 0xFF before its IMEI and
 * between packets (FMB devices with a link-keeping period do, once a minute) is served, and the
 * keep-alive alone keeps a quiet connection from being closed as idle.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { manualClock } from '../../../../src/clock'
import { LivePositions } from '../../../../src/ingest/live'
import { createIngestPipeline, type IngestPipeline } from '../../../../src/ingest/pipeline'
import { teltonika } from '../../../../src/ingest/protocols/teltonika/descriptor'
import { startTcpListener, type TcpListener } from '../../../../src/ingest/tcp'
import { silentLogger } from '../../../../src/log'
import type { EngineWorld } from '../../../support/world'
import { DEVICES, deviceRow, openFleet, positionCount } from '../../fleet'
import { connectClient, hex, teltonikaImei, teltonikaPacket, type AvlRecordInput } from '../../frames'

const START = Date.UTC(2026, 10, 25, 12, 0, 0)
const IDLE_MS = 120_000
const KEEPALIVE = Uint8Array.of(0xff)

describe('Teltonika keep-alive (0xFF) over TCP', () => {
  let db: EngineWorld
  let clock: ReturnType<typeof manualClock>
  let pipeline: IngestPipeline
  let listener: TcpListener

  beforeEach(async () => {
    db = await openFleet()
    clock = manualClock(START)
    pipeline = createIngestPipeline({ stores: db.stores, clock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, sweepIntervalMs: 0 })
    listener = startTcpListener(teltonika, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', idleTimeoutMs: IDLE_MS })
  })
  afterEach(async () => {
    await listener.stop()
    await pipeline.stop()
    await db.close()
  })

  const record = (secondsAgo: number): AvlRecordInput => ({
    timestampMs: START - secondsAgo * 1000,
    latitude: 54.6872,
    longitude: 25.2797,
    satellites: 9,
    speed: 30,
    io1: { 239: 1 },
  })

  test('0xFF before the IMEI and between packets: accepted, every packet acknowledged, never closed', async () => {
    const client = await connectClient(listener.port)
    client.send(KEEPALIVE)
    client.send(teltonikaImei(DEVICES.parked.imei))
    expect(hex(await client.read(1))).toBe('01')
    expect((await deviceRow(db, DEVICES.parked.id)).connected).toBe(1)

    client.send(teltonikaPacket([record(60)]))
    expect(hex(await client.read(4))).toBe('00 00 00 01')
    client.send(KEEPALIVE)
    client.send(Uint8Array.of(0xff, 0xff))
    client.send(teltonikaPacket([record(30), record(20)]))
    expect(hex(await client.read(4))).toBe('00 00 00 02')
    expect(await positionCount(db)).toBe(3)
    expect(client.pending).toBe(0) // a keep-alive is not answered
    expect(client.isClosed()).toBe(false)
    client.end()
  })

  test('an IMEI that arrives with the keep-alive in one write', async () => {
    const client = await connectClient(listener.port)
    client.send(Uint8Array.from([0xff, ...teltonikaImei(DEVICES.parked.imei)]))
    expect(hex(await client.read(1))).toBe('01')
    client.end()
  })

  test('a quiet device that keeps sending 0xFF is not closed as idle; one that sends nothing is', async () => {
    const pinging = await connectClient(listener.port)
    pinging.send(teltonikaImei(DEVICES.parked.imei))
    expect(hex(await pinging.read(1))).toBe('01')
    const silent = await connectClient(listener.port)
    silent.send(teltonikaImei(DEVICES.fresh.imei))
    expect(hex(await silent.read(1))).toBe('01')

    clock.advance(IDLE_MS - 1_000)
    pinging.send(KEEPALIVE)
    await Bun.sleep(50) // let the listener read it; nothing comes back to wait on
    clock.advance(2_000) // past the idle timeout since the handshakes, not since the keep-alive

    expect(listener.closeIdle()).toBe(1)
    await silent.closed
    expect(pinging.isClosed()).toBe(false)
    pinging.send(teltonikaPacket([record(5)]))
    expect(hex(await pinging.read(4))).toBe('00 00 00 01')
    pinging.end()
  })
})
