/**
 * /groups: an admin manages the account's groups (who reaches which devices); a member reads
 * their own; reach follows every change on the next request.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { ids, keys, makeWorld, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld()
})
afterEach(() => world.close())

interface GroupBody { id: string; name: string; devices: string[]; users: string[] }

async function shareToken(): Promise<string> {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
  return ((await res.json()) as { token: string }).token
}

const count = (table: string) => world.count(table)
const written = async () => [await count('groups'), await count('device_groups'), await count('user_groups'), await count('audit_log')]
const names = async (res: Response) => {
  expect(res.status).toBe(200)
  return ((await res.json()) as GroupBody[]).map((g) => g.name)
}

describe('GET /groups', () => {
  test("an admin lists the account's groups by name: devices by alias, users by name", async () => {
    const res = await world.call('GET', '/groups', { token: keys.dana })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual([
      { id: ids.trucks, name: 'Trucks', devices: [ids.unlinked, ids.truck1, ids.truck2], users: [ids.alice] },
      { id: ids.vans, name: 'Vans', devices: [ids.truck2, ids.van1], users: [ids.alice, ids.bob] },
    ])
  })

  test('a member lists the groups they belong to; pages are [] past the end', async () => {
    expect(await names(await world.call('GET', '/groups', { token: keys.alice }))).toEqual(['Trucks', 'Vans'])
    expect(await names(await world.call('GET', '/groups', { token: keys.bob }))).toEqual(['Vans'])
    expect(await names(await world.call('GET', '/groups', { token: keys.carol }))).toEqual(['Cars'])
    expect(await names(await world.call('GET', '/groups?limit=1&offset=1', { token: keys.alice }))).toEqual(['Vans'])
    expect(await names(await world.call('GET', '/groups?offset=5', { token: keys.dana }))).toEqual([])
    // dana, an admin, belongs to no group: as a member she would see none
    expect(await names(await world.call('GET', '/groups', { token: keys.erin }))).toEqual(['Cars'])
    expect((await problem(await world.call('GET', '/groups?limit=1001', { token: keys.dana }), 400)).errors?.[0]?.path).toBe('/limit')
  })

  test('a share token gets 403, no credentials 401', async () => {
    await problem(await world.call('GET', '/groups', { token: await shareToken() }), 403)
    await problem(await world.call('GET', '/groups'), 401)
  })

  test("GET /groups/{id}: a member reads only their own groups, another account's group is 404", async () => {
    expect((await world.call('GET', `/groups/${ids.trucks}`, { token: keys.dana })).status).toBe(200)
    expect((await world.call('GET', `/groups/${ids.vans}`, { token: keys.bob })).status).toBe(200)
    await problem(await world.call('GET', `/groups/${ids.trucks}`, { token: keys.bob }), 404)
    await problem(await world.call('GET', `/groups/${ids.trucks}`, { token: keys.erin }), 404)
    await problem(await world.call('GET', `/groups/${ids.trucks}`, { token: await shareToken() }), 403)
    await problem(await world.call('GET', `/groups/${ids.trucks}`), 401)
  })
})

describe('POST /groups', () => {
  test('201 with the group and its Location; its users reach its devices on the next request', async () => {
    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: keys.bob }), 404)
    const res = await world.call('POST', '/groups', { token: keys.dana, body: { name: 'Night shift', devices: [ids.truck1.toUpperCase()], users: [ids.bob] } })
    expect(res.status).toBe(201)
    const group = (await res.json()) as GroupBody
    expect(group).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'Night shift', devices: [ids.truck1], users: [ids.bob] })
    expect(res.headers.get('location')).toBe(`/groups/${group.id}`)
    expect(await (await world.call('GET', `/groups/${group.id}`, { token: keys.dana })).json()).toEqual(group)
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.bob })).status).toBe(200)
  })

  test('an empty group; names need not be unique', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await world.call('POST', '/groups', { token: keys.dana, body: { name: 'Spare' } })
      expect(res.status).toBe(201)
      expect(await res.json()).toMatchObject({ name: 'Spare', devices: [], users: [] })
    }
  })

  test("another account's device or user is 404 naming its place; nothing is written", async () => {
    const before = await written()
    const devices = await problem(await world.call('POST', '/groups', { token: keys.dana, body: { name: 'G', devices: [ids.truck1, ids.globexCar] } }), 404)
    expect(devices.errors).toEqual([{ path: '/devices/1', message: expect.any(String) }])
    const users = await problem(await world.call('POST', '/groups', { token: keys.dana, body: { name: 'G', users: [ids.carol, ids.bob, '0c000000-0000-4000-8000-0000000000ff'] } }), 404)
    expect(users.errors?.map((e) => e.path)).toEqual(['/users/0', '/users/2'])
    expect(await written()).toEqual(before)
  })

  test('bad input is 400 naming the field; unknown fields 400; nothing is written', async () => {
    const before = await written()
    for (const [body, path] of [
      [{}, '/name'],
      [{ name: '' }, '/name'],
      [{ name: 'Trailing ' }, '/name'],
      [{ name: 'G', devices: ids.truck1 }, '/devices'],
      [{ name: 'G', devices: ['truck-1'] }, '/devices/0'],
      [{ name: 'G', devices: [ids.truck1, ids.truck1] }, '/devices/1'],
      [{ name: 'G', users: [ids.bob, ids.bob.toUpperCase()] }, '/users/1'],
      [{ name: 'G', account: ids.globex }, '/account'],
    ] as const) {
      const answer = await problem(await world.call('POST', '/groups', { token: keys.dana, body }), 400)
      expect({ body, paths: answer.errors?.map((e) => e.path) }).toEqual({ body, paths: expect.arrayContaining([path]) })
    }
    expect(await written()).toEqual(before)
  })

  // SQLite's write lock, held by another connection to the file: a SQLite world on either run
  test("while another process holds the write lock the change waits for it, then commits", async () => {
    const world = makeWorld()
    const other = new Database(join(world.dir, 'tracker.db'))
    // as the server's connection does (db/client.ts): a statement barely waits, the write retries asynchronously
    world.database.sqlite.run('PRAGMA busy_timeout = 10')
    try {
      other.run('BEGIN IMMEDIATE')
      const pending = world.call('POST', '/groups', { token: keys.dana, body: { name: 'Later', users: [ids.bob] } })
      // reads answer meanwhile; the write is still waiting for the lock
      expect((await world.call('GET', '/groups', { token: keys.dana })).status).toBe(200)
      expect(await Promise.race([pending.then(() => 'answered'), Bun.sleep(50).then(() => 'waiting')])).toBe('waiting')
      other.run('COMMIT')
      expect((await pending).status).toBe(201)
      expect(await names(await world.call('GET', '/groups', { token: keys.bob }))).toEqual(['Later', 'Vans'])
    } finally {
      other.close()
      world.close()
    }
  })

  test('a member, a share token and no credentials cannot create groups', async () => {
    const before = await written()
    await problem(await world.call('POST', '/groups', { token: keys.alice, body: { name: 'Mine' } }), 403)
    await problem(await world.call('POST', '/groups', { token: await shareToken(), body: { name: 'Mine' } }), 403)
    await problem(await world.call('POST', '/groups', { body: { name: 'Mine' } }), 401)
    expect(await written()).toEqual(before)
  })
})

describe('PATCH /groups/{id}', () => {
  test('devices and users replace the lists; reach follows on the next request', async () => {
    expect((await world.call('GET', `/devices/${ids.truck2}`, { token: keys.bob })).status).toBe(200)
    const res = await world.call('PATCH', `/groups/${ids.vans}`, { token: keys.dana, body: { name: 'Vans only', devices: [ids.van1] } })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ id: ids.vans, name: 'Vans only', devices: [ids.van1], users: [ids.alice, ids.bob] })
    await problem(await world.call('GET', `/devices/${ids.truck2}`, { token: keys.bob }), 404)
    expect((await world.call('PATCH', `/groups/${ids.vans}`, { token: keys.dana, body: { users: [] } })).status).toBe(200)
    await problem(await world.call('GET', `/devices/${ids.van1}`, { token: keys.bob }), 404)
    expect(await (await world.call('GET', `/groups/${ids.vans}`, { token: keys.dana })).json()).toEqual({ id: ids.vans, name: 'Vans only', devices: [ids.van1], users: [] })
  })

  test('a refused change writes nothing, not even its valid fields', async () => {
    const before = await written()
    await problem(await world.call('PATCH', `/groups/${ids.vans}`, { token: keys.dana, body: { name: 'Renamed', devices: [ids.van1], users: [ids.carol] } }), 404)
    await problem(await world.call('PATCH', `/groups/${ids.vans}`, { token: keys.dana, body: { name: 'Renamed', colour: 'red' } }), 400)
    await problem(await world.call('PATCH', `/groups/${ids.vans}`, { token: keys.dana, body: { name: '' } }), 400)
    expect(await written()).toEqual(before)
    expect(await (await world.call('GET', `/groups/${ids.vans}`, { token: keys.dana })).json()).toMatchObject({ name: 'Vans', devices: [ids.truck2, ids.van1] })
  })

  test("a member, a share token, another account's admin and no credentials cannot change a group", async () => {
    await problem(await world.call('PATCH', `/groups/${ids.vans}`, { token: keys.bob, body: { users: [ids.bob, ids.alice] } }), 403)
    await problem(await world.call('PATCH', `/groups/${ids.vans}`, { token: await shareToken(), body: { name: 'x' } }), 403)
    await problem(await world.call('PATCH', `/groups/${ids.vans}`, { token: keys.erin, body: { name: 'x' } }), 404)
    await problem(await world.call('PATCH', `/groups/${ids.vans}`, { body: { name: 'x' } }), 401)
    await problem(await world.call('PATCH', `/groups/${ids.globexGroup}`, { token: keys.dana, body: { name: 'x' } }), 404)
    expect(await names(await world.call('GET', '/groups', { token: keys.dana }))).toEqual(['Trucks', 'Vans'])
  })
})

describe('DELETE /groups/{id}', () => {
  test('204; its members no longer reach its devices through it; its devices and users stay', async () => {
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.alice })).status).toBe(200)
    const res = await world.call('DELETE', `/groups/${ids.trucks}`, { token: keys.dana })
    expect(res.status).toBe(204)
    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: keys.alice }), 404)
    expect((await world.call('GET', `/devices/${ids.truck2}`, { token: keys.alice })).status).toBe(200)
    await problem(await world.call('GET', `/groups/${ids.trucks}`, { token: keys.dana }), 404)
    await problem(await world.call('DELETE', `/groups/${ids.trucks}`, { token: keys.dana }), 404)
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.dana })).status).toBe(200)
    expect(await (await world.call('GET', `/users/${ids.alice}`, { token: keys.dana })).json()).toMatchObject({ groups: [ids.vans] })
  })

  test("a member, a share token, another account's admin and no credentials cannot delete a group", async () => {
    await problem(await world.call('DELETE', `/groups/${ids.trucks}`, { token: keys.alice }), 403)
    await problem(await world.call('DELETE', `/groups/${ids.trucks}`, { token: await shareToken() }), 403)
    await problem(await world.call('DELETE', `/groups/${ids.trucks}`, { token: keys.erin }), 404)
    await problem(await world.call('DELETE', `/groups/${ids.trucks}`), 401)
    expect(await names(await world.call('GET', '/groups', { token: keys.dana }))).toEqual(['Trucks', 'Vans'])
  })
})
