import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeAll(async () => {
  world = await openWorld()
})
afterAll(() => world.close())

const DEVICE_KEYS = ['alias', 'connected', 'connected_at', 'created_at', 'disconnected_at', 'iccid', 'id', 'imei', 'location', 'model', 'properties', 'serial', 'state', 'updated_at']

describe('GET /devices', () => {
  test('lists the devices sharing a group with the user, once each, unlink excluded, ordered by alias', async () => {
    const res = await world.call('GET', '/devices', { token: keys.alice })
    expect(res.status).toBe(200)
    const body = (await res.json()) as { id: string; alias: string }[]
    // truck2 is in both of alice's groups and appears once; the unlink device never appears
    expect(body.map((d) => d.alias)).toEqual(['Truck 1', 'Truck 2', 'Van 1'])
  })

  test('returns the exact Device field set and types', async () => {
    const [truck1, truck2, van1] = (await (await world.call('GET', '/devices', { token: keys.alice })).json()) as Record<string, unknown>[]
    for (const device of [truck1, truck2, van1]) expect(Object.keys(device).sort()).toEqual(DEVICE_KEYS)
    expect(truck1).toEqual({
      id: ids.truck1,
      model: ids.gt06,
      alias: 'Truck 1',
      properties: { plate: 'AB-123-CD' },
      serial: 'S-T1',
      imei: '359710049095001',
      iccid: '8934071179000000001',
      state: 'moving',
      location: [48.8566, 2.3522],
      connected: true,
      connected_at: '2026-11-01T08:00:00.000Z',
      disconnected_at: null,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-11-01T18:00:00.000Z',
    })
    expect(truck2.disconnected_at).toBe('2026-11-01T18:00:00.000Z')
    expect(truck2.connected).toBe(false)
    expect(van1.location).toBeNull()
    expect(van1.connected_at).toBeNull()
    expect(typeof van1.created_at).toBe('string')
    expect(Number.isNaN(Date.parse(van1.created_at as string))).toBe(false)
  })

  test('another group sees only its devices; another account sees none of ours', async () => {
    const bob = (await (await world.call('GET', '/devices', { token: keys.bob })).json()) as { id: string }[]
    expect(bob.map((d) => d.id)).toEqual([ids.truck2, ids.van1])
    const carol = (await (await world.call('GET', '/devices', { token: keys.carol })).json()) as { id: string }[]
    expect(carol.map((d) => d.id)).toEqual([ids.globexCar])
  })

  test('filters by groups, repeated or comma-separated', async () => {
    const repeated = await world.call('GET', `/devices?groups=${ids.trucks}&groups=${ids.vans}`, { token: keys.alice })
    expect(((await repeated.json()) as { alias: string }[]).map((d) => d.alias)).toEqual(['Truck 1', 'Truck 2', 'Van 1'])
    const comma = await world.call('GET', `/devices?groups=${ids.trucks},${ids.vans}`, { token: keys.alice })
    expect(((await comma.json()) as { alias: string }[]).map((d) => d.alias)).toEqual(['Truck 1', 'Truck 2', 'Van 1'])
    const trucks = await world.call('GET', `/devices?groups=${ids.trucks}`, { token: keys.alice })
    expect(((await trucks.json()) as { alias: string }[]).map((d) => d.alias)).toEqual(['Truck 1', 'Truck 2'])
  })

  test('a group of another account filters everything out: 404', async () => {
    await problem(await world.call('GET', `/devices?groups=${ids.globexGroup}`, { token: keys.alice }), 404)
  })

  test('a malformed group id is 400 naming the parameter', async () => {
    const body = await problem(await world.call('GET', '/devices?groups=nope', { token: keys.alice }), 400)
    expect(body.errors?.[0].path).toStartWith('/groups')
  })

  test('pagination covers the set exactly once, in a stable order', async () => {
    const seen: string[] = []
    for (let offset = 0; offset < 10; offset++) {
      const res = await world.call('GET', `/devices?limit=1&offset=${offset}`, { token: keys.alice })
      if (res.status === 404) break
      const page = (await res.json()) as { id: string }[]
      expect(page).toHaveLength(1)
      seen.push(page[0].id)
    }
    expect(seen).toEqual([ids.truck1, ids.truck2, ids.van1])
    const twoAtATime = [
      ...((await (await world.call('GET', '/devices?limit=2', { token: keys.alice })).json()) as { id: string }[]),
      ...((await (await world.call('GET', '/devices?limit=2&offset=2', { token: keys.alice })).json()) as { id: string }[]),
    ].map((d) => d.id)
    expect(twoAtATime).toEqual(seen)
  })

  test('an empty page is 404 problem details', async () => {
    const body = await problem(await world.call('GET', '/devices?offset=50', { token: keys.alice }), 404)
    expect(body.title).toBe('Not Found')
  })

  test.each([['limit=0'], ['limit=1001'], ['limit=abc'], ['limit=1.5'], ['offset=-1'], ['offset=x'], ['offset=1e308']])('%s is 400 with errors[]', async (query) => {
    const body = await problem(await world.call('GET', `/devices?${query}`, { token: keys.alice }), 400)
    expect(body.errors?.[0].path).toBe(`/${query.split('=')[0]}`)
    expect(body.errors?.[0].message).toMatch(/integer/)
  })

  test('unknown query parameters are ignored', async () => {
    expect((await world.call('GET', '/devices?foo=bar', { token: keys.alice })).status).toBe(200)
  })

  test('limit defaults to 99 and caps at 1000', async () => {
    const many = {
      accounts: [{ id: ids.acme, name: 'Acme' }],
      groups: [{ id: ids.trucks, account: ids.acme, name: 'T' }],
      users: [{ id: ids.alice, account: ids.acme, name: 'a', groups: [ids.trucks], api_keys: [keys.alice] }],
      models: [{ id: ids.bare, name: 'Bare' }],
      devices: Array.from({ length: 1005 }, (_, i) => ({
        id: `1f000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        account: ids.acme, model: ids.bare, groups: [ids.trucks], alias: `D${String(i).padStart(4, '0')}`,
      })),
    }
    const big = await openWorld(many)
    try {
      expect(((await (await big.call('GET', '/devices', { token: keys.alice })).json()) as unknown[]).length).toBe(99)
      expect(((await (await big.call('GET', '/devices?limit=1000', { token: keys.alice })).json()) as unknown[]).length).toBe(1000)
      expect(((await (await big.call('GET', '/devices?limit=1000&offset=1000', { token: keys.alice })).json()) as unknown[]).length).toBe(5)
    } finally {
      await big.close()
    }
  })
})

describe('GET /devices/{id}', () => {
  test('returns a reachable device', async () => {
    const res = await world.call('GET', `/devices/${ids.truck2}`, { token: keys.bob })
    expect(res.status).toBe(200)
    const body = (await res.json()) as Record<string, unknown>
    expect(Object.keys(body).sort()).toEqual(DEVICE_KEYS)
    expect(body.id).toBe(ids.truck2)
    expect(body.location).toEqual([45.75, 4.85])
  })

  test('a device outside the user\'s groups is 404, not 403', async () => {
    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: keys.bob }), 404)
    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: keys.carol }), 404)
  })

  test('an unknown device is 404 and a malformed id is 400', async () => {
    await problem(await world.call('GET', '/devices/0f000000-0000-4000-8000-0000000000ff', { token: keys.alice }), 404)
    const body = await problem(await world.call('GET', '/devices/not-a-uuid', { token: keys.alice }), 400)
    expect(body.errors).toEqual([{ path: '/id', message: expect.any(String) }])
  })

  test('a moving device reads its newest live fix', async () => {
    const { LivePositions } = await import('../../src/ingest/live')
    const live = new LivePositions()
    const w = await openWorld(undefined, { live })
    try {
      const key = await w.deviceKey(ids.truck1)
      live.publish({ deviceKey: key, timestamp: 1764000000, latitude: 50.1, longitude: 3.2, speed: 40, course: 90 })
      const body = (await (await w.call('GET', `/devices/${ids.truck1}`, { token: keys.alice })).json()) as { location: number[] }
      expect(body.location).toEqual([50.1, 3.2])
      // a stopped device keeps its stored location even with a live fix held
      const key2 = await w.deviceKey(ids.truck2)
      live.publish({ deviceKey: key2, timestamp: 1764000000, latitude: 1, longitude: 1, speed: 0, course: 0 })
      const stopped = (await (await w.call('GET', `/devices/${ids.truck2}`, { token: keys.alice })).json()) as { location: number[] }
      expect(stopped.location).toEqual([45.75, 4.85])
    } finally {
      await w.close()
    }
  })

  test('a moving device without a live fix reads its newest stored position', async () => {
    const w = await openWorld({
      ...baseDatasetWithPositions(),
    })
    try {
      const body = (await (await w.call('GET', `/devices/${ids.truck1}`, { token: keys.alice })).json()) as { location: number[] }
      expect(body.location).toEqual([48.9, 2.4])
    } finally {
      await w.close()
    }
  })
})

describe('GET /devices/{id}/commands', () => {
  test('lists the model\'s commands with their widgets as stored', async () => {
    const res = await world.call('GET', `/devices/${ids.truck1}/commands`, { token: keys.alice })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual([
      { id: ids.engineStop, name: 'Engine stop', widget: { type: 'button', label: 'Stop engine', confirm: true, confirm_message: 'The vehicle will stop. Continue?' } },
      {
        id: ids.setApn,
        name: 'Set APN',
        widget: { type: 'form', fields: [{ name: 'apn', type: 'text', label: 'APN' }, { name: 'password', type: 'password', label: 'Password' }] },
      },
    ])
  })

  test('a model without commands gives an empty list', async () => {
    const res = await world.call('GET', `/devices/${ids.van1}/commands`, { token: keys.alice })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual([])
  })

  test('an unreachable device is 404', async () => {
    await problem(await world.call('GET', `/devices/${ids.truck1}/commands`, { token: keys.bob }), 404)
  })
})

import { baseDataset } from '../support/world'
function baseDatasetWithPositions() {
  const data = baseDataset()
  return {
    ...data,
    positions: [
      { device: ids.truck1, timestamp: 1764000000, latitude: 48.8, longitude: 2.3, speed: 30 },
      { device: ids.truck1, timestamp: 1764000060, latitude: 48.9, longitude: 2.4, speed: 35 },
    ],
  }
}
