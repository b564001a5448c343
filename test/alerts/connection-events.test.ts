/**
 * Events the server derives are stored at their true second, however many of one code share it:
 * a GT06 device that connects and disconnects several times within one second (real TCP
 * sockets, the real server, its clock held still) has every device_online and device_offline in
 * the events API at that second; none is moved to an earlier one, none dropped.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { manualClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { importNow } from '../support/import'
import { silentLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { connectClient, gt06Login } from '../ingest/frames'
import { freePort } from '../support/process'
import { baseDataset, ids, keys } from '../support/world'

const dir = mkdtempSync(join(tmpdir(), 'tracker-connection-events-'))
// the server's clock stands still within one second: every connection change happens in it
const SECOND = Math.floor(Date.now() / 1000) - 60
const clock = manualClock(SECOND * 1000 + 250)
let server: Awaited<ReturnType<typeof startServer>>
let api: string
let gt06Port: number
const headers = { authorization: `Bearer ${keys.alice}` }

beforeAll(async () => {
  const path = join(dir, 'tracker.db')
  const setup = openDatabase(path)
  importNow(setup, baseDataset())
  setup.close()
  gt06Port = freePort()
  server = await startServer(
    loadConfig({ PORT: '0', HOST: '127.0.0.1', DATABASE_PATH: path, OSMAND_PORT: '0', GT06_PORT: String(gt06Port), TELTONIKA_PORT: '0', H02_PORT: '0', MEITRACK_PORT: '0', LOG_LEVEL: 'silent' }),
    { clock, log: silentLogger },
  )
  api = `http://127.0.0.1:${server.port}`
})
afterAll(async () => {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

async function connected(device: string): Promise<boolean> {
  const response = await fetch(`${api}/devices/${device}`, { headers })
  expect(response.status).toBe(200)
  return ((await response.json()) as { connected: boolean }).connected
}

/** polls the API until the device shows `wanted` (its disconnection is committed in a batch of its own) */
async function until(device: string, wanted: boolean): Promise<void> {
  for (let waited = 0; (await connected(device)) !== wanted; waited += 10) {
    if (waited > 5000) throw new Error(`device never became ${wanted ? 'connected' : 'disconnected'}`)
    await Bun.sleep(10)
  }
}

test('a device connecting and disconnecting four times in one second: every device_online and device_offline at that second', async () => {
  // Truck 1 is connected in the dataset: its first disconnection is an offline, each login after it an online
  for (let cycle = 0; cycle < 4; cycle++) {
    const client = await connectClient(gt06Port)
    client.send(gt06Login('359710049095001', cycle + 1))
    await client.read(10) // the login ACK: the connection is committed
    await until(ids.truck1, true)
    client.end()
    await until(ids.truck1, false)
  }
  expect(Math.floor(clock.now() / 1000)).toBe(SECOND)

  const response = await fetch(`${api}/devices/${ids.truck1}/events?from=${SECOND - 3600}&to=${SECOND + 3600}`, { headers })
  expect(response.status).toBe(200)
  const events = ((await response.json()) as { alarm_code: string; timestamp: number }[]).filter((e) => e.alarm_code.startsWith('device_'))
  expect(events.map((e) => [e.alarm_code, e.timestamp])).toEqual([
    ['device_offline', SECOND],
    ['device_online', SECOND],
    ['device_offline', SECOND],
    ['device_online', SECOND],
    ['device_offline', SECOND],
    ['device_online', SECOND],
    ['device_offline', SECOND],
  ])
})
