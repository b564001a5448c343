import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createGeocoder } from '../../src/geocode'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

/**
 * GET /reports/{kind} over the two-account world: Truck 1 and Truck 2 each drive a morning
 * (parked, a drive east, a silent stop, a drive north, parked), Truck 2 an hour later. Every
 * figure a report gives is held equal to what the history API answers for the same device and
 * period, never to numbers written here: the stop detection in track/ may change.
 */
const T0 = 1764000000 // 2025-11-24T16:00:00Z
const metresPerDegreeLon = (lat: number) => 111_320 * Math.cos((lat * Math.PI) / 180)

function morning(start: number, lat: number, lon: number) {
  const fixes: { timestamp: number; latitude: number; longitude: number; speed: number }[] = []
  for (let t = 0; t <= 600; t += 60) fixes.push({ timestamp: start + t, latitude: lat, longitude: lon, speed: 0 })
  for (let i = 1; i <= 60; i++) fixes.push({ timestamp: start + 600 + i * 10, latitude: lat, longitude: lon + (i * 100) / metresPerDegreeLon(lat), speed: 36 })
  const bLon = lon + 6000 / metresPerDegreeLon(lat)
  const arriveB = start + 1200
  fixes.push({ timestamp: arriveB + 1200, latitude: lat, longitude: bLon, speed: 0 })
  for (let i = 1; i <= 30; i++) fixes.push({ timestamp: arriveB + 1200 + i * 10, latitude: lat + (i * 100) / 111_320, longitude: bLon, speed: 36 + i })
  const arriveC = arriveB + 1500
  for (let t = 60; t <= 360; t += 60) fixes.push({ timestamp: arriveC + t, latitude: lat + 3000 / 111_320, longitude: bLon, speed: 0 })
  return fixes
}

const truck1 = morning(T0, 48.85, 2.3)
const truck2 = morning(T0 + 3600, 45.75, 4.85)
const FROM = T0 - 60
const TO = T0 + 3600 + 4000

let world: EngineWorld
beforeAll(async () => {
  world = await openWorld(
    {
      ...baseDataset(),
      positions: [...truck1.map((f) => ({ device: ids.truck1, ...f })), ...truck2.map((f) => ({ device: ids.truck2, ...f }))],
      events: [
        { device: ids.truck2, alarm_code: 'sos', coordinates: [45.75, 4.86], context: { button: 1 }, timestamp: T0 + 3700 },
        { device: ids.truck1, alarm_code: 'overspeed', context: { limit: 30 }, coordinates: [48.85, 2.31], timestamp: T0 + 700 },
        { device: ids.truck1, alarm_code: 'sos', timestamp: T0 + 650 },
        { device: ids.globexCar, alarm_code: 'sos', timestamp: T0 + 650 },
      ],
    },
    { geocoder: createGeocoder({}) },
  )
})
afterAll(() => world.close())

type Row = Record<string, unknown>
interface Answer {
  rows: Row[]
  totals: Row | null
  generated_at: number
  period: { from: number; to: number }
  tz: string
}

const get = (path: string, token = keys.alice, headers: Record<string, string> = {}) => world.call('GET', path, { token, headers })
async function report(kind: string, query = '', token = keys.alice): Promise<Answer> {
  const res = await get(`/reports/${kind}?from=${FROM}&to=${TO}${query}`, token)
  if (res.status !== 200) throw new Error(`${res.status}: ${await res.text()}`)
  expect(res.headers.get('content-type')).toStartWith('application/json')
  return (await res.json()) as Answer
}
async function history<T>(device: string, what: 'route' | 'travels', query = '') {
  const res = await get(`/devices/${device}/history/${what}?from=${FROM}&to=${TO}${query}`)
  expect(res.status).toBe(200)
  return (await res.json()) as T
}
interface Travels {
  travels: { start: { latitude: number; longitude: number; timestamp: number; address: string }; end: { latitude: number; longitude: number; timestamp: number; address: string }; distance: number; duration: number; max_speed: number; avg_speed: number }[]
  total_travels: number
  total_distance: number
  total_duration: number
}
interface Route {
  points: { timestamp: number }[]
  stops: { latitude: number; longitude: number; duration: number; start: number; end: number }[]
  total_distance: number
}

describe('GET /reports/trips and /stops: the history API\'s travels and stops', () => {
  test('trips equal GET /devices/{id}/history/travels for each device: count, times, distance, duration, speeds, addresses', async () => {
    for (const threshold of ['', '&stop_threshold_time=120', '&stop_threshold_time=3600']) {
      const trips = await report('trips', `&devices=${ids.truck1},${ids.truck2}${threshold}`)
      let distance = 0
      let duration = 0
      for (const [device, alias] of [[ids.truck1, 'Truck 1'], [ids.truck2, 'Truck 2']] as const) {
        const travels = await history<Travels>(device, 'travels', threshold)
        const rows = trips.rows.filter((row) => row.device === device)
        expect(rows).toEqual(
          travels.travels.map((travel) => ({
            device,
            alias,
            start: travel.start.timestamp,
            end: travel.end.timestamp,
            duration_s: travel.duration,
            distance_m: travel.distance,
            max_speed_kmh: travel.max_speed,
            avg_speed_kmh: travel.avg_speed,
            start_address: travel.start.address,
            end_address: travel.end.address,
            start_location: [travel.start.latitude, travel.start.longitude],
            end_location: [travel.end.latitude, travel.end.longitude],
          })),
        )
        if (threshold === '') expect(rows.length).toBeGreaterThan(0)
        distance += travels.total_distance
        duration += travels.total_duration
      }
      expect(trips.totals!.distance_m).toBeCloseTo(distance, 6)
      expect(trips.totals!.duration_s).toBe(duration)
    }
  })

  test('stops equal the history route\'s stops, stop_threshold_time included', async () => {
    for (const threshold of ['', '&stop_threshold_time=900', '&stop_threshold_time=0']) {
      const stops = await report('stops', `&devices=${ids.truck1}${threshold}`)
      const route = await history<Route>(ids.truck1, 'route', threshold)
      if (threshold === '') expect(route.stops.length).toBeGreaterThan(0)
      expect(stops.rows.map((row) => [row.start, row.end, row.duration_s, row.location])).toEqual(route.stops.map((stop) => [stop.start, stop.end, stop.duration, [stop.latitude, stop.longitude]]))
      for (const row of stops.rows) expect(typeof row.address).toBe('string')
      expect(stops.totals!.duration_s).toBe(route.stops.reduce((sum, stop) => sum + stop.duration, 0))
    }
  })

  test('the summary holds the history API\'s distance, driving time, counts and the window\'s fixes and events', async () => {
    const summary = await report('summary', `&devices=${ids.truck1}`)
    const [row] = summary.rows
    const travels = await history<Travels>(ids.truck1, 'travels')
    const route = await history<Route>(ids.truck1, 'route')
    const events = (await (await get(`/devices/${ids.truck1}/history/events?from=${FROM}&to=${TO}`)).json()) as unknown[]
    expect(summary.rows).toHaveLength(1)
    expect(row).toMatchObject({
      device: ids.truck1,
      alias: 'Truck 1',
      distance_m: route.total_distance,
      driving_s: travels.total_duration,
      stopped_s: route.stops.reduce((sum, stop) => sum + stop.duration, 0),
      max_speed_kmh: Math.max(...travels.travels.map((travel) => travel.max_speed)),
      trips: travels.total_travels,
      stops: route.stops.length,
      events: events.length,
      first_fix: route.points[0]!.timestamp,
      last_fix: route.points.at(-1)!.timestamp,
    })
    expect(row!.distance_m).toBe(travels.total_distance)
    expect(row!.avg_speed_kmh as number).toBeCloseTo((travels.total_distance / travels.total_duration) * 3.6, 9)
    expect(Object.keys(row!)).toEqual(['device', 'alias', 'distance_m', 'driving_s', 'stopped_s', 'max_speed_kmh', 'avg_speed_kmh', 'trips', 'stops', 'events', 'first_fix', 'last_fix', 'odometer_start_m', 'odometer_end_m'])
  })
})

describe('GET /reports: devices, order, the answer', () => {
  test('none named: every device the user reaches (unlink left out), ordered by alias then time; the JSON answer\'s shape', async () => {
    const answer = await report('summary')
    expect(Object.keys(answer)).toEqual(['rows', 'totals', 'generated_at', 'period', 'tz'])
    expect(answer.period).toEqual({ from: FROM, to: TO })
    expect(answer.tz).toBe('UTC')
    expect(answer.generated_at).toBe(Math.floor(world.clock.now() / 1000))
    expect(answer.rows.map((row) => row.alias)).toEqual(['Truck 1', 'Truck 2', 'Van 1'])
    expect(answer.rows[2]).toMatchObject({ device: ids.van1, distance_m: 0, trips: 0, stops: 0, first_fix: null, last_fix: null, max_speed_kmh: null })
    expect(answer.totals!.trips).toBe((answer.rows[0]!.trips as number) + (answer.rows[1]!.trips as number))

    const trips = await report('trips')
    expect(trips.rows.map((row) => row.alias)).toEqual([...trips.rows.map((row) => row.alias)].sort())
    const starts = trips.rows.filter((row) => row.alias === 'Truck 1').map((row) => row.start as number)
    expect(starts).toEqual([...starts].sort((a, b) => a - b))
    expect(new Set(trips.rows.map((row) => row.alias))).toEqual(new Set(['Truck 1', 'Truck 2']))
  })

  test('groups: the devices of the groups named that one reaches; an admin reaches the account\'s', async () => {
    expect((await report('summary', `&groups=${ids.vans}`, keys.bob)).rows.map((row) => row.device)).toEqual([ids.truck2, ids.van1])
    expect((await report('summary', `&groups=${ids.trucks}`, keys.dana)).rows.map((row) => row.device)).toEqual([ids.truck1, ids.truck2])
    // a device named and its group together count once
    expect((await report('summary', `&groups=${ids.trucks}&devices=${ids.truck2.toUpperCase()}`, keys.dana)).rows.map((row) => row.device)).toEqual([ids.truck1, ids.truck2])
    expect((await report('summary', '', keys.carol)).rows.map((row) => row.device)).toEqual([ids.globexCar])
  })

  test('a device or group out of reach is 404 naming it; a share token is 403', async () => {
    expect((await problem(await get(`/reports/trips?from=${FROM}&to=${TO}&devices=${ids.truck1}`, keys.bob), 404)).detail).toContain(ids.truck1)
    expect((await problem(await get(`/reports/trips?from=${FROM}&to=${TO}&groups=${ids.trucks}`, keys.bob), 404)).detail).toContain(ids.trucks)
    await problem(await get(`/reports/summary?from=${FROM}&to=${TO}&devices=${ids.globexCar}`, keys.dana), 404)
    await problem(await get(`/reports/summary?from=${FROM}&to=${TO}&groups=${ids.globexGroup}`, keys.dana), 404)
    await problem(await get(`/reports/summary?from=${FROM}&to=${TO}&devices=not-a-device`), 404)
    const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { token: string }
    await problem(await get(`/reports/trips?from=${FROM}&to=${TO}&devices=${ids.truck1}`, link.token), 403)
    // who is asking is decided before anything else is read
    await problem(await get('/reports/trips?format=csv&tz=Mars', link.token), 403)
    await problem(await world.call('GET', `/reports/trips?from=${FROM}&to=${TO}`), 401)
  })

  const invalid: [string, string, string][] = [
    ['an unknown kind', 'parking', `from=${FROM}&to=${TO}`],
    ['from is missing', 'trips', `to=${TO}`],
    ['from is after to', 'trips', `from=${TO}&to=${FROM}`],
    ['the period exceeds 31 days', 'summary', `from=${FROM}&to=${FROM + 31 * 86400 + 1}`],
    ['tz is not an IANA zone', 'summary', `from=${FROM}&to=${TO}&tz=Mars/Olympus`],
    ['tz is an offset', 'summary', `from=${FROM}&to=${TO}&tz=%2B01:00`],
    ['stop_threshold_time is negative', 'stops', `from=${FROM}&to=${TO}&stop_threshold_time=-1`],
    ['daily is not a boolean', 'summary', `from=${FROM}&to=${TO}&daily=yes`],
    ['gpx is asked of a trips report (routes only)', 'trips', `from=${FROM}&to=${TO}&format=gpx`],
    ['the format is unknown', 'trips', `from=${FROM}&to=${TO}&format=pdf`],
  ]
  test.each(invalid)('400 when %s', async (_name, kind, query) => {
    const body = await problem(await get(`/reports/${kind}?${query}`), 400)
    expect(body.detail.length).toBeGreaterThan(0)
  })

  test('a format a kind is not written in is named in the 400, by format= or by Accept; exactly 31 days is allowed', async () => {
    expect((await problem(await get(`/reports/trips?from=${FROM}&to=${TO}&format=kml`), 400)).detail).toContain('kml')
    expect((await problem(await get(`/reports/stops?from=${FROM}&to=${TO}`, keys.alice, { accept: 'application/gpx+xml' }), 400)).detail).toContain('gpx')
    expect((await get(`/reports/trips?from=${FROM}&to=${TO}&format=json`, keys.alice, { accept: 'text/csv' })).status).toBe(200)
    expect((await get(`/reports/trips?from=${FROM}&to=${FROM + 31 * 86400}`)).status).toBe(200)
  })
})

test('31 days are counted on the report zone\'s clocks: October in Paris (31 days and an hour of seconds) is one report; a second more is not, nor are the same seconds in UTC', async () => {
  const october = `from=${Date.parse('2025-10-01T00:00:00+02:00') / 1000}&to=${Date.parse('2025-10-31T23:59:59+01:00') / 1000}`
  for (const kind of ['trips', 'stops', 'summary', 'events', 'route']) {
    const paris = await get(`/reports/${kind}?${october}&tz=Europe/Paris`)
    expect(paris.status, await paris.clone().text()).toBe(200)
  }
  const utc = await problem(await get(`/reports/summary?${october}&tz=UTC`), 400)
  expect(utc.detail).toContain('at most 31 days')
  const longer = `from=${Date.parse('2025-10-01T00:00:00+02:00') / 1000}&to=${Date.parse('2025-11-01T00:00:01+01:00') / 1000}`
  expect((await problem(await get(`/reports/summary?${longer}&tz=Europe/Paris`), 400)).detail).toBe("/to: the period may span at most 31 days (2678400 s of Europe/Paris's clocks); got 2678401 s")
})

describe('GET /reports: files', () => {
  const period = `from=${FROM}&to=${TO}&tz=Europe/Paris`

  test('CSV by format= or by Accept: the JSON rows as an attachment named by kind and local days', async () => {
    const json = await report('trips', '&tz=Europe/Paris')
    for (const [query, headers] of [[`&format=csv`, {}], ['', { accept: 'text/csv' }]] as const) {
      const res = await get(`/reports/trips?${period}${query}`, keys.alice, headers)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
      expect(res.headers.get('content-disposition')).toBe('attachment; filename="trips-2025-11-24-2025-11-24.csv"')
      const lines = (await res.text()).trimEnd().split('\r\n')
      expect(lines[0]!.split(',').slice(0, 4)).toEqual(['device', 'alias', 'start', 'end'])
      // a row a trip, then the totals
      expect(lines.length).toBe(1 + json.rows.length + 1)
      expect(json.rows.length).toBeGreaterThan(0)
      // local times in the report's zone, with their offset
      expect(lines[1]).toContain('+01:00')
      expect(lines.at(-1)!.startsWith('total')).toBe(true)
    }
  })

  test('XLSX: a sheet of the trips, with its header and the totals', async () => {
    const json = await report('trips', '&tz=Europe/Paris')
    const res = await get(`/reports/trips?${period}&format=xlsx`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="trips-2025-11-24-2025-11-24.xlsx"')
    const { default: ExcelJS } = await import('exceljs')
    const workbook = new ExcelJS.Workbook()
    await workbook.xlsx.load(await res.arrayBuffer())
    const sheet = workbook.getWorksheet('trips')!
    expect(sheet.rowCount).toBe(1 + json.rows.length + 1)
    expect(sheet.getRow(2).getCell(5).value).toBe(json.rows[0]!.duration_s as number)
  })

  test('GPX and KML of a route: a track a device, a point a fix', async () => {
    const json = await report('route')
    const gpx = await get(`/reports/route?${period}&format=gpx`)
    expect(gpx.status).toBe(200)
    expect(gpx.headers.get('content-type')).toBe('application/gpx+xml')
    const gpxText = await gpx.text()
    expect(gpxText.match(/<trkpt /g)?.length).toBe(json.rows.length)
    expect(gpxText.match(/<trk>/g)?.length).toBe(new Set(json.rows.map((row) => row.device)).size)
    const kml = await get(`/reports/route?${period}`, keys.alice, { accept: 'application/vnd.google-earth.kml+xml' })
    expect(kml.status).toBe(200)
    expect(kml.headers.get('content-disposition')).toBe('attachment; filename="route-2025-11-24-2025-11-24.kml"')
    expect((await kml.text()).match(/<Placemark>/g)?.length).toBe(new Set(json.rows.map((row) => row.device)).size)
  })
})

describe('GET /reports: time zones', () => {
  test('tz defaults to the user\'s own (PATCH /me), else UTC; a query\'s tz wins', async () => {
    expect((await report('summary', '', keys.bob)).tz).toBe('UTC')
    expect((await world.call('PATCH', '/me', { token: keys.bob, body: { timezone: 'Asia/Tokyo' } })).status).toBe(200)
    expect((await report('summary', '', keys.bob)).tz).toBe('Asia/Tokyo')
    expect((await report('summary', '&tz=europe/dublin', keys.bob)).tz).toBe('Europe/Dublin')
    expect((await report('summary', '', keys.alice)).tz).toBe('UTC')
  })

  test('daily=true: a row per device and local day of tz, each day as the history API answers for that day', async () => {
    // 2025-11-24 23:00 in Tokyo (UTC+9) to an hour and a half after Truck 1's morning: one day in UTC, two in Tokyo
    const from = T0 - 2 * 3600
    const to = T0 + 5400
    const daily = async (tz: string) => {
      const res = await get(`/reports/summary?from=${from}&to=${to}&devices=${ids.truck1}&daily=true&tz=${tz}`)
      expect(res.status).toBe(200)
      return (await res.json()) as Answer
    }
    const utc = await daily('UTC')
    expect(utc.rows.map((row) => row.day)).toEqual(['2025-11-24'])
    const tokyo = await daily('Asia/Tokyo')
    expect(tokyo.rows.map((row) => row.day)).toEqual(['2025-11-24', '2025-11-25'])
    expect(Object.keys(tokyo.rows[0]!).slice(0, 3)).toEqual(['device', 'alias', 'day'])
    // Tokyo's 25th began at T0 - 3600: the first day is that hour before the morning
    const firstDay = (await (await get(`/devices/${ids.truck1}/history/travels?from=${from}&to=${T0 - 3601}`)).json()) as Travels
    const secondDay = (await (await get(`/devices/${ids.truck1}/history/travels?from=${T0 - 3600}&to=${to}`)).json()) as Travels
    expect(tokyo.rows[0]).toMatchObject({ distance_m: firstDay.total_distance, trips: firstDay.total_travels, driving_s: firstDay.total_duration })
    expect(tokyo.rows[1]).toMatchObject({ distance_m: secondDay.total_distance, trips: secondDay.total_travels, driving_s: secondDay.total_duration })
    expect(secondDay.total_travels).toBeGreaterThan(0)
    expect(tokyo.totals!.day).toBeNull()
    expect(tokyo.totals!.distance_m).toBe(firstDay.total_distance + secondDay.total_distance)
  })
})

describe('GET /reports: local days at the edges', () => {
  test('a day of 23 or 25 hours where the zone changes its clocks, and the last day of year 9999 ahead of UTC, answer in bounded rows', async () => {
    // Europe/Dublin left summer time at 2025-10-26 02:00 local (01:00 UTC): that day lasts 25 hours, so the
    // 72 hours from its midnight on the 25th (23:00 UTC the day before) end at 23:00 on the 27th: three local days, four in UTC
    const from = Date.UTC(2025, 9, 25, 0, 0, 0) / 1000 - 3600
    const days = async (tz: string) => {
      const res = await get(`/reports/summary?from=${from}&to=${from + 3 * 86400}&devices=${ids.truck1}&daily=true&tz=${tz}`)
      expect(res.status).toBe(200)
      return ((await res.json()) as Answer).rows.map((row) => row.day)
    }
    expect(await days('Europe/Dublin')).toEqual(['2025-10-25', '2025-10-26', '2025-10-27'])
    expect(await days('UTC')).toEqual(['2025-10-24', '2025-10-25', '2025-10-26', '2025-10-27'])
    // the latest second accepted, seen from UTC+14: the local day is in year 10000
    const last = 253_402_300_799
    const edge = await get(`/reports/summary?from=${last - 86400}&to=${last}&devices=${ids.truck1}&daily=true&tz=Pacific/Kiritimati`)
    expect(edge.status).toBe(200)
    expect(((await edge.json()) as Answer).rows.map((row) => row.day)).toEqual(['9999-12-31', '10000-01-01'])
  })
})

describe('GET /reports/events and /route', () => {
  test('events: every event of the devices, by alias then time, codes to keep some; addresses offline', async () => {
    const all = await report('events')
    expect(all.rows.map((row) => [row.alias, row.code, row.timestamp])).toEqual([
      ['Truck 1', 'sos', T0 + 650],
      ['Truck 1', 'overspeed', T0 + 700],
      ['Truck 2', 'sos', T0 + 3700],
    ])
    expect(all.rows[1]).toEqual({ device: ids.truck1, alias: 'Truck 1', timestamp: T0 + 700, code: 'overspeed', location: [48.85, 2.31], address: expect.any(String), context: { limit: 30 } })
    expect(all.rows[0]!.location).toBeNull()
    expect(all.rows[0]!.address).toBeNull()
    expect(all.totals).toBeNull()
    const sos = await report('events', '&codes=sos,geofence_enter')
    expect(sos.rows.map((row) => row.device)).toEqual([ids.truck1, ids.truck2])
  })

  test('route: every fix of the history route, each with the contract\'s fields, by alias then time', async () => {
    const answer = await report('route', `&devices=${ids.truck2},${ids.truck1}`)
    const one = await history<Route>(ids.truck1, 'route')
    const two = await history<Route>(ids.truck2, 'route')
    expect(answer.rows.map((row) => [row.device, row.timestamp])).toEqual([...one.points.map((p) => [ids.truck1, p.timestamp]), ...two.points.map((p) => [ids.truck2, p.timestamp])])
    expect(Object.keys(answer.rows[0]!)).toEqual(['device', 'alias', 'timestamp', 'latitude', 'longitude', 'speed_kmh', 'course', 'altitude_m', 'satellites', 'attributes'])
    expect(answer.rows[0]).toMatchObject({ alias: 'Truck 1', latitude: 48.85, longitude: 2.3, speed_kmh: 0 })
    expect(answer.totals).toBeNull()
  })
})
