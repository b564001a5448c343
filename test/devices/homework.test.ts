/**
 * Devices without homework (issue 20, item 2): a device needs only a name and an identifier. Left
 * without a model, it has none (null) until its first report, which gives it the built-in model of
 * the protocol it reported on; then the built-in catalogue's commands reach it over its socket.
 * The real server: the API over HTTP, OsmAnd over HTTP, GT06 over a real TCP socket.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { manualClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { openProductDatabase } from '../../src/database'
import { importNow } from '../support/import'
import { gt06 } from '../../src/ingest/protocols/gt06/descriptor'
import { osmand } from '../../src/ingest/protocols/osmand/descriptor'
import { silentLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { connectClient, gt06Login, hex } from '../ingest/frames'
import { freePort } from '../support/process'
import { baseDataset, ids, keys } from '../support/world'

const dir = mkdtempSync(join(tmpdir(), 'tracker-homework-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function started(name: string) {
  const databasePath = join(dir, `${name}.db`)
  const setup = openProductDatabase(databasePath)
  importNow(setup, baseDataset())
  setup.close()
  const osmandPort = freePort()
  const gt06Port = freePort()
  const clock = manualClock(Date.UTC(2026, 10, 25, 12))
  const config = loadConfig({
    DATABASE_PATH: databasePath, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', OSMAND_PORT: String(osmandPort), GT06_PORT: String(gt06Port), TELTONIKA_PORT: '0', H02_PORT: '0', MEITRACK_PORT: '0',
  })
  const server = await startServer(config, { clock, log: silentLogger })
  const api = (method: string, path: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${server.port}${path}`, {
      method,
      headers: { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  return { server, api, clock, osmandPort, gt06Port }
}

test('a phone added with a name and an identifier only: model null, no command (409 saying why), then its first OsmAnd fix gives it the OsmAnd built-in model', async () => {
  const { server, api, clock, osmandPort } = await started('osmand')
  try {
    const created = await api('POST', '/devices', { alias: 'My phone', serial: 'phone-77', groups: [ids.vans] })
    expect(created.status).toBe(201)
    const device = (await created.json()) as { id: string; model: string | null }
    expect(device.model).toBeNull()
    expect(((await (await api('GET', `/devices/${device.id}`)).json()) as { model: unknown }).model).toBeNull()
    expect(await (await api('GET', `/devices/${device.id}/commands`)).json()).toEqual([])
    const refused = await api('POST', `/devices/${device.id}/commands/${gt06.model.commands[0]!.id}`, {})
    expect(refused.status).toBe(409)
    expect(((await refused.json()) as { detail: string }).detail).toContain('no model yet')

    const second = Math.floor(clock.now() / 1000) - 10
    expect((await fetch(`http://127.0.0.1:${osmandPort}/?id=phone-77&lat=48.85&lon=2.35&timestamp=${second}`)).status).toBe(200)
    const after = (await (await api('GET', `/devices/${device.id}`)).json()) as { model: string | null; location: unknown }
    expect(after).toMatchObject({ model: osmand.model.id, location: [48.85, 2.35] })

    // a model given stays the device's: reports never change it
    const chosen = await api('POST', '/devices', { alias: 'Van 9', serial: 'van-9', model: ids.bare })
    const van = (await chosen.json()) as { id: string }
    expect((await fetch(`http://127.0.0.1:${osmandPort}/?id=van-9&lat=48.85&lon=2.35&timestamp=${second}`)).status).toBe(200)
    expect(((await (await api('GET', `/devices/${van.id}`)).json()) as { model: string }).model).toBe(ids.bare)
  } finally {
    await server.stop()
  }
})

test('a GT06 added without a model gets the GT06 built-in one at its login, and a command of the built-in catalogue goes out over its socket', async () => {
  const { server, api, gt06Port } = await started('gt06')
  const client = await connectClient(gt06Port)
  try {
    const imei = '359710049095777'
    const created = await api('POST', '/devices', { alias: 'Van GT06', imei, groups: [ids.vans] })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as { id: string }

    client.send(gt06Login(imei, 1))
    expect(hex(await client.read(10))).toBe('78 78 05 01 00 01 D9 DC 0D 0A')
    expect(((await (await api('GET', `/devices/${id}`)).json()) as { model: string }).model).toBe(gt06.model.id)

    const offered = (await (await api('GET', `/devices/${id}/commands`)).json()) as { id: string; name: string }[]
    const position = offered.find((c) => c.name === 'Position')!
    expect(position).toBeDefined()
    const sent = await api('POST', `/devices/${id}/commands/${position.id}`, {})
    expect(sent.status).toBe(202)
    expect(((await sent.json()) as { text: string }).text).toBe('WHERE#')
    // the online command (0x80) on the wire: 78 78 | length | 80 | command length | server flag (4) | WHERE# | …
    const head = await client.read(3)
    const frame = Uint8Array.from([...head, ...(await client.read(head[2]! + 2))])
    expect(frame[3]).toBe(0x80)
    expect(new TextDecoder().decode(frame.slice(9, 9 + 'WHERE#'.length))).toBe('WHERE#')
  } finally {
    client.end()
    await server.stop()
  }
})
