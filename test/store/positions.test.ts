/**
 * The positions store is the one encoding of a fix, whoever writes it: a 0/0 placeholder imported
 * from a file is kept but never becomes the device's location, as one sent by a device is not.
 */
import { afterEach, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createPositionStore, encodePosition, FLAG_UNLOCATABLE } from '../../src/store/positions'
import { baseDataset, ids, keys, makeWorld, openWorld, testEngine, type EngineWorld, type World } from '../support/world'

let world: World | undefined
let engineWorld: EngineWorld | undefined
afterEach(async () => {
  world?.close()
  world = undefined
  await engineWorld?.close()
  engineWorld = undefined
})

const NOW = Date.UTC(2026, 10, 25, 12) / 1000

test('an imported 0/0 is stored flagged; the device is located at its newest real fix', async () => {
  const world = (engineWorld = await openWorld())
  const dataset = baseDataset()
  // Van 1 never reported: its location comes from the imported positions
  await world.importMore({
    ...dataset,
    positions: [
      { device: ids.van1, timestamp: NOW - 60, latitude: 48.85, longitude: 2.35, speed: 12.5 },
      { device: ids.van1, timestamp: NOW - 30, latitude: 0, longitude: 0 },
    ],
  }, { upsert: true })
  const flags = await world.execute<{ ts: number; flags: number }>(sql`SELECT ts, flags FROM positions ORDER BY ts`)
  expect(flags.map(({ ts, flags }) => ({ ts: Number(ts), flags: Number(flags) }))).toEqual([
    { ts: NOW - 60, flags: 0 },
    { ts: NOW - 30, flags: FLAG_UNLOCATABLE },
  ])
  const van = (await (await world.call('GET', `/devices/${ids.van1}`, { token: keys.alice })).json()) as { location: unknown }
  expect(van.location).toEqual([48.85, 2.35])
})

// SQLite's own positions store; on PostgreSQL the same encodePosition rows are written by the ingest store (test/store/postgres/ingest.test.ts)
test.skipIf(testEngine !== 'sqlite')('encoding: 1e-7 degrees, 0.1 km/h, whole degrees and metres; the newest valid fix decodes back', () => {
  world = makeWorld()
  const store = createPositionStore(world.database.sqlite)
  const key = world.database.sqlite.query<{ key: number }, [string]>('SELECT key FROM devices WHERE id = ?').get(ids.van1)!.key
  const row = encodePosition({ timestamp: NOW + 0.9, latitude: 52.6291512, longitude: -8.6617461, speed: 45.06, course: 269.6, altitude: 20.4, satellites: 9 }, true)
  expect(row).toEqual({ ts: NOW, lat: 526291512, lon: -86617461, speed: 451, course: 270, altitude: 20, satellites: 9, flags: 0, attributes: null })
  expect(store.insert(key, row)).toBe(true)
  expect(store.insert(key, row)).toBe(false) // a re-sent (device, ts) is not a new row
  expect(store.insert(key, encodePosition({ timestamp: NOW + 10, latitude: 1, longitude: 1, attributes: { valid: false } }, false))).toBe(true)
  expect(store.newestValid(key)).toEqual({ timestamp: NOW, latitude: 52.6291512, longitude: -8.6617461, speed: 45.1, course: 270 })
})
