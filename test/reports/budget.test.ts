import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { BYTES_PER_FIX_IN_FLIGHT } from '../../src/history/limit'
import { POINTS_PER_CHUNK } from '../../src/history/route-body'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

/**
 * A report's windows and the history memory budget (HISTORY_MEMORY_MB, 1 MiB here): each window
 * takes its share while it is analysed, and waits (then 503) when the budget is taken.
 */
const T0 = 1764000000
/** a route of these streams its body (more than one chunk of points), and costs most of 1 MiB */
const FIXES = 2 * POINTS_PER_CHUNK + 500
const TO = T0 + FIXES

let world: EngineWorld
beforeAll(async () => {
  const drive = (device: string, lat: number) =>
    Array.from({ length: FIXES }, (_, i) => ({ device, timestamp: T0 + i, latitude: lat + i * 1e-4, longitude: 2.35, speed: i % 600 < 400 ? 40 : 0 }))
  world = await openWorld(
    { ...baseDataset(), positions: [...drive(ids.truck1, 48.85), ...drive(ids.truck2, 45.75)] },
    { config: loadConfig({ HISTORY_MEMORY_MB: '1' }), historyMaxWaitMs: 50 },
  )
}, 60_000)
afterAll(() => world.close())

const get = (path: string, token = keys.alice) => world.call('GET', path, { token })

describe("a report's windows and the history memory budget", () => {
  test('a report whose first window finds the budget taken waits, then is 503; once the budget is free it is served, and equals the history API', async () => {
    expect(FIXES * BYTES_PER_FIX_IN_FLIGHT).toBeLessThan(1024 * 1024)
    expect(2 * FIXES * BYTES_PER_FIX_IN_FLIGHT).toBeGreaterThan(1024 * 1024)
    // dana's route, held unread, takes most of the budget
    const route = await get(`/devices/${ids.truck1}/history/route?from=${T0}&to=${TO}`, keys.dana)
    expect(route.status).toBe(200)
    const waited = await get(`/reports/trips?from=${T0}&to=${TO}&devices=${ids.truck2}&format=csv`)
    expect((await problem(waited, 503)).detail).toContain('waited')
    await route.arrayBuffer()
    const served = await get(`/reports/trips?from=${T0}&to=${TO}&devices=${ids.truck2}`)
    expect(served.status).toBe(200)
    const travels = (await (await get(`/devices/${ids.truck2}/history/travels?from=${T0}&to=${TO}`)).json()) as { total_travels: number; total_distance: number }
    const rows = ((await served.json()) as { rows: { distance_m: number }[] }).rows
    expect(rows.length).toBe(travels.total_travels)
    expect(rows.length).toBeGreaterThan(0)
  })
})
