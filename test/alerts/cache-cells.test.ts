// The geofence cache answers "which geofences contain this point" through a memo of 0.01° cells
// (a fix costs a Map lookup, not an index search): it must give the index's answer exactly,
// across cell edges, for areas spanning many cells and across the antimeridian.
import { afterEach, expect, test } from 'bun:test'
import { createGeofenceCache } from '../../src/alerts/cache'
import { type EngineWorld, ids, keys, openWorld } from '../support/world'

let world: EngineWorld
afterEach(() => world.close())

test('the cell memo finds the same geofences as the index, at and around cell edges', async () => {
  world = await openWorld()
  const areas = [
    { type: 'Circle', center: [48.85, 2.35], radius: 10 },
    { type: 'Circle', center: [48.855, 2.355], radius: 3000 },
    { type: 'Polygon', coordinates: [[[2.3, 48.8], [2.4, 48.8], [2.4, 48.9], [2.3, 48.9], [2.3, 48.8]]] },
    { type: 'Polygon', coordinates: [[[179.99, -16.02], [-179.99, -16.02], [-179.99, -16], [179.99, -16], [179.99, -16.02]]] },
  ]
  for (const [i, area] of areas.entries()) {
    const res = await world.call('POST', '/geofences', { token: keys.dana, body: { name: `G${i}`, area } })
    expect(res.status).toBe(201)
  }
  // built as the rules build it, inside ingest's unit of work for one of the account's devices
  // (on PostgreSQL the unit reads the account's geofences ahead)
  const cache = createGeofenceCache({ reads: world.stores.geofenceCache, clock: world.clock })
  const account = await world.ingestUnit([await world.deviceKey(ids.truck1)], () => cache.forAccount(ids.acme))
  const points: [number, number][] = [[-16.01, 180], [-16.01, -180], [-16.01, 179.995], [-16.01, -179.995]]
  for (let lat = 48.79; lat <= 48.91; lat += 0.0013) for (let lon = 2.29; lon <= 2.41; lon += 0.0017) points.push([lat, lon])
  // exactly on cell edges too
  for (let k = 0; k <= 12; k++) points.push([48.79 + k * 0.01, 2.35], [48.85, 2.29 + k * 0.01])
  let inside = 0
  for (const [lat, lon] of points) {
    const expected = account.index.containing(lat, lon).map((g) => g.id)
    expect([lat, lon, account.containing(lat, lon).map((g) => g.id)]).toEqual([lat, lon, expected])
    inside += expected.length
  }
  expect(inside).toBeGreaterThan(points.length / 2) // the points are mostly inside some
})
