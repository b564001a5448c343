import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import ExcelJS from 'exceljs'
import { createGeocoder } from '../../src/geocode'
import { renderReport } from '../../src/reports/formats'
import { REPORT_COLUMNS } from '../../src/reports/service'
import type { ReportRow } from '../../src/reports/types'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

/**
 * Trips, stops and summaries over a fleet of 48 cars, each driving 30 short trips (a CSV of about 300 kB): the rows
 * of every car are its history API's, in alias order, and the files hold exactly the JSON's rows
 * and totals. Files are produced car by car as they are downloaded: while one is being read it
 * holds one of the user's history slots, and a download cancelled gives it back.
 */
const CARS = 48
const TRIPS_EACH = 30
const T0 = 1764000000
const FROM = T0 - 60
const TO = T0 + TRIPS_EACH * 1500 + 1200
const carId = (i: number) => `0f200000-0000-4000-8000-${String(i).padStart(12, '0')}`
const metresPerDegreeLon = (lat: number) => 111_320 * Math.cos((lat * Math.PI) / 180)

/** parked 10 minutes (a fix a minute), then 10 minutes east at 36 km/h (a fix every 20 s), TRIPS_EACH times, then parked */
function dayOf(car: number) {
  const lat = 48.5 + car * 0.02
  let lon = 2 + (car % 7) * 0.03
  const fixes: { device: string; timestamp: number; latitude: number; longitude: number; speed: number }[] = []
  let t = T0
  for (let trip = 0; trip <= TRIPS_EACH; trip++) {
    for (let k = 0; k < 10; k++, t += 60) fixes.push({ device: carId(car), timestamp: t, latitude: lat, longitude: lon, speed: 0 })
    if (trip === TRIPS_EACH) break
    for (let k = 0; k < 45; k++, t += 20) {
      lon += 200 / metresPerDegreeLon(lat)
      fixes.push({ device: carId(car), timestamp: t, latitude: lat, longitude: lon, speed: 36 })
    }
  }
  return fixes
}

let world: EngineWorld
beforeAll(async () => {
  const dataset = baseDataset()
  world = await openWorld(
    {
      ...dataset,
      devices: [
        ...dataset.devices,
        // aliases given out of order: rows follow the aliases, not the ids
        ...Array.from({ length: CARS }, (_, i) => ({
          id: carId(i),
          account: ids.globex,
          model: ids.bare,
          groups: [ids.globexGroup],
          alias: `Car ${String((i * 17) % CARS).padStart(2, '0')}`,
          serial: `S-F${i}`,
          state: 'off',
        })),
      ],
      positions: Array.from({ length: CARS }, (_, i) => dayOf(i)).flat(),
    },
    { geocoder: createGeocoder({}) },
  )
}, 60_000)
afterAll(() => world.close())

const get = (path: string) => world.call('GET', path, { token: keys.carol })
const period = `from=${FROM}&to=${TO}&groups=${ids.globexGroup}&tz=Europe/Dublin`

interface Answer {
  rows: ReportRow[]
  totals: ReportRow | null
  generated_at: number
  period: { from: number; to: number }
  tz: string
}

async function json(kind: string, extra = ''): Promise<Answer> {
  const res = await get(`/reports/${kind}?${period}${extra}`)
  expect(res.status).toBe(200)
  return (await res.json()) as Answer
}

/** the file the JSON answer's rows and totals make, written at once from an array */
async function fileOfJson(kind: 'trips' | 'stops' | 'summary', answer: Answer, format: 'csv' | 'xlsx', columns = REPORT_COLUMNS[kind]) {
  const file = renderReport({ kind, columns, rows: answer.rows, totals: answer.totals, period: answer.period, tz: answer.tz, generatedAt: answer.generated_at }, format)
  return new Uint8Array(await new Response(file.body).arrayBuffer())
}

async function sheetValues(bytes: Uint8Array): Promise<unknown[][]> {
  const workbook = new ExcelJS.Workbook()
  await workbook.xlsx.load(Buffer.from(bytes) as unknown as ArrayBuffer)
  const rows: unknown[][] = []
  workbook.worksheets[0]!.eachRow({ includeEmpty: true }, (row) => rows.push((row.values as unknown[]).slice(1)))
  return rows
}

describe('reports over many devices', () => {
  test("a trips report of 48 cars: each car's rows are its history travels, cars in alias order, totals their sums", async () => {
    const answer = await json('trips')
    const cars = Array.from({ length: CARS }, (_, i) => ({ id: carId(i), alias: `Car ${String((i * 17) % CARS).padStart(2, '0')}` })).sort((a, b) => (a.alias < b.alias ? -1 : 1))
    expect([...new Set(answer.rows.map((row) => row.alias))]).toEqual(cars.map((car) => car.alias))
    let distance = 0
    for (const car of cars) {
      const res = await get(`/devices/${car.id}/history/travels?from=${FROM}&to=${TO}`)
      const travels = (await res.json()) as { travels: { distance: number; duration: number; start: { timestamp: number } }[] }
      const rows = answer.rows.filter((row) => row.device === car.id)
      expect(travels.travels.length).toBeGreaterThanOrEqual(TRIPS_EACH - 1)
      expect(rows.map((row) => [row.start, row.distance_m, row.duration_s])).toEqual(travels.travels.map((t) => [t.start.timestamp, t.distance, t.duration]))
      for (const row of rows) distance += row.distance_m as number
    }
    expect(answer.totals!.distance_m).toBe(distance)
  })

  for (const kind of ['trips', 'stops', 'summary'] as const) {
    test(`the ${kind} CSV and XLSX of 48 cars hold the JSON answer's rows and totals, byte for byte (CSV) and cell for cell (XLSX)`, async () => {
      const answer = await json(kind)
      expect(answer.rows.length).toBeGreaterThanOrEqual(CARS)
      const csv = await get(`/reports/${kind}?${period}&format=csv`)
      expect(csv.status).toBe(200)
      expect(await csv.text()).toBe(new TextDecoder().decode(await fileOfJson(kind, answer, 'csv')))
      const xlsx = await get(`/reports/${kind}?${period}&format=xlsx`)
      expect(xlsx.status).toBe(200)
      const cells = await sheetValues(new Uint8Array(await xlsx.arrayBuffer()))
      expect(cells).toEqual(await sheetValues(await fileOfJson(kind, answer, 'xlsx')))
      // the header, a row a trip (stop, car), the totals last
      expect(cells).toHaveLength(answer.rows.length + 2)
      expect(cells.at(-1)![0]).toBe('Total')
    })
  }

  test('a daily summary of 48 cars as CSV holds the JSON answer (a row per car and local day)', async () => {
    const answer = await json('summary', '&daily=true')
    const csv = await get(`/reports/summary?${period}&daily=true&format=csv`)
    const columns = [REPORT_COLUMNS.summary[0]!, REPORT_COLUMNS.summary[1]!, { key: 'day', type: 'day' as const, title: 'Day' }, ...REPORT_COLUMNS.summary.slice(2)]
    expect(await csv.text()).toBe(new TextDecoder().decode(await fileOfJson('summary', answer, 'csv', columns)))
  })

  test("a file being downloaded holds one of the user's two history slots until it is read or cancelled", async () => {
    const downloads = []
    for (const format of ['csv', 'xlsx']) {
      const download = await get(`/reports/trips?${period}&format=${format}`)
      expect(download.status).toBe(200)
      const reader = download.body!.getReader()
      expect((await reader.read()).done).toBe(false)
      downloads.push(reader)
    }
    // two downloads begun and not finished hold both slots: a third request is refused
    const refused = await problem(await get(`/devices/${carId(1)}/history/travels?from=${FROM}&to=${TO}`), 429)
    expect(refused.detail).toContain('history requests')
    await downloads[0]!.cancel()
    expect((await get(`/devices/${carId(1)}/history/travels?from=${FROM}&to=${TO}`)).status).toBe(200)
    // the other, read to the end, gives its slot back too
    while (!(await downloads[1]!.read()).done);
    // downloads cancelled before their first byte give their slots back too
    for (const format of ['csv', 'xlsx']) {
      const unread = await get(`/reports/stops?${period}&format=${format}`)
      expect(unread.status).toBe(200)
      await unread.body!.cancel()
    }
    // so both slots are free again: two downloads begin, a third request waits its turn
    const again = await Promise.all(['csv', 'xlsx'].map((format) => get(`/reports/trips?${period}&format=${format}`)))
    for (const res of again) expect(res.status).toBe(200)
    await problem(await get(`/reports/summary?${period}`), 429)
    for (const res of again) await res.body!.cancel()
    const served = await get(`/reports/summary?${period}`)
    expect(served.status).toBe(200)
    expect(((await served.json()) as Answer).rows).toHaveLength(CARS + 1)
  })
})
