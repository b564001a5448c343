import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createGeocoder } from '../../src/geocode'
import { baseDataset, ids, keys, openWorld, type EngineWorld } from '../support/world'

/**
 * The fields read from the fixes' attributes (contracts/reports.md): stops' `engine_on_s` from the
 * `ignition` attribute, the summary's `odometer_start_m`/`odometer_end_m` from `odometer` (metres).
 * Truck 1 and Truck 2 drive the same hand-made track (parked at A, east to B, a 20-minute stop, north
 * to C, parked); only Truck 1's fixes carry ignition and odometer. Ignition changes are placed well
 * inside the stops, so the seconds on do not depend on where the detection puts a stop's ends.
 */
const T0 = 1764000000
const LAT = 48.85
const LON = 2.3
const metresPerDegreeLon = 111_320 * Math.cos((LAT * Math.PI) / 180)
const B_LON = LON + 6000 / metresPerDegreeLon
const C_LAT = LAT + 3000 / 111_320

function track() {
  const fixes: { timestamp: number; latitude: number; longitude: number; speed: number }[] = []
  for (let t = 0; t <= 600; t += 60) fixes.push({ timestamp: T0 + t, latitude: LAT, longitude: LON, speed: 0 })
  for (let i = 1; i <= 60; i++) fixes.push({ timestamp: T0 + 600 + i * 10, latitude: LAT, longitude: LON + (i * 100) / metresPerDegreeLon, speed: 36 })
  for (let t = 1260; t <= 2400; t += 60) fixes.push({ timestamp: T0 + t, latitude: LAT, longitude: B_LON, speed: 0 })
  for (let i = 1; i <= 30; i++) fixes.push({ timestamp: T0 + 2400 + i * 10, latitude: LAT + (i * 100) / 111_320, longitude: B_LON, speed: 36 })
  for (let t = 2760; t <= 3300; t += 60) fixes.push({ timestamp: T0 + t, latitude: C_LAT, longitude: B_LON, speed: 0 })
  return fixes
}

/** Truck 1's attributes by seconds after T0 (fixes without an entry carry none). */
const TRUCK1_ATTRIBUTES: Record<number, object> = {
  0: { ignition: false },
  600: { ignition: true, odometer: 1_000_000 },
  1200: { ignition: false, odometer: 1_006_000 },
  1500: { ignition: false, gsm_signal: 3 }, // a repeat: changes nothing
  1800: { ignition: true },
  1980: { ignition: false, odometer: 1_006_000 },
  2880: { ignition: true },
  2940: { ignition: false },
  3060: { ignition: true },
  3120: { ignition: false },
  3240: { odometer: 'unknown' }, // not a number: not an odometer reading
  3300: { odometer: 1_009_250.5 },
}
/** Truck 2 reports attributes, but no boolean ignition and no odometer. */
const TRUCK2_ATTRIBUTES: Record<number, object> = { 1800: { ignition: 'on', gsm_signal: 4 }, 2880: { odometer_km: 12 } }

const FROM = T0 - 60
const TO = T0 + 3400

let world: EngineWorld
beforeAll(async () => {
  const fixes = track()
  world = await openWorld(
    { ...baseDataset(), positions: [...fixes.map((f) => ({ device: ids.truck1, ...f })), ...fixes.map((f) => ({ device: ids.truck2, ...f }))] },
    { geocoder: createGeocoder({}) },
  )
  for (const [device, attributes] of [[ids.truck1, TRUCK1_ATTRIBUTES], [ids.truck2, TRUCK2_ATTRIBUTES]] as const) {
    const key = await world.deviceKey(device)
    for (const [at, value] of Object.entries(attributes)) {
      await world.execute(sql`UPDATE positions SET attributes = ${JSON.stringify(value)} WHERE device = ${key} AND ts = ${T0 + Number(at)}`)
    }
  }
})
afterAll(() => world.close())

type Row = Record<string, unknown>
async function report(kind: string, query: string): Promise<{ rows: Row[]; totals: Row | null }> {
  const res = await world.call('GET', `/reports/${kind}?${query}`, { token: keys.alice })
  if (res.status !== 200) throw new Error(`${res.status}: ${await res.text()}`)
  return (await res.json()) as { rows: Row[]; totals: Row | null }
}
const near = (row: Row, lat: number, lon: number) => {
  const [rowLat, rowLon] = row.location as [number, number]
  return Math.abs(rowLat - lat) < 0.0005 && Math.abs(rowLon - lon) < 0.0005
}

describe('stops: engine_on_s', () => {
  test('the seconds of each stop during which the fixes said ignition on; null for a device that reports none', async () => {
    const { rows, totals } = await report('stops', `devices=${ids.truck1},${ids.truck2}&from=${FROM}&to=${TO}`)
    const truck1 = rows.filter((row) => row.device === ids.truck1)
    const atB = truck1.find((row) => near(row, LAT, B_LON))
    const atC = truck1.find((row) => near(row, C_LAT, B_LON))
    expect(atB?.engine_on_s).toBe(180)
    expect(atC?.engine_on_s).toBe(120)
    const truck2 = rows.filter((row) => row.device === ids.truck2)
    expect(truck2.length).toBe(truck1.length)
    expect(truck2.map((row) => row.engine_on_s)).toEqual(truck2.map(() => null))
    // every stop of Truck 1 has a figure (a stop at A, if detected, had the ignition off)
    for (const row of truck1) if (!near(row, LAT, B_LON) && !near(row, C_LAT, B_LON)) expect(row.engine_on_s).toBe(0)
    expect(totals?.engine_on_s).toBe(300)
  })

  test('a window that starts with the ignition unknown counts only what was reported inside it', async () => {
    // from T0+1900: the reading at 1800 (on) is outside; the first inside is 1980 (off)
    const { rows } = await report('stops', `devices=${ids.truck1}&from=${T0 + 1900}&to=${TO}`)
    const atB = rows.find((row) => near(row, LAT, B_LON))
    expect(atB?.engine_on_s).toBe(0)
    expect(rows.find((row) => near(row, C_LAT, B_LON))?.engine_on_s).toBe(120)
  })

  test('in CSV, a column of its own, empty when not reported', async () => {
    const res = await world.call('GET', `/reports/stops?devices=${ids.truck2}&from=${FROM}&to=${TO}&format=csv`, { token: keys.alice })
    expect(res.status).toBe(200)
    const [header, first] = (await res.text()).split('\r\n')
    expect(header!.split(',').at(-1)).toBe('engine_on_s')
    expect(first!.endsWith(',')).toBe(true)
  })
})

describe('summary: odometer_start_m / odometer_end_m', () => {
  test('the first and last numeric odometer reported in the window, in metres; null when none', async () => {
    const { rows, totals } = await report('summary', `devices=${ids.truck1},${ids.truck2}&from=${FROM}&to=${TO}`)
    const byDevice = Object.fromEntries(rows.map((row) => [row.device, row]))
    expect(byDevice[ids.truck1]).toMatchObject({ odometer_start_m: 1_000_000, odometer_end_m: 1_009_250.5 })
    expect(byDevice[ids.truck2]).toMatchObject({ odometer_start_m: null, odometer_end_m: null })
    expect(totals).toMatchObject({ odometer_start_m: null, odometer_end_m: null })
  })

  test('a narrower window reads its own first and last', async () => {
    const { rows } = await report('summary', `devices=${ids.truck1}&from=${T0 + 900}&to=${T0 + 2500}`)
    expect(rows[0]).toMatchObject({ odometer_start_m: 1_006_000, odometer_end_m: 1_006_000 })
  })

  test('each local day with daily=true: a day without a reading has none', async () => {
    // T0 is 16:00 UTC, midnight in Asia/Shanghai (+8): the first local day holds a minute without fixes
    const { rows } = await report('summary', `devices=${ids.truck1}&from=${FROM}&to=${TO}&daily=true&tz=Asia/Shanghai`)
    expect(rows.map((row) => [row.day, row.odometer_start_m, row.odometer_end_m])).toEqual([
      ['2025-11-24', null, null],
      ['2025-11-25', 1_000_000, 1_009_250.5],
    ])
  })
})
