import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

/** The bounds of a report: 100,000 route rows, 1,000 devices. */
const T0 = 1764000000
const FIXES_ONE = 50_001
const FIXES_TWO = 50_000
const EXTRA_DEVICES = 1000

let world: EngineWorld
beforeAll(async () => {
  const dataset = baseDataset()
  const fixes = (device: string, n: number) => Array.from({ length: n }, (_, i) => ({ device, timestamp: T0 + i, latitude: 48.85 + i * 1e-6, longitude: 2.3, speed: 3.6 }))
  world = await openWorld({
    ...dataset,
    // Globex gets a fleet of 1,001 devices
    devices: [
      ...dataset.devices,
      ...Array.from({ length: EXTRA_DEVICES }, (_, i) => ({
        id: `0f100000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        account: ids.globex,
        model: ids.bare,
        groups: [ids.globexGroup],
        alias: `Car ${i}`,
        serial: `S-X${i}`,
        state: 'off',
      })),
    ],
    positions: [...fixes(ids.truck1, FIXES_ONE), ...fixes(ids.truck2, FIXES_TWO)],
  })
}, 60_000)
afterAll(() => world.close())

const get = (path: string, token = keys.alice) => world.call('GET', path, { token })
const TO = T0 + FIXES_ONE

describe('report bounds', () => {
  test('a route of 100,000 rows or fewer is answered in full; beyond, 400 with the count', async () => {
    const res = await get(`/reports/route?from=${T0}&to=${TO}&devices=${ids.truck1}`)
    expect(res.status).toBe(200)
    const body = (await res.json()) as { rows: { timestamp: number }[] }
    expect(body.rows).toHaveLength(FIXES_ONE)
    expect(body.rows.at(-1)!.timestamp).toBe(T0 + FIXES_ONE - 1)
    const refused = await problem(await get(`/reports/route?from=${T0}&to=${TO}&devices=${ids.truck1},${ids.truck2}`), 400)
    expect(refused.detail).toContain(String(FIXES_ONE + FIXES_TWO))
    expect(refused.detail).toContain('100000')
    // 100,000 rows, read a moment after their import (slower the first time on PostgreSQL), in a
    // test process whose large heap makes each of the route's collections dear: not a timing
  }, 30_000)

  test("a report's reads count among the user's history requests in flight: with two routes held, 429; another user is served; once read, served", async () => {
    const trips = (token: string) => get(`/reports/trips?from=${T0}&to=${TO}&devices=${ids.truck2}`, token)
    const held = await Promise.all([0, 1].map(() => get(`/devices/${ids.truck1}/history/route?from=${T0}&to=${TO}`)))
    for (const res of held) expect(res.status).toBe(200)
    const refused = await problem(await trips(keys.alice), 429)
    expect(refused.detail).toContain('history requests')
    expect((await trips(keys.bob)).status).toBe(200)
    for (const res of held) await res.arrayBuffer()
    expect((await trips(keys.alice)).status).toBe(200)
  })

  test('at most 1,000 devices: a fleet of 1,001 named by nothing or by its group is 400; 400 named by id (what 16 KiB of request line holds) are answered', async () => {
    expect((await problem(await get(`/reports/summary?from=${T0}&to=${T0 + 60}`, keys.erin), 400)).detail).toContain('1001')
    await problem(await get(`/reports/summary?from=${T0}&to=${T0 + 60}&groups=${ids.globexGroup}`, keys.erin), 400)
    const named = Array.from({ length: 400 }, (_, i) => `0f100000-0000-4000-8000-${String(i).padStart(12, '0')}`)
    const res = await get(`/reports/events?from=${T0}&to=${T0 + 60}&devices=${named.join(',')}`, keys.erin)
    expect(res.status).toBe(200)
    expect(((await res.json()) as { rows: unknown[] }).rows).toEqual([])
  })
})
