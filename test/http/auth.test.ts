import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeAll(async () => {
  world = await openWorld(undefined, { throttle: { maxFailures: 5, windowMs: 60_000, freeFailures: 2, delayStepMs: 1, maxDelayMs: 5 } })
})
afterAll(() => world.close())

describe('bearer authentication', () => {
  test('a missing header is 401 with a bare Bearer challenge', async () => {
    const res = await world.call('GET', '/devices')
    const body = await problem(res, 401)
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="tracker"')
    expect(body.detail).toContain('Bearer')
  })

  test.each([['Basic abc'], ['Bearer'], ['Bearer '], ['token-without-scheme']])('a malformed header (%s) is 401', async (header) => {
    const res = await world.call('GET', '/devices', { headers: { authorization: header } })
    await problem(res, 401)
    expect(res.headers.get('www-authenticate')).toStartWith('Bearer realm="tracker"')
  })

  test('an unknown key is 401 with error="invalid_token"', async () => {
    const res = await world.call('GET', `/devices/${ids.truck1}`, { token: 'not-a-real-key-at-all' })
    await problem(res, 401)
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="tracker", error="invalid_token"')
  })

  test('every endpoint under /devices asks for it', async () => {
    for (const path of ['/devices', `/devices/${ids.truck1}`, `/devices/${ids.truck1}/commands`]) {
      await problem(await world.call('GET', path), 401)
    }
  })

  test('the scheme name is case-insensitive', async () => {
    const res = await world.call('GET', '/devices', { headers: { authorization: `bearer ${keys.alice}` } })
    expect(res.status).toBe(200)
  })

  test('X-ACT and X-Dev sent by a client widen nothing', async () => {
    const res = await world.call('GET', `/devices/${ids.truck1}`, { token: keys.bob, headers: { 'x-act': 'shared', 'x-dev': ids.truck1 } })
    await problem(res, 404)
    const list = (await (await world.call('GET', '/devices', { token: keys.bob, headers: { 'x-act': 'shared', 'x-dev': `${ids.truck1},${ids.globexCar}` } })).json()) as { id: string }[]
    expect(list.map((d) => d.id)).toEqual([ids.truck2, ids.van1])
  })
})

describe('failed-authentication throttle', () => {
  const tight = { maxFailures: 5, windowMs: 60_000, freeFailures: 2, delayStepMs: 1, maxDelayMs: 5 }

  test('repeated unknown tokens are refused with 429 and Retry-After until the window ends; a valid key is still served', async () => {
    const w = await openWorld(undefined, { throttle: tight })
    try {
      for (let i = 0; i < 5; i++) await problem(await w.call('GET', '/devices', { token: `wrong-key-number-${i}` }), 401)
      const refused = await w.call('GET', '/devices', { token: 'wrong-key-number-6' })
      await problem(refused, 429)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      await problem(await w.call('GET', '/devices'), 429)
      // someone else's failures never refuse a valid credential (behind a proxy, everyone shares one address)
      expect((await w.call('GET', '/devices', { token: keys.alice })).status).toBe(200)
      await problem(await w.call('GET', '/devices', { token: 'wrong-key-number-7' }), 429)
      w.clock.advance(60_001)
      await problem(await w.call('GET', '/devices', { token: 'wrong-key-number-8' }), 401)
    } finally {
      await w.close()
    }
  })

  test('a success erases no failure: guesses between uses of a share link still run out', async () => {
    const w = await openWorld(undefined, { throttle: tight })
    try {
      const link = (await (await w.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { token: string }
      const statuses: number[] = []
      for (let round = 0; round < 3; round++) {
        for (let guess = 0; guess < 2; guess++) statuses.push((await w.call('GET', '/devices', { token: `guess-${round}-${guess}-abcdefgh` })).status)
        expect((await w.call('GET', '/devices', { token: link.token })).status).toBe(200)
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429])
    } finally {
      await w.close()
    }
  })
})

describe('over a real socket', () => {
  const tight = { maxFailures: 3, windowMs: 60_000, freeFailures: 1, delayStepMs: 1, maxDelayMs: 5 }
  async function serve(env: Record<string, string>) {
    const w = await openWorld(undefined, { throttle: tight, config: loadConfig(env) })
    const server = w.app.listen({ port: 0, hostname: '127.0.0.1' })
    const url = `http://127.0.0.1:${server.server!.port}/devices`
    const call = (token: string, forwardedFor?: string) =>
      fetch(url, { headers: { authorization: `Bearer ${token}`, ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) } })
    return { call, close: async () => { await w.app.stop(); await w.close() } }
  }

  test('the throttle counts by peer address: its failures get 429, its valid key 200', async () => {
    const { call, close } = await serve({})
    try {
      for (let i = 0; i < 3; i++) expect((await call(`unknown-token-${i}-abcdef`)).status).toBe(401)
      const refused = await call('unknown-token-3-abcdef')
      expect(refused.status).toBe(429)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      expect((await call(keys.alice)).status).toBe(200)
    } finally {
      await close()
    }
  })

  test('without TRUSTED_PROXIES, X-Forwarded-For is ignored: a client cannot dodge the throttle by writing it', async () => {
    const { call, close } = await serve({})
    try {
      for (let i = 0; i < 3; i++) expect((await call(`unknown-token-${i}-abcdef`, `198.51.100.${i}`)).status).toBe(401)
      expect((await call('unknown-token-3-abcdef', '198.51.100.99')).status).toBe(429)
    } finally {
      await close()
    }
  })

  test('behind a trusted proxy, each client is its own X-Forwarded-For address: one client\'s failures lock out nobody else', async () => {
    const { call, close } = await serve({ TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.1' })
    try {
      // the right-most address that is not a trusted proxy is the client; what it wrote to the left is not believed
      for (let i = 0; i < 3; i++) expect((await call(`unknown-token-${i}-abcdef`, `1.2.3.${i}, 203.0.113.7, 10.1.1.1`)).status).toBe(401)
      expect((await call('unknown-token-3-abcdef', '203.0.113.7')).status).toBe(429)
      // another client behind the same proxy
      expect((await call('unknown-token-4-abcdef', '203.0.113.8')).status).toBe(401)
      expect((await call(keys.alice, '203.0.113.8')).status).toBe(200)
    } finally {
      await close()
    }
  })
})

test('TRUSTED_PROXIES must hold addresses or CIDR ranges', () => {
  expect(loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8,::1, 192.168.1.10' }).trustedProxies).toEqual(['10.0.0.0/8', '::1', '192.168.1.10'])
  expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8,proxy.local' })).toThrow('TRUSTED_PROXIES: "proxy.local" is not an IP address or CIDR range')
})
