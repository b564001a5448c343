import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { PERMISSION } from '../../src/share/permissions'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld()
})
afterEach(() => world.close())

const HOUR = 3600
const NOW = Date.UTC(2026, 10, 25, 12, 0, 0)
const RANGE = `from=${NOW / 1000 - HOUR}&to=${NOW / 1000}`

interface Created { id: string; token: string; short_url: string; original_url: string; expires_at: string }

async function share(body: Record<string, unknown>): Promise<Created> {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { ttl: HOUR, ...body } })
  expect(res.status).toBe(200)
  return (await res.json()) as Created
}

const aliases = async (res: Response) => {
  expect(res.status).toBe(200)
  return ((await res.json()) as { alias: string }[]).map((d) => d.alias)
}

async function linkRow(id: string) {
  const res = await world.call('GET', `/devices/share/${id}`, { token: keys.alice })
  return (await res.json()) as { unique_views: number; last_accessed_at: string | null }
}

describe('a share token', () => {
  test('reads the link\'s devices only: list and detail', async () => {
    const link = await share({ devices: [ids.truck2, ids.van1] })
    expect(await aliases(await world.call('GET', '/devices', { token: link.token }))).toEqual(['Truck 2', 'Van 1'])
    expect((await world.call('GET', `/devices/${ids.truck2}`, { token: link.token })).status).toBe(200)
    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: link.token }), 404)
    await problem(await world.call('GET', `/devices/${ids.globexCar}`, { token: link.token }), 404)
  })

  test('cannot be widened with X-ACT / X-Dev headers', async () => {
    const link = await share({ devices: [ids.truck2] })
    const headers = { 'x-act': 'user', 'x-dev': `${ids.truck1},${ids.van1}` }
    expect(await aliases(await world.call('GET', '/devices', { token: link.token, headers }))).toEqual(['Truck 2'])
    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: link.token, headers }), 404)
  })

  test('reads history as its acl allows', async () => {
    const all = await share({ devices: [ids.truck1] })
    for (const path of ['history/route', 'route', 'history/travels', 'history/events', 'events']) {
      expect({ path, status: (await world.call('GET', `/devices/${ids.truck1}/${path}?${RANGE}`, { token: all.token })).status }).toEqual({ path, status: 200 })
    }
    await problem(await world.call('GET', `/devices/${ids.truck2}/history/route?${RANGE}`, { token: all.token }), 404)
  })

  test('without the location permission: list and detail are 403', async () => {
    const link = await share({ devices: [ids.truck1], acl: [PERMISSION.history] })
    await problem(await world.call('GET', '/devices', { token: link.token }), 403)
    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: link.token }), 403)
    await problem(await world.call('GET', '/devices/stream', { token: link.token }), 403)
    expect((await world.call('GET', `/devices/${ids.truck1}/history/route?${RANGE}`, { token: link.token })).status).toBe(200)
    await problem(await world.call('GET', `/devices/${ids.truck1}/history/events?${RANGE}`, { token: link.token }), 403)
  })

  test('without history or events: route, travels and events are 403', async () => {
    const link = await share({ devices: [ids.truck1], acl: [PERMISSION.location] })
    expect((await world.call('GET', '/devices', { token: link.token })).status).toBe(200)
    for (const path of ['history/route', 'route', 'history/travels', 'history/events', 'events']) {
      await problem(await world.call('GET', `/devices/${ids.truck1}/${path}?${RANGE}`, { token: link.token }), 403)
    }
    const withEvents = await share({ devices: [ids.truck1], acl: [PERMISSION.location, PERMISSION.events] })
    expect((await world.call('GET', `/devices/${ids.truck1}/events?${RANGE}`, { token: withEvents.token })).status).toBe(200)
  })

  test('cannot read commands (read-only)', async () => {
    const link = await share({ devices: [ids.truck1] })
    await problem(await world.call('GET', `/devices/${ids.truck1}/commands`, { token: link.token }), 403)
  })

  test('is 401 from the moment the link expires', async () => {
    const link = await share({ devices: [ids.truck1], ttl: 60 })
    world.clock.set(NOW + 59_999)
    expect((await world.call('GET', '/devices', { token: link.token })).status).toBe(200)
    world.clock.set(NOW + 60_000)
    const res = await world.call('GET', '/devices', { token: link.token })
    await problem(res, 401)
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="tracker", error="invalid_token"')
  })

  test('an unknown token is 401', async () => {
    await problem(await world.call('GET', '/devices', { token: 'a'.repeat(43) }), 401)
  })

  test('a PATCH applies on the very next request, though the token was cached', async () => {
    const link = await share({ devices: [ids.truck1] })
    expect(await aliases(await world.call('GET', '/devices', { token: link.token }))).toEqual(['Truck 1'])
    await world.call('PATCH', `/devices/share/${link.id}`, { token: keys.alice, body: { devices: [ids.van1] } })
    expect(await aliases(await world.call('GET', '/devices', { token: link.token }))).toEqual(['Van 1'])
    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: link.token }), 404)

    await world.call('PATCH', `/devices/share/${link.id}`, { token: keys.alice, body: { acl: [PERMISSION.events] } })
    await problem(await world.call('GET', '/devices', { token: link.token }), 403)

    await world.call('PATCH', `/devices/share/${link.id}`, { token: keys.alice, body: { ttl: 60, acl: [PERMISSION.location] } })
    world.clock.advance(60_000)
    await problem(await world.call('GET', '/devices', { token: link.token }), 401)
  })
})

describe('views and last access', () => {
  test('unique_views counts distinct viewers; last_accessed_at is the last use', async () => {
    const link = await share({ devices: [ids.truck1] })
    expect(await linkRow(link.id)).toMatchObject({ unique_views: 0, last_accessed_at: null })

    const phone = { 'user-agent': 'Phone/1.0' }
    await world.call('GET', '/devices', { token: link.token, headers: phone })
    await world.call('GET', `/devices/${ids.truck1}`, { token: link.token, headers: phone })
    expect(await linkRow(link.id)).toEqual(expect.objectContaining({ unique_views: 1, last_accessed_at: new Date(NOW).toISOString() }))

    world.clock.advance(250)
    await world.call('GET', '/devices', { token: link.token, headers: { 'user-agent': 'Laptop/2.0' } })
    expect(await linkRow(link.id)).toEqual(expect.objectContaining({ unique_views: 2, last_accessed_at: new Date(NOW + 250).toISOString() }))

    // the page's viewer cookie is a viewer of its own, counted once
    const cookie = { cookie: 'tracker_viewer=AAAAAAAAAAAAAAAAAAAAAA', 'user-agent': 'Phone/1.0' }
    await world.call('GET', '/devices', { token: link.token, headers: cookie })
    await world.call('GET', '/devices', { token: link.token, headers: cookie })
    expect((await linkRow(link.id)).unique_views).toBe(3)

    // a refused request is no view
    await world.call('DELETE', `/devices/share/${link.id}`, { token: keys.alice })
    await world.call('GET', '/devices', { token: link.token, headers: { 'user-agent': 'Other/3' } })
    expect((await linkRow(link.id)).unique_views).toBe(3)
  })

  test('a read writes nothing: views wait in memory for the background flush, and reading the link reports them already', async () => {
    const link = await share({ devices: [ids.truck1] })
    const stored = async () =>
      (await world.execute<{ unique_views: number; last_accessed_at: number | null }>(sql`SELECT unique_views, last_accessed_at FROM share_links WHERE id = ${link.id}`))[0]!
    await world.call('GET', '/devices', { token: link.token })
    world.clock.advance(400)
    await world.call('GET', '/devices', { token: link.token })
    expect(await stored()).toEqual({ unique_views: 0, last_accessed_at: null })
    expect(await linkRow(link.id)).toEqual(expect.objectContaining({ unique_views: 1, last_accessed_at: new Date(NOW + 400).toISOString() }))
    // a change drops the token's cache entry, not the views waiting to be written
    await world.call('PATCH', `/devices/share/${link.id}`, { token: keys.alice, body: {} })
    await world.call('GET', '/devices', { token: link.token })
    expect(await linkRow(link.id)).toEqual(expect.objectContaining({ unique_views: 1, last_accessed_at: new Date(NOW + 400).toISOString() }))
    // the write itself, and a write-locked database, are tested in page.test.ts
  })
})

describe('GET /s/{code}', () => {
  test('answers 302 to original_url while the link is active, without credentials', async () => {
    const link = await share({ devices: [ids.truck1] })
    const path = new URL(link.short_url).pathname
    const res = await world.call('GET', path)
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe(link.original_url)
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
  })

  test('is 404 when unknown, malformed, expired or revoked', async () => {
    await problem(await world.call('GET', '/s/Zz9Zz9Zz9Z'), 404)
    await problem(await world.call('GET', '/s/%21%21'), 404)
    const expiring = await share({ devices: [ids.truck1], ttl: 60 })
    const revoked = await share({ devices: [ids.truck1] })
    await world.call('DELETE', `/devices/share/${revoked.id}`, { token: keys.alice })
    await problem(await world.call('GET', new URL(revoked.short_url).pathname), 404)
    world.clock.advance(60_000)
    await problem(await world.call('GET', new URL(expiring.short_url).pathname), 404)
  })
})
