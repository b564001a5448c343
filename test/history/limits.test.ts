/**
 * History requests in flight per principal: a route holds its slot until its body has been read
 * (or abandoned), so the cap is what bounds the memory one user or one share link can pin.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { POINTS_PER_CHUNK } from '../../src/history/route-body'
import { HISTORY_REQUESTS_PER_PRINCIPAL } from '../../src/history/service'
import { baseDataset, ids, keys, makeWorld, problem, type World } from '../support/world'

const T0 = 1764000000
/** more than one chunk, so the body streams and the slot is held until it is read */
const FIXES = POINTS_PER_CHUNK + 500
const RANGE = `from=${T0}&to=${T0 + FIXES}`

let world: World
beforeEach(() => {
  const positions = Array.from({ length: FIXES }, (_, i) => ({
    device: ids.truck2,
    timestamp: T0 + i,
    latitude: 45.75 + i * 1e-4,
    longitude: 4.85,
    speed: i % 600 < 300 ? 40 : 0,
  }))
  world = makeWorld({ ...baseDataset(), positions })
})
afterEach(() => world.close())

const history = (token: string, path = 'history/route', range = RANGE) => world.call('GET', `/devices/${ids.truck2}/${path}?${range}`, { token })

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

  test('a share link is one principal, whoever holds its token, apart from the user who made it', async () => {
    const token = await shareToken()
    const mine = await Promise.all([history(keys.alice), history(keys.alice)])
    const theirs = await Promise.all([history(token), history(token, 'route')])
    for (const res of theirs) expect(res.status).toBe(200)
    await problem(await history(token), 429)
    for (const res of [...mine, ...theirs]) expect(await pointsIn(res)).toBe(FIXES)
    expect(await pointsIn(await history(token))).toBe(FIXES)
  })
})
