/**
 * The alerts wired into the ingest pipeline (the server's wiring, on the test world's database,
 * events read through the API): device_offline from the offline sweep and device_online on the
 * next report, ignition_on from a status packet, a re-sent device alarm stored and queued once
 * (and kept beside a derived event of its code and second), the delivery worker woken after
 * each commit.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createGeofenceCache } from '../../src/alerts/cache'
import { createAlertRules } from '../../src/alerts/rules'
import { LivePositions } from '../../src/ingest/live'
import { createIngestPipeline, type IngestPipeline } from '../../src/ingest/pipeline'
import type { DecodedEvent } from '../../src/ingest/types'
import { silentLogger } from '../../src/log'
import { ids, keys, openWorld, type EngineWorld } from '../support/world'

let world: EngineWorld
let pipeline: IngestPipeline
let wakes = 0
const alarms: string[] = []

beforeEach(async () => {
  const live = new LivePositions()
  live.subscribeAlarms((alarm) => alarms.push(alarm.alarmCode))
  world = await openWorld(undefined, { live })
  const rules = createAlertRules({ states: world.stores.ruleStates, clock: world.clock, geofences: createGeofenceCache({ reads: world.stores.geofenceCache, clock: world.clock }) })
  wakes = 0
  alarms.length = 0
  pipeline = createIngestPipeline({
    stores: world.stores, clock: world.clock, log: silentLogger, live, offlineAfterSeconds: 600, sweepIntervalMs: 0,
    alerts: { rules, wake: () => wakes++ },
  })
})
afterEach(async () => {
  await pipeline.stop()
  await world.close()
})

const nowSeconds = () => Math.floor(world.clock.now() / 1000)

async function codes(): Promise<string[]> {
  const to = nowSeconds() + 10
  const res = await world.call('GET', `/devices/${ids.truck1}/history/events?from=${to - 86_400}&to=${to}`, { token: keys.alice })
  expect(res.status).toBe(200)
  return ((await res.json()) as { alarm_code: string }[]).map((e) => e.alarm_code)
}

const sos = (timestamp: number): DecodedEvent => ({ timestamp, alarmCode: 'sos', latitude: null, longitude: null, speed: null, satellites: null, mcc: null, mnc: null, dbm: null, context: {} })

test('the offline sweep derives device_offline, the next report device_online; each on the live stream after commit', async () => {
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [], events: [] })
  world.clock.advance(601_000)
  expect(pipeline.sweep()).toBeGreaterThan(0)
  await pipeline.afterCommit()
  expect(await codes()).toEqual(['device_offline'])
  world.clock.advance(10_000)
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [], events: [] })
  expect(await codes()).toEqual(['device_offline', 'device_online'])
  expect(alarms.filter((a) => a.startsWith('device_'))).toEqual(['device_offline', 'device_online'])
})

test('a status packet with ignition derives ignition_on; a re-sent alarm is stored and queued once; the worker is woken', async () => {
  const created = await world.call('POST', '/notifications', { token: keys.dana, body: { name: 'All', events: ['*'], channel: { type: 'webhook', url: 'https://hooks.example.com/x', secret: 'pipeline-wiring-secret' } } })
  expect(created.status).toBe(201)
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [], events: [], status: { ignition: false } })
  world.clock.advance(1000)
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [], events: [], status: { ignition: true } })
  const ts = nowSeconds() - 5
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [], events: [sos(ts)] })
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [], events: [sos(ts)] })
  const stored = await codes()
  expect(stored.filter((c) => c === 'ignition_on')).toHaveLength(1)
  expect(stored.filter((c) => c === 'sos')).toHaveLength(1)
  const queued = { n: await world.count('notification_deliveries', sql`kind = 'event'`) }
  expect(queued.n).toBe(stored.length)
  expect(wakes).toBeGreaterThanOrEqual(4)
})

test("the device's own alarm and the server's event of the same code in one second are both kept; the device's, re-sent, stays one", async () => {
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [], events: [], status: { ignition: false } })
  world.clock.advance(1000)
  const second = nowSeconds()
  // a GT06 sends ignition_on as an alarm of its own; the status in the same report derives one too
  const own: DecodedEvent = { ...sos(second), alarmCode: 'ignition_on', context: { source: 'device' } }
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [], events: [own], status: { ignition: true } })
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [], events: [own] })
  const res = await world.call('GET', `/devices/${ids.truck1}/history/events?from=${second - 60}&to=${second + 60}`, { token: keys.alice })
  const ignitions = ((await res.json()) as { alarm_code: string; timestamp: number; context: object }[]).filter((e) => e.alarm_code === 'ignition_on')
  expect(ignitions.map((e) => [e.timestamp, e.context])).toEqual([
    [second, { source: 'device' }],
    [second, {}],
  ])
})

test('a positions channel gets every stored fix once: a fix the device flagged invalid says valid: false, a re-sent one is not queued again', async () => {
  const created = await world.call('POST', '/notifications', {
    token: keys.dana,
    body: { name: 'ERP feed', channel: { type: 'webhook', url: 'https://erp.example.com/fixes', positions: true } },
  })
  expect(created.status).toBe(201)
  const t = nowSeconds() - 60
  const fix = (timestamp: number, valid: boolean) => ({ timestamp, latitude: 48.85, longitude: 2.35, speed: 12, course: 90, altitude: 35, satellites: valid ? 9 : 0, valid, attributes: { odometer: 1200 } })
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [fix(t, true), fix(t + 10, false)], events: [] })
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [fix(t + 10, false), fix(t + 20, true)], events: [] })
  const rows = await world.execute<{ payload: string }>(sql`SELECT payload FROM notification_deliveries WHERE kind = 'positions' ORDER BY key`)
  const positions = rows.flatMap((r) => JSON.parse(r.payload) as ({ timestamp: number; attributes: Record<string, unknown> } & Record<string, unknown>)[])
  expect(positions.map((p) => [p.timestamp - t, p.attributes])).toEqual([
    [0, { odometer: 1200 }],
    [10, { odometer: 1200, valid: false }],
    [20, { odometer: 1200 }],
  ])
  expect(positions[0]).toEqual({ device: ids.truck1, timestamp: t, latitude: 48.85, longitude: 2.35, speed: 12, course: 90, altitude: 35, attributes: { odometer: 1200 } })
})

test("a device deleted while connected: its disconnection derives nothing, and the other devices' reports in that batch are stored", async () => {
  const t = nowSeconds() - 60
  const fix = (timestamp: number) => ({ timestamp, latitude: 48.85, longitude: 2.35, speed: 12, course: 90, altitude: 35, satellites: 9, valid: true, attributes: {} })
  await pipeline.ingest({ uniqueId: 'S-T1', fixes: [fix(t)], events: [] })
  expect((await world.call('DELETE', `/devices/${ids.truck1}`, { token: keys.dana })).status).toBe(204)
  world.clock.advance(700_000)
  // Truck 2's report and the sweep that disconnects the deleted Truck 1 go in one batch
  const report = pipeline.ingest({ uniqueId: 'S-T2', fixes: [fix(nowSeconds() - 5)], events: [] })
  pipeline.sweep()
  expect(await report).toMatchObject({ stored: 1 })
  expect({ n: await world.count('alert_states') }).toEqual({ n: 1 })
})
