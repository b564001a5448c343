/** The server starts the pipeline and the listeners from the config, and stops them in order. */
import { afterAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { manualClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { PROTOCOLS } from '../../src/ingest/protocols'
import { devicePortsOf } from '../../src/ingest/protocols/ports'
import { silentLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { devicePortsOff, freePort } from '../support/process'
import { serverDatabase, type ServerDatabase } from '../support/server-database'
import { DEVICES, fleetDataset } from './fleet'
import { connectClient, gt06Location, gt06Login, gt06Status, hex, teltonikaImei, teltonikaPacket } from './frames'

const databases: ServerDatabase[] = []
afterAll(async () => {
  await Promise.all(databases.map((database) => database.close()))
}, 20_000)

/** a fresh database on the run's engine (holding `dataset`), closed after the file */
async function database(name: string, dataset?: unknown): Promise<ServerDatabase> {
  const made = await serverDatabase(`server-${name}`, dataset)
  databases.push(made)
  return made
}

test('listeners on their configured ports; stop acknowledges, closes sessions, then disconnects devices', async () => {
  const stored = await database('a', fleetDataset())
  // every protocol of the list on a port of its own
  const ports: Record<string, number> = Object.fromEntries(PROTOCOLS.map((protocol) => [protocol.name, freePort()]))
  const clock = manualClock(Date.UTC(2026, 10, 25, 12))
  const config = loadConfig({
    ...stored.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent',
    ...Object.fromEntries(PROTOCOLS.map((protocol) => [protocol.portVariable, String(ports[protocol.name])])),
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

  const row = async (id: string) => {
    const [found] = await stored.execute<{ state: string; connected: number; disconnected_at: number | string | null }>(
      sql`SELECT state, CASE WHEN connected THEN 1 ELSE 0 END AS connected, disconnected_at FROM devices WHERE id = ${id}`,
    )
    return { state: found!.state, connected: Number(found!.connected), disconnected_at: found!.disconnected_at === null ? null : Number(found!.disconnected_at) }
  }
  expect(await row(DEVICES.parked.id)).toEqual({ state: 'off', connected: 0, disconnected_at: clock.now() })
  expect(await row(DEVICES.fresh.id)).toMatchObject({ state: 'new', connected: 0 })
  // OsmAnd has no session: the phone stays connected until OFFLINE_AFTER passes (the next start sweeps it)
  expect(await row(DEVICES.phone.id)).toMatchObject({ state: 'stopped', connected: 1 })
  expect(await stored.count('positions')).toBe(2)
})

test('device connection caps and the login timeout come from the config; refusals are counted in /metrics', async () => {
  const gt06Port = freePort()
  const stored = await database('c')
  const config = loadConfig({ ...devicePortsOff(),
    ...stored.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent',
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
    expect(metrics).toContain(`${stored.sample('tracker_tcp_connections_refused_total', 'protocol="gt06",reason="address"')} 1`)
  } finally {
    await server.stop()
  }
})

test('30 unknown identifiers from one address lock none of its known devices out; past UNKNOWN_IDENTIFIERS_PER_MINUTE an unknown one is answered as known, stores nothing, and is counted', async () => {
  const stored = await database('u', fleetDataset())
  const ports = { osmand: freePort(), gt06: freePort(), teltonika: freePort() }
  const clock = manualClock(Date.UTC(2026, 10, 25, 12))
  const now = () => clock.now() / 1000
  // the default ration: 20 a minute
  const config = loadConfig({ ...devicePortsOff(),
    ...stored.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent',
    OSMAND_PORT: String(ports.osmand), GT06_PORT: String(ports.gt06), TELTONIKA_PORT: String(ports.teltonika),
  })
  const server = await startServer(config, { clock, log: silentLogger })
  const osmand = async (id: string) => {
    const response = await fetch(`http://127.0.0.1:${ports.osmand}/?id=${id}&lat=52&lon=-8&timestamp=${now() - 1}`)
    return { status: response.status, type: response.headers.get('content-type'), body: await response.text() }
  }
  const clients: Awaited<ReturnType<typeof connectClient>>[] = []
  try {
    // 30 unknown identifiers from 127.0.0.1: 20 told (OsmAnd 404), 10 more past the ration (OsmAnd 200, GT06 and Teltonika accepted)
    const told = []
    for (let i = 0; i < 20; i++) told.push((await osmand(`guess-${i}`)).status)
    expect(told).toEqual(Array(20).fill(404))
    const maskedOsmand = []
    for (let i = 20; i < 26; i++) maskedOsmand.push(await osmand(`guess-${i}`))
    const maskedAcks: string[] = []
    for (let i = 26; i < 29; i++) {
      const guess = await connectClient(ports.gt06)
      clients.push(guess)
      guess.send(gt06Login(String(111111111111100 + i), 5))
      maskedAcks.push(hex(await guess.read(10)))
      // its data: answered as a device's, dropped
      guess.send(gt06Location({ timestamp: now() - 20, latitude: 52.6, longitude: -8.6, speed: 30, course: 90 }, 6))
      guess.send(gt06Status(7))
      expect(hex(await guess.read(10))).toStartWith('78 78 05 13 00 07')
    }
    const teltonika = await connectClient(ports.teltonika)
    clients.push(teltonika)
    teltonika.send(teltonikaImei('222222222222229'))
    expect((await teltonika.read(1))[0]).toBe(1)
    teltonika.send(teltonikaPacket([{ timestampMs: clock.now() - 5000, latitude: 54.7, longitude: 25.3, speed: 30 }]))
    expect(hex(await teltonika.read(4))).toBe('00 00 00 01')

    // the known devices behind the same address: served and stored
    const known = await connectClient(ports.gt06)
    clients.push(known)
    known.send(gt06Login(DEVICES.fresh.imei, 5))
    const knownAck = hex(await known.read(10))
    expect(maskedAcks).toEqual([knownAck, knownAck, knownAck])
    known.send(gt06Location({ timestamp: now() - 20, latitude: 52.6, longitude: -8.6, speed: 30, course: 90 }, 6))
    known.send(gt06Status(7))
    expect(hex(await known.read(10))).toStartWith('78 78 05 13 00 07')
    const phone = await osmand(DEVICES.phone.serial)
    expect(maskedOsmand).toEqual(Array(6).fill(phone))
    expect(phone.status).toBe(200)

    const metrics = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text()
    expect(metrics).toContain(`${stored.sample('tracker_unknown_device_messages_total', 'protocol="osmand",outcome="refused"')} 20`)
    expect(metrics).toContain(`${stored.sample('tracker_unknown_device_messages_total', 'protocol="osmand",outcome="dropped"')} 6`)
    // each masked login, and each report after it
    expect(metrics).toContain(`${stored.sample('tracker_unknown_device_messages_total', 'protocol="gt06",outcome="dropped"')} 9`)
    expect(metrics).toContain(`${stored.sample('tracker_unknown_device_messages_total', 'protocol="teltonika",outcome="dropped"')} 2`)
    expect(metrics).toContain(`${stored.sample('tracker_unknown_device_messages_total', 'protocol="gt06",outcome="refused"')} 0`)
  } finally {
    for (const client of clients) client.end()
    await server.stop()
  }
  const positions = await stored.execute<{ device: string }>(sql`SELECT d.id AS device FROM positions p JOIN devices d ON d.key = p.device ORDER BY d.id`)
  expect(positions).toEqual([{ device: DEVICES.fresh.id }, { device: DEVICES.phone.id }])
  expect(await stored.count('device_status')).toBe(1)
})

test('UNKNOWN_IDENTIFIERS_PER_MINUTE sets the ration', async () => {
  const osmandPort = freePort()
  const stored = await database('r')
  const config = loadConfig({ ...devicePortsOff(),
    ...stored.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent',
    OSMAND_PORT: String(osmandPort), UNKNOWN_IDENTIFIERS_PER_MINUTE: '2',
  })
  const server = await startServer(config, { log: silentLogger })
  try {
    const statuses = []
    for (const id of ['a', 'b', 'a', 'c', 'd']) statuses.push((await fetch(`http://127.0.0.1:${osmandPort}/?id=guess-${id}&lat=52&lon=-8`)).status)
    expect(statuses).toEqual([404, 404, 404, 200, 200])
  } finally {
    await server.stop()
  }
})

test('the device limits are validated', () => {
  for (const [name, value] of [
    ['TCP_MAX_CONNECTIONS', '0'], ['TCP_MAX_CONNECTIONS_PER_ADDRESS', 'many'], ['TCP_LOGIN_TIMEOUT', '0'], ['MAX_FIX_AGE_DAYS', '1.5'],
    ['UNKNOWN_IDENTIFIERS_PER_MINUTE', '-1'], ['UNKNOWN_IDENTIFIERS_PER_MINUTE', '1001'], ['UNKNOWN_IDENTIFIERS_PER_MINUTE', 'few'],
  ]) {
    expect(() => loadConfig({ [name]: value })).toThrow(name)
  }
  expect(loadConfig({})).toMatchObject({ tcpMaxConnections: 10_000, tcpMaxConnectionsPerAddress: 100, tcpLoginTimeout: 30, maxFixAgeDays: 365, unknownIdentifiersPerMinute: 20 })
  expect(loadConfig({ UNKNOWN_IDENTIFIERS_PER_MINUTE: '0' }).unknownIdentifiersPerMinute).toBe(0)
})

test('each protocol port variable comes from its unit, validated the same way', () => {
  // the defaults the README and docs/protocols.md state
  expect(devicePortsOf(loadConfig({}).env)).toEqual({
    osmand: 5055, gt06: 5023, teltonika: 5027, h02: 5013, gps103: 5001, jt808: 5015, gl200: 5004, meitrack: 5020, watch: 5093,
  })
  expect(devicePortsOf(loadConfig({ H02_PORT: '0', GT06_PORT: '6000' }).env)).toMatchObject({ h02: 0, gt06: 6000 })
  for (const name of PROTOCOLS.map((protocol) => protocol.portVariable)) {
    expect(() => devicePortsOf(loadConfig({ [name]: '65536' }).env)).toThrow(`${name} must be an integer from 0 to 65535, got "65536"`)
    expect(() => devicePortsOf(loadConfig({ [name]: 'x' }).env)).toThrow(name)
  }
})

test('port 0 turns a listener off', async () => {
  const stored = await database('b')
  const config = loadConfig({ ...devicePortsOff(), ...stored.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent' })
  const server = await startServer(config, { log: silentLogger })
  expect(server.ports).toEqual(Object.fromEntries(PROTOCOLS.map((protocol) => [protocol.name, null])))
  await server.stop()
})
