/**
 * Request bodies: authentication is decided before a body is read, bodies are bounded in size
 * (1 MiB, 413) and in nesting (16 levels), and a validation answer stays small whatever the body.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { MAX_BODY_BYTES } from '../../src/http/body'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
let linkId: string
beforeAll(async () => {
  world = await openWorld()
  linkId = ((await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { id: string }).id
})
afterAll(() => world.close())

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)

/** a body that sends its first bytes and then never ends: answering at all proves it was not read */
function endlessBody(): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"devices": ['))
    },
  })
}

function send(method: string, path: string, body: BodyInit, headers: Record<string, string> = {}) {
  return world.app.handle(new Request(`http://localhost${path}`, { method, body, headers: { 'content-type': 'application/json', ...headers }, duplex: 'half' } as RequestInit))
}

const bodyRoutes = () => [
  ['POST', '/devices/share'],
  ['PATCH', `/devices/share/${linkId}`],
] as const

describe('authentication comes before the body', () => {
  test.each([['POST'], ['PATCH']])('%s without credentials is 401 without reading the body', async (method) => {
    const path = bodyRoutes().find(([m]) => m === method)![1]
    await problem(await send(method, path, endlessBody()), 401)
    await problem(await send(method, path, nested(20_000)), 401)
  })

  test('a share token is 403 on a body route without reading the body', async () => {
    const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { token: string }
    await problem(await send('POST', '/devices/share', endlessBody(), { authorization: `Bearer ${link.token}` }), 403)
  })

  test('a malformed id or query without credentials is 401, not 400: nothing is validated for an anonymous caller', async () => {
    await problem(await world.call('GET', '/devices/not-a-uuid'), 401)
    await problem(await world.call('GET', '/devices?limit=abc'), 401)
    await problem(await world.call('PATCH', '/devices/share/not-a-uuid', { body: nested(20_000) }), 401)
  })
})

describe('bounded bodies', () => {
  test.each([[20_000], [100_000]])('%i nested arrays are a 400 naming the depth limit', async (depth) => {
    for (const [method, path] of bodyRoutes()) {
      const body = await problem(await send(method, path, nested(depth), { authorization: `Bearer ${keys.alice}` }), 400)
      expect(body.detail).toContain('deeper than 16 levels')
    }
  })

  test('brackets inside strings do not count as nesting', async () => {
    const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600, acl: ['['.repeat(100)] } })
    const body = await problem(res, 400)
    expect(body.errors?.[0]?.path).toBe('/acl/0')
  })

  test('a body over 1 MiB is 413, whether declared or streamed', async () => {
    const big = JSON.stringify({ devices: [ids.truck1], ttl: 3600, pad: 'x'.repeat(MAX_BODY_BYTES) })
    for (const [method, path] of bodyRoutes()) {
      const body = await problem(await send(method, path, big, { authorization: `Bearer ${keys.alice}` }), 413)
      expect(body.detail).toContain(String(MAX_BODY_BYTES))
    }
    // a declared length over the limit is refused before a byte is read
    await problem(await send('POST', '/devices/share', endlessBody(), { authorization: `Bearer ${keys.alice}`, 'content-length': String(MAX_BODY_BYTES + 1) }), 413)
    // an undeclared (chunked) body is cut off as it passes the limit
    let sent = 0
    const chunked = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent++
        controller.enqueue(new Uint8Array(64 * 1024).fill(0x20))
      },
    })
    await problem(await send('POST', '/devices/share', chunked, { authorization: `Bearer ${keys.alice}` }), 413)
    expect(sent).toBeLessThan(40)
  })

  test('not JSON, or not UTF-8, is a 400; JSON sent as text/plain is taken', async () => {
    const auth = { authorization: `Bearer ${keys.alice}` }
    expect((await problem(await send('POST', '/devices/share', '{"devices": [', auth), 400)).detail).toContain('not valid JSON')
    expect((await problem(await send('POST', '/devices/share', new Uint8Array([0x7b, 0xff, 0x7d]), auth), 400)).detail).toContain('UTF-8')
    const plain = await send('POST', '/devices/share', JSON.stringify({ devices: [ids.truck1], ttl: 3600 }), { ...auth, 'content-type': 'text/plain;charset=UTF-8' })
    expect(plain.status).toBe(200)
  })

  test('a validation answer stays small: at most 20 errors, each path and message cut short', async () => {
    const longKey = 'k'.repeat(100_000)
    const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: Array.from({ length: 900 }, () => 42), ttl: 3600, [longKey]: 1 } })
    const body = await problem(res, 400)
    expect(body.errors!.length).toBeLessThanOrEqual(20)
    for (const error of body.errors!) expect(error.path.length + error.message.length).toBeLessThanOrEqual(400)
    expect(JSON.stringify(body).length).toBeLessThan(20_000)
  })
})
