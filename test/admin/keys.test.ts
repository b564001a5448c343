/**
 * /users/{id}/keys: a user manages their own API keys, an admin anyone's in the account; a
 * deleted key is 401 on the very next request, in this server and in another process; a key's
 * last use is written in the background, at most once a minute, never on the request's path.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { createApp } from '../../src/app'
import { createLogger } from '../../src/log'
import { type EngineWorld, ids, keys, makeWorld, openWorld, problem, type World } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld()
})
afterEach(() => world.close())

interface KeyBody { id: string; name: string; created_at: string; last_used_at: string | null; expires_at: string | null }
type CreatedKey = KeyBody & { key: string }

async function shareToken(w: Pick<EngineWorld, 'call'> = world): Promise<string> {
  const res = await w.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
  return ((await res.json()) as { token: string }).token
}

async function createKey(userId: string, body: Record<string, unknown>, token: string, w: Pick<EngineWorld, 'call'> = world): Promise<CreatedKey> {
  const res = await w.call('POST', `/users/${userId}/keys`, { token, body })
  expect(res.status).toBe(201)
  return (await res.json()) as CreatedKey
}

async function listKeys(userId: string, token: string, w: Pick<EngineWorld, 'call'> = world): Promise<KeyBody[]> {
  const res = await w.call('GET', `/users/${userId}/keys`, { token })
  expect(res.status).toBe(200)
  return (await res.json()) as KeyBody[]
}

/** polls `condition` (no timing asserted: the test's own timeout is the limit) */
async function until(condition: () => boolean | Promise<boolean>) {
  while (!(await condition())) await Bun.sleep(5)
}

const iso = (ms: number) => new Date(ms).toISOString()

describe('creating and listing keys', () => {
  test('a member creates a key for themselves: the secret is shown once, works at once, and is never listed', async () => {
    const created = await createKey(ids.alice, { name: 'laptop' }, keys.alice)
    expect(created).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'laptop', created_at: iso(world.clock.now()), last_used_at: null, expires_at: null, key: expect.stringMatching(/^trk_/) })
    expect((await world.call('GET', '/devices', { token: created.key })).status).toBe(200)
    const listed = await listKeys(ids.alice, keys.alice)
    expect(listed.map((k) => k.name)).toEqual(['', 'laptop'])
    expect(listed[1]).toEqual({ id: created.id, name: 'laptop', created_at: created.created_at, last_used_at: iso(world.clock.now()), expires_at: null })
    expect(JSON.stringify(listed)).not.toContain(created.key)
    // only the hash is kept
    expect(JSON.stringify(await world.execute(sql`SELECT * FROM api_keys`))).not.toContain(created.key)
    expect(JSON.stringify(await world.execute(sql`SELECT * FROM audit_log`))).not.toContain(created.key)
  })

  test("an admin manages anyone's keys in the account; lists are ordered by name and paged", async () => {
    await createKey(ids.bob, { name: 'b-phone' }, keys.dana)
    await createKey(ids.bob, { name: 'a-tablet' }, keys.dana)
    expect((await listKeys(ids.bob, keys.dana)).map((k) => k.name)).toEqual(['', 'a-tablet', 'b-phone'])
    const page = await world.call('GET', `/users/${ids.bob}/keys?limit=1&offset=1`, { token: keys.bob })
    expect(((await page.json()) as KeyBody[]).map((k) => k.name)).toEqual(['a-tablet'])
    expect(await (await world.call('GET', `/users/${ids.bob}/keys?offset=3`, { token: keys.bob })).json()).toEqual([])
  })

  test("a member cannot touch another member's keys (403); another account's user is 404; a share token 403; no credentials 401", async () => {
    const before = await world.count('api_keys')
    await problem(await world.call('GET', `/users/${ids.bob}/keys`, { token: keys.alice }), 403)
    await problem(await world.call('POST', `/users/${ids.bob}/keys`, { token: keys.alice, body: { name: 'x' } }), 403)
    await problem(await world.call('GET', `/users/${ids.alice}/keys`, { token: keys.carol }), 404)
    await problem(await world.call('GET', `/users/${ids.alice}/keys`, { token: keys.erin }), 404)
    await problem(await world.call('POST', `/users/${ids.alice}/keys`, { token: keys.erin, body: { name: 'x' } }), 404)
    await problem(await world.call('GET', `/users/${ids.alice}/keys`, { token: await shareToken() }), 403)
    await problem(await world.call('POST', `/users/${ids.alice}/keys`, { token: await shareToken(), body: { name: 'x' } }), 403)
    await problem(await world.call('GET', `/users/${ids.alice}/keys`), 401)
    await problem(await world.call('POST', `/users/${ids.alice}/keys`, { body: { name: 'x' } }), 401)
    await problem(await world.call('GET', '/users/0c000000-0000-4000-8000-0000000000ff/keys', { token: keys.dana }), 404)
    expect(await world.count('api_keys')).toEqual(before)
  })

  test('bad input is 400 naming the field; unknown fields 400; nothing is written', async () => {
    const before = await world.count('api_keys')
    for (const [body, path] of [
      [{}, '/name'],
      [{ name: '' }, '/name'],
      [{ name: 'x', expires_at: 'tomorrow' }, '/expires_at'],
      [{ name: 'x', expires_at: '2020-01-01T00:00:00Z' }, '/expires_at'],
      [{ name: 'x', expires_at: world.clock.now() / 1000 }, '/expires_at'],
      [{ name: 'x', expires_at: 1.5 }, '/expires_at'],
      [{ name: 'x', key: 'my-own-secret-0123456789' }, '/key'],
    ] as const) {
      const answer = await problem(await world.call('POST', `/users/${ids.alice}/keys`, { token: keys.alice, body }), 400)
      expect({ body, paths: answer.errors?.map((e) => e.path) }).toEqual({ body, paths: expect.arrayContaining([path]) })
    }
    expect(await world.count('api_keys')).toEqual(before)
  })

  test('expires_at (ISO 8601 or Unix seconds): the key works until then, and is 401 from then on', async () => {
    const inAnHour = world.clock.now() + 3_600_000
    const iso8601 = await createKey(ids.alice, { name: 'iso', expires_at: iso(inAnHour) }, keys.alice)
    const seconds = await createKey(ids.alice, { name: 'unix', expires_at: inAnHour / 1000 }, keys.alice)
    expect([iso8601.expires_at, seconds.expires_at]).toEqual([iso(inAnHour), iso(inAnHour)])
    expect((await world.call('GET', '/devices', { token: iso8601.key })).status).toBe(200)
    world.clock.advance(3_600_000)
    await problem(await world.call('GET', '/devices', { token: iso8601.key }), 401)
    await problem(await world.call('GET', '/devices', { token: seconds.key }), 401)
  })
})

describe('deleting keys', () => {
  test('204, and the very next request with the key is 401; the key is gone from the list', async () => {
    const created = await createKey(ids.alice, { name: 'old' }, keys.alice)
    expect((await world.call('GET', '/devices', { token: created.key })).status).toBe(200)
    const res = await world.call('DELETE', `/users/${ids.alice}/keys/${created.id}`, { token: keys.alice })
    expect(res.status).toBe(204)
    await problem(await world.call('GET', '/devices', { token: created.key }), 401)
    expect((await listKeys(ids.alice, keys.alice)).map((k) => k.id)).not.toContain(created.id)
    await problem(await world.call('DELETE', `/users/${ids.alice}/keys/${created.id}`, { token: keys.alice }), 404)
  })

  // SQLite: each request reads the credentials version, so another process's change holds from
  // its next request; PostgreSQL promises other nodes "within 1 s" (LISTEN/NOTIFY, the scale-out
  // contract), not the next request: a SQLite world on either run
  test('a key deleted through one server process is 401 on the next request to another that had it cached', async () => {
    const world = makeWorld()
    const other = openDatabase(join(world.dir, 'tracker.db'))
    const otherApp = createApp({ database: other, clock: world.clock })
    try {
      const call = (token: string) => otherApp.handle(new Request('http://localhost/devices', { headers: { authorization: `Bearer ${token}` } }))
      const created = await createKey(ids.alice, { name: 'shared' }, keys.alice, world)
      expect((await call(created.key)).status).toBe(200)
      expect((await world.call('DELETE', `/users/${ids.alice}/keys/${created.id}`, { token: keys.dana })).status).toBe(204)
      expect((await call(created.key)).status).toBe(401)
      // a user deleted likewise: their key, cached over there, is 401 at once
      expect((await call(keys.bob)).status).toBe(200)
      expect((await world.call('DELETE', `/users/${ids.bob}`, { token: keys.dana })).status).toBe(204)
      expect((await call(keys.bob)).status).toBe(401)
      expect((await call(keys.alice)).status).toBe(200)
    } finally {
      other.close()
      world.close()
    }
  })

  test("only the key's own user, or an admin of the account, deletes it; another user's key id is 404 under this user", async () => {
    const bobs = await createKey(ids.bob, { name: 'bob-extra' }, keys.bob)
    await problem(await world.call('DELETE', `/users/${ids.bob}/keys/${bobs.id}`, { token: keys.alice }), 403)
    await problem(await world.call('DELETE', `/users/${ids.alice}/keys/${bobs.id}`, { token: keys.alice }), 404)
    await problem(await world.call('DELETE', `/users/${ids.bob}/keys/${bobs.id}`, { token: keys.erin }), 404)
    await problem(await world.call('DELETE', `/users/${ids.bob}/keys/${bobs.id}`, { token: await shareToken() }), 403)
    await problem(await world.call('DELETE', `/users/${ids.bob}/keys/${bobs.id}`), 401)
    expect((await problem(await world.call('DELETE', `/users/${ids.bob}/keys/nope`, { token: keys.bob }), 400)).errors?.[0]?.path).toBe('/keyId')
    expect((await world.call('GET', '/devices', { token: bobs.key })).status).toBe(200)
    expect((await world.call('DELETE', `/users/${ids.bob}/keys/${bobs.id.toUpperCase()}`, { token: keys.dana })).status).toBe(204)
    await problem(await world.call('GET', '/devices', { token: bobs.key }), 401)
  })

  test('creating and deleting are in the audit log with the key id, never the secret', async () => {
    const created = await createKey(ids.alice, { name: 'audited' }, keys.alice)
    await world.call('DELETE', `/users/${ids.alice}/keys/${created.id}`, { token: keys.dana })
    const entries = await world.execute(sql`SELECT actor, action, object_id FROM audit_log WHERE object_type = 'key' ORDER BY id`)
    expect(entries).toEqual([
      { actor: ids.alice, action: 'create', object_id: created.id },
      { actor: ids.dana, action: 'delete', object_id: created.id },
    ])
  })
})

describe('last_used_at', () => {
  const stored = async (w: EngineWorld) =>
    (await w.execute<{ last_used_at: number | null }>(sql`SELECT k.last_used_at FROM api_keys k WHERE k.user_id = ${ids.bob} AND k.name = ''`))[0]!.last_used_at
  // the SQLite file's, for the write-lock test
  const storedInFile = (w: World) => w.database.sqlite.query<{ last_used_at: number | null }, [string]>("SELECT k.last_used_at FROM api_keys k WHERE k.user_id = ? AND k.name = ''").get(ids.bob)!.last_used_at

  test('a use shows at once, is written in the background, and is noted again only a minute later', async () => {
    const w = await openWorld(undefined, { keyUseFlushMs: 5 })
    try {
      const start = w.clock.now()
      expect((await listKeys(ids.bob, keys.dana, w))[0]!.last_used_at).toBeNull()
      await w.call('GET', '/devices', { token: keys.bob })
      expect((await listKeys(ids.bob, keys.dana, w))[0]!.last_used_at).toBe(iso(start))
      await until(async () => (await stored(w)) === start)
      // within the minute: not noted (the list would show it at once if it were)
      w.clock.advance(59_000)
      await w.call('GET', '/devices', { token: keys.bob })
      expect((await listKeys(ids.bob, keys.dana, w))[0]!.last_used_at).toBe(iso(start))
      w.clock.advance(1_000)
      await w.call('GET', '/devices', { token: keys.bob })
      expect((await listKeys(ids.bob, keys.dana, w))[0]!.last_used_at).toBe(iso(start + 60_000))
      await until(async () => (await stored(w)) === start + 60_000)
    } finally {
      await w.close()
    }
  })

  // SQLite's write lock, held by another connection to the file: a SQLite world on either run
  test("another process's write lock fails no request: the use waits and is written once the lock is gone", async () => {
    const lines: string[] = []
    const w = makeWorld(undefined, { keyUseFlushMs: 5, log: createLogger('debug', (line) => lines.push(line)) })
    const other = new Database(join(w.dir, 'tracker.db'))
    try {
      other.run('BEGIN IMMEDIATE')
      try {
        expect((await w.call('GET', '/devices', { token: keys.bob })).status).toBe(200)
        expect((await listKeys(ids.bob, keys.bob, w))[0]!.last_used_at).toBe(iso(w.clock.now()))
        await until(() => lines.some((line) => line.includes("API keys' last use not written yet")))
        expect(storedInFile(w)).toBeNull()
      } finally {
        other.run('COMMIT')
      }
      await until(() => storedInFile(w) === w.clock.now())
    } finally {
      other.close()
      w.close()
    }
  })

  test('what waits is written when the server stops', async () => {
    const w = await openWorld(undefined, { keyUseFlushMs: 3_600_000 })
    try {
      const server = w.app.listen({ port: 0, hostname: '127.0.0.1' })
      const res = await fetch(`http://127.0.0.1:${server.server!.port}/devices`, { headers: { authorization: `Bearer ${keys.bob}` } })
      expect(res.status).toBe(200)
      expect(await stored(w)).toBeNull()
      await w.app.stop()
      expect(await stored(w)).toBe(w.clock.now())
    } finally {
      await w.close()
    }
  })
})
