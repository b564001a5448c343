/**
 * GET /events: the events of every device a principal reaches, newest first, through
 * createApp(...).handle. Reach (members, admins, another account, share tokens with and without
 * the events permission), the window's bounds, paging, and the item's shape against the
 * per-device endpoint's.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { PERMISSION } from '../../src/share/permissions'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

/** the world's clock: 2026-11-25T12:00:00Z */
const NOW = Date.UTC(2026, 10, 25, 12, 0, 0) / 1000
const HOUR = 3600
const DAY = 86_400

/** one event a device, an hour apart (newest: Car), two in the same second for Truck 1, one a month back */
const events = [
  { device: ids.truck1, alarm_code: 'overspeed', context: { limit: 90 }, speed: 104, satellite: 9, coordinates: [48.85, 2.31], mcc: 208, mnc: 1, dbm: -71, timestamp: NOW - 5 * HOUR },
  { device: ids.truck1, alarm_code: 'sos', timestamp: NOW - 5 * HOUR },
  { device: ids.truck2, alarm_code: 'power_cut', coordinates: [45.75, 4.85], timestamp: NOW - 4 * HOUR },
  { device: ids.van1, alarm_code: 'low_battery', timestamp: NOW - 3 * HOUR },
  { device: ids.unlinked, alarm_code: 'tamper', timestamp: NOW - 2 * HOUR },
  { device: ids.globexCar, alarm_code: 'sos', timestamp: NOW - HOUR },
  { device: ids.truck2, alarm_code: 'vibration', timestamp: NOW - 20 * DAY },
]

interface Item {
  device: { id: string; alias: string }
  alarm_code: string
  timestamp: number
  [field: string]: unknown
}

let world: EngineWorld
beforeAll(async () => {
  world = await openWorld({ ...baseDataset(), events })
})
afterAll(() => world.close())

const get = (path: string, token?: string) => world.call('GET', path, token === undefined ? {} : { token })
async function list(query: string, token: string): Promise<Item[]> {
  const res = await get(`/events?${query}`, token)
  expect(res.status).toBe(200)
  return (await res.json()) as Item[]
}
const brief = (items: Item[]) => items.map((e) => `${e.device.alias}:${e.alarm_code}`)
const DAY_WINDOW = `from=${NOW - DAY}&to=${NOW}`

async function shareToken(devices: string[], acl?: string[]): Promise<string> {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices, ttl: 3600, ...(acl ? { acl } : {}) } })
  expect(res.status).toBe(200)
  return ((await res.json()) as { token: string }).token
}

describe('GET /events: reach', () => {
  test('a member gets the events of the devices of their groups, newest first, each with its device', async () => {
    const items = await list(DAY_WINDOW, keys.alice)
    // Truck 1's two events share a second: the one stored later comes first
    expect(brief(items)).toEqual(['Van 1:low_battery', 'Truck 2:power_cut', 'Truck 1:sos', 'Truck 1:overspeed'])
    expect(items[0].device).toEqual({ id: ids.van1, alias: 'Van 1' })
    expect(items.map((e) => e.timestamp)).toEqual([NOW - 3 * HOUR, NOW - 4 * HOUR, NOW - 5 * HOUR, NOW - 5 * HOUR])
    expect(brief(await list(DAY_WINDOW, keys.bob))).toEqual(['Van 1:low_battery', 'Truck 2:power_cut'])
  })

  test("an admin gets the whole account's (unlinked devices left out, as GET /devices does); another account's none", async () => {
    expect(brief(await list(DAY_WINDOW, keys.dana))).toEqual(['Van 1:low_battery', 'Truck 2:power_cut', 'Truck 1:sos', 'Truck 1:overspeed'])
    expect(brief(await list(DAY_WINDOW, keys.carol))).toEqual(['Car:sos'])
    expect(brief(await list(DAY_WINDOW, keys.erin))).toEqual(['Car:sos'])
  })

  test('each item is what GET /devices/{id}/history/events shows, plus the device', async () => {
    const items = await list(DAY_WINDOW, keys.alice)
    for (const device of [ids.truck1, ids.truck2, ids.van1]) {
      const perDevice = (await (await get(`/devices/${device}/history/events?${DAY_WINDOW}`, keys.alice)).json()) as object[]
      const fromList = items.filter((e) => e.device.id === device).map(({ device: _, address: __, ...rest }) => rest)
      // the per-device endpoint is in time order, the fleet's list newest first
      expect(fromList.toReversed() as object[]).toEqual(perDevice)
    }
    const overspeed = items.find((e) => e.alarm_code === 'overspeed')!
    expect(Object.keys(overspeed).sort()).toEqual(['address', 'alarm_code', 'context', 'coordinates', 'dbm', 'device', 'mcc', 'mnc', 'satellite', 'speed', 'timestamp'])
    expect(overspeed).toMatchObject({ context: { limit: 90 }, speed: 104, coordinates: [48.85, 2.31], dbm: -71 })
    expect(items.find((e) => e.alarm_code === 'sos')).toMatchObject({ coordinates: null, speed: null, satellite: null, dbm: null, context: {} })
  })

  test("a share token reads its link's devices' events when the link grants events, else 403", async () => {
    const withEvents = await shareToken([ids.truck2, ids.van1])
    expect(brief(await list(DAY_WINDOW, withEvents))).toEqual(['Van 1:low_battery', 'Truck 2:power_cut'])
    const locationOnly = await shareToken([ids.truck2], [PERMISSION.location, PERMISSION.history])
    const refused = await problem(await get(`/events?${DAY_WINDOW}`, locationOnly), 403)
    expect(refused.detail).toContain('events')
  })

  test('no credentials, or an unknown token, is 401', async () => {
    const res = await get(`/events?${DAY_WINDOW}`)
    await problem(res, 401)
    expect(res.headers.get('www-authenticate')).toStartWith('Bearer realm="tracker"')
    await problem(await get(`/events?${DAY_WINDOW}`, 'not-a-key-0123456789'), 401)
  })

  test('a device taken out of reach takes its events with it, on the next request', async () => {
    await world.execute(sql`DELETE FROM user_groups WHERE user_id = ${ids.bob} AND group_id = ${ids.vans}`)
    try {
      expect(await list(DAY_WINDOW, keys.bob)).toEqual([])
    } finally {
      await world.execute(sql`INSERT INTO user_groups (user_id, group_id) VALUES (${ids.bob}, ${ids.vans})`)
    }
    expect(brief(await list(DAY_WINDOW, keys.bob))).toEqual(['Van 1:low_battery', 'Truck 2:power_cut'])
  })
})

describe('GET /events: filters and places', () => {
  test('device keeps one device\'s events, alarm_code one code\'s, both together; a device out of reach gives none', async () => {
    expect(brief(await list(`${DAY_WINDOW}&device=${ids.truck1}`, keys.alice))).toEqual(['Truck 1:sos', 'Truck 1:overspeed'])
    expect(brief(await list(`${DAY_WINDOW}&device=${ids.truck1.toUpperCase()}`, keys.alice))).toEqual(['Truck 1:sos', 'Truck 1:overspeed'])
    expect(brief(await list(`${DAY_WINDOW}&alarm_code=power_cut`, keys.alice))).toEqual(['Truck 2:power_cut'])
    expect(brief(await list(`${DAY_WINDOW}&device=${ids.truck1}&alarm_code=sos`, keys.alice))).toEqual(['Truck 1:sos'])
    expect(brief(await list(`${DAY_WINDOW}&device=${ids.truck2}&alarm_code=sos`, keys.alice))).toEqual([])
    // Car is Globex's: Alice's filter finds nothing, and says nothing of it
    expect(await list(`${DAY_WINDOW}&device=${ids.globexCar}`, keys.alice)).toEqual([])
    expect(brief(await list(`${DAY_WINDOW}&device=${ids.globexCar}`, keys.carol))).toEqual(['Car:sos'])
  })

  test('each event with coordinates names its city, from the offline geocoder; without them, null', async () => {
    const items = await list(DAY_WINDOW, keys.alice)
    expect(items.find((e) => e.alarm_code === 'overspeed')!.address).toMatch(/^[^,]+, FR$/)
    expect(items.find((e) => e.alarm_code === 'power_cut')!.address).toBe('Lyon, FR')
    expect(items.find((e) => e.alarm_code === 'sos')!.address).toBeNull()
  })
})

describe('GET /events: the window and paging', () => {
  test('from and to bound the window, both inclusive; 31 days is the widest', async () => {
    expect(brief(await list(`from=${NOW - 4 * HOUR}&to=${NOW - 3 * HOUR}`, keys.alice))).toEqual(['Van 1:low_battery', 'Truck 2:power_cut'])
    expect(brief(await list(`from=${NOW - 31 * DAY}&to=${NOW}`, keys.bob))).toEqual(['Van 1:low_battery', 'Truck 2:power_cut', 'Truck 2:vibration'])
    expect(await list(`from=${NOW - 2 * HOUR}&to=${NOW}`, keys.alice)).toEqual([])
  })

  test('without to the window ends now, without from it starts a day before to', async () => {
    expect(brief(await list('', keys.bob))).toEqual(['Van 1:low_battery', 'Truck 2:power_cut'])
    expect(brief(await list(`from=${NOW - 21 * DAY}`, keys.bob))).toEqual(['Van 1:low_battery', 'Truck 2:power_cut', 'Truck 2:vibration'])
    expect(brief(await list(`to=${NOW - 3.5 * HOUR}`, keys.bob))).toEqual(['Truck 2:power_cut'])
  })

  test('bad ranges, limits and offsets are 400 naming the field', async () => {
    const cases: [string, string][] = [
      [`from=${NOW}&to=${NOW - 1}`, '/from'],
      [`from=${NOW - 31 * DAY - 1}&to=${NOW}`, '/to'],
      [`from=${NOW - 32 * DAY}`, '/to'],
      ['from=yesterday', '/from'],
      [`from=${NOW - 10}.5`, '/from'],
      ['to=-1', '/to'],
      [`${DAY_WINDOW}&limit=0`, '/limit'],
      [`${DAY_WINDOW}&limit=1001`, '/limit'],
      [`${DAY_WINDOW}&offset=-1`, '/offset'],
      [`${DAY_WINDOW}&device=truck-1`, '/device'],
      [`${DAY_WINDOW}&alarm_code=SOS%27--`, '/alarm_code'],
    ]
    for (const [query, path] of cases) {
      const body = await problem(await get(`/events?${query}`, keys.alice), 400)
      expect({ query, paths: body.errors?.map((e) => e.path) }).toEqual({ query, paths: [path] })
    }
  })

  test('limit and offset page through the list in a stable order; unknown parameters are ignored', async () => {
    const all = await list(`${DAY_WINDOW}&limit=1000`, keys.dana)
    const pages: Item[] = []
    for (let offset = 0; offset < all.length + 2; offset += 3) pages.push(...(await list(`${DAY_WINDOW}&limit=3&offset=${offset}&colour=blue`, keys.dana)))
    expect(pages).toEqual(all)
    expect(await list(`${DAY_WINDOW}&offset=100`, keys.dana)).toEqual([])
    expect(await list(`${DAY_WINDOW}&limit=1`, keys.dana)).toEqual(all.slice(0, 1))
  })
})
