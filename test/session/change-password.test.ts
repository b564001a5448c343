/**
 * PATCH /me { current_password, password }: any signed-in user changes their own password
 * (issue 19, item 10). A wrong current password is 403 and counts in the sign-in throttle; the
 * user's other sessions end, the request's own lives on; the change is in the audit log.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'
import { cookieOf, givePasswords, PASSWORD, signIn } from './support'

// APP_URL is not set: the console's origin is the one a request is sent to (app.handle's http://localhost)
const APP_ORIGIN = 'http://localhost'
const NEW_PASSWORD = 'a brand new passphrase'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld(baseDataset())
  await givePasswords(world, [ids.alice, ids.dana])
})
afterEach(() => world.close())

const change = (credential: { cookie?: string; token?: string }, body: unknown, headers: Record<string, string> = {}) =>
  world.call('PATCH', '/me', {
    token: credential.token,
    body,
    headers: credential.cookie ? { cookie: credential.cookie, origin: APP_ORIGIN, ...headers } : headers,
  })

const passwordHashOf = async (userId: string) =>
  (await world.execute<{ password_hash: string | null }>(sql`SELECT password_hash FROM users WHERE id = ${userId}`))[0]!.password_hash

describe('PATCH /me', () => {
  test("a member changes their password with their session: their other sessions end, this one lives on, keys stay; audited", async () => {
    const current = cookieOf(await signIn(world, 'alice'))
    const other = cookieOf(await signIn(world, 'alice'))
    const danas = cookieOf(await signIn(world, 'dana'))

    const res = await change({ cookie: current }, { current_password: PASSWORD, password: NEW_PASSWORD }, { 'x-request-id': 'req-change-password' })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ kind: 'user', id: ids.alice, name: 'alice', role: 'member', account: { id: ids.acme, name: 'Acme Logistics' }, timezone: null })

    expect((await world.call('GET', '/session', { headers: { cookie: current } })).status).toBe(200)
    await problem(await world.call('GET', '/devices', { headers: { cookie: other } }), 401)
    expect((await world.call('GET', '/devices', { token: keys.alice })).status).toBe(200)
    // nobody else's session is touched
    expect((await world.call('GET', '/session', { headers: { cookie: danas } })).status).toBe(200)

    await problem(await signIn(world, 'alice', PASSWORD), 401)
    expect((await signIn(world, 'alice', NEW_PASSWORD)).status).toBe(200)

    const audit = (await (await world.call('GET', '/audit', { token: keys.dana })).json()) as { actor: string; action: string; object_type: string; object_id: string; request_id: string }[]
    expect(audit[0]).toMatchObject({ actor: ids.alice, action: 'password', object_type: 'user', object_id: ids.alice, request_id: 'req-change-password' })
    expect(JSON.stringify(await world.execute(sql`SELECT * FROM audit_log`))).not.toContain(NEW_PASSWORD)
  })

  test('an admin with an API key: every session of theirs ends (the key has none to keep)', async () => {
    const session = cookieOf(await signIn(world, 'dana'))
    const res = await change({ token: keys.dana }, { current_password: PASSWORD, password: NEW_PASSWORD })
    expect(res.status).toBe(200)
    expect((await res.json()).role).toBe('admin')
    await problem(await world.call('GET', '/session', { headers: { cookie: session } }), 401)
    expect((await signIn(world, 'dana', NEW_PASSWORD)).status).toBe(200)
  })

  test('a wrong current password is 403 and changes nothing', async () => {
    const before = await passwordHashOf(ids.alice)
    const other = cookieOf(await signIn(world, 'alice'))
    const res = await change({ token: keys.alice }, { current_password: 'not my password at all', password: NEW_PASSWORD })
    const body = await problem(res, 403)
    expect(body.detail).toContain('current_password')
    expect(await passwordHashOf(ids.alice)).toBe(before)
    expect((await world.call('GET', '/session', { headers: { cookie: other } })).status).toBe(200)
    expect((await signIn(world, 'alice', PASSWORD)).status).toBe(200)
  })

  test('wrong current passwords count in the sign-in throttle: past its limit, 429 before any check, and sign-in from there too', async () => {
    const tight = await openWorld(baseDataset(), { throttle: { maxFailures: 3, windowMs: 60_000, freeFailures: 100, delayStepMs: 0, maxDelayMs: 0 } })
    try {
      await givePasswords(tight, [ids.alice, ids.dana])
      const patch = (current: string) => tight.call('PATCH', '/me', { token: keys.alice, body: { current_password: current, password: NEW_PASSWORD } })
      for (let i = 0; i < 3; i++) await problem(await patch(`wrong guess number ${i}`), 403)
      const refused = await patch(PASSWORD)
      await problem(refused, 429)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      await problem(await tight.call('POST', '/session', { body: { name: 'dana', password: PASSWORD } }), 429)
      tight.clock.advance(60_001)
      expect((await patch(PASSWORD)).status).toBe(200)
    } finally {
      await tight.close()
    }
  })

  test('bad bodies are 400 naming the field and change nothing; a share token 403; no credentials 401; the cookie needs the Origin', async () => {
    const before = await passwordHashOf(ids.alice)
    const short = await problem(await change({ token: keys.alice }, { current_password: PASSWORD, password: 'short' }), 400)
    expect(short.errors!.map((e) => e.path)).toContain('/password')
    const missing = await problem(await change({ token: keys.alice }, { password: NEW_PASSWORD }), 400)
    expect(missing.errors!.map((e) => e.path)).toContain('/current_password')
    await problem(await change({ token: keys.alice }, { current_password: PASSWORD, password: NEW_PASSWORD, name: 'mallory' }), 400)
    await problem(await change({ token: keys.alice }, 'not json'), 400)

    const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { token: string }
    await problem(await change({ token: link.token }, { current_password: PASSWORD, password: NEW_PASSWORD }), 403)
    await problem(await change({}, { current_password: PASSWORD, password: NEW_PASSWORD }), 401)
    const cookie = cookieOf(await signIn(world, 'alice'))
    await problem(await world.call('PATCH', '/me', { headers: { cookie }, body: { current_password: PASSWORD, password: NEW_PASSWORD } }), 403)
    expect(await passwordHashOf(ids.alice)).toBe(before)
  })

  test('a user without a password (keys only) has none to change: 403', async () => {
    const res = await change({ token: keys.bob }, { current_password: PASSWORD, password: NEW_PASSWORD })
    expect((await problem(res, 403)).detail).toContain('no password')
    expect(await passwordHashOf(ids.bob)).toBeNull()
  })
})
