/**
 * /geofences: an admin manages the account's geofences, any user of the account reads them;
 * bad geometry is 400 naming what is wrong; nothing crosses accounts.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
let changed: string[]
beforeEach(async () => {
  changed = []
  world = await openWorld(undefined, { onGeofencesChanged: (account) => changed.push(account) })
})
afterEach(() => world.close())

interface GeofenceBody {
  id: string
  name: string
  area: unknown
  groups: string[]
  speed_limit: number | null
  created_at: string
}

const depot = { type: 'Polygon', coordinates: [[[2.29, 48.85], [2.3, 48.85], [2.3, 48.86], [2.29, 48.86], [2.29, 48.85]]] }
const tower = { type: 'Circle', center: [48.8584, 2.2945], radius: 250 }

const count = (table: string) => world.count(table)
const written = async () => [await count('geofences'), await count('audit_log')]

async function create(body: object, token = keys.dana): Promise<GeofenceBody> {
  const res = await world.call('POST', '/geofences', { token, body })
  expect(res.status).toBe(201)
  const created = (await res.json()) as GeofenceBody
  expect(res.headers.get('location')).toBe(`/geofences/${created.id}`)
  return created
}

async function shareToken(): Promise<string> {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
  return ((await res.json()) as { token: string }).token
}

describe('POST /geofences', () => {
  test('an admin adds a polygon and a circle; the answer is the contract shape', async () => {
    const created = await create({ name: 'Depot', area: depot, groups: [ids.trucks], speed_limit: 30 })
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Depot',
      area: depot,
      groups: [ids.trucks],
      speed_limit: 30,
      created_at: new Date(world.clock.now()).toISOString(),
    })
    const circle = await create({ name: 'Tower', area: tower })
    expect(circle).toMatchObject({ area: tower, groups: [], speed_limit: null })
    expect(changed).toEqual([ids.acme, ids.acme])
  })

  test('a polygon crossing the antimeridian and a circle at a pole are accepted', async () => {
    await create({ name: 'Fiji', area: { type: 'Polygon', coordinates: [[[177, -19], [-179, -19], [-179, -16], [177, -16], [177, -19]]] } })
    await create({ name: 'Pole', area: { type: 'Circle', center: [90, 0], radius: 100_000 } })
  })

  test('bad geometry is 400 naming what is wrong, and writes nothing', async () => {
    const before = await written()
    const refuse = async (area: unknown) => {
      const body = await problem(await world.call('POST', '/geofences', { token: keys.dana, body: { name: 'Bad', area } }), 400)
      return body.errors?.[0]
    }
    expect(await refuse({ type: 'Polygon', coordinates: [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]] })).toEqual({
      path: '/area/coordinates/0',
      message: 'is self-intersecting: the edge from point 0 to point 1 meets the edge from point 2 to point 3',
    })
    expect(await refuse({ type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1]]] })).toEqual({
      path: '/area/coordinates/0',
      message: 'is not closed: its last point [0, 1] must repeat its first [0, 0]',
    })
    expect((await refuse({ ...tower, radius: 5 }))?.path).toBe('/area/radius')
    expect((await refuse({ ...tower, radius: 100_001 }))?.path).toBe('/area/radius')
    expect((await refuse({ ...tower, center: [2.2945, 190] }))).toEqual({ path: '/area/center/1', message: 'longitude 190 is outside -180 to 180' })
    expect((await refuse({ type: 'Circle', center: [48, 2] }))?.path).toBe('/area/radius')
    expect((await refuse({ type: 'Square' }))?.path).toBe('/area/type')
    expect((await refuse({ ...tower, colour: 'red' }))?.path).toBe('/area/colour')
    const points = Array.from({ length: 1001 }, (_, i) => [Math.cos(i / 160), Math.sin(i / 160)])
    expect((await refuse({ type: 'Polygon', coordinates: [points] }))?.path).toMatch(/^\/area\/coordinates/)
    expect(await refuse('somewhere')).toMatchObject({ path: '/area' })
    expect(await written()).toEqual(before)
  })

  test('other fields: unknown is 400, speed_limit range, name, groups of the account only', async () => {
    const before = await written()
    const post = (body: object) => world.call('POST', '/geofences', { token: keys.dana, body })
    expect((await problem(await post({ name: 'X', area: tower, colour: 'red' }), 400)).detail).toContain('colour')
    expect((await problem(await post({ name: 'X', area: tower, speed_limit: 0 }), 400)).errors?.[0]?.path).toBe('/speed_limit')
    expect((await problem(await post({ name: 'X', area: tower, speed_limit: 1001 }), 400)).errors?.[0]?.path).toBe('/speed_limit')
    expect((await problem(await post({ name: '', area: tower }), 400)).errors?.[0]?.path).toBe('/name')
    expect((await problem(await post({ name: ' X', area: tower }), 400)).errors?.[0]?.path).toBe('/name')
    expect((await problem(await post({ area: tower }), 400)).detail).toContain('name')
    expect((await problem(await post({ name: 'X', area: tower, groups: [ids.trucks, ids.trucks] }), 400)).errors?.[0]?.path).toBe('/groups/1')
    expect((await problem(await post({ name: 'X', area: tower, groups: ['nope'] }), 400)).errors?.[0]?.path).toBe('/groups/0')
    // another account's group is as unknown as one that does not exist
    const foreign = await problem(await post({ name: 'X', area: tower, groups: [ids.trucks, ids.globexGroup] }), 404)
    expect(foreign.errors).toEqual([{ path: '/groups/1', message: 'no group with this id in your account' }])
    expect(await written()).toEqual(before)
  })

  test('a member, a share token, no credentials: 403, 403, 401', async () => {
    const before = await written()
    await problem(await world.call('POST', '/geofences', { token: keys.alice, body: { name: 'X', area: tower } }), 403)
    await problem(await world.call('POST', '/geofences', { token: await shareToken(), body: { name: 'X', area: tower } }), 403)
    await problem(await world.call('POST', '/geofences', { body: { name: 'X', area: tower } }), 401)
    expect(await written()).toEqual(before)
  })
})

describe('reading', () => {
  test('any user of the account lists every geofence by name; another account sees none of them', async () => {
    const b = await create({ name: 'B', area: tower, groups: [ids.trucks] })
    const a = await create({ name: 'A', area: depot })
    const g = await create({ name: 'Globex yard', area: tower }, keys.erin)
    for (const token of [keys.dana, keys.alice, keys.bob]) {
      const res = await world.call('GET', '/geofences', { token })
      expect(res.status).toBe(200)
      expect(((await res.json()) as GeofenceBody[]).map((x) => x.id)).toEqual([a.id, b.id])
    }
    expect(await (await world.call('GET', '/geofences', { token: keys.carol })).json()).toEqual([g])
    expect(await (await world.call('GET', '/geofences?limit=1&offset=1', { token: keys.bob })).json()).toEqual([b])
    expect(await (await world.call('GET', '/geofences?offset=2', { token: keys.bob })).json()).toEqual([])
    expect((await problem(await world.call('GET', '/geofences?limit=0', { token: keys.bob }), 400)).errors?.[0]?.path).toBe('/limit')
    expect(await (await world.call('GET', `/geofences/${b.id}`, { token: keys.bob })).json()).toEqual(b)
    expect(await (await world.call('GET', `/geofences/${b.id.toUpperCase()}`, { token: keys.bob })).json()).toEqual(b)
  })

  test("another account's geofence is 404; a share token 403; no credentials 401", async () => {
    const a = await create({ name: 'A', area: depot })
    await problem(await world.call('GET', `/geofences/${a.id}`, { token: keys.erin }), 404)
    await problem(await world.call('GET', `/geofences/${a.id}`, { token: keys.carol }), 404)
    await problem(await world.call('GET', `/geofences/${crypto.randomUUID()}`, { token: keys.dana }), 404)
    await problem(await world.call('GET', '/geofences/not-a-uuid', { token: keys.dana }), 400)
    const token = await shareToken()
    await problem(await world.call('GET', '/geofences', { token }), 403)
    await problem(await world.call('GET', `/geofences/${a.id}`, { token }), 403)
    await problem(await world.call('GET', '/geofences'), 401)
  })
})

describe('PATCH and DELETE /geofences/{id}', () => {
  test('an admin changes what is sent; speed_limit null removes it; audited with the request id', async () => {
    const a = await create({ name: 'A', area: depot, speed_limit: 30, groups: [ids.trucks] })
    world.clock.advance(1000)
    const res = await world.call('PATCH', `/geofences/${a.id}`, { token: keys.dana, body: { name: 'Depot', area: tower, speed_limit: null, groups: [] } })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ...a, name: 'Depot', area: tower, speed_limit: null, groups: [] })
    const unchanged = await world.call('PATCH', `/geofences/${a.id}`, { token: keys.dana, body: {} })
    expect(await unchanged.json()).toEqual({ ...a, name: 'Depot', area: tower, speed_limit: null, groups: [] })
    const entries = (await (await world.call('GET', '/audit', { token: keys.dana })).json()) as { action: string; object_type: string; object_id: string; request_id: string | null }[]
    expect(entries.filter((e) => e.object_type === 'geofence').map((e) => [e.action, e.object_id])).toEqual([
      ['update', a.id],
      ['create', a.id],
    ])
    expect(entries[0]!.request_id).toBe(res.headers.get('x-request-id'))
    expect(changed).toEqual([ids.acme, ids.acme])
  })

  test('bad input changes nothing', async () => {
    const a = await create({ name: 'A', area: depot })
    const before = await written()
    const patch = (body: object) => world.call('PATCH', `/geofences/${a.id}`, { token: keys.dana, body })
    expect((await problem(await patch({ name: 'B', area: { ...tower, radius: 1 } }), 400)).errors?.[0]?.path).toBe('/area/radius')
    expect((await problem(await patch({ colour: 'red' }), 400)).detail).toContain('colour')
    await problem(await patch({ name: 'B', groups: [ids.globexGroup] }), 404)
    expect(await written()).toEqual(before)
    expect(await (await world.call('GET', `/geofences/${a.id}`, { token: keys.dana })).json()).toEqual(a)
  })

  test('members, share tokens and other accounts cannot change or delete', async () => {
    const a = await create({ name: 'A', area: depot })
    const before = await written()
    const token = await shareToken()
    await problem(await world.call('PATCH', `/geofences/${a.id}`, { token: keys.alice, body: { name: 'B' } }), 403)
    await problem(await world.call('DELETE', `/geofences/${a.id}`, { token: keys.alice }), 403)
    await problem(await world.call('PATCH', `/geofences/${a.id}`, { token, body: { name: 'B' } }), 403)
    await problem(await world.call('DELETE', `/geofences/${a.id}`, { token }), 403)
    await problem(await world.call('PATCH', `/geofences/${a.id}`, { token: keys.erin, body: { name: 'B' } }), 404)
    await problem(await world.call('DELETE', `/geofences/${a.id}`, { token: keys.erin }), 404)
    await problem(await world.call('DELETE', `/geofences/${a.id}`), 401)
    expect(await written()).toEqual(before)
  })

  test('an admin deletes: 204, then 404; audited', async () => {
    const a = await create({ name: 'A', area: depot })
    const res = await world.call('DELETE', `/geofences/${a.id}`, { token: keys.dana })
    expect(res.status).toBe(204)
    await problem(await world.call('GET', `/geofences/${a.id}`, { token: keys.dana }), 404)
    await problem(await world.call('DELETE', `/geofences/${a.id}`, { token: keys.dana }), 404)
    expect(await count('geofences')).toBe(0)
    const entries = (await (await world.call('GET', '/audit', { token: keys.dana })).json()) as { action: string; object_id: string }[]
    expect(entries[0]).toMatchObject({ action: 'delete', object_id: a.id })
  })

  test('a group deleted later stays listed: the geofence does not widen to every device', async () => {
    const a = await create({ name: 'A', area: depot, groups: [ids.vans] })
    expect((await world.call('DELETE', `/groups/${ids.vans}`, { token: keys.dana })).status).toBe(204)
    expect(((await (await world.call('GET', `/geofences/${a.id}`, { token: keys.dana })).json()) as GeofenceBody).groups).toEqual([ids.vans])
  })
})
