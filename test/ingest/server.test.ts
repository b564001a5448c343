/** The server starts the pipeline and the listeners from the config, and stops them in order. */
import { afterAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { rmSync } from 'node:fs'
import { openDatabase } from '../../db/client'
import { manualClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { importDataset } from '../../src/dataset/service'
import { silentLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { freePort } from '../support/process'
import { DEVICES, fleetDataset, tempDir } from './fleet'
import { connectClient, gt06Login, hex, teltonikaImei, teltonikaPacket } from './frames'

const dir = tempDir('server-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('listeners on their configured ports; stop acknowledges, closes sessions, then disconnects devices', async () => {
  const databasePath = join(dir, 'a.db')
  const setup = openDatabase(databasePath)
  importDataset(setup.sqlite, fleetDataset())
  setup.close()
  const ports = { osmand: freePort(), gt06: freePort(), teltonika: freePort(), h02: freePort() }
  const clock = manualClock(Date.UTC(2026, 10, 25, 12))
  const config = loadConfig({
    DATABASE_PATH: databasePath, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent',
    OSMAND_PORT: String(ports.osmand), GT06_PORT: String(ports.gt06), TELTONIKA_PORT: String(ports.teltonika), H02_PORT: String(ports.h02),
  })
  const server = await startServer(config, { clock, log: silentLogger })
  expect(server.ports).toEqual(ports)

  const teltonika = await connectClient(ports.teltonika)
  teltonika.send(teltonikaImei(DEVICES.parked.imei))
  expect((await teltonika.read(1))[0]).toBe(1)
  teltonika.send(teltonikaPacket([{ timestampMs: clock.now() - 5000, latitude: 54.7, longitude: 25.3, speed: 30 }]))
  expect(hex(await teltonika.read(4))).toBe('00 00 00 01')
  const gt06 = await connectClient(ports.gt06)
  gt06.send(gt06Login(DEVICES.fresh.imei))
  await gt06.read(10)
  const osmand = await fetch(`http://127.0.0.1:${ports.osmand}/?id=${DEVICES.phone.serial}&lat=52&lon=-8&timestamp=${clock.now() / 1000 - 1}`)
  expect(osmand.status).toBe(200)

  clock.advance(1000)
  await server.stop()
  await teltonika.closed
  await gt06.closed

  const db = openDatabase(databasePath)
  const row = (id: string) => db.sqlite.query<{ state: string; connected: number; disconnected_at: number | null }, [string]>('SELECT state, connected, disconnected_at FROM devices WHERE id = ?').get(id)!
  expect(row(DEVICES.parked.id)).toEqual({ state: 'off', connected: 0, disconnected_at: clock.now() })
  expect(row(DEVICES.fresh.id)).toMatchObject({ state: 'new', connected: 0 })
  // OsmAnd has no session: the phone stays connected until OFFLINE_AFTER passes (the next start sweeps it)
  expect(row(DEVICES.phone.id)).toMatchObject({ state: 'stopped', connected: 1 })
  expect(db.sqlite.query<{ n: number }, []>('SELECT count(*) AS n FROM positions').get()!.n).toBe(2)
  db.close()
})

test('device connection caps and the login timeout come from the config; refusals are counted in /metrics', async () => {
  const gt06Port = freePort()
  const config = loadConfig({
    DATABASE_PATH: join(dir, 'c.db'), HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', OSMAND_PORT: '0', TELTONIKA_PORT: '0', H02_PORT: '0',
    GT06_PORT: String(gt06Port), TCP_MAX_CONNECTIONS_PER_ADDRESS: '1', TCP_LOGIN_TIMEOUT: '1',
  })
  const server = await startServer(config, { log: silentLogger })
  try {
    const silent = await connectClient(gt06Port)
    await Bun.sleep(20)
    const extra = await connectClient(gt06Port)
    await extra.closed
    expect(silent.isClosed()).toBe(false)
    // never logs in: closed by TCP_LOGIN_TIMEOUT, which frees its slot
    await silent.closed
    const metrics = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text()
    expect(metrics).toContain('tracker_tcp_connections_refused_total{protocol="gt06",reason="address"} 1')
  } finally {
    await server.stop()
  }
})

test('the device limits are validated', () => {
  for (const [name, value] of [['TCP_MAX_CONNECTIONS', '0'], ['TCP_MAX_CONNECTIONS_PER_ADDRESS', 'many'], ['TCP_LOGIN_TIMEOUT', '0'], ['MAX_FIX_AGE_DAYS', '1.5']]) {
    expect(() => loadConfig({ [name]: value })).toThrow(name)
  }
  expect(loadConfig({})).toMatchObject({ tcpMaxConnections: 10_000, tcpMaxConnectionsPerAddress: 100, tcpLoginTimeout: 30, maxFixAgeDays: 365 })
})

test('each protocol port variable comes from its unit, validated the same way', () => {
  expect(loadConfig({}).devicePorts).toEqual({ osmand: 5055, gt06: 5023, teltonika: 5027, h02: 5013 })
  expect(loadConfig({ H02_PORT: '0', GT06_PORT: '6000' }).devicePorts).toMatchObject({ h02: 0, gt06: 6000 })
  for (const name of ['OSMAND_PORT', 'GT06_PORT', 'TELTONIKA_PORT', 'H02_PORT']) {
    expect(() => loadConfig({ [name]: '65536' })).toThrow(`${name} must be an integer from 0 to 65535, got "65536"`)
    expect(() => loadConfig({ [name]: 'x' })).toThrow(name)
  }
})

test('port 0 turns a listener off', async () => {
  const config = loadConfig({ DATABASE_PATH: join(dir, 'b.db'), HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', OSMAND_PORT: '0', GT06_PORT: '0', TELTONIKA_PORT: '0', H02_PORT: '0' })
  const server = await startServer(config, { log: silentLogger })
  expect(server.ports).toEqual({ osmand: null, gt06: null, teltonika: null, h02: null })
  await server.stop()
})
