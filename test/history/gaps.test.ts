/**
 * History over a recording with a gap, through the API: truck 1 is bus 304 (Limerick, 1 Hz, a real
 * recording) with 15 minutes of fixes cut out and the rest moved an hour later, as a tracker that
 * went silent and came back kilometres away. The route lists the gap, no travel spans it, its
 * time is not driving and its jump is in no distance; route and travels agree. Truck 2 runs the
 * same recording on five mornings: a body long enough to stream, with a gap every night.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { POINTS_PER_CHUNK } from '../../src/history/route-body'
import { BUS304_GPX, haversine, readGpx } from '../track/recordings'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

const bus = readGpx(BUS304_GPX)
const t0 = bus[0].timestamp
const CUT_FROM = t0 + 1500
const CUT_TO = t0 + 2400
const LATER = 3600
const gapped = bus.filter((p) => p.timestamp < CUT_FROM || p.timestamp >= CUT_TO).map((p) => (p.timestamp >= CUT_TO ? { ...p, timestamp: p.timestamp + LATER } : p))
const lastBefore = gapped.filter((p) => p.timestamp < CUT_FROM).at(-1)!
const firstAfter = gapped.find((p) => p.timestamp >= CUT_TO)!
const LAST = gapped[gapped.length - 1].timestamp
const RANGE = `from=${t0}&to=${LAST}`

const DAYS = 5
const mornings = Array.from({ length: DAYS }, (_, day) => bus.map((p) => ({ ...p, timestamp: p.timestamp + day * 86_400 }))).flat()

let world: EngineWorld
beforeAll(async () => {
  world = await openWorld({
    ...baseDataset(),
    positions: [
      ...gapped.map((p) => ({ device: ids.truck1, timestamp: p.timestamp, latitude: p.latitude, longitude: p.longitude })),
      ...mornings.map((p) => ({ device: ids.truck2, timestamp: p.timestamp, latitude: p.latitude, longitude: p.longitude })),
    ],
  })
})
afterAll(() => world.close())

interface Route {
  points: { latitude: number; longitude: number; speed: number; timestamp: number }[]
  stops: { start: number; end: number; duration: number }[]
  total_distance: number
  total_duration: number
  gaps?: { start: number; end: number; duration: number; displacement: number }[]
}
interface Travels {
  travels: { start: { timestamp: number }; end: { timestamp: number }; distance: number; duration: number; avg_speed: number }[]
  total_travels: number
  total_distance: number
  total_duration: number
}

async function get<T>(path: string, device = ids.truck1): Promise<T> {
  const res = await world.call('GET', `/devices/${device}/${path}`, { token: keys.alice })
  expect(res.status).toBe(200)
  return (await res.json()) as T
}

describe('a route with a gap', () => {
  test('the route lists the gap, from the last fix before the silence to the first after, with how far away the device reappeared', async () => {
    const route = await get<Route>(`history/route?${RANGE}`)
    expect(route.points).toHaveLength(gapped.length)
    expect(route.total_duration).toBe(LAST - t0) // the spec's: last − first point
    expect(route.gaps).toHaveLength(1)
    const [gap] = route.gaps!
    expect(Object.keys(gap).sort()).toEqual(['displacement', 'duration', 'end', 'start'])
    expect(gap).toMatchObject({ start: lastBefore.timestamp, end: firstAfter.timestamp, duration: firstAfter.timestamp - lastBefore.timestamp })
    expect(gap.displacement).toBeCloseTo(haversine(lastBefore.latitude, lastBefore.longitude, firstAfter.latitude, firstAfter.longitude), -1)
    expect(gap.displacement).toBeGreaterThan(1000)
    // the gap is in no stop
    for (const stop of route.stops) expect(stop.end <= gap.start || stop.start >= gap.end).toBe(true)
  })

  test('no travel spans the gap; driving time excludes it; route and travels give the same distance, without the jump', async () => {
    for (const threshold of [60, 300]) {
      const route = await get<Route>(`history/route?${RANGE}&stop_threshold_time=${threshold}`)
      const travels = await get<Travels>(`history/travels?${RANGE}&stop_threshold_time=${threshold}`)
      const [gap] = route.gaps!
      for (const travel of travels.travels) expect(travel.end.timestamp <= gap.start || travel.start.timestamp >= gap.end).toBe(true)
      expect(travels.total_duration).toBeLessThanOrEqual(LAST - t0 - gap.duration)
      expect(travels.total_distance).toBe(route.total_distance)
      expect(travels.total_distance).toBe(travels.travels.reduce((sum, travel) => sum + travel.distance, 0))
      // about the recording's 14.1 km less what the bus drove in the 15 minutes cut out; the jump would add more than a km
      expect(route.total_distance).toBeLessThan(14_100 - gap.displacement)
      expect(route.total_distance).toBeGreaterThan(8000)
    }
    // the default threshold: one travel each side, both at a bus's speed (not 8 km/h across an hour of silence)
    const { travels } = await get<Travels>(`history/travels?${RANGE}`)
    expect(travels.map((t) => [t.start.timestamp, t.end.timestamp])).toEqual([[t0, lastBefore.timestamp], [firstAfter.timestamp, LAST]])
    for (const travel of travels) expect(travel.avg_speed).toBeGreaterThan(10)
  })

  test('gap_threshold_time longer than the silence: no gap, one travel across it (the reading before)', async () => {
    const silence = firstAfter.timestamp - lastBefore.timestamp
    const route = await get<Route>(`history/route?${RANGE}&gap_threshold_time=${silence}`)
    expect(Object.keys(route).sort()).toEqual(['points', 'stops', 'total_distance', 'total_duration'])
    const travels = await get<Travels>(`history/travels?${RANGE}&gap_threshold_time=${silence}`)
    expect(travels.total_travels).toBe(1)
    expect(travels.total_duration).toBe(LAST - t0)
    expect(travels.total_distance).toBe(route.total_distance)
    expect((await get<Route>(`history/route?${RANGE}&gap_threshold_time=${silence - 1}`)).gaps).toHaveLength(1)
  })

  const invalid: [string, string][] = [
    ['negative', '-1'],
    ['zero', '0'],
    ['under a minute', '59'],
    ['not an integer', '3600.5'],
    ['not a number', 'hour'],
    ['beyond a safe integer', '99999999999999999999'],
  ]
  test.each(invalid)('gap_threshold_time %s is 400, on route, its alias and travels', async (_name, value) => {
    for (const path of ['history/route', 'route', 'history/travels']) {
      const body = await problem(await world.call('GET', `/devices/${ids.truck1}/${path}?${RANGE}&gap_threshold_time=${value}`, { token: keys.alice }), 400)
      expect(body.errors?.[0]?.path).toBe('/gap_threshold_time')
    }
  })

  test('a minute is the shortest threshold', async () => {
    const route = await get<Route>(`history/route?${RANGE}&gap_threshold_time=60`)
    expect(route.gaps!.length).toBeGreaterThanOrEqual(1)
  })
})

describe('a long route with gaps streams them too', () => {
  test('five mornings of the bus: every night a gap (it ends at one terminus and starts at the other), in the streamed body', async () => {
    expect(mornings.length).toBeGreaterThan(POINTS_PER_CHUNK)
    const range = `from=${t0}&to=${mornings[mornings.length - 1].timestamp}`
    const res = await world.call('GET', `/devices/${ids.truck2}/history/route?${range}`, { token: keys.alice })
    expect(res.headers.get('content-length')).toBeNull() // streamed
    const route = (await res.json()) as Route
    expect(route.points).toHaveLength(mornings.length)
    expect(route.gaps!.map((g) => [g.start, g.end])).toEqual(
      Array.from({ length: DAYS - 1 }, (_, day) => [bus[bus.length - 1].timestamp + day * 86_400, t0 + (day + 1) * 86_400]),
    )
    const travels = await get<Travels>(`history/travels?${range}`, ids.truck2)
    expect(travels.total_distance).toBe(route.total_distance)
    expect(travels.total_duration).toBeLessThanOrEqual(DAYS * (bus[bus.length - 1].timestamp - t0))
  })
})
