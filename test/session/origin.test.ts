/**
 * The console works from whatever address it was opened at (#20): a change made with the session
 * cookie must come from the origin the request was sent to (its scheme and Host), or from
 * APP_URL's when APP_URL is set; any other origin is 403 with a detail naming where to open the
 * console. Behind TRUSTED_PROXIES their X-Forwarded-Proto/-Host say the scheme and host; from
 * anyone else those headers change nothing. Through createApp(...).handle.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { baseDataset, ids, openWorld, problem, type EngineWorld } from '../support/world'
import { cookieOf, givePasswords, PASSWORD } from './support'

const LAN = 'http://192.168.1.20:3000'
const lanHost = { host: '192.168.1.20:3000' }

const worlds: EngineWorld[] = []
afterAll(async () => {
  for (const world of worlds) await world.close()
})

async function worldWith(env: Record<string, string>): Promise<EngineWorld> {
  const world = await openWorld(baseDataset(), { config: loadConfig(env) })
  worlds.push(world)
  await givePasswords(world, [ids.dana])
  return world
}

async function signIn(world: EngineWorld, headers: Record<string, string>): Promise<Response> {
  return world.call('POST', '/session', { body: { name: 'dana', password: PASSWORD }, headers })
}

const device = (serial: string) => ({ alias: `Van ${serial}`, model: ids.bare, serial })

describe('APP_URL not set (the default http://localhost:PORT)', () => {
  let world: EngineWorld
  let cookie: string
  beforeAll(async () => {
    world = await worldWith({})
    const signedIn = await signIn(world, { ...lanHost, origin: LAN })
    expect(signedIn.status).toBe(200)
    // over plain http the cookie cannot be Secure
    expect(signedIn.headers.get('set-cookie')).not.toContain('Secure')
    cookie = cookieOf(signedIn)
  })

  test('the console opened at the server\'s LAN address signs in and writes with its cookie', async () => {
    const created = await world.call('POST', '/devices', { body: device('LAN-1'), headers: { cookie, ...lanHost, origin: LAN } })
    expect(created.status).toBe(201)
    const renamed = await world.call('POST', '/groups', { body: { name: 'From the LAN' }, headers: { cookie, ...lanHost, referer: `${LAN}/#/admin/groups` } })
    expect(renamed.status).toBe(201)
    // the host in any case, the default port written or not: the same origin a browser writes
    const https = await world.call('POST', '/devices', { body: device('LAN-2'), headers: { cookie, host: 'Fleet.Example.org:80', origin: 'http://fleet.example.org' } })
    expect(https.status).toBe(201)
    const signedOut = await world.call('DELETE', '/session', { headers: { cookie, ...lanHost, origin: LAN } })
    expect(signedOut.status).toBe(204)
    // and signs in again from there
    cookie = cookieOf(await signIn(world, { ...lanHost, origin: LAN }))
  })

  test('a page on another origin is refused with where to open the console; nothing changes', async () => {
    const before = (await (await world.call('GET', '/devices', { headers: { cookie } })).json()).length
    for (const origin of ['https://evil.example', 'http://192.168.1.20:3001', 'https://192.168.1.20:3000', 'http://localhost:3000']) {
      const body = await problem(await world.call('POST', '/devices', { body: device('EVIL-1'), headers: { cookie, ...lanHost, origin } }), 403)
      expect(body.detail).toContain(`open the console at ${LAN}`)
      expect(body.detail).toContain(origin)
    }
    const refused = await problem(await signIn(world, { ...lanHost, origin: 'https://evil.example' }), 403)
    expect(refused.detail).toContain(`open the console at ${LAN}`)
    // no Origin nor Referer with the cookie: refused, saying what is missing
    expect((await problem(await world.call('POST', '/devices', { body: device('EVIL-2'), headers: { cookie, ...lanHost } }), 403)).detail).toContain('Origin')
    // a Host that is not a host matches nothing
    await problem(await world.call('POST', '/devices', { body: device('EVIL-3'), headers: { cookie, host: 'evil.example/x@192.168.1.20', origin: 'http://evil.example' } }), 403)
    expect((await (await world.call('GET', '/devices', { headers: { cookie } })).json()).length).toBe(before)
  })

  test('X-Forwarded-Proto and X-Forwarded-Host from a peer TRUSTED_PROXIES does not name change nothing', async () => {
    const forwarded = { cookie, host: '192.168.1.20:3000', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example' }
    await problem(await world.call('POST', '/devices', { body: device('FWD-1'), headers: { ...forwarded, origin: 'https://evil.example' } }), 403)
    expect((await world.call('POST', '/devices', { body: device('FWD-2'), headers: { ...forwarded, origin: LAN } })).status).toBe(201)
  })
})

describe('APP_URL set', () => {
  let world: EngineWorld
  let cookie: string
  const APP = 'https://fleet.example.org'
  beforeAll(async () => {
    world = await worldWith({ APP_URL: `${APP}/tracker` })
    cookie = cookieOf(await signIn(world, { ...lanHost, origin: APP }))
  })

  test("both APP_URL's origin and the request's own are allowed", async () => {
    expect((await world.call('POST', '/devices', { body: device('SET-1'), headers: { cookie, ...lanHost, origin: APP } })).status).toBe(201)
    expect((await world.call('POST', '/devices', { body: device('SET-2'), headers: { cookie, ...lanHost, origin: LAN } })).status).toBe(201)
    expect((await signIn(world, { ...lanHost, origin: LAN })).status).toBe(200)
  })

  test("another origin is 403 naming APP_URL's origin as where to open the console", async () => {
    const body = await problem(await world.call('PATCH', '/me', { body: { current_password: PASSWORD, password: 'another long password' }, headers: { cookie, ...lanHost, origin: 'http://10.0.0.9:3000' } }), 403)
    expect(body.detail).toContain(`open the console at ${APP}`)
    const signIn403 = await problem(await signIn(world, { ...lanHost, origin: 'http://10.0.0.9:3000' }), 403)
    expect(signIn403.detail).toContain(`open the console at ${APP}`)
  })
})

describe('behind a trusted proxy (TRUSTED_PROXIES), over a real socket', () => {
  test("the proxy's X-Forwarded-Proto and X-Forwarded-Host say the origin; the Host it sends does not", async () => {
    const world = await worldWith({ TRUSTED_PROXIES: '127.0.0.1' })
    const server = world.app.listen({ port: 0, hostname: '127.0.0.1' }).server!
    try {
      const base = `http://127.0.0.1:${server.port}`
      // what a TLS proxy at https://fleet.example.org passes on, talking plain HTTP to the server
      const proxied = { 'content-type': 'application/json', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'fleet.example.org' }
      const post = (path: string, body: unknown, headers: Record<string, string>) => fetch(`${base}${path}`, { method: 'POST', headers: { ...proxied, ...headers }, body: JSON.stringify(body) })
      const signedIn = await post('/session', { name: 'dana', password: PASSWORD }, { origin: 'https://fleet.example.org' })
      expect(signedIn.status).toBe(200)
      const cookie = cookieOf(signedIn)
      // the browser came over https: the cookie is Secure, though APP_URL is not set
      expect(signedIn.headers.get('set-cookie')).toContain('; Secure')
      expect((await post('/devices', device('PROXY-1'), { cookie, origin: 'https://fleet.example.org' })).status).toBe(201)
      // the socket's own address is not where the browser is: refused, naming the proxy's origin
      const refused = await post('/devices', device('PROXY-2'), { cookie, origin: base })
      expect(refused.status).toBe(403)
      expect((await refused.json()).detail).toContain('open the console at https://fleet.example.org')
    } finally {
      await world.app.stop(true)
    }
  })
})
