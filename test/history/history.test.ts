import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createGeocoder } from '../../src/geocode'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

/**
 * Truck 1's morning, in closed form: parked 10 min at A, drives east 6 km at 36 km/h (10 m/s,
 * one fix every 10 s) to B, parked 20 min at B with no fixes in between (trackers go quiet
 * when parked), then drives 3 km north to C and stays there 6 min. Fixes are imported out of order.
 */
const T0 = 1764000000
const A = { lat: 48.85, lon: 2.3 }
const metresPerDegreeLon = 111_320 * Math.cos((A.lat * Math.PI) / 180)
const fixes: { timestamp: number; latitude: number; longitude: number; speed: number }[] = []
for (let t = 0; t <= 600; t += 60) fixes.push({ timestamp: T0 + t, latitude: A.lat, longitude: A.lon, speed: 0 })
for (let i = 1; i <= 60; i++) fixes.push({ timestamp: T0 + 600 + i * 10, latitude: A.lat, longitude: A.lon + (i * 100) / metresPerDegreeLon, speed: 36 })
const B = { lat: A.lat, lon: A.lon + 6000 / metresPerDegreeLon }
const arriveB = T0 + 1200
fixes.push({ timestamp: arriveB + 1200, latitude: B.lat, longitude: B.lon, speed: 0 }) // 20 min later, same place
for (let i = 1; i <= 30; i++) fixes.push({ timestamp: arriveB + 1200 + i * 10, latitude: B.lat + (i * 100) / 111_320, longitude: B.lon, speed: 36 })
const arriveC = arriveB + 1500
for (let t = 60; t <= 360; t += 60) fixes.push({ timestamp: arriveC + t, latitude: B.lat + 3000 / 111_320, longitude: B.lon, speed: 0 })
const LAST = arriveC + 360

let world: EngineWorld
beforeAll(async () => {
  const shuffled = [...fixes].sort((a, b) => ((a.timestamp * 7919) % 101) - ((b.timestamp * 7919) % 101))
  world = await openWorld(
    {
      ...baseDataset(),
      positions: shuffled.map((f) => ({ device: ids.truck1, ...f })),
      events: [
        { device: ids.truck1, alarm_code: 'overspeed', context: { limit: 30 }, speed: 36, satellite: 9, coordinates: [48.85, 2.31], mcc: 208, mnc: 1, dbm: -71, timestamp: T0 + 700 },
        { device: ids.truck1, alarm_code: 'sos', timestamp: T0 + 650 },
        { device: ids.truck1, alarm_code: 'power_cut', timestamp: T0 + 90_000 },
      ],
    },
    { geocoder: createGeocoder({}) },
  )
})
afterAll(() => world.close())

const get = (path: string, token = keys.alice) => world.call('GET', path, { token })
const route = async (query: string, path = 'history/route') => {
  const res = await get(`/devices/${ids.truck1}/${path}?${query}`)
  expect(res.status).toBe(200)
  return (await res.json()) as {
    points: { latitude: number; longitude: number; speed: number; timestamp: number }[]
    stops: { latitude: number; longitude: number; duration: number; start: number; end: number }[]
    total_distance: number
    total_duration: number
  }
}

describe('GET /devices/{id}/history/route', () => {
  test('lists every fix in the window in time order, with the exact point fields', async () => {
    const body = await route(`from=${T0}&to=${LAST}`)
    expect(Object.keys(body).sort()).toEqual(['points', 'stops', 'total_distance', 'total_duration'])
    expect(body.points).toHaveLength(fixes.length)
    expect(body.points.map((p) => p.timestamp)).toEqual(fixes.map((f) => f.timestamp).sort((a, b) => a - b))
    expect(Object.keys(body.points[0]).sort()).toEqual(['latitude', 'longitude', 'speed', 'timestamp'])
    expect(body.points[0]).toEqual({ latitude: A.lat, longitude: A.lon, speed: 0, timestamp: T0 })
    expect(body.total_duration).toBe(LAST - T0)
  })

  test('the window is inclusive at both ends', async () => {
    const body = await route(`from=${T0 + 610}&to=${T0 + 630}`)
    expect(body.points.map((p) => p.timestamp)).toEqual([T0 + 610, T0 + 620, T0 + 630])
  })

  test('finds the parked spans as stops, the silent one included, with duration = end - start', async () => {
    const body = await route(`from=${T0}&to=${LAST}`)
    expect(body.stops).toHaveLength(3)
    const [atA, atB, atC] = body.stops
    for (const stop of body.stops) expect(stop.duration).toBe(stop.end - stop.start)
    expect(atA.start).toBe(T0)
    expect(atA.end).toBeGreaterThanOrEqual(T0 + 600)
    expect(atA.end).toBeLessThanOrEqual(T0 + 610)
    // arrived at B at arriveB, said nothing for 20 minutes, left after arriveB + 1200
    expect(atB.start).toBeGreaterThanOrEqual(arriveB - 10)
    expect(atB.start).toBeLessThanOrEqual(arriveB)
    expect(atB.end).toBeGreaterThanOrEqual(arriveB + 1200)
    expect(atB.duration).toBeGreaterThanOrEqual(1200)
    expect(atB.latitude).toBeCloseTo(B.lat, 4)
    expect(atB.longitude).toBeCloseTo(B.lon, 4)
    expect(atC.end).toBe(LAST)
  })

  test('stop_threshold_time decides which stops count (default 300 s)', async () => {
    expect((await route(`from=${T0}&to=${LAST}`)).stops).toHaveLength(3)
    expect((await route(`from=${T0}&to=${LAST}&stop_threshold_time=300`)).stops).toHaveLength(3)
    const long = await route(`from=${T0}&to=${LAST}&stop_threshold_time=900`)
    expect(long.stops).toHaveLength(1) // only the 20-minute one at B
    expect(long.stops[0].duration).toBeGreaterThanOrEqual(1200)
    expect((await route(`from=${T0}&to=${LAST}&stop_threshold_time=3600`)).stops).toHaveLength(0)
  })

  test('total_distance is the movement: 9 km, within 1%, and the same whatever the threshold', async () => {
    const body = await route(`from=${T0}&to=${LAST}`)
    expect(body.total_distance).toBeGreaterThan(9000 * 0.99)
    expect(body.total_distance).toBeLessThan(9000 * 1.01)
    expect((await route(`from=${T0}&to=${LAST}&stop_threshold_time=0`)).total_distance).toBe(body.total_distance)
    expect((await route(`from=${T0}&to=${LAST}&stop_threshold_time=3600`)).total_distance).toBe(body.total_distance)
  })

  test('the alias /devices/{id}/route answers the same', async () => {
    expect(await route(`from=${T0}&to=${LAST}&stop_threshold_time=60`, 'route')).toEqual(await route(`from=${T0}&to=${LAST}&stop_threshold_time=60`))
  })

  test('a window without data is 200 with empty lists and zero totals', async () => {
    expect(await route(`from=${T0 - 5000}&to=${T0 - 1}`)).toEqual({ points: [], stops: [], total_distance: 0, total_duration: 0 })
  })

  const invalid: [string, string][] = [
    ['from is missing', `to=${T0}`],
    ['to is missing', `from=${T0}`],
    ['from is not an integer', `from=abc&to=${T0}`],
    ['to is fractional', `from=${T0}&to=${T0}.5`],
    ['from is after to', `from=${T0 + 1}&to=${T0}`],
    ['the window exceeds 31 days', `from=${T0}&to=${T0 + 31 * 86400 + 1}`],
    ['from is negative', `from=-5&to=${T0}`],
    ['the timestamps are beyond the year 9999', `from=99999999999999999999&to=99999999999999999999`],
    ['stop_threshold_time is negative', `from=${T0}&to=${T0 + 10}&stop_threshold_time=-1`],
    ['stop_threshold_time is not an integer', `from=${T0}&to=${T0 + 10}&stop_threshold_time=ten`],
  ]
  test.each(invalid)('400 when %s', async (_name, query) => {
    for (const path of ['history/route', 'route']) {
      const body = await problem(await get(`/devices/${ids.truck1}/${path}?${query}`), 400)
      expect(body.errors?.length).toBeGreaterThan(0)
      expect(body.errors![0].path).toMatch(/^\/(from|to|stop_threshold_time)$/)
    }
  })

  test('exactly 31 days is allowed', async () => {
    expect((await get(`/devices/${ids.truck1}/history/route?from=${T0}&to=${T0 + 31 * 86400}`)).status).toBe(200)
  })

  test('a device out of reach is 404; a malformed id is 400', async () => {
    await problem(await get(`/devices/${ids.truck1}/history/route?from=${T0}&to=${LAST}`, keys.bob), 404)
    await problem(await get(`/devices/${ids.truck1}/history/route?from=${T0}&to=${LAST}`, keys.carol), 404)
    await problem(await get(`/devices/0f000000-0000-4000-8000-0000000000ff/route?from=${T0}&to=${LAST}`), 404)
    await problem(await get(`/devices/nope/history/route?from=${T0}&to=${LAST}`), 400)
    await problem(await world.call('GET', `/devices/${ids.truck1}/history/route?from=${T0}&to=${LAST}`), 401)
  })
})

describe('GET /devices/{id}/history/travels', () => {
  type Travels = {
    travels: { start: Record<string, unknown>; end: Record<string, unknown>; distance: number; duration: number; max_speed: number; avg_speed: number }[]
    total_travels: number
    total_distance: number
    total_duration: number
  }
  const travels = async (query: string) => {
    const res = await get(`/devices/${ids.truck1}/history/travels?${query}`)
    expect(res.status).toBe(200)
    return (await res.json()) as Travels
  }

  test('the two drives between the three stops, with places, distances, durations and speeds', async () => {
    const body = await travels(`from=${T0}&to=${LAST}`)
    expect(Object.keys(body).sort()).toEqual(['total_distance', 'total_duration', 'total_travels', 'travels'])
    expect(body.total_travels).toBe(2)
    expect(body.travels).toHaveLength(2)
    const [first, second] = body.travels
    expect(Object.keys(first).sort()).toEqual(['avg_speed', 'distance', 'duration', 'end', 'max_speed', 'start'])
    expect(Object.keys(first.start).sort()).toEqual(['address', 'latitude', 'longitude', 'timestamp'])
    expect(first.distance).toBeGreaterThan(6000 * 0.99)
    expect(first.distance).toBeLessThan(6000 * 1.01)
    expect(second.distance).toBeGreaterThan(3000 * 0.99)
    expect(second.distance).toBeLessThan(3000 * 1.01)
    for (const travel of body.travels) {
      expect(travel.duration).toBe((travel.end.timestamp as number) - (travel.start.timestamp as number))
      expect(travel.max_speed).toBe(36)
      expect(travel.avg_speed).toBeCloseTo((travel.distance / travel.duration) * 3.6, 0)
      expect(travel.start.address).toMatch(/^.+, FR$/)
    }
    expect(body.total_duration).toBe(first.duration + second.duration)
  })

  test('total_distance equals the route total_distance over the same window', async () => {
    const body = await travels(`from=${T0}&to=${LAST}`)
    expect(body.total_distance).toBe((await route(`from=${T0}&to=${LAST}`)).total_distance)
    expect(body.total_distance).toBe(body.travels.reduce((s, t) => s + t.distance, 0))
  })

  test('an empty window gives no travels and zero totals', async () => {
    expect(await travels(`from=${T0 - 5000}&to=${T0 - 1}`)).toEqual({ travels: [], total_travels: 0, total_distance: 0, total_duration: 0 })
  })

  test('the same parameter rules as the route', async () => {
    await problem(await get(`/devices/${ids.truck1}/history/travels?from=${T0}`), 400)
    await problem(await get(`/devices/${ids.truck1}/history/travels?from=${T0 + 1}&to=${T0}`), 400)
    await problem(await get(`/devices/${ids.truck1}/history/travels?from=${T0}&to=${LAST}`, keys.bob), 404)
  })
})

describe('GET /devices/{id}/history/events', () => {
  test('the events in the window, in time order, with the exact fields', async () => {
    const res = await get(`/devices/${ids.truck1}/history/events?from=${T0}&to=${LAST}`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual([
      { alarm_code: 'sos', context: {}, speed: null, satellite: null, coordinates: null, mcc: null, mnc: null, dbm: null, timestamp: T0 + 650 },
      { alarm_code: 'overspeed', context: { limit: 30 }, speed: 36, satellite: 9, coordinates: [48.85, 2.31], mcc: 208, mnc: 1, dbm: -71, timestamp: T0 + 700 },
    ])
  })

  test('the alias /devices/{id}/events answers the same', async () => {
    const a = await (await get(`/devices/${ids.truck1}/history/events?from=${T0}&to=${T0 + 100_000}`)).json()
    const b = await (await get(`/devices/${ids.truck1}/events?from=${T0}&to=${T0 + 100_000}`)).json()
    expect(b).toEqual(a)
    expect((a as unknown[]).length).toBe(3)
  })

  test('an empty window is an empty list; bad parameters 400; out of reach 404', async () => {
    expect(await (await get(`/devices/${ids.truck1}/events?from=1&to=2`)).json()).toEqual([])
    await problem(await get(`/devices/${ids.truck1}/events?from=x&to=2`), 400)
    await problem(await get(`/devices/${ids.truck1}/events?to=2`), 400)
    await problem(await get(`/devices/${ids.truck1}/events?from=3&to=2`), 400)
    await problem(await get(`/devices/${ids.truck1}/events?from=${T0}&to=${LAST}`, keys.carol), 404)
  })
})
