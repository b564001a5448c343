/**
 * Tenants apart in webhook delivery (issue 19, item 3): one account's receivers that accept and
 * never answer cannot hold another account's deliveries. Over a real server: real OsmAnd reports
 * with an alarm, ten channels of Acme pointing at receivers on 127.0.0.1 that hang, and Globex's
 * SOS reaching Globex's receiver while Acme's attempts still hang.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { loadConfig } from '../../src/config'
import { importNow } from '../support/import'
import { silentLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { freePort } from '../support/process'
import { baseDataset, keys } from '../support/world'
import { type Hanging, type Receiver, startHanging, startReceiver } from './delivery-receiver'

const dir = mkdtempSync(join(tmpdir(), 'tracker-delivery-fairness-'))
let server: Awaited<ReturnType<typeof startServer>>
let api: string
let receiver: Receiver
const hanging: Hanging[] = []
const T0 = Math.floor(Date.now() / 1000) - 3600

beforeAll(async () => {
  const path = join(dir, 'tracker.db')
  const setup = openDatabase(path)
  importNow(setup, baseDataset())
  setup.close()
  receiver = startReceiver()
  for (let i = 0; i < 10; i++) hanging.push(await startHanging())
  server = await startServer(
    loadConfig({ PORT: '0', HOST: '127.0.0.1', DATABASE_PATH: path, OSMAND_PORT: String(freePort()), GT06_PORT: '0', TELTONIKA_PORT: '0', H02_PORT: '0', MEITRACK_PORT: '0', WEBHOOK_ALLOW_PRIVATE: '1', LOG_LEVEL: 'silent' }),
    { log: silentLogger },
  )
  api = `http://127.0.0.1:${server.port}`
})
afterAll(async () => {
  // attempts under way are cut off by the stop; then the hanging listeners go
  await server?.stop()
  for (const h of hanging) h.close()
  receiver.stop()
  rmSync(dir, { recursive: true, force: true })
})

async function channel(token: string, name: string, url: string): Promise<void> {
  const response = await fetch(`${api}/notifications`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, events: ['sos'], channel: { type: 'webhook', url } }),
  })
  expect(response.status).toBe(201)
}

/** an OsmAnd report with an alarm, as the Traccar Client's SOS button sends it */
async function sos(serial: string, ts: number): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${server.ports.osmand!}/?id=${serial}&lat=48.85&lon=2.35&timestamp=${ts}&alarm=sos`)
  expect(response.status).toBe(200)
}

async function until(condition: () => boolean, limitMs: number): Promise<void> {
  const start = performance.now()
  while (!condition() && performance.now() - start < limitMs) await Bun.sleep(10)
}

test("ten hanging channels of one account: another account's SOS is delivered within 5 s", async () => {
  for (const [i, h] of hanging.entries()) await channel(keys.dana, `Hangs ${i}`, h.url)
  await channel(keys.erin, 'Dispatch', receiver.url)
  // Acme's trucks raise a backlog of alarms: 10 channels × 6 events, every attempt hangs
  for (let i = 0; i < 3; i++) {
    await sos('S-T1', T0 + i)
    await sos('S-T2', T0 + i)
  }
  const accepted = () => hanging.reduce((sum, h) => sum + h.accepted, 0)
  await until(() => accepted() >= 8, 5000)
  expect(accepted()).toBeGreaterThanOrEqual(8)

  // Globex's car: its SOS goes out while Acme's attempts still hang (they would for 10 s)
  await sos('S-C', T0 + 10)
  await until(() => receiver.received.length > 0, 5000)
  expect(receiver.received.map((r) => [r.json.event?.alarm_code, r.json.event?.device?.alias])).toEqual([['sos', 'Car']])
  // and the next one too: its slots come back as its receiver answers
  await sos('S-C', T0 + 11)
  await until(() => receiver.received.length > 1, 5000)
  expect(receiver.received).toHaveLength(2)
}, 20_000)
