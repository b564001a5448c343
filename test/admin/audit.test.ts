/**
 * GET /audit: every administration change of the account, newest first, with who made it and the
 * request's id; never a password or a key.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { adminDeps, operator } from '../../src/admin/actor'
import { createKey } from '../../src/admin/keys'
import { createUser, hashPassword, setPassword } from '../../src/admin/users'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld()
})
afterEach(() => world.close())

interface Entry { id: number; actor: string; action: string; object_type: string; object_id: string; at: string; request_id: string | null }

async function audit(query = '', token = keys.dana): Promise<Entry[]> {
  const res = await world.call('GET', `/audit${query}`, { token })
  expect(res.status).toBe(200)
  return (await res.json()) as Entry[]
}

const T0 = Date.UTC(2026, 10, 25, 12, 0, 0)

/** one change a minute: a group, a user (with a password), a key, a group deleted */
async function changes() {
  const as = (requestId: string) => ({ token: keys.dana, headers: { 'x-request-id': requestId } })
  const group = (await (await world.call('POST', '/groups', { ...as('req-group-create'), body: { name: 'Night' } })).json()) as { id: string }
  world.clock.advance(60_000)
  const user = (await (await world.call('POST', '/users', { ...as('req-user-create'), body: { name: 'frank', password: 'frank-password-1' } })).json()) as { id: string }
  world.clock.advance(60_000)
  const key = (await (await world.call('POST', `/users/${user.id}/keys`, { ...as('req-key-create'), body: { name: 'ci' } })).json()) as { id: string; key: string }
  world.clock.advance(60_000)
  expect((await world.call('DELETE', `/groups/${group.id}`, as('req-group-delete'))).status).toBe(204)
  return { group, user, key }
}

describe('GET /audit', () => {
  test('every change, newest first: actor, action, object, when and the request id; never a secret', async () => {
    const { group, user, key } = await changes()
    const entries = await audit()
    expect(entries.map(({ id, ...rest }) => rest)).toEqual([
      { actor: ids.dana, action: 'delete', object_type: 'group', object_id: group.id, at: new Date(T0 + 180_000).toISOString(), request_id: 'req-group-delete' },
      { actor: ids.dana, action: 'create', object_type: 'key', object_id: key.id, at: new Date(T0 + 120_000).toISOString(), request_id: 'req-key-create' },
      { actor: ids.dana, action: 'create', object_type: 'user', object_id: user.id, at: new Date(T0 + 60_000).toISOString(), request_id: 'req-user-create' },
      { actor: ids.dana, action: 'create', object_type: 'group', object_id: group.id, at: new Date(T0).toISOString(), request_id: 'req-group-create' },
    ])
    const everything = JSON.stringify(await world.execute(sql`SELECT * FROM audit_log`))
    expect(everything).not.toContain('frank-password-1')
    expect(everything).not.toContain(key.key)
  })

  test('from and to (Unix seconds, inclusive), limit and offset; [] when nothing matches', async () => {
    await changes()
    const at = async (query: string) => (await audit(query)).map((e) => `${e.action} ${e.object_type}`)
    expect(await at(`?from=${T0 / 1000 + 60}&to=${T0 / 1000 + 120}`)).toEqual(['create key', 'create user'])
    expect(await at(`?from=${T0 / 1000 + 120}`)).toEqual(['delete group', 'create key'])
    expect(await at(`?to=${T0 / 1000}`)).toEqual(['create group'])
    expect(await at('?limit=1&offset=1')).toEqual(['create key'])
    expect(await at(`?from=${T0 / 1000 + 181}`)).toEqual([])
  })

  test('bad parameters are 400 naming them', async () => {
    for (const [query, path] of [
      ['?from=yesterday', '/from'],
      ['?to=-1', '/to'],
      [`?from=${T0 / 1000}&to=${T0 / 1000 - 1}`, '/from'],
      ['?limit=0', '/limit'],
      ['?limit=1001', '/limit'],
      ['?offset=x', '/offset'],
    ]) {
      const answer = await problem(await world.call('GET', `/audit${query}`, { token: keys.dana }), 400)
      expect({ query, path: answer.errors?.[0]?.path }).toEqual({ query, path })
    }
  })

  test("an account's admin reads its own log only; a member and a share token get 403, no credentials 401", async () => {
    await changes()
    expect(await audit('', keys.erin)).toEqual([])
    await problem(await world.call('GET', '/audit', { token: keys.alice }), 403)
    const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { token: string }
    await problem(await world.call('GET', '/audit', { token: link.token }), 403)
    await problem(await world.call('GET', '/audit'), 401)
  })

  test('the services called from the command line record actor "cli" and no request id', async () => {
    const stores = await world.otherStores()
    const deps = adminDeps(stores, world.clock)
    const people = { people: stores.people, clock: world.clock }
    const user = await createUser(people, operator(ids.acme), { name: 'ops', role: 'admin', groups: [ids.trucks] })
    await setPassword(people, operator(ids.acme), user.id, await hashPassword('operator-secret'))
    const key = await createKey(deps, operator(ids.acme), user.id, { name: 'ops key' })
    expect((await world.call('GET', '/users', { token: key.key })).status).toBe(200)
    expect((await audit()).map((e) => [e.actor, e.action, e.object_type, e.request_id])).toEqual([
      ['cli', 'create', 'key', null],
      ['cli', 'password', 'user', null],
      ['cli', 'create', 'user', null],
    ])
  })
})
