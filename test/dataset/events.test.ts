/**
 * Events in a dataset: several of one code in one second are each kept (a device that reconnects,
 * two geofences entered by one fix), and importing the same events again, plainly or with
 * `--upsert`, stores none twice (the upsert replaces each with what the file says).
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { ids, keys, openWorld, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld()
})
afterEach(() => world.close())

const T = 1764000000
const YARD = '0e000000-0000-4000-8000-000000000001'
const GATE = '0e000000-0000-4000-8000-000000000002'

function events(contextOfLastOnline: Record<string, unknown> = {}) {
  return [
    { device: ids.truck1, alarm_code: 'device_offline', timestamp: T },
    { device: ids.truck1, alarm_code: 'device_online', timestamp: T },
    { device: ids.truck1, alarm_code: 'device_offline', timestamp: T },
    { device: ids.truck1, alarm_code: 'device_online', timestamp: T, context: contextOfLastOnline },
    { device: ids.truck1, alarm_code: 'geofence_enter', timestamp: T + 60, context: { geofence: YARD, name: 'Yard' }, coordinates: [48.85, 2.35] },
    { device: ids.truck1, alarm_code: 'geofence_enter', timestamp: T + 60, context: { geofence: GATE, name: 'Gate' }, coordinates: [48.85, 2.35] },
    { device: ids.truck2, alarm_code: 'device_online', timestamp: T },
  ]
}

async function listed(device: string) {
  const res = await world.call('GET', `/devices/${device}/events?from=${T - 10}&to=${T + 100}`, { token: keys.alice })
  expect(res.status).toBe(200)
  return ((await res.json()) as { alarm_code: string; timestamp: number; context: Record<string, unknown> }[]).map((e) => [e.alarm_code, e.timestamp, e.context])
}

const truck1Expected = (contextOfLastOnline: Record<string, unknown> = {}) => [
  ['device_offline', T, {}],
  ['device_online', T, {}],
  ['device_offline', T, {}],
  ['device_online', T, contextOfLastOnline],
  ['geofence_enter', T + 60, { geofence: YARD, name: 'Yard' }],
  ['geofence_enter', T + 60, { geofence: GATE, name: 'Gate' }],
]

test('several events of one code in one second are each imported, at that second', async () => {
  expect((await world.importMore({ events: events() })).events).toBe(7)
  expect(await listed(ids.truck1)).toEqual(truck1Expected())
  expect(await listed(ids.truck2)).toEqual([['device_online', T, {}]])
})

test('importing the same events again stores none twice; --upsert replaces each with what the file says', async () => {
  await world.importMore({ events: events() })
  expect((await world.importMore({ events: events() })).events).toBe(0)
  expect(await listed(ids.truck1)).toEqual(truck1Expected())

  expect((await world.importMore({ events: events({ note: 'second login' }) }, { upsert: true })).events).toBe(7)
  expect(await listed(ids.truck1)).toEqual(truck1Expected({ note: 'second login' }))
  expect(await listed(ids.truck2)).toEqual([['device_online', T, {}]])
})
