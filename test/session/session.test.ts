/**
 * Sign-in for people through the public surface (createApp(...).handle): POST/GET/DELETE
 * /session, the cookie on other routes (and its Origin check), expiry with the injected clock,
 * equal answers for an unknown name and a wrong password, and the shared failed-auth throttle.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createHash } from 'node:crypto'
import { createApp } from '../../src/app'
import { manualClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/log'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'
import { cookieAttributes, cookieOf, givePasswords, headersOf, PASSWORD, signIn } from './support'

const DAY_MS = 24 * 60 * 60 * 1000
// APP_URL is not set: the console's origin is the one a request is sent to (app.handle's http://localhost)
const APP_ORIGIN = 'http://localhost'

let world: EngineWorld
const logLines: string[] = []

beforeAll(async () => {
  world = await openWorld(baseDataset(), { log: createLogger('debug', (line) => logLines.push(line)) })
  await givePasswords(world, [ids.alice, ids.dana, ids.carol])
})
afterAll(() => world.close())

const sessionRows = () => world.execute<{ id_hash: string; user_id: string; expires_at: number }>(sql`SELECT id_hash, user_id, expires_at FROM sessions`)

describe('POST /session', () => {
  test('signs in by name (any case) and password: the user, and an HttpOnly SameSite=Strict cookie holding a new random id', async () => {
    const res = await signIn(world, 'ALICE')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ user: { id: ids.alice, name: 'alice', role: 'member', account: { id: ids.acme, name: 'Acme Logistics' } } })
    expect(res.headers.get('cache-control')).toBe('no-store')
    const cookie = cookieOf(res)
    expect(cookie).toMatch(/^tracker_session=[A-Za-z0-9_-]{43}$/)
    const attributes = cookieAttributes(res)
    expect(Object.fromEntries(attributes)).toEqual({ path: '/', 'max-age': String(14 * 24 * 3600), httponly: '', samesite: 'Strict' })

    // stored only as its SHA-256
    const sessionId = cookie.split('=')[1]!
    const rows = (await sessionRows()).filter((r) => r.user_id === ids.alice)
    expect(rows.map((r) => r.id_hash)).toContain(createHash('sha256').update(sessionId).digest('hex'))
    expect(JSON.stringify(rows)).not.toContain(sessionId)

    // a new id at every sign-in; both sessions live
    const again = cookieOf(await signIn(world, 'alice'))
    expect(again).not.toBe(cookie)
    for (const c of [cookie, again]) expect((await world.call('GET', '/session', { headers: { cookie: c } })).status).toBe(200)
  })

  test('an admin signs in as an admin', async () => {
    const res = await signIn(world, 'Dana')
    expect((await res.json()).user).toEqual({ id: ids.dana, name: 'dana', role: 'admin', account: { id: ids.acme, name: 'Acme Logistics' } })
  })

  test('the cookie is Secure when APP_URL is https', async () => {
    const secure = await openWorld(baseDataset(), { config: loadConfig({ APP_URL: 'https://fleet.example.org' }) })
    try {
      await givePasswords(secure, [ids.alice])
      const res = await signIn(secure, 'alice', PASSWORD, { origin: 'https://fleet.example.org' })
      expect(res.status).toBe(200)
      expect(cookieAttributes(res).has('secure')).toBe(true)
    } finally {
      await secure.close()
    }
  })

  test('an unknown name, a wrong password and a user without a password get the same answer', async () => {
    const answers = await Promise.all([
      signIn(world, 'nobody-by-this-name'),
      signIn(world, 'alice', 'not the right password'),
      signIn(world, 'bob', PASSWORD), // bob has no password: no sign-in
    ])
    const seen = await Promise.all(answers.map(async (res) => ({ status: res.status, headers: headersOf(res), body: await res.text() })))
    expect(seen[0]!.status).toBe(401)
    expect(seen[0]!.headers['set-cookie']).toBeUndefined()
    expect(JSON.parse(seen[0]!.body)).toMatchObject({ status: 401, detail: 'Wrong name or password' })
    expect(seen[1]).toEqual(seen[0]!)
    expect(seen[2]).toEqual(seen[0]!)
  })

  test('bad bodies are 400 naming the field, with nothing signed in; bodies are bounded like every other', async () => {
    const before = (await sessionRows()).length
    const missing = await problem(await world.call('POST', '/session', { body: { name: 'alice' } }), 400)
    expect(missing.errors!.map((e) => e.path)).toContain('/password')
    const unknown = await problem(await world.call('POST', '/session', { body: { name: 'alice', password: PASSWORD, remember: true } }), 400)
    expect(unknown.detail).toContain('remember')
    await problem(await world.call('POST', '/session', { body: 'name=alice&password=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 400)
    await problem(await world.call('POST', '/session', { body: { name: 'alice', password: 'x'.repeat(2 << 20) } }), 413)
    await problem(await world.call('POST', '/session', { body: '['.repeat(17) + ']'.repeat(17) }), 400)
    await problem(await world.call('POST', '/session'), 400)
    expect((await sessionRows()).length).toBe(before)
  })

  test('a browser on another site cannot sign anyone in (login CSRF): 403', async () => {
    const res = await signIn(world, 'alice', PASSWORD, { origin: 'https://evil.example' })
    await problem(res, 403)
    expect(res.headers.get('set-cookie')).toBeNull()
    expect((await signIn(world, 'alice', PASSWORD, { origin: APP_ORIGIN })).status).toBe(200)
  })
})

describe('the session cookie on the API', () => {
  let cookie: string
  beforeAll(async () => {
    cookie = cookieOf(await signIn(world, 'alice'))
  })

  test('GET /devices answers what alice\'s key answers', async () => {
    const byCookie = await world.call('GET', '/devices', { headers: { cookie } })
    const byKey = await world.call('GET', '/devices', { token: keys.alice })
    expect(byCookie.status).toBe(200)
    expect(await byCookie.json()).toEqual(await byKey.json())
  })

  test('a change made with the cookie needs an Origin (or Referer) of the origin it was sent to, else 403; a bearer key needs none', async () => {
    const share = (headers: Record<string, string>, token?: string) =>
      world.call('POST', '/devices/share', { body: { devices: [ids.truck1], ttl: 3600 }, headers, token })
    expect((await share({ cookie, origin: APP_ORIGIN })).status).toBe(200)
    expect((await share({ cookie, referer: `${APP_ORIGIN}/devices` })).status).toBe(200)
    await problem(await share({ cookie }), 403)
    await problem(await share({ cookie, origin: 'https://evil.example' }), 403)
    await problem(await share({ cookie, referer: 'https://evil.example/page' }), 403)
    expect((await share({}, keys.alice)).status).toBe(200)
    expect((await share({ origin: 'https://evil.example' }, keys.alice)).status).toBe(200)
    // reads need no Origin
    expect((await world.call('GET', '/devices/share', { headers: { cookie, origin: 'https://evil.example' } })).status).toBe(200)
  })

  test('a bearer header wins over the cookie', async () => {
    const res = await world.call('GET', '/session', { token: keys.carol, headers: { cookie } })
    expect((await res.json()).user.id).toBe(ids.carol)
  })

  test("the cookie is its user's role: a member gets 403 on an admin route, an admin is served", async () => {
    const device = (serial: string) => ({ alias: `Trailer ${serial}`, model: ids.bare, serial })
    await problem(await world.call('POST', '/devices', { body: device('S-COOKIE-1'), headers: { cookie, origin: APP_ORIGIN } }), 403)
    const admin = cookieOf(await signIn(world, 'dana'))
    const created = await world.call('POST', '/devices', { body: device('S-COOKIE-2'), headers: { cookie: admin, origin: APP_ORIGIN } })
    expect(created.status).toBe(201)
    await problem(await world.call('POST', '/devices', { body: device('S-COOKIE-3'), headers: { cookie: admin } }), 403)
  })
})

describe('GET /session', () => {
  test('the user of the cookie; 401 without one; an API key works too; a share token is 403', async () => {
    const cookie = cookieOf(await signIn(world, 'dana'))
    const res = await world.call('GET', '/session', { headers: { cookie } })
    expect(res.status).toBe(200)
    expect((await res.json()).user).toMatchObject({ id: ids.dana, role: 'admin' })
    // a young session keeps its id: nothing to set
    expect(res.headers.get('set-cookie')).toBeNull()

    await problem(await world.call('GET', '/session'), 401)
    await problem(await world.call('GET', '/session', { headers: { cookie: 'tracker_session=' + 'A'.repeat(43) } }), 401)
    const byKey = await world.call('GET', '/session', { token: keys.erin })
    expect((await byKey.json()).user).toEqual({ id: ids.erin, name: 'erin', role: 'admin', account: { id: ids.globex, name: 'Globex' } })
    expect(byKey.headers.get('set-cookie')).toBeNull()

    const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { token: string }
    await problem(await world.call('GET', '/session', { token: link.token }), 403)
  })

  test('a session over a day old gets a new id (the cookie slides too); the old id works one more minute, then ends', async () => {
    const old = cookieOf(await signIn(world, 'dana'))
    const start = world.clock.now()
    try {
      world.clock.advance(DAY_MS + 1)
      const res = await world.call('GET', '/session', { headers: { cookie: old } })
      expect(res.status).toBe(200)
      const fresh = cookieOf(res)
      expect(fresh).toMatch(/^tracker_session=[A-Za-z0-9_-]{43}$/)
      expect(fresh).not.toBe(old)
      expect(Object.fromEntries(cookieAttributes(res))).toEqual({ path: '/', 'max-age': String(14 * 24 * 3600), httponly: '', samesite: 'Strict' })
      // the new one is young: asked again, nothing new
      expect((await world.call('GET', '/session', { headers: { cookie: fresh } })).headers.get('set-cookie')).toBeNull()
      // a request the browser sent with the old cookie before it had the new one still passes
      world.clock.advance(30_000)
      expect((await world.call('GET', '/devices', { headers: { cookie: old } })).status).toBe(200)
      const again = await world.call('GET', '/session', { headers: { cookie: old } })
      expect(again.headers.get('set-cookie')).toBeNull()
      world.clock.advance(31_000)
      await problem(await world.call('GET', '/devices', { headers: { cookie: old } }), 401)
      // and so says a process that never saw it
      const other = createApp({ stores: world.storesBeside(), clock: world.clock })
      expect((await other.handle(new Request('http://localhost/session', { headers: { cookie: old } }))).status).toBe(401)
      expect((await other.handle(new Request('http://localhost/session', { headers: { cookie: fresh } }))).status).toBe(200)
      expect((await world.call('GET', '/devices', { headers: { cookie: fresh } })).status).toBe(200)
    } finally {
      world.clock.set(start)
    }
  })
})

describe('DELETE /session', () => {
  test('ends the session on the server and clears the cookie; the cookie then fails everywhere', async () => {
    const cookie = cookieOf(await signIn(world, 'alice'))
    const idHash = createHash('sha256').update(cookie.split('=')[1]!).digest('hex')
    // without the Origin check it is refused, and the session lives on
    await problem(await world.call('DELETE', '/session', { headers: { cookie } }), 403)
    await problem(await world.call('DELETE', '/session', { headers: { cookie, origin: 'https://evil.example' } }), 403)
    expect((await world.call('GET', '/session', { headers: { cookie } })).status).toBe(200)

    const res = await world.call('DELETE', '/session', { headers: { cookie, origin: APP_ORIGIN } })
    expect(res.status).toBe(204)
    expect(res.headers.get('set-cookie')).toStartWith('tracker_session=;')
    expect(cookieAttributes(res).get('max-age')).toBe('0')
    expect((await sessionRows()).some((r) => r.id_hash === idHash)).toBe(false)
    await problem(await world.call('GET', '/session', { headers: { cookie } }), 401)
    await problem(await world.call('GET', '/devices', { headers: { cookie } }), 401)
    await problem(await world.call('DELETE', '/session', { headers: { cookie, origin: APP_ORIGIN } }), 401)
  })

  test('a session ended elsewhere (another process deleting the row) fails on the next request', async () => {
    const cookie = cookieOf(await signIn(world, 'alice'))
    expect((await world.call('GET', '/devices', { headers: { cookie } })).status).toBe(200)
    const other = createApp({ stores: world.storesBeside(), clock: world.clock })
    const ended = await other.handle(new Request('http://localhost/session', { method: 'DELETE', headers: { cookie, origin: APP_ORIGIN } }))
    expect(ended.status).toBe(204)
    await problem(await world.call('GET', '/devices', { headers: { cookie } }), 401)
  })

  test('an API key has no session to end (400); a share token 403; no credentials 401', async () => {
    await problem(await world.call('DELETE', '/session', { token: keys.alice }), 400)
    const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { token: string }
    await problem(await world.call('DELETE', '/session', { token: link.token }), 403)
    await problem(await world.call('DELETE', '/session'), 401)
  })
})

describe('when sessions end', () => {
  test('14 days after the last use, sliding with each use (the injected clock: no sleeping)', async () => {
    const cookie = cookieOf(await signIn(world, 'carol'))
    // a use that is not GET /session (which would give the session a new id after a day)
    const get = () => world.call('GET', '/devices', { headers: { cookie } })
    const start = world.clock.now()
    try {
      world.clock.advance(13 * DAY_MS)
      expect((await get()).status).toBe(200)
      world.clock.advance(13 * DAY_MS) // 26 days after sign-in, 13 after the last use
      expect((await get()).status).toBe(200)
      world.clock.advance(14 * DAY_MS)
      await problem(await get(), 401)
      // a process that never saw the session agrees (the database was told of each use)
      const other = createApp({ stores: world.storesBeside(), clock: world.clock })
      await problem(await other.handle(new Request('http://localhost/devices', { headers: { cookie } })), 401)
    } finally {
      world.clock.set(start)
    }
  })

  test('the slide is written to the database (in the background), so a process that never saw the session agrees', async () => {
    const clock = manualClock()
    const app = createApp({ stores: world.storesBeside(clock), clock, sessionFlushMs: 1 })
    const cookie = cookieOf(await app.handle(new Request('http://localhost/session', { method: 'POST', body: JSON.stringify({ name: 'alice', password: PASSWORD }) })))
    const idHash = createHash('sha256').update(cookie.split('=')[1]!).digest('hex')
    const signedInAt = clock.now()
    clock.advance(10 * DAY_MS)
    expect((await app.handle(new Request('http://localhost/devices', { headers: { cookie } }))).status).toBe(200)
    const expiresAt = async () => (await world.execute<{ expires_at: number }>(sql`SELECT expires_at FROM sessions WHERE id_hash = ${idHash}`))[0]!.expires_at
    for (let i = 0; i < 200 && (await expiresAt()) === signedInAt + 14 * DAY_MS; i++) await Bun.sleep(5)
    expect(await expiresAt()).toBe(signedInAt + 24 * DAY_MS)

    const laterClock = manualClock(signedInAt + 20 * DAY_MS)
    const fresh = createApp({ stores: world.storesBeside(laterClock), clock: laterClock })
    expect((await fresh.handle(new Request('http://localhost/devices', { headers: { cookie } }))).status).toBe(200)
  })

  test('when the user is deleted, or their password changes', async () => {
    const danaCookie = cookieOf(await signIn(world, 'dana'))
    const carolCookie = cookieOf(await signIn(world, 'carol'))
    const aliceCookie = cookieOf(await signIn(world, 'alice'))
    expect((await world.call('GET', '/devices', { headers: { cookie: danaCookie } })).status).toBe(200)

    // a new password (the users API, by the account's admin): alice's sessions end, dana's live on
    const changed = await world.call('PATCH', `/users/${ids.alice}`, { token: keys.dana, body: { password: 'a brand new passphrase' } })
    if (changed.status !== 404) {
      expect(changed.status).toBe(200)
      await problem(await world.call('GET', '/session', { headers: { cookie: aliceCookie } }), 401)
      expect((await signIn(world, 'alice', 'a brand new passphrase')).status).toBe(200)
      await problem(await signIn(world, 'alice'), 401)
      await givePasswords(world, [ids.alice])
    }
    expect((await world.call('GET', '/session', { headers: { cookie: danaCookie } })).status).toBe(200)

    // the user deleted (by any process): their session fails on the next request
    await world.execute(sql`DELETE FROM share_links WHERE created_by = ${ids.carol}`)
    await world.execute(sql`DELETE FROM user_groups WHERE user_id = ${ids.carol}`)
    await world.execute(sql`DELETE FROM users WHERE id = ${ids.carol}`)
    await problem(await world.call('GET', '/session', { headers: { cookie: carolCookie } }), 401)
    await problem(await world.call('GET', '/devices', { headers: { cookie: carolCookie } }), 401)
  })
})

describe('the failed-authentication throttle', () => {
  test('wrong passwords and bad keys count together; past the limit 429 with Retry-After, before any password is checked', async () => {
    const throttled = await openWorld(baseDataset(), { throttle: { maxFailures: 3, windowMs: 60_000, freeFailures: 10, delayStepMs: 0, maxDelayMs: 0 } })
    try {
      await givePasswords(throttled, [ids.alice])
      await problem(await signIn(throttled, 'alice', 'wrong password 1'), 401)
      await problem(await throttled.call('GET', '/devices', { token: 'not-a-key-0123456789' }), 401)
      await problem(await signIn(throttled, 'nobody', 'wrong password 2'), 401)
      // the right password too: refused before it is verified
      const refused = await signIn(throttled, 'alice')
      await problem(refused, 429)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(refused.headers.get('set-cookie')).toBeNull()
      // a valid key is served whatever the count
      expect((await throttled.call('GET', '/devices', { token: keys.alice })).status).toBe(200)
      throttled.clock.advance(60_000)
      expect((await signIn(throttled, 'alice')).status).toBe(200)
    } finally {
      await throttled.close()
    }
  })
})

test('a session id is in the answer that creates it and in no other', async () => {
  const res = await signIn(world, 'alice')
  const cookie = cookieOf(res)
  const sessionId = cookie.split('=')[1]!
  const later: Response[] = []
  const start = world.clock.now()
  try {
    later.push(await world.call('GET', '/session', { headers: { cookie } }))
    later.push(await world.call('GET', '/devices', { headers: { cookie } }))
    later.push(await world.call('POST', '/devices/share', { body: { devices: [ids.truck1], ttl: 3600 }, headers: { cookie, origin: APP_ORIGIN } }))
    world.clock.advance(DAY_MS + 1)
    later.push(await world.call('GET', '/session', { headers: { cookie } }))
    const renewed = cookieOf(later.at(-1)!)
    later.push(await world.call('DELETE', '/session', { headers: { cookie: renewed, origin: APP_ORIGIN } }))
  } finally {
    world.clock.set(start)
  }
  for (const response of later) {
    const text = JSON.stringify(headersOf(response)) + (await response.text())
    expect(text).not.toContain(sessionId)
  }
})

test('no log line carries a password or a session id', async () => {
  const cookie = cookieOf(await signIn(world, 'alice'))
  await world.call('GET', '/devices', { headers: { cookie } })
  await signIn(world, 'alice', 'a wrong password here')
  const sessionId = cookie.split('=')[1]!
  const all = logLines.join('\n')
  expect(all).toContain('"route":"/session"')
  expect(all).not.toContain(PASSWORD)
  expect(all).not.toContain('a wrong password here')
  expect(all).not.toContain(sessionId)
})
