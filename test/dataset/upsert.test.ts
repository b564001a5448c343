/** `import --upsert` replaces a record with what the file says, but a record keeps its creation time. */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { baseDataset, ids, keys, openWorld, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld()
})
afterEach(() => world.close())

const device = async (id: string) =>
  (await (await world.call('GET', `/devices/${id}`, { token: keys.alice })).json()) as { alias: string; created_at: string; updated_at: string }

test('a device upserted without created_at keeps its own; one given replaces it; updated_at is the import time', async () => {
  // truck2 was imported without created_at (the time of that import), truck1 with one
  const before = { truck1: await device(ids.truck1), truck2: await device(ids.truck2) }
  const later = Date.parse(before.truck2.created_at) + 86_400_000
  const [truck1, truck2] = baseDataset().devices
  const { created_at: _given, updated_at: _updated, ...truck1WithoutTimes } = truck1
  await world.importMore({ devices: [{ ...truck1WithoutTimes, alias: 'Truck One' }, { ...truck2, alias: 'Truck Two' }] }, { upsert: true, now: later })

  const after = { truck1: await device(ids.truck1), truck2: await device(ids.truck2) }
  expect(after.truck1).toMatchObject({ alias: 'Truck One', created_at: before.truck1.created_at, updated_at: new Date(later).toISOString() })
  expect(after.truck2).toMatchObject({ alias: 'Truck Two', created_at: before.truck2.created_at, updated_at: new Date(later).toISOString() })

  await world.importMore({ devices: [{ ...truck2, created_at: '2025-05-05T05:05:05Z' }] }, { upsert: true, now: later })
  expect((await device(ids.truck2)).created_at).toBe('2025-05-05T05:05:05.000Z')
})
