/**
 * The sign-in throttle under guesses that arrive at once (issue 19, item 2): every attempt is
 * counted before its password is checked, password checks in flight are capped, a name has its
 * own limit whoever guesses it, IPv6 clients count by /64, and a refused attempt costs no hash
 * (the password-check counter of /metrics does not move).
 */
import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { baseDataset, ids, openWorld, problem, type EngineWorld } from '../support/world'
import { givePasswords, PASSWORD } from './support'

/** argon2id verifications the server has run, from /metrics (0 before the first) */
async function passwordChecks(world: EngineWorld): Promise<number> {
  const text = await (await world.call('GET', '/metrics')).text()
  const lines = text.split('\n').filter((line) => line.startsWith('tracker_password_checks_total'))
  return lines.reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0)
}

const wrong = (i: number) => ({ name: 'alice', password: `wrong password number ${i}` })

async function statuses(responses: Response[]): Promise<Map<number, number>> {
  const counts = new Map<number, number>()
  for (const res of responses) counts.set(res.status, (counts.get(res.status) ?? 0) + 1)
  return counts
}

describe('guesses that arrive at once', () => {
  test('60 concurrent wrong passwords from one address: at most the limit are checked (401), the rest 429 with Retry-After and no hash', async () => {
    const world = await openWorld(baseDataset())
    try {
      await givePasswords(world, [ids.alice])
      const before = await passwordChecks(world)
      const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => world.call('POST', '/session', { body: wrong(i) })))
      const counts = await statuses(answers)
      const refused = answers.filter((res) => res.status === 429)
      // the default limit: 20 failures a minute from one source
      expect(counts.get(401) ?? 0).toBeGreaterThan(0)
      expect(counts.get(401) ?? 0).toBeLessThanOrEqual(20)
      expect((counts.get(401) ?? 0) + refused.length).toBe(60)
      for (const res of refused) {
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
        await problem(res, 429)
      }
      // only the 401s cost a password check
      expect((await passwordChecks(world)) - before).toBe(counts.get(401) ?? 0)

      // once the window is over, the right password signs in
      world.clock.advance(60_001)
      expect((await world.call('POST', '/session', { body: { name: 'alice', password: PASSWORD } })).status).toBe(200)
    } finally {
      await world.close()
    }
  })

  test('each attempt is counted before its password is checked: with room for all in flight, exactly the limit get 401', async () => {
    const world = await openWorld(baseDataset(), {
      throttle: { maxFailures: 5, windowMs: 60_000, freeFailures: 100, delayStepMs: 0, maxDelayMs: 0 },
      passwordChecks: { inFlight: 100, inFlightPerSource: 100, waiting: 100 },
    })
    try {
      await givePasswords(world, [ids.alice])
      const before = await passwordChecks(world)
      const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => world.call('POST', '/session', { body: wrong(i) })))
      const counts = await statuses(answers)
      expect(Object.fromEntries(counts)).toEqual({ 401: 5, 429: 55 })
      expect((await passwordChecks(world)) - before).toBe(5)
      // the right password too waits for the window: refused before it is checked
      await problem(await world.call('POST', '/session', { body: { name: 'alice', password: PASSWORD } }), 429)
      expect((await passwordChecks(world)) - before).toBe(5)
      world.clock.advance(60_001)
      expect((await world.call('POST', '/session', { body: { name: 'alice', password: PASSWORD } })).status).toBe(200)
    } finally {
      await world.close()
    }
  })

  test('a success is not counted as a failure: concurrent right passwords never run into the limit', async () => {
    const world = await openWorld(baseDataset(), {
      throttle: { maxFailures: 3, windowMs: 60_000, freeFailures: 100, delayStepMs: 0, maxDelayMs: 0 },
      passwordChecks: { inFlight: 100, inFlightPerSource: 100, waiting: 100 },
    })
    try {
      await givePasswords(world, [ids.alice, ids.dana])
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all([0, 1, 2].map(() => world.call('POST', '/session', { body: { name: 'alice', password: PASSWORD } })))
        expect(answers.map((res) => res.status)).toEqual([200, 200, 200])
      }
      // failures still count
      for (let i = 0; i < 3; i++) await problem(await world.call('POST', '/session', { body: wrong(i) }), 401)
      await problem(await world.call('POST', '/session', { body: { name: 'dana', password: PASSWORD } }), 429)
    } finally {
      await world.close()
    }
  })

  test('password checks in flight are capped per source: beyond it, 429 at once', async () => {
    const world = await openWorld(baseDataset(), { passwordChecks: { inFlight: 100, inFlightPerSource: 2, waiting: 100 } })
    try {
      await givePasswords(world, [ids.alice])
      const before = await passwordChecks(world)
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => world.call('POST', '/session', { body: wrong(i) })))
      expect(Object.fromEntries(await statuses(answers))).toEqual({ 401: 2, 429: 8 })
      expect(answers.find((res) => res.status === 429)!.headers.get('retry-after')).toBe('1')
      expect((await passwordChecks(world)) - before).toBe(2)
    } finally {
      await world.close()
    }
  })
  test('the server runs a few password checks at once and lets a few wait: beyond, 503 with Retry-After at once', async () => {
    const world = await openWorld(baseDataset(), { passwordChecks: { inFlight: 1, inFlightPerSource: 100, waiting: 2 } })
    try {
      await givePasswords(world, [ids.alice])
      const before = await passwordChecks(world)
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => world.call('POST', '/session', { body: wrong(i) })))
      expect(Object.fromEntries(await statuses(answers))).toEqual({ 401: 3, 503: 7 })
      const busy = answers.find((res) => res.status === 503)!
      expect(busy.headers.get('retry-after')).toBe('1')
      await problem(busy, 503)
      expect((await passwordChecks(world)) - before).toBe(3)
      // a refusal for being busy is no failure of the client's: after them, the right password signs in
      expect((await world.call('POST', '/session', { body: { name: 'alice', password: PASSWORD } })).status).toBe(200)
    } finally {
      await world.close()
    }
  })
})

describe('over a real socket, behind a trusted proxy (the client is its X-Forwarded-For address)', () => {
  async function serve(world: EngineWorld) {
    const server = world.app.listen({ port: 0, hostname: '127.0.0.1' })
    const url = `http://127.0.0.1:${server.server!.port}/session`
    const signIn = (client: string, name: string, password: string) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': client }, body: JSON.stringify({ name, password }) })
    return { signIn, stop: () => world.app.stop() }
  }
  const behindProxy = loadConfig({ TRUSTED_PROXIES: '127.0.0.1' })

  test('a name has its own limit, whoever guesses it: from many addresses, that name gets 429, other names do not', async () => {
    const world = await openWorld(baseDataset(), {
      config: behindProxy,
      throttle: { maxFailures: 5, windowMs: 60_000, freeFailures: 100, delayStepMs: 0, maxDelayMs: 0, nameMaxFailures: 8, nameWindowMs: 60_000 },
    })
    const { signIn, stop } = await serve(world)
    try {
      await givePasswords(world, [ids.alice, ids.dana])
      const before = await passwordChecks(world)
      // 8 addresses, one guess each (any case of the name counts for the name)
      for (let i = 0; i < 8; i++) expect((await signIn(`198.51.100.${i + 1}`, i % 2 ? 'ALICE' : 'alice', `guess ${i} at it`)).status).toBe(401)
      const refused = await signIn('198.51.100.50', 'alice', 'guess 9 at it')
      expect(refused.status).toBe(429)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      // the right password from a fresh address too: the name is refused before anything is checked
      expect((await signIn('198.51.100.51', 'Alice', PASSWORD)).status).toBe(429)
      expect((await passwordChecks(world)) - before).toBe(8)
      // another name from those same addresses is served
      expect((await signIn('198.51.100.1', 'dana', PASSWORD)).status).toBe(200)
      // the name's window is short: then the owner signs in
      world.clock.advance(60_001)
      expect((await signIn('198.51.100.52', 'alice', PASSWORD)).status).toBe(200)
    } finally {
      await stop()
      await world.close()
    }
  })

  test('with the default limits, one stranger cannot lock the owner out: its own address is refused, the owner is not', async () => {
    const world = await openWorld(baseDataset(), { config: behindProxy })
    const { signIn, stop } = await serve(world)
    try {
      await givePasswords(world, [ids.alice])
      const stranger = '203.0.113.66'
      // the most one source can put against a name within the name's window: the end of one of its
      // own windows (opened by a bad key), then the whole of the next
      const port = new URL(world.app.server!.url).port
      const badKey = await fetch(`http://127.0.0.1:${port}/devices`, { headers: { authorization: 'Bearer not-a-key-at-all-0123', 'x-forwarded-for': stranger } })
      expect(badKey.status).toBe(401)
      world.clock.advance(59_000)
      for (let i = 0; i < 19; i++) expect((await signIn(stranger, 'alice', `guess ${i} at it`)).status).toBe(401)
      expect((await signIn(stranger, 'alice', 'one more guess')).status).toBe(429)
      world.clock.advance(1_001)
      for (let i = 0; i < 20; i++) expect((await signIn(stranger, 'alice', `guess ${i} again`)).status).toBe(401)
      expect((await signIn(stranger, 'alice', 'one more guess')).status).toBe(429)
      // 39 failures at alice within a minute, all from one source: the owner elsewhere still signs in
      expect((await signIn('192.0.2.10', 'alice', PASSWORD)).status).toBe(200)
    } finally {
      await stop()
      await world.close()
    }
  })

  test('IPv6 clients count by /64: addresses of one /64 share a limit, another /64 has its own', async () => {
    const world = await openWorld(baseDataset(), { config: behindProxy, throttle: { maxFailures: 5, windowMs: 60_000, freeFailures: 100, delayStepMs: 0, maxDelayMs: 0 } })
    const { signIn, stop } = await serve(world)
    try {
      await givePasswords(world, [ids.alice, ids.dana])
      const sameBlock = ['2001:db8:5:6::1', '2001:db8:5:6::2', '2001:db8:5:6:ffff:ffff:ffff:ffff', '2001:DB8:5:6:0:0:0:9', '2001:db8:5:6:1234::abcd']
      for (const [i, address] of sameBlock.entries()) expect((await signIn(address, 'alice', `guess ${i} at it`)).status).toBe(401)
      expect((await signIn('2001:db8:5:6::77', 'dana', PASSWORD)).status).toBe(429)
      expect((await signIn('2001:db8:5:7::1', 'dana', PASSWORD)).status).toBe(200)
    } finally {
      await stop()
      await world.close()
    }
  })
})
