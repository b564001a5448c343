/**
 * No input, however hostile, gets a 5xx: random query strings, path segments and bodies thrown
 * at every endpoint (a seeded generator, so a failure replays), each answer a success or a
 * problem-details 4xx.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { seededRandom } from '../support/random'
import { ids, keys, openWorld, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeAll(async () => {
  world = await openWorld()
})
afterAll(() => world.close())

function generator(seed: number) {
  const next = seededRandom(seed)
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]
  return { next, pick }
}

const VALUES = [
  '', '0', '-1', '1', '60', '99', '1000', '1001', '1.5', '1e3', '1e308', '-1e308', 'NaN', 'Infinity', '9007199254740993', '99999999999999999999',
  '1764000000', 'abc', '%00', '%ZZ', "'; DROP TABLE devices; --", '<script>', '\u00e9\u00e8', '\ud83d\ude80', ids.truck1, ids.trucks, `${ids.trucks},${ids.vans}`, ',,',
  'a'.repeat(3000), 'true', 'null', '[]', '{}',
]
const PARAMS = ['limit', 'offset', 'groups', 'from', 'to', 'stop_threshold_time', 'token', 'groups[]', '__proto__', 'constructor']
const PATHS = [
  '/devices', `/devices/${ids.truck1}`, `/devices/${ids.truck1}/commands`, `/devices/${ids.truck1}/history/route`, `/devices/${ids.truck1}/route`,
  `/devices/${ids.truck1}/history/travels`, `/devices/${ids.truck1}/history/events`, `/devices/${ids.truck1}/events`, '/devices/share', '/s/', '/share',
  '/devices/', '/devices/{id}',
]

test('every parameter with every hostile value, on every endpoint, never gives a 5xx', async () => {
  for (const path of PATHS.filter((p) => !p.endsWith('/'))) {
    for (const param of PARAMS) {
      for (const value of VALUES) {
        // a valid window first, so that history routes reach the parameter under test (the last value of a repeated one counts)
        const url = `${path}?from=1764000000&to=1764003600&${param}=${encodeURIComponent(value)}`
        const res = await world.call('GET', url, { token: keys.alice })
        await res.arrayBuffer()
        expect({ url, status: res.status < 500 }).toEqual({ url, status: true })
      }
    }
  }
})

test('random query strings on every endpoint never give a 5xx', async () => {
  const { next, pick } = generator(20261125)
  for (let i = 0; i < 600; i++) {
    const params = Array.from({ length: Math.floor(next() * 5) }, () => `${pick(PARAMS)}=${encodeURIComponent(pick(VALUES)).replace(/%25/g, next() < 0.3 ? '%' : '%25')}`)
    let path = pick(PATHS)
    if (path.endsWith('/')) path += encodeURIComponent(pick(VALUES))
    const url = `${path}?${params.join('&')}`
    const res = await world.call('GET', url, { token: pick([keys.alice, keys.bob, 'not-a-key-at-all']) })
    await res.arrayBuffer()
    expect({ url, status: res.status < 500 }).toEqual({ url, status: true })
    if (res.status >= 400) expect({ url, type: res.headers.get('content-type') }).toEqual({ url, type: expect.stringMatching(/problem\+json|text\/html/) })
  }
})

test('random bodies on share creation and update never give a 5xx', async () => {
  const { next, pick } = generator(42)
  const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { id: string }
  const fields = ['devices', 'ttl', 'acl', 'extra', '__proto__']
  const values: unknown[] = [null, true, 0, -1, 60, 59, 1.5, 1e308, 31_536_001, '', 'x', [], [ids.truck1], [ids.truck1, ids.truck1], [ids.globexCar], ['nope'], {}, [[]], 'a'.repeat(5000)]
  for (let i = 0; i < 300; i++) {
    const body: Record<string, unknown> = {}
    for (let f = 0; f < 1 + next() * 3; f++) body[pick(fields)] = pick(values)
    const raw = next() < 0.1 ? JSON.stringify(body).slice(0, Math.floor(next() * 20)) : JSON.stringify(body)
    const [method, path] = pick([['POST', '/devices/share'], ['PATCH', `/devices/share/${link.id}`]] as const)
    const res = await world.call(method, path, { token: keys.alice, body: raw })
    await res.arrayBuffer()
    expect({ raw, status: res.status < 500 }).toEqual({ raw, status: true })
  }
})

test('the audit\'s hostile bodies on every route that takes one: 401 (429 once throttled) for an anonymous caller, a 4xx otherwise, never a 5xx', async () => {
  const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { id: string }
  const bodies = [
    '['.repeat(20_000) + ']'.repeat(20_000),
    '['.repeat(100_000),
    '{"a":'.repeat(50_000),
    JSON.stringify({ devices: [ids.truck1], ttl: 3600, pad: 'x'.repeat(1 << 20) }),
    JSON.stringify({ devices: Array.from({ length: 5000 }, (_, i) => `${i}`), ttl: 'x'.repeat(10_000) }),
    JSON.stringify({ ['k'.repeat(200_000)]: 1 }),
    '\u0000\uffff',
  ]
  for (const [method, path] of [['POST', '/devices/share'], ['PATCH', `/devices/share/${link.id}`], ['DELETE', `/devices/share/${link.id}`]] as const) {
    for (const body of bodies) {
      const anonymous = await world.call(method, path, { body })
      expect({ path, body: body.slice(0, 20), status: [401, 429].includes(anonymous.status) }).toEqual({ path, body: body.slice(0, 20), status: true })
      const signedIn = await world.call(method, path, { token: keys.bob, body })
      expect({ path, body: body.slice(0, 20), status: signedIn.status >= 400 && signedIn.status < 500 }).toEqual({ path, body: body.slice(0, 20), status: true })
      expect(signedIn.headers.get('content-type')).toBe('application/problem+json')
    }
  }
})
