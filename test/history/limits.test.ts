/**
 * History requests in flight per principal: a route holds its slot until its body has been read
 * (or abandoned), so the cap is what bounds the memory one user or one share link can pin.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { POINTS_PER_CHUNK } from '../../src/history/route-body'
import { loadConfig } from '../../src/config'
import { BYTES_PER_FIX_IN_FLIGHT } from '../../src/history/limit'
import { HISTORY_REQUESTS_PER_PRINCIPAL, MAX_HISTORY_WAITING } from '../../src/history/service'
import type { AppDeps } from '../../src/app'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

const T0 = 1764000000
/** more than one chunk, so the body streams and the slot is held until it is read */
const FIXES = 2 * POINTS_PER_CHUNK + 500
const RANGE = `from=${T0}&to=${T0 + FIXES}`
/** fixes whose window costs more than 1 MiB */
const LARGER_THAN_BUDGET = 12_000

let world: EngineWorld
beforeEach(async () => {
  const positions = Array.from({ length: FIXES }, (_, i) => ({
    device: ids.truck2,
    timestamp: T0 + i,
    latitude: 45.75 + i * 1e-4,
    longitude: 4.85,
    speed: i % 600 < 300 ? 40 : 0,
  }))
  world = await openWorld({ ...baseDataset(), positions })
})
afterEach(() => world.close())

const history = (token: string, path = 'history/route', range = RANGE) => world.call('GET', `/devices/${ids.truck2}/${path}?${range}`, { token })

async function turnsOfTheEventLoop(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
}

async function pointsIn(response: Response): Promise<number> {
  expect(response.status).toBe(200)
  return ((await response.json()) as { points: unknown[] }).points.length
}

async function shareToken(): Promise<string> {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck2], ttl: 3600 } })
  expect(res.status).toBe(200)
  return ((await res.json()) as { token: string }).token
}

describe('history requests in flight per principal', () => {
  test('one more route than the cap is 429 with Retry-After; another user is unaffected; read routes free their slots', async () => {
    const answers = await Promise.all(Array.from({ length: HISTORY_REQUESTS_PER_PRINCIPAL + 1 }, () => history(keys.alice)))
    const refused = answers.filter((res) => res.status === 429)
    const served = answers.filter((res) => res.status === 200)
    expect(refused).toHaveLength(1)
    expect(served).toHaveLength(HISTORY_REQUESTS_PER_PRINCIPAL)
    expect(refused[0].headers.get('retry-after')).toBe('1')
    expect((await problem(refused[0], 429)).detail).toContain('history requests')

    // while alice's are in flight: travels count too, bad parameters are still 400, bob is served
    await problem(await history(keys.alice, 'history/travels'), 429)
    await problem(await history(keys.alice, 'history/route', `from=${T0 + 1}&to=${T0}`), 400)
    expect(await pointsIn(await history(keys.bob))).toBe(FIXES)

    for (const res of served) expect(await pointsIn(res)).toBe(FIXES)
    expect(await pointsIn(await history(keys.alice))).toBe(FIXES)
    expect((await history(keys.alice, 'history/travels')).status).toBe(200)
  })

  test('an abandoned body frees its slot', async () => {
    const served = await Promise.all([history(keys.alice), history(keys.alice)])
    await problem(await history(keys.alice), 429)
    for (const res of served) await res.body!.cancel()
    expect(await pointsIn(await history(keys.alice))).toBe(FIXES)
  })

  test('links do not multiply the budget: every link of a user, and the user\'s own keys, share its slots; another user keeps theirs', async () => {
    const links = [await shareToken(), await shareToken(), await shareToken()]
    const held = await Promise.all([history(links[0]), history(links[1], 'route')])
    for (const res of held) expect(res.status).toBe(200)
    // alice's 2 are taken through two links: a third link, and her own key, are 429
    const refused = await history(links[2])
    expect((await problem(refused, 429)).detail).toContain('the user who made this link')
    await problem(await history(keys.alice), 429)
    await problem(await history(links[0], 'history/travels'), 429)
    expect(await pointsIn(await history(keys.bob))).toBe(FIXES)

    for (const res of held) expect(await pointsIn(res)).toBe(FIXES)
    expect(await pointsIn(await history(links[2]))).toBe(FIXES)
  })
})

describe('the history memory budget of the process (HISTORY_MEMORY_MB)', () => {
  /** each of these tests imports 20,692 fixes (seconds on PostgreSQL on a busy machine), the queue's reads 64 routes of FIXES in turn */
  const BUDGET_TEST_TIMEOUT_MS = 30_000
  /** 40 users of acme in the vans group, each with a key: more principals than may wait */
  const crowd = Array.from({ length: 40 }, (_, i) => ({
    id: `0c000000-0000-4000-8000-${String(100 + i).padStart(12, '0')}`,
    key: `crowd-key-${i}-0123456789abcdef`,
  }))
  async function crowdedWorld(deps: Partial<AppDeps> = {}) {
    await world.close()
    const dataset = baseDataset()
    const positions = [
      ...Array.from({ length: FIXES }, (_, i) => ({ device: ids.truck2, timestamp: T0 + i, latitude: 45.75 + i * 1e-4, longitude: 4.85, speed: 40 })),
      ...Array.from({ length: LARGER_THAN_BUDGET }, (_, i) => ({ device: ids.truck1, timestamp: T0 + i, latitude: 48.85 + i * 1e-4, longitude: 2.35, speed: 40 })),
    ]
    const users = [...dataset.users, ...crowd.map((u, i) => ({ id: u.id, account: ids.acme, name: `crowd${i}`, groups: [ids.vans], api_keys: [u.key] }))]
    // 1 MiB: one route of FIXES fits, a second does not
    world = await openWorld({ ...dataset, users, positions }, { config: loadConfig({ HISTORY_MEMORY_MB: '1' }), ...deps })
  }

  test('a route that does not fit waits for the one in flight, then is served; what waits is bounded (503 beyond)', async () => {
    // its subject is the queue, not how long a request may wait (the test below): a waiter may wait
    // as long as the test may run, since 64 routes read one after another take seconds on PostgreSQL
    await crowdedWorld({ historyMaxWaitMs: BUDGET_TEST_TIMEOUT_MS })
    // a request joins the queue for memory once its window is counted (a round trip on PostgreSQL):
    // each is sent once the one before has joined, so the queue's order is the order they were sent
    let counted = 0
    const { positions } = world.stores
    const countIn = positions.countIn.bind(positions)
    positions.countIn = async (...args) => {
      try {
        return await countIn(...args)
      } finally {
        counted++
      }
    }
    /** sends a request, and answers (in an array: its answer is not awaited) once its window has been counted */
    const queued = async (request: () => Promise<Response>): Promise<[Promise<Response>]> => {
      const before = counted
      const sent = request()
      while (counted === before) await turnsOfTheEventLoop(1)
      await turnsOfTheEventLoop(2)
      return [sent]
    }
    expect(FIXES * BYTES_PER_FIX_IN_FLIGHT).toBeLessThan(1024 * 1024)
    expect(2 * FIXES * BYTES_PER_FIX_IN_FLIGHT).toBeGreaterThan(1024 * 1024)
    const first = await history(keys.alice)
    expect(first.status).toBe(200)

    // bob's does not fit while alice's body is unread: it waits, and is not answered yet
    let bobAnswered = false
    const [bob] = await queued(() => history(keys.bob).then((res) => ((bobAnswered = true), res)))
    // MAX_HISTORY_WAITING in all wait, two per user at most (the per-user cap); the last one's client will go away
    const waiting = [bob]
    for (let i = 0; waiting.length < MAX_HISTORY_WAITING - 1; i++) waiting.push((await queued(() => history(crowd[i >> 1].key)))[0])
    const gone = new AbortController()
    const [abandoned] = await queued(() =>
      world.app.handle(
        new Request(`http://localhost/devices/${ids.truck2}/history/route?${RANGE}`, { headers: { authorization: `Bearer ${crowd[38].key}` }, signal: gone.signal }),
      ),
    )
    const refused = await history(crowd[39].key)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect((await problem(refused, 503)).detail).toContain('memory')
    // a waiter whose client goes away leaves the queue: there is room for one more again
    gone.abort()
    await problem(await abandoned, 503)
    waiting.push((await queued(() => history(crowd[39].key)))[0])
    await turnsOfTheEventLoop(20)
    expect(bobAnswered).toBe(false)

    // reading alice's route frees the budget: the waiters are served in turn, each once the one before has been read
    expect(await pointsIn(first)).toBe(FIXES)
    for (const pending of waiting) expect(await pointsIn(await pending)).toBe(FIXES)
    expect(bobAnswered).toBe(true)
  }, BUDGET_TEST_TIMEOUT_MS)

  test('routes that fit together run together; a window larger than the whole budget runs alone', async () => {
    await crowdedWorld()
    const small = `from=${T0}&to=${T0 + 99}`
    // two 100-fix routes fit at once, both beside a big one
    const big = await history(keys.alice)
    const both = await Promise.all([history(keys.bob, 'history/route', small), history(keys.dana, 'history/travels', small)])
    for (const res of both) expect(res.status).toBe(200)
    expect(await pointsIn(big)).toBe(FIXES)

    // truck 1's window costs more than the whole budget: served once nothing else is in flight
    expect(LARGER_THAN_BUDGET * BYTES_PER_FIX_IN_FLIGHT).toBeGreaterThan(1024 * 1024)
    const large = await world.call('GET', `/devices/${ids.truck1}/history/route?from=${T0}&to=${T0 + LARGER_THAN_BUDGET}`, { token: keys.alice })
    expect(large.status).toBe(200)
    // and alone: even a small one waits until it has been read
    let smallAnswered = false
    const after = history(keys.bob, 'history/route', small).then((res) => ((smallAnswered = true), res))
    await turnsOfTheEventLoop(20)
    expect(smallAnswered).toBe(false)
    expect(await pointsIn(large)).toBe(LARGER_THAN_BUDGET)
    expect(await pointsIn(await after)).toBe(100)
  }, BUDGET_TEST_TIMEOUT_MS)

  test('a request waits a bounded time (5 s; shortened here), then is 503: a client holding one body unread while it waits for another is not stuck on itself', async () => {
    await crowdedWorld({ historyMaxWaitMs: 50 })
    const first = await history(keys.alice)
    expect(first.status).toBe(200)
    const waited = await history(keys.bob)
    expect(waited.headers.get('retry-after')).toBe('1')
    expect((await problem(waited, 503)).detail).toContain('waited')
    // it left the queue: once the first is read, the next is served at once
    expect(await pointsIn(first)).toBe(FIXES)
    expect(await pointsIn(await history(keys.bob))).toBe(FIXES)
  }, BUDGET_TEST_TIMEOUT_MS)
})
