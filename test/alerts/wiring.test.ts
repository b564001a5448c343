/**
 * The alerts wired into ingest, over a real server and real OsmAnd reports: the rules' events are
 * stored with the fixes that derive them, listed by the API, and delivered to a webhook receiver
 * on 127.0.0.1 with a valid signature; a late fix derives nothing; overspeed repeats only after
 * 5 minutes; two overlapping geofences entered by one fix give two events at its second.
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
import { baseDataset, ids, keys } from '../support/world'
import { freePort } from '../support/process'
import { type Receiver, startReceiver, verifySignature } from './delivery-receiver'

const dir = mkdtempSync(join(tmpdir(), 'tracker-alerts-wiring-'))
let server: Awaited<ReturnType<typeof startServer>>
let receiver: Receiver
let api: string
const admin = { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' }
const SECRET = 'wiring-test-secret'
// a fixed past second, well within the accepted window
const T0 = Math.floor(Date.now() / 1000) - 3600

beforeAll(async () => {
  const path = join(dir, 'tracker.db')
  const setup = openDatabase(path)
  importNow(setup, baseDataset())
  setup.close()
  receiver = startReceiver()
  const osmandPort = freePort()
  server = await startServer(
    loadConfig({ PORT: '0', HOST: '127.0.0.1', DATABASE_PATH: path, OSMAND_PORT: String(osmandPort), GT06_PORT: '0', TELTONIKA_PORT: '0', H02_PORT: '0', MEITRACK_PORT: '0', WEBHOOK_ALLOW_PRIVATE: '1', LOG_LEVEL: 'silent' }),
    { log: silentLogger },
  )
  api = `http://127.0.0.1:${server.port}`
})
afterAll(async () => {
  await server.stop()
  receiver.stop()
  rmSync(dir, { recursive: true, force: true })
})

async function post(path: string, body: unknown): Promise<{ id: string }> {
  const response = await fetch(`${api}${path}`, { method: 'POST', headers: admin, body: JSON.stringify(body) })
  expect(response.status).toBe(201)
  return (await response.json()) as { id: string }
}

/** one OsmAnd report; speed in km/h (OsmAnd sends knots) */
async function report(serial: string, ts: number, lat: number, lon: number, speedKmh = 0) {
  const response = await fetch(`http://127.0.0.1:${server.ports.osmand!}/?id=${serial}&lat=${lat}&lon=${lon}&timestamp=${ts}&speed=${speedKmh / 1.852}`)
  expect(response.status).toBe(200)
}

interface ListedEvent {
  alarm_code: string
  timestamp: number
  context: Record<string, unknown>
}

async function eventsOf(device: string, from: number, to: number): Promise<ListedEvent[]> {
  const response = await fetch(`${api}/devices/${device}/history/events?from=${from}&to=${to}`, { headers: admin })
  expect(response.status).toBe(200)
  return (await response.json()) as ListedEvent[]
}

const derived = (list: ListedEvent[]) => list.filter((e) => e.alarm_code.startsWith('geofence_') || e.alarm_code === 'overspeed')

test('crossing a geofence: enter then exit on the events API and signed webhook deliveries; a late fix derives nothing', async () => {
  const yard = await post('/geofences', { name: 'Yard', area: { type: 'Circle', center: [10, 10], radius: 1000 } })
  await post('/notifications', { name: 'Yard', events: ['geofence_enter', 'geofence_exit'], channel: { type: 'webhook', url: receiver.url, secret: SECRET } })

  await report('S-T1', T0, 10.1, 10) // outside
  await report('S-T1', T0 + 60, 10, 10) // inside
  await report('S-T1', T0 + 120, 10.1, 10) // outside
  await report('S-T1', T0 + 90, 10, 10) // late, inside: nothing

  const list = derived(await eventsOf(ids.truck1, T0, T0 + 200))
  expect(list.map((e) => [e.alarm_code, e.timestamp])).toEqual([
    ['geofence_enter', T0 + 60],
    ['geofence_exit', T0 + 120],
  ])
  expect(list[0]!.context).toMatchObject({ geofence: yard.id, name: 'Yard' })

  for (let waited = 0; receiver.received.length < 2 && waited < 10_000; waited += 20) await Bun.sleep(20)
  await Bun.sleep(100)
  const codes = receiver.received.map((r) => r.json.event?.alarm_code)
  expect(codes).toEqual(['geofence_enter', 'geofence_exit'])
  for (const r of receiver.received) {
    expect(verifySignature(r.headers.get('x-tracker-signature'), r.body, SECRET).ok).toBe(true)
    expect(r.headers.get('x-tracker-delivery')).toBeTruthy()
    expect(r.json.event.device).toEqual({ id: ids.truck1, alias: 'Truck 1' })
  }
})

test('overspeed: once per 5 minutes of continuous overspeed', async () => {
  await post('/geofences', { name: 'Slow zone', area: { type: 'Circle', center: [20, 20], radius: 50_000 }, speed_limit: 50 })
  const base = T0 + 1000
  for (const dt of [0, 60, 120, 299]) await report('S-T2', base + dt, 20, 20, 100)
  let list = derived(await eventsOf(ids.truck2, base, base + 400)).filter((e) => e.alarm_code === 'overspeed')
  expect(list.map((e) => e.timestamp)).toEqual([base])
  await report('S-T2', base + 300, 20, 20, 100)
  list = derived(await eventsOf(ids.truck2, base, base + 400)).filter((e) => e.alarm_code === 'overspeed')
  expect(list.map((e) => e.timestamp)).toEqual([base, base + 300])
})

test('one fix entering two overlapping geofences stores both enters', async () => {
  await post('/geofences', { name: 'A', area: { type: 'Circle', center: [30, 30], radius: 1000 } })
  await post('/geofences', { name: 'B', area: { type: 'Circle', center: [30, 30], radius: 2000 } })
  const base = T0 + 2000
  await report('S-V1', base, 30.5, 30)
  await report('S-V1', base + 60, 30, 30)
  const enters = derived(await eventsOf(ids.van1, base, base + 100)).filter((e) => e.alarm_code === 'geofence_enter')
  // both at the fix's second, each naming its own geofence
  expect(enters.map((e) => [e.context.name, e.timestamp]).sort()).toEqual([['A', base + 60], ['B', base + 60]])
})
