/**
 * The first-run setup through the public surface (createApp(...).handle): the page, POST /setup,
 * its refusals, and setupFirstAccount (what `tracker init` calls).
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { CLI_ACTOR } from '../../src/store/audit'
import { createApp } from '../../src/app'
import { createFirstRun, setupFirstAccount } from '../../src/session/setup'
import { baseDataset, type EngineWorld, ids, keys, openWorld, problem } from '../support/world'
import { cookieAttributes, cookieOf } from './support'

const TOKEN = 'setup-token-for-tests-0123456789'
const PASSWORD = 'a long setup passphrase'
const first = { account: 'Acme Logistics', name: 'Dana', password: PASSWORD }

const worlds: EngineWorld[] = []
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close()
})

/** a server on an empty database, with the setup link's token known */
async function emptyWorld(token = TOKEN): Promise<EngineWorld> {
  const world = await openWorld({})
  worlds.push(world)
  const app = createApp({ stores: world.storesBeside(), clock: world.clock, firstRun: createFirstRun(world.storesBeside().people, token) })
  const call: EngineWorld['call'] = (method, path, { token: bearer, body, headers = {} } = {}) => {
    const init: RequestInit = { method, headers: { ...headers, ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }) } }
    if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body)
    return app.handle(new Request(`http://localhost${path}`, init))
  }
  return { ...world, app, call }
}

const setup = (world: EngineWorld, body: object) => world.call('POST', '/setup', { body })
const count = (world: EngineWorld, table: string) => world.count(table)

describe('GET /setup', () => {
  test('with the token: the form, under a strict CSP, never cached, never referred', async () => {
    const world = await emptyWorld()
    const res = await world.call('GET', `/setup?token=${TOKEN}`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
    const csp = res.headers.get('content-security-policy')!
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("script-src 'self'")
    expect(csp).not.toContain('unsafe-inline')
    const html = await res.text()
    // every input has its label; no asset from elsewhere
    for (const id of ['account', 'name', 'password', 'confirm']) expect(html).toContain(`<label for="${id}">`)
    expect(html).toMatch(/type="password"[^>]*autocomplete="new-password"/)
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//)
    expect(html).not.toContain('<script>')
    for (const [asset] of html.matchAll(/setup\/assets\/[\w.]+/g)) {
      const file = await world.call('GET', `/${asset}`)
      expect(file.status).toBe(200)
      expect((await file.text()).length).toBeGreaterThan(500)
    }
  })

  test('a wrong token: 403 page; once a user exists: 409 page', async () => {
    const world = await emptyWorld()
    for (const path of ['/setup?token=wrong', '/setup']) {
      const res = await world.call('GET', path)
      expect(res.status).toBe(403)
      expect(await res.text()).toContain('This setup link is not valid')
    }
    const settled = await openWorld(baseDataset())
    worlds.push(settled)
    const res = await settled.call('GET', `/setup?token=${TOKEN}`)
    expect(res.status).toBe(409)
    expect(await res.text()).toContain('already set up')
  })
})

describe('POST /setup', () => {
  test('creates the account and its admin, records them, signs the person in and spends the token', async () => {
    const world = await emptyWorld()
    const res = await setup(world, { token: TOKEN, ...first })
    expect(res.status).toBe(200)
    const { user } = await res.json()
    expect(user).toEqual({ id: expect.any(String), name: 'Dana', role: 'admin', account: { id: expect.any(String), name: 'Acme Logistics' } })
    expect(cookieAttributes(res).get('httponly')).toBe('')
    expect(cookieAttributes(res).get('samesite')).toBe('Strict')
    const cookie = cookieOf(res)

    const session = await world.call('GET', '/session', { headers: { cookie } })
    expect(session.status).toBe(200)
    expect((await session.json()).user).toEqual(user)
    // the admin signs in by name, any case
    const signIn = await world.call('POST', '/session', { body: { name: 'dana', password: PASSWORD } })
    expect(signIn.status).toBe(200)

    const audit = await world.execute<{ actor: string; action: string; object_type: string; object_id: string; account_id: string; request_id: string | null }>(
      sql`SELECT actor, action, object_type, object_id, account_id, request_id FROM audit_log ORDER BY id`,
    )
    expect(audit).toEqual([
      { actor: user.id, action: 'setup', object_type: 'account', object_id: user.account.id, account_id: user.account.id, request_id: res.headers.get('x-request-id') },
      { actor: user.id, action: 'setup', object_type: 'user', object_id: user.id, account_id: user.account.id, request_id: res.headers.get('x-request-id') },
    ])
    const stored = (await world.execute<{ password_hash: string }>(sql`SELECT password_hash FROM users`))[0]!
    expect(stored.password_hash).toStartWith('$argon2id$')
    expect(JSON.stringify(audit)).not.toContain(PASSWORD)

    // spent: the same token is 403 (page and API); any other is 409 now that a user exists
    await problem(await setup(world, { token: TOKEN, ...first, name: 'mallory' }), 403)
    const page = await world.call('GET', `/setup?token=${TOKEN}`)
    expect(page.status).toBe(403)
    expect(await page.text()).toContain('has been used')
    await problem(await setup(world, { token: 'another-token', ...first, name: 'mallory' }), 409)
    expect(await count(world, 'users')).toBe(1)
  })

  test('bad input is 400 naming the field, and nothing is written; the token stays valid', async () => {
    const world = await emptyWorld()
    const cases: [object, string][] = [
      [{ ...first, password: 'too short' }, '/password'],
      [{ ...first, account: '   ' }, '/account'],
      [{ ...first, name: '' }, '/name'],
      [{ ...first, name: 'x'.repeat(101) }, '/name'],
      [{ ...first, name: ' dana' }, '/name'],
      [{ ...first, account: 'x'.repeat(201) }, '/account'],
      [{ ...first, name: 'tab\there' }, '/name'],
      [{ account: 'Acme', name: 'dana' }, '/password'],
      [{ ...first, role: 'admin' }, '/role'],
      [{ ...first, password: 12345678901 }, '/password'],
    ]
    for (const [body, path] of cases) {
      const answer = await problem(await setup(world, { token: TOKEN, ...body }), 400)
      expect({ path, paths: answer.errors?.map((e) => e.path) ?? answer.detail }).toEqual({ path, paths: expect.arrayContaining([path]) })
      expect(answer.detail).not.toContain('too short')
    }
    await problem(await world.call('POST', '/setup', { body: 'not json' }), 400)
    await problem(await world.call('POST', '/setup', { body: { token: TOKEN, ...first, password: 'p'.repeat(2 << 20) } }), 413)
    expect([await count(world, 'accounts'), await count(world, 'users'), await count(world, 'audit_log'), await count(world, 'sessions')]).toEqual([0, 0, 0, 0])
    expect((await setup(world, { token: TOKEN, ...first })).status).toBe(200)
  })

  test('a wrong token is 403 and writes nothing', async () => {
    const world = await emptyWorld()
    await problem(await setup(world, { token: 'guess', ...first }), 403)
    await problem(await setup(world, { token: '', ...first }), 403)
    expect(await count(world, 'users')).toBe(0)
  })

  test('a server that already has users: 409, whoever asks (a member, an admin of an account, a share token, nobody)', async () => {
    const world = await openWorld(baseDataset())
    worlds.push(world)
    const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { token: string }
    for (const token of [undefined, keys.alice, keys.erin, link.token]) {
      await problem(await world.call('POST', '/setup', { token, body: { token: 'whatever', ...first, name: 'mallory' } }), 409)
    }
    expect(await count(world, 'users')).toBe(5)
  })

  test('setup done another way meanwhile (tracker init): the valid link answers 409 and is spent', async () => {
    const world = await emptyWorld()
    const user = await setupFirstAccount(world.storesBeside().people, { account: 'Globex', name: 'erin', password: PASSWORD }, world.clock, { actor: CLI_ACTOR })
    expect(user).toMatchObject({ name: 'erin', role: 'admin', account: { name: 'Globex' } })
    const audit = await world.execute<{ actor: string }>(sql`SELECT actor FROM audit_log`)
    expect(audit).toEqual([{ actor: 'cli' }, { actor: 'cli' }])
    await problem(await setup(world, { token: TOKEN, ...first }), 409)
    await problem(await setup(world, { token: TOKEN, ...first }), 403)
    expect(await count(world, 'users')).toBe(1)
    // and setupFirstAccount itself refuses a second time
    await expect(setupFirstAccount(world.storesBeside().people, first, world.clock)).rejects.toMatchObject({ status: 409 })
  })

  test('a new token at every start until setup is done; none once a user exists', async () => {
    const world = await openWorld({})
    worlds.push(world)
    const a = await createFirstRun(world.storesBeside().people)
    const b = await createFirstRun(world.storesBeside().people)
    expect(a.token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(b.token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(a.token).not.toBe(b.token)
    await setupFirstAccount(world.storesBeside().people, first, world.clock)
    expect((await createFirstRun(world.storesBeside().people)).token).toBeNull()
  })
})
