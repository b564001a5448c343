import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ids, keys, makeWorld, problem, type World } from '../support/world'

let world: World
beforeAll(() => {
  world = makeWorld(undefined, { throttle: { maxFailures: 5, windowMs: 60_000, freeFailures: 2, delayStepMs: 1, maxDelayMs: 5 } })
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
  test('repeated unknown tokens are refused with 429 and Retry-After, then let through when the window ends', async () => {
    const w = makeWorld(undefined, { throttle: { maxFailures: 5, windowMs: 60_000, freeFailures: 2, delayStepMs: 1, maxDelayMs: 5 } })
    try {
      for (let i = 0; i < 5; i++) await problem(await w.call('GET', '/devices', { token: `wrong-key-number-${i}` }), 401)
      const refused = await w.call('GET', '/devices', { token: 'wrong-key-number-6' })
      await problem(refused, 429)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      // even a good key waits until the window ends
      await problem(await w.call('GET', '/devices', { token: keys.alice }), 429)
      w.clock.advance(60_001)
      expect((await w.call('GET', '/devices', { token: keys.alice })).status).toBe(200)
    } finally {
      w.close()
    }
  })

  test('a success clears the count, so mixed traffic is never locked out', async () => {
    const w = makeWorld(undefined, { throttle: { maxFailures: 3, windowMs: 60_000, freeFailures: 1, delayStepMs: 1, maxDelayMs: 5 } })
    try {
      for (let round = 0; round < 4; round++) {
        await problem(await w.call('GET', '/devices', { token: 'wrong-key-aaaaaaaa' }), 401)
        await problem(await w.call('GET', '/devices', { token: 'wrong-key-bbbbbbbb' }), 401)
        expect((await w.call('GET', '/devices', { token: keys.alice })).status).toBe(200)
      }
    } finally {
      w.close()
    }
  })
})

describe('over a real socket', () => {
  test('the throttle counts by peer address and refuses with 429', async () => {
    const w = makeWorld(undefined, { throttle: { maxFailures: 3, windowMs: 60_000, freeFailures: 1, delayStepMs: 1, maxDelayMs: 5 } })
    const server = w.app.listen({ port: 0, hostname: '127.0.0.1' })
    try {
      const url = `http://127.0.0.1:${server.server!.port}/devices`
      const call = (token: string) => fetch(url, { headers: { authorization: `Bearer ${token}` } })
      expect((await call(keys.alice)).status).toBe(200)
      for (let i = 0; i < 3; i++) expect((await call(`unknown-token-${i}-abcdef`)).status).toBe(401)
      const refused = await call(keys.alice)
      expect(refused.status).toBe(429)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    } finally {
      await w.app.stop()
      w.close()
    }
  })
})
