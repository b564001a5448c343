/**
 * `event: alarm` on GET /devices/stream: a device's alarm, sent over OsmAnd on a real socket,
 * goes through the ingest pipeline and reaches the open streams that may see that device, once
 * it is committed — never before, never twice, never to a share link without the events permission.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { LivePositions, type LiveAlarm } from '../../src/ingest/live'
import { startOsmandListener } from '../../src/ingest/protocols/osmand/listener'
import { createIngestPipeline, type IngestPipeline } from '../../src/ingest/pipeline'
import { silentLogger } from '../../src/log'
import { PERMISSION } from '../../src/share/permissions'
import { type EngineWorld, ids, keys, openWorld, testEngine } from '../support/world'
import { sseBlocks } from '../support/sse'

const NOW = Date.UTC(2026, 10, 25, 12, 0, 0) / 1000
const IMEI = { truck1: '359710049095001', truck2: '359710049095002' }

let world: EngineWorld
let live: LivePositions
let pipeline: IngestPipeline
let osmand: { port: number; stop(): Promise<void> }

beforeEach(async () => {
  live = new LivePositions()
  world = await openWorld(undefined, { live })
  pipeline = createIngestPipeline({ stores: world.stores, clock: world.clock, log: silentLogger, live, offlineAfterSeconds: 600, sweepIntervalMs: 0 })
  osmand = startOsmandListener({ pipeline, clock: world.clock, log: silentLogger, port: 0, hostname: '127.0.0.1' })
})
afterEach(async () => {
  await osmand.stop()
  await pipeline.stop()
  await world.close()
})

/** a report over OsmAnd, as Traccar Client sends it (speed in knots) */
async function report(imei: string, timestamp: number, extra: Record<string, string> = {}) {
  const query = new URLSearchParams({ id: imei, lat: '48.8566', lon: '2.3522', timestamp: String(timestamp), speed: '27', ...extra })
  return fetch(`http://127.0.0.1:${osmand.port}/?${query}`, { method: 'POST' })
}

/** Reads SSE blocks from a stream response, one at a time. */
function blocks(res: Response) {
  expect(res.status).toBe(200)
  return sseBlocks(res)
}
type Blocks = ReturnType<typeof blocks>

async function open(token: string): Promise<Blocks> {
  const stream = blocks(await world.call('GET', '/devices/stream', { token }))
  expect(await stream.next()).toBe('retry: 3000')
  return stream
}

/** the next block's event name and data */
async function nextEvent(stream: Blocks): Promise<{ event: string; data: Record<string, unknown> }> {
  const block = await stream.next()
  const match = /^event: (\w+)\ndata: (.*)$/.exec(block ?? '')
  if (!match) throw new Error(`not an event: ${JSON.stringify(block)}`)
  return { event: match[1], data: JSON.parse(match[2]) }
}

async function share(devices: string[], acl?: string[]): Promise<string> {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices, ttl: 3600, ...(acl ? { acl } : {}) } })
  expect(res.status).toBe(200)
  return ((await res.json()) as { token: string }).token
}

describe('event: alarm on the live stream', () => {
  test('an alarm sent over OsmAnd reaches an open stream after its fix, with the documented fields', async () => {
    const alice = await open(keys.alice)
    expect((await report(IMEI.truck1, NOW - 5, { alarm: 'sos' })).status).toBe(200)
    expect(await nextEvent(alice)).toMatchObject({ event: 'fix', data: { id: ids.truck1 } })
    expect(await nextEvent(alice)).toEqual({
      event: 'alarm',
      // 27 knots is 50.004 km/h; an event's speed is whole km/h, as the events API stores it
      data: { id: ids.truck1, alarm_code: 'sos', timestamp: NOW - 5, latitude: 48.8566, longitude: 2.3522, speed: 50, context: { altitude: null, course: null, gps_valid: true } },
    })
    // the stored event is the one GET /events lists
    const listed = (await (await world.call('GET', '/events', { token: keys.alice })).json()) as { alarm_code: string; device: { id: string } }[]
    expect(listed.map((e) => [e.device.id, e.alarm_code])).toEqual([[ids.truck1, 'sos']])
    await alice.cancel()
  })

  test('the same reach as fixes: a member gets only their devices\' alarms, another account none', async () => {
    const bob = await open(keys.bob)
    const carol = await open(keys.carol)
    await report(IMEI.truck1, NOW - 20, { alarm: 'sos' }) // trucks only: not bob's
    await report(IMEI.truck2, NOW - 10, { alarm: 'power_cut' }) // trucks and vans
    expect(await nextEvent(bob)).toMatchObject({ event: 'fix', data: { id: ids.truck2 } })
    expect(await nextEvent(bob)).toMatchObject({ event: 'alarm', data: { id: ids.truck2, alarm_code: 'power_cut' } })
    // carol's stream (globex) stays quiet: the next thing she hears is a fix of her own car
    const globexCarKey = await world.deviceKey(ids.globexCar)
    live.publish({ deviceKey: globexCarKey, timestamp: NOW, latitude: 1, longitude: 1, speed: 0, course: null })
    expect(await nextEvent(carol)).toMatchObject({ event: 'fix', data: { id: ids.globexCar } })
    await bob.cancel()
    await carol.cancel()
  })

  test('a share link gets alarms only when it grants the events permission', async () => {
    const withEvents = await open(await share([ids.truck2]))
    const withoutEvents = await open(await share([ids.truck2], [PERMISSION.location]))
    await report(IMEI.truck2, NOW - 10, { alarm: 'sos' })
    await report(IMEI.truck2, NOW - 5)
    expect((await nextEvent(withEvents)).event).toBe('fix')
    expect(await nextEvent(withEvents)).toMatchObject({ event: 'alarm', data: { id: ids.truck2, alarm_code: 'sos' } })
    expect((await nextEvent(withEvents)).event).toBe('fix')
    // the fix, then straight on to the next fix: no alarm between them
    expect(await nextEvent(withoutEvents)).toMatchObject({ event: 'fix', data: { timestamp: NOW - 10 } })
    expect(await nextEvent(withoutEvents)).toMatchObject({ event: 'fix', data: { timestamp: NOW - 5 } })
    await withEvents.cancel()
    await withoutEvents.cancel()
  })

  test('a re-sent alarm (already stored) is not told again; one without a position has null coordinates', async () => {
    const alice = await open(keys.alice)
    await report(IMEI.truck1, NOW - 30, { alarm: 'sos' })
    await report(IMEI.truck1, NOW - 30, { alarm: 'sos' }) // the phone resends its buffer
    await pipeline.ingest({
      uniqueId: IMEI.truck1,
      fixes: [],
      events: [{ timestamp: NOW - 20, alarmCode: 'power_cut', latitude: null, longitude: null, speed: null, satellites: null, mcc: null, mnc: null, dbm: null, context: {} }],
    })
    const seen = [await nextEvent(alice), await nextEvent(alice), await nextEvent(alice)]
    expect(seen.map((e) => `${e.event}:${e.data.alarm_code ?? ''}`)).toEqual(['fix:', 'alarm:sos', 'alarm:power_cut'])
    expect(seen[2].data).toEqual({ id: ids.truck1, alarm_code: 'power_cut', timestamp: NOW - 20, latitude: null, longitude: null, speed: null, context: {} })
    await alice.cancel()
  })

  test("an alarm carries its event's context, as the events API shows it (a console words it from there)", async () => {
    const alice = await open(keys.alice)
    const context = { geofence: ids.trucks, name: 'Yard' }
    await pipeline.ingest({
      uniqueId: IMEI.truck1,
      fixes: [],
      events: [{ timestamp: NOW - 20, alarmCode: 'geofence_enter', latitude: 48.85, longitude: 2.35, speed: 12, satellites: null, mcc: null, mnc: null, dbm: null, context }],
    })
    expect(await nextEvent(alice)).toMatchObject({ event: 'alarm', data: { alarm_code: 'geofence_enter', context } })
    const listed = (await (await world.call('GET', '/events', { token: keys.alice })).json()) as { context: unknown }[]
    expect(listed.map((e) => e.context)).toEqual([context])
    await alice.cancel()
  })

  // SQLite only: another connection read synchronously inside the listener, and SQLite's trigger syntax to fail the commit
  test.skipIf(testEngine === 'postgres')('an alarm is told only once committed: another connection already reads it, and a failed commit tells nothing', async () => {
    const sqlite = world.sqlite!
    const other = new Database(join(sqlite.dir, 'tracker.db'), { readonly: true })
    const visibleElsewhere: boolean[] = []
    const told: LiveAlarm[] = []
    live.subscribeAlarms((alarm) => {
      told.push(alarm)
      visibleElsewhere.push(other.query('SELECT 1 FROM events WHERE ts = ? AND alarm_code = ?').get(alarm.timestamp, alarm.alarmCode) !== null)
    })
    try {
      await report(IMEI.truck1, NOW - 30, { alarm: 'sos' })
      expect(told.map((a) => a.alarmCode)).toEqual(['sos'])
      expect(visibleElsewhere).toEqual([true])

      sqlite.database.sqlite.run(`CREATE TRIGGER fail BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'disk full'); END`)
      expect((await report(IMEI.truck1, NOW - 20, { alarm: 'power_cut' })).status).toBe(500)
      sqlite.database.sqlite.run('DROP TRIGGER fail')
      expect(told.map((a) => a.alarmCode)).toEqual(['sos'])
    } finally {
      await other.close()
    }
  })
})
