/** GET /me: who the credential is, for a user (key) and for a share token. */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { PERMISSION } from '../../src/share/permissions'
import { type EngineWorld, ids, keys, openWorld, problem } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld()
})
afterEach(() => world.close())

describe('GET /me', () => {
  test('a user: id, name, role and account', async () => {
    const res = await world.call('GET', '/me', { token: keys.alice })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ kind: 'user', id: ids.alice, name: 'alice', role: 'member', account: { id: ids.acme, name: 'Acme Logistics' }, timezone: null })
    expect(await (await world.call('GET', '/me', { token: keys.erin })).json()).toEqual({ kind: 'user', id: ids.erin, name: 'erin', role: 'admin', account: { id: ids.globex, name: 'Globex' }, timezone: null })
  })

  test('a change of name or role shows on the next request', async () => {
    expect((await world.call('PATCH', `/users/${ids.alice}`, { token: keys.dana, body: { name: 'Alice B.', role: 'admin' } })).status).toBe(200)
    expect(await (await world.call('GET', '/me', { token: keys.alice })).json()).toMatchObject({ name: 'Alice B.', role: 'admin' })
  })

  test("a share token: the link's devices, when it expires, and what it grants", async () => {
    const created = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.van1, ids.truck2], ttl: 3600, acl: [PERMISSION.location, PERMISSION.history] } })
    const link = (await created.json()) as { id: string; token: string; expires_at: string }
    const res = await world.call('GET', '/me', { token: link.token })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ kind: 'share', devices: [ids.truck2, ids.van1], expires_at: link.expires_at, acl: [PERMISSION.location, PERMISSION.history] })
  })

  test('an expired or revoked share token, an unknown key and no credentials are 401', async () => {
    const make = async () => ((await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 60 } })).json()) as { id: string; token: string })
    const revoked = await make()
    await world.call('DELETE', `/devices/share/${revoked.id}`, { token: keys.alice })
    await problem(await world.call('GET', '/me', { token: revoked.token }), 401)
    const expiring = await make()
    world.clock.advance(60_000)
    await problem(await world.call('GET', '/me', { token: expiring.token }), 401)
    await problem(await world.call('GET', '/me', { token: 'no-such-key-0123456789' }), 401)
    await problem(await world.call('GET', '/me'), 401)
  })

  test('a deleted user\'s key is 401 on the very next request', async () => {
    expect((await world.call('GET', '/me', { token: keys.bob })).status).toBe(200)
    expect((await world.call('DELETE', `/users/${ids.bob}`, { token: keys.dana })).status).toBe(204)
    await problem(await world.call('GET', '/me', { token: keys.bob }), 401)
  })
})
