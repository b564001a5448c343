/**
 * The real server: a device created, re-identified or deleted over the API is seen by the device
 * listeners at once, on the very next report (the ingest pipeline's device cache would otherwise
 * notice within a second; the clock here never moves, so "within a second" would be never).
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { manualClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { importNow } from '../support/import'
import { silentLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { freePort } from '../support/process'
import { baseDataset, ids, keys } from '../support/world'

const dir = mkdtempSync(join(tmpdir(), 'tracker-admin-ingest-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('a device created over HTTP reports in at once; re-identified, its old serial is refused and the new one accepted; deleted, refused', async () => {
  const databasePath = join(dir, 'tracker.db')
  const setup = openDatabase(databasePath)
  importNow(setup, baseDataset())
  setup.close()
  const osmandPort = freePort()
  const clock = manualClock(Date.UTC(2026, 10, 25, 12))
  const config = loadConfig({
    DATABASE_PATH: databasePath, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', OSMAND_PORT: String(osmandPort), GT06_PORT: '0', TELTONIKA_PORT: '0', H02_PORT: '0', MEITRACK_PORT: '0',
  })
  const server = await startServer(config, { clock, log: silentLogger })
  try {
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${server.port}${path}`, {
        method,
        headers: { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    let second = clock.now() / 1000 - 60
    const fix = (id: string) => fetch(`http://127.0.0.1:${osmandPort}/?id=${id}&lat=48.85&lon=2.35&timestamp=${++second}`).then((r) => r.status)

    // the phone reports before it is registered (Traccar Client keeps the report and retries)
    expect(await fix('phone-1')).toBe(404)
    const created = await api('POST', '/devices', { alias: 'Phone', model: ids.bare, serial: 'phone-1', groups: [ids.vans] })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as { id: string }
    expect(await fix('phone-1')).toBe(200)

    // a known serial is cached as known too: re-identifying must drop it
    expect((await api('PATCH', `/devices/${id}`, { serial: 'phone-2' })).status).toBe(200)
    expect(await fix('phone-1')).toBe(404)
    expect(await fix('phone-2')).toBe(200)

    // an existing device given an IMEI that was refused a moment ago
    expect(await fix('123456789012345')).toBe(404)
    expect((await api('PATCH', `/devices/${ids.van1}`, { imei: '123456789012345' })).status).toBe(200)
    expect(await fix('123456789012345')).toBe(200)

    // unlinked: refused; deleted: refused
    expect((await api('PATCH', `/devices/${ids.van1}`, { state: 'unlink' })).status).toBe(200)
    expect(await fix('123456789012345')).toBe(404)
    expect((await api('DELETE', `/devices/${id}`)).status).toBe(204)
    expect(await fix('phone-2')).toBe(404)

    // what was accepted is stored
    const device = (await (await api('GET', `/devices/${ids.van1}`)).json()) as { connected: boolean; location: [number, number] | null }
    expect(device.location).toEqual([48.85, 2.35])
  } finally {
    await server.stop()
  }
})
