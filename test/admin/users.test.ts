/**
 * /users: an admin manages the account's users (name unique across the server in any case, role,
 * groups, password); members, share tokens and other accounts cannot.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { type SQL, sql } from 'drizzle-orm'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld()
})
afterEach(() => world.close())

interface UserBody { id: string; name: string; role: string; groups: string[]; created_at: string }

async function shareToken(): Promise<string> {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
  return ((await res.json()) as { token: string }).token
}

const count = (table: string, where?: SQL) => world.count(table, where)
const userCount = () => count('users')
const auditCount = () => count('audit_log')

async function createUser(body: Record<string, unknown>, token = keys.dana) {
  const res = await world.call('POST', '/users', { token, body })
  expect(res.status).toBe(201)
  return (await res.json()) as UserBody
}

describe('GET /users', () => {
  test("an admin lists the account's users by name, with role and groups (groups by name)", async () => {
    const res = await world.call('GET', '/users', { token: keys.dana })
    expect(res.status).toBe(200)
    const users = (await res.json()) as UserBody[]
    expect(users.map((u) => [u.name, u.role, u.groups])).toEqual([
      ['alice', 'member', [ids.trucks, ids.vans]],
      ['bob', 'member', [ids.vans]],
      ['dana', 'admin', []],
    ])
    expect(Object.keys(users[0]!).sort()).toEqual(['created_at', 'groups', 'id', 'name', 'role'])
    expect(users[0]!.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  })

  test('limit and offset page it; past the end is []', async () => {
    const page = async (query: string) => ((await (await world.call('GET', `/users?${query}`, { token: keys.dana })).json()) as UserBody[]).map((u) => u.name)
    expect(await page('limit=2')).toEqual(['alice', 'bob'])
    expect(await page('limit=2&offset=2')).toEqual(['dana'])
    expect(await page('offset=3')).toEqual([])
    expect((await problem(await world.call('GET', '/users?limit=0', { token: keys.dana }), 400)).errors?.[0]?.path).toBe('/limit')
    expect((await problem(await world.call('GET', '/users?offset=-1', { token: keys.dana }), 400)).errors?.[0]?.path).toBe('/offset')
  })

  test('a member and a share token get 403, no credentials 401; another account sees its own users only', async () => {
    await problem(await world.call('GET', '/users', { token: keys.alice }), 403)
    await problem(await world.call('GET', '/users', { token: await shareToken() }), 403)
    await problem(await world.call('GET', '/users'), 401)
    const globex = (await (await world.call('GET', '/users', { token: keys.erin })).json()) as UserBody[]
    expect(globex.map((u) => u.name)).toEqual(['carol', 'erin'])
  })
})

describe('GET /users/{id}', () => {
  test("an admin reads a user of the account; another account's user is 404, a member's request 403", async () => {
    const res = await world.call('GET', `/users/${ids.bob}`, { token: keys.dana })
    expect(await res.json()).toMatchObject({ id: ids.bob, name: 'bob', role: 'member', groups: [ids.vans] })
    expect((await world.call('GET', `/users/${ids.bob.toUpperCase()}`, { token: keys.dana })).status).toBe(200)
    await problem(await world.call('GET', `/users/${ids.carol}`, { token: keys.dana }), 404)
    await problem(await world.call('GET', `/users/${ids.bob}`, { token: keys.erin }), 404)
    await problem(await world.call('GET', `/users/${ids.bob}`, { token: keys.bob }), 403)
    await problem(await world.call('GET', `/users/${ids.bob}`, { token: await shareToken() }), 403)
    await problem(await world.call('GET', `/users/${ids.bob}`), 401)
    expect((await problem(await world.call('GET', '/users/not-a-uuid', { token: keys.dana }), 400)).errors?.[0]?.path).toBe('/id')
  })
})

describe('POST /users', () => {
  test('201 with the user and its Location; the password is stored as an argon2id hash and never shown', async () => {
    const res = await world.call('POST', '/users', { token: keys.dana, body: { name: 'Frank', role: 'member', groups: [ids.vans, ids.trucks], password: 'correct horse battery' } })
    expect(res.status).toBe(201)
    const user = (await res.json()) as UserBody
    expect(user).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'Frank', role: 'member', groups: [ids.trucks, ids.vans], created_at: new Date(world.clock.now()).toISOString() })
    expect(res.headers.get('location')).toBe(`/users/${user.id}`)
    expect(await (await world.call('GET', res.headers.get('location')!, { token: keys.dana })).json()).toEqual(user)
    const stored = (await world.execute<{ hash: string }>(sql`SELECT password_hash AS hash FROM users WHERE id = ${user.id}`))[0]!
    expect(stored.hash).toStartWith('$argon2id$')
    expect(await Bun.password.verify('correct horse battery', stored.hash)).toBe(true)
  })

  test('defaults: a member in no group, without a password', async () => {
    const user = await createUser({ name: 'grace' })
    expect(user).toMatchObject({ name: 'grace', role: 'member', groups: [] })
    expect((await world.execute(sql`SELECT password_hash AS hash FROM users WHERE id = ${user.id}`))[0]).toEqual({ hash: null })
  })

  test('a name taken in any case, in any account, is 409; nothing is written', async () => {
    const before = [await userCount(), await auditCount()]
    await problem(await world.call('POST', '/users', { token: keys.dana, body: { name: 'ALICE' } }), 409)
    await problem(await world.call('POST', '/users', { token: keys.erin, body: { name: 'Bob' } }), 409)
    expect([await userCount(), await auditCount()]).toEqual(before)
  })

  test('bad input is 400 naming the field; unknown fields 400; nothing is written', async () => {
    const before = [await userCount(), await auditCount()]
    const cases: [unknown, string][] = [
      [{}, '/name'],
      [{ name: '' }, '/name'],
      [{ name: ' padded' }, '/name'],
      [{ name: 'tab\there' }, '/name'],
      [{ name: 'x'.repeat(101) }, '/name'],
      [{ name: 42 }, '/name'],
      [{ name: 'frank', role: 'root' }, '/role'],
      [{ name: 'frank', password: 'short' }, '/password'],
      [{ name: 'frank', password: '🔑🔑🔑🔑🔑' }, '/password'],
      [{ name: 'frank', groups: 'vans' }, '/groups'],
      [{ name: 'frank', groups: ['vans'] }, '/groups/0'],
      [{ name: 'frank', groups: [ids.vans, ids.vans.toUpperCase()] }, '/groups/1'],
      [{ name: 'frank', admin: true }, '/admin'],
    ]
    for (const [body, path] of cases) {
      const answer = await problem(await world.call('POST', '/users', { token: keys.dana, body }), 400)
      expect({ body, paths: answer.errors?.map((e) => e.path) }).toEqual({ body, paths: expect.arrayContaining([path]) })
    }
    expect([await userCount(), await auditCount()]).toEqual(before)
  })

  test("another account's group is 404 naming its place in the body; nothing is written", async () => {
    const before = [await userCount(), await auditCount()]
    const answer = await problem(await world.call('POST', '/users', { token: keys.dana, body: { name: 'frank', groups: [ids.vans, ids.globexGroup] } }), 404)
    expect(answer.errors).toEqual([{ path: '/groups/1', message: expect.any(String) }])
    expect([await userCount(), await auditCount()]).toEqual(before)
  })

  test('a member, a share token and no credentials cannot create users', async () => {
    await problem(await world.call('POST', '/users', { token: keys.alice, body: { name: 'frank' } }), 403)
    await problem(await world.call('POST', '/users', { token: await shareToken(), body: { name: 'frank' } }), 403)
    await problem(await world.call('POST', '/users', { body: { name: 'frank' } }), 401)
    expect(await count('users', sql`name = 'frank'`)).toBe(0)
  })
})

describe('PATCH /users/{id}', () => {
  test('changes what is sent; groups replace the list and reach follows on the next request', async () => {
    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: keys.bob }), 404)
    const res = await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body: { name: 'Robert', groups: [ids.trucks] } })
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ id: ids.bob, name: 'Robert', role: 'member', groups: [ids.trucks] })
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.bob })).status).toBe(200)
    await problem(await world.call('GET', `/devices/${ids.van1}`, { token: keys.bob }), 404)
  })

  test("an empty change changes nothing; keeping one's own name is no clash", async () => {
    const before = await auditCount()
    expect(await (await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body: {} })).json()).toMatchObject({ name: 'bob', groups: [ids.vans] })
    expect(await auditCount()).toBe(before)
    expect((await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body: { name: 'bob' } })).status).toBe(200)
    expect((await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body: { name: 'BOB' } })).status).toBe(200)
    await problem(await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body: { name: 'Carol' } }), 409)
  })

  test('a role change applies from the very next request with the same key', async () => {
    await problem(await world.call('GET', '/users', { token: keys.bob }), 403)
    expect((await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body: { role: 'admin' } })).status).toBe(200)
    expect((await world.call('GET', '/users', { token: keys.bob })).status).toBe(200)
    // an admin reaches every device of the account
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.bob })).status).toBe(200)
    expect((await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body: { role: 'member' } })).status).toBe(200)
    await problem(await world.call('GET', '/users', { token: keys.bob }), 403)
  })

  test("the account's last admin cannot be demoted (409); with another admin they can", async () => {
    await problem(await world.call('PATCH', `/users/${ids.dana}`, { token: keys.dana, body: { role: 'member' } }), 409)
    expect((await world.call('PATCH', `/users/${ids.alice}`, { token: keys.dana, body: { role: 'admin' } })).status).toBe(200)
    expect((await world.call('PATCH', `/users/${ids.dana}`, { token: keys.dana, body: { role: 'member' } })).status).toBe(200)
    await problem(await world.call('PATCH', `/users/${ids.alice}`, { token: keys.alice, body: { role: 'member' } }), 409)
    await problem(await world.call('GET', '/users', { token: keys.dana }), 403)
  })

  test("a new password is stored hashed and ends the user's sessions (their keys stay); the audit log says so without the secret", async () => {
    const now = world.clock.now()
    const addSession = (idHash: string, userId: string, createdAt: number, lastUsedAt: number, expiresAt: number) =>
      world.execute(sql`INSERT INTO sessions (id_hash, user_id, created_at, last_used_at, expires_at) VALUES (${idHash}, ${userId}, ${createdAt}, ${lastUsedAt}, ${expiresAt})`)
    await addSession('alice-session', ids.alice, now, now, now + 86_400_000)
    await addSession('bob-session', ids.bob, now, now, now + 86_400_000)
    const res = await world.call('PATCH', `/users/${ids.alice}`, { token: keys.dana, body: { password: 'a brand new secret' } })
    expect(res.status).toBe(200)
    expect(JSON.stringify(await res.json())).not.toContain('secret')
    expect(await world.execute(sql`SELECT user_id FROM sessions`)).toEqual([{ user_id: ids.bob }])
    expect((await world.call('GET', '/devices', { token: keys.alice })).status).toBe(200)
    const hash = (await world.execute<{ h: string }>(sql`SELECT password_hash AS h FROM users WHERE id = ${ids.alice}`))[0]!.h
    expect(await Bun.password.verify('a brand new secret', hash)).toBe(true)
    const audit = await world.execute(sql`SELECT * FROM audit_log WHERE object_id = ${ids.alice}`)
    expect(audit).toEqual([expect.objectContaining({ actor: ids.dana, action: 'password', object_type: 'user' })])
    expect(JSON.stringify(await world.execute(sql`SELECT * FROM audit_log`))).not.toContain('brand new')
  })

  test('bad input is 400 naming the field, unknown fields 400, and nothing is half-written', async () => {
    for (const [body, path] of [
      [{ role: 'owner' }, '/role'],
      [{ password: '123' }, '/password'],
      [{ name: '' }, '/name'],
      [{ groups: [ids.trucks, 'x'] }, '/groups/1'],
      [{ email: 'a@b.c' }, '/email'],
    ] as const) {
      const answer = await problem(await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body }), 400)
      expect({ body, paths: answer.errors?.map((e) => e.path) }).toEqual({ body, paths: expect.arrayContaining([path]) })
    }
    // a valid name with a group of another account: neither is written
    const answer = await problem(await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body: { name: 'robert', groups: [ids.trucks, ids.globexGroup] } }), 404)
    expect(answer.errors?.map((e) => e.path)).toEqual(['/groups/1'])
    expect(await (await world.call('GET', `/users/${ids.bob}`, { token: keys.dana })).json()).toMatchObject({ name: 'bob', groups: [ids.vans] })
  })

  test("a member, a share token, another account's admin and no credentials cannot change a user", async () => {
    await problem(await world.call('PATCH', `/users/${ids.bob}`, { token: keys.alice, body: { name: 'x' } }), 403)
    await problem(await world.call('PATCH', `/users/${ids.alice}`, { token: keys.alice, body: { role: 'admin' } }), 403)
    await problem(await world.call('PATCH', `/users/${ids.bob}`, { token: await shareToken(), body: { name: 'x' } }), 403)
    await problem(await world.call('PATCH', `/users/${ids.bob}`, { token: keys.erin, body: { name: 'x' } }), 404)
    await problem(await world.call('PATCH', `/users/${ids.bob}`, { body: { name: 'x' } }), 401)
    expect(await (await world.call('GET', `/users/${ids.bob}`, { token: keys.dana })).json()).toMatchObject({ name: 'bob', role: 'member' })
  })
})

describe('DELETE /users/{id}', () => {
  test('204; the user, their keys, sessions and memberships are gone, and the very next request with their key is 401', async () => {
    const now = world.clock.now()
    await world.execute(sql`INSERT INTO sessions (id_hash, user_id, created_at, last_used_at, expires_at) VALUES (${'bob-session'}, ${ids.bob}, ${now}, ${now}, ${now + 1e9})`)
    expect((await world.call('GET', '/devices', { token: keys.bob })).status).toBe(200)
    const res = await world.call('DELETE', `/users/${ids.bob}`, { token: keys.dana })
    expect(res.status).toBe(204)
    expect(await res.text()).toBe('')
    await problem(await world.call('GET', '/devices', { token: keys.bob }), 401)
    await problem(await world.call('GET', `/users/${ids.bob}`, { token: keys.dana }), 404)
    await problem(await world.call('DELETE', `/users/${ids.bob}`, { token: keys.dana }), 404)
    for (const table of ['api_keys', 'sessions', 'user_groups']) expect(await count(table, sql`user_id = ${ids.bob}`)).toBe(0)
  })

  test("the account's last admin cannot be deleted (409)", async () => {
    await problem(await world.call('DELETE', `/users/${ids.dana}`, { token: keys.dana }), 409)
    await problem(await world.call('DELETE', `/users/${ids.erin}`, { token: keys.erin }), 409)
    expect((await world.call('GET', '/users', { token: keys.dana })).status).toBe(200)
  })

  test("a member, a share token, another account's admin and no credentials cannot delete a user", async () => {
    await problem(await world.call('DELETE', `/users/${ids.bob}`, { token: keys.alice }), 403)
    await problem(await world.call('DELETE', `/users/${ids.bob}`, { token: await shareToken() }), 403)
    await problem(await world.call('DELETE', `/users/${ids.bob}`, { token: keys.erin }), 404)
    await problem(await world.call('DELETE', `/users/${ids.bob}`), 401)
    expect((await world.call('GET', '/devices', { token: keys.bob })).status).toBe(200)
  })
})
