/**
 * Geofences have limits (issue 19, item 5), through the API: an account holds at most
 * MAX_GEOFENCES_PER_ACCOUNT geofences (1,000 by default; one more is 409 and stores nothing), a
 * polygon at most MAX_GEOFENCE_VERTICES points (1,000 by default; more is 400 naming the field),
 * and a geofence stored under a higher limit is kept and keeps working as it is.
 */
import { afterEach, expect, test } from 'bun:test'
import { createGeofenceCache } from '../../src/alerts/cache'
import { createAlertRules } from '../../src/alerts/rules'
import { createApp } from '../../src/app'
import { loadConfig } from '../../src/config'
import { sql } from 'drizzle-orm'
import { baseDataset, type EngineWorld, ids, keys, openWorld, problem } from '../support/world'

let world: EngineWorld
afterEach(() => world.close())

const circle = (i: number) => ({ type: 'Circle', center: [48 + (i % 100) * 0.01, 2 + Math.floor(i / 100) * 0.01], radius: 100 })
/** a polygon of `points` points in all: a regular ring around (lat, lon), its first point repeated at the end */
function polygon(points: number, lat = 48.85, lon = 2.35) {
  const corners = Array.from({ length: points - 1 }, (_, k) => {
    const angle = (k / (points - 1)) * 2 * Math.PI
    return [lon + 0.01 * Math.cos(angle), lat + 0.01 * Math.sin(angle)]
  })
  return { type: 'Polygon', coordinates: [[...corners, corners[0]!]] }
}

interface Listed {
  id: string
  name: string
  area: { coordinates?: number[][][] }
}
const list = async (w: EngineWorld, token = keys.dana) => (await (await w.call('GET', '/geofences?limit=1000', { token })).json()) as Listed[]

test('an account holds at most 1,000 geofences by default: one more is 409 and stores nothing, another account is not held back, a deletion makes room', async () => {
  world = await openWorld()
  for (let i = 0; i < 1000; i++) {
    const res = await world.call('POST', '/geofences', { token: keys.dana, body: { name: `G${String(i).padStart(4, '0')}`, area: circle(i) } })
    expect(res.status).toBe(201)
  }
  const refused = await problem(await world.call('POST', '/geofences', { token: keys.dana, body: { name: 'One more', area: circle(0) } }), 409)
  expect(refused.detail).toBe('The account has 1,000 geofences, the most it may have (1,000, MAX_GEOFENCES_PER_ACCOUNT): delete one first')
  const stored = await list(world)
  expect(stored).toHaveLength(1000)
  expect(stored.some((g) => g.name === 'One more')).toBe(false)
  expect(await world.count('audit_log', sql`object_type = 'geofence' AND action = 'create'`)).toBe(1000)

  // the limit is each account's: Globex's admin still adds one
  expect((await world.call('POST', '/geofences', { token: keys.erin, body: { name: 'Depot', area: circle(0) } })).status).toBe(201)
  // a change to a geofence of a full account is no new one
  expect((await world.call('PATCH', `/geofences/${stored[0]!.id}`, { token: keys.dana, body: { name: 'Renamed', area: circle(5) } })).status).toBe(200)
  expect((await world.call('DELETE', `/geofences/${stored[1]!.id}`, { token: keys.dana })).status).toBe(204)
  expect((await world.call('POST', '/geofences', { token: keys.dana, body: { name: 'One more', area: circle(0) } })).status).toBe(201)
  await problem(await world.call('POST', '/geofences', { token: keys.dana, body: { name: 'Two more', area: circle(0) } }), 409)
  // 1,000 creations over the API, each its own unit of work: seconds on PostgreSQL on a busy machine
}, 30_000)

test('MAX_GEOFENCES_PER_ACCOUNT and MAX_GEOFENCE_VERTICES come from the environment; a polygon with more points is 400 naming the field, nothing changed', async () => {
  world = await openWorld(baseDataset(), { config: loadConfig({ MAX_GEOFENCES_PER_ACCOUNT: '2', MAX_GEOFENCE_VERTICES: '50' }) })
  const tooMany = await problem(await world.call('POST', '/geofences', { token: keys.dana, body: { name: 'Yard', area: polygon(51) } }), 400)
  expect(tooMany.errors).toEqual([{ path: '/area/coordinates', message: 'holds 51 points; at most 50 (all rings together)' }])
  expect(await list(world)).toEqual([])

  const created = await world.call('POST', '/geofences', { token: keys.dana, body: { name: 'Yard', area: polygon(50) } })
  expect(created.status).toBe(201)
  const yard = (await created.json()) as Listed
  const patched = await problem(await world.call('PATCH', `/geofences/${yard.id}`, { token: keys.dana, body: { name: 'Bigger yard', area: polygon(51) } }), 400)
  expect(patched.errors![0]!.path).toBe('/area/coordinates')
  const [kept] = await list(world)
  expect([kept!.name, kept!.area.coordinates![0]!.length]).toEqual(['Yard', 50])

  expect((await world.call('POST', '/geofences', { token: keys.dana, body: { name: 'Tower', area: circle(1) } })).status).toBe(201)
  const full = await problem(await world.call('POST', '/geofences', { token: keys.dana, body: { name: 'Gate', area: circle(2) } }), 409)
  expect(full.detail).toContain('the most it may have (2, MAX_GEOFENCES_PER_ACCOUNT)')
  expect((await list(world)).map((g) => g.name)).toEqual(['Tower', 'Yard'])
})

test('the limits are checked at start: a bad value stops the server naming the variable', () => {
  expect(() => loadConfig({ MAX_GEOFENCES_PER_ACCOUNT: '0' })).toThrow('MAX_GEOFENCES_PER_ACCOUNT must be an integer from 1 to 100000, got "0"')
  expect(() => loadConfig({ MAX_GEOFENCE_VERTICES: '3' })).toThrow('MAX_GEOFENCE_VERTICES must be an integer from 4 to 10000, got "3"')
  expect(() => loadConfig({ MAX_GEOFENCE_VERTICES: 'many' })).toThrow('MAX_GEOFENCE_VERTICES')
  const defaults = loadConfig({})
  expect([defaults.maxGeofencesPerAccount, defaults.maxGeofenceVertices]).toEqual([1000, 1000])
})

test('a geofence stored under a higher limit is kept as it is: listed, renamed, and still deriving events', async () => {
  // drawn while the server allowed 1,000 points, then the operator lowered the limit to 50
  world = await openWorld()
  const drawn = await world.call('POST', '/geofences', { token: keys.dana, body: { name: 'Port', area: polygon(800) } })
  expect(drawn.status).toBe(201)
  const port = (await drawn.json()) as Listed
  const lowered = createApp({ stores: world.storesBeside(), clock: world.clock, config: loadConfig({ MAX_GEOFENCE_VERTICES: '50' }) })
  const call = (method: string, path: string, body?: unknown) =>
    lowered.handle(new Request(`http://localhost${path}`, { method, headers: { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) }))

  const read = (await (await call('GET', `/geofences/${port.id}`)).json()) as Listed
  expect(read.area.coordinates![0]).toHaveLength(800)
  const renamed = await call('PATCH', `/geofences/${port.id}`, { name: 'Old port', speed_limit: 30 })
  expect(renamed.status).toBe(200)
  expect(((await renamed.json()) as Listed).area.coordinates![0]).toHaveLength(800)
  expect((await call('PATCH', `/geofences/${port.id}`, { area: polygon(800) })).status).toBe(400)

  const rules = createAlertRules({ states: world.stores.ruleStates, clock: world.clock, geofences: createGeofenceCache({ reads: world.stores.geofenceCache, clock: world.clock }) })
  const device = await world.deviceKey(ids.truck1)
  const events = await world.ingestUnit([device], () => rules.onFixes(device, [{ timestamp: 1_795_000_000, latitude: 48.85, longitude: 2.35, speed: 40, valid: true }]))
  expect(events.map((e) => [e.alarmCode, e.context])).toEqual([
    ['geofence_enter', { geofence: port.id, name: 'Old port' }],
    ['overspeed', { limit: 30, speed: 40, geofence: port.id }],
  ])
})
