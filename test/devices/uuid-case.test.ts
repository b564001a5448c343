/**
 * UUIDs are case-insensitive: a path id in upper case names the same device (or share link) as
 * the lower-case id it was imported with, and every answer shows the stored, lower-case id.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeAll(async () => {
  world = await openWorld()
})
afterAll(() => world.close())

const upper = (id: string) => id.toUpperCase()
const T0 = Date.UTC(2026, 10, 25) / 1000

describe('an upper-case device id in the path', () => {
  test('GET /devices/{id} finds the device, and answers with its lower-case id', async () => {
    const res = await world.call('GET', `/devices/${upper(ids.truck1)}`, { token: keys.alice })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { id: string }).id).toBe(ids.truck1)
    // mixed case too
    const mixed = ids.truck1.replace(/[a-f]/g, (c) => c.toUpperCase()).replace('0F', '0f')
    expect((await world.call('GET', `/devices/${mixed}`, { token: keys.alice })).status).toBe(200)
  })

  test('its sub-routes find it: commands, history route and events', async () => {
    const commands = await world.call('GET', `/devices/${upper(ids.truck1)}/commands`, { token: keys.alice })
    expect(commands.status).toBe(200)
    expect(((await commands.json()) as { id: string }[]).map((c) => c.id)).toEqual([ids.engineStop, ids.setApn])
    for (const path of ['history/route', 'route', 'history/events', 'events']) {
      const res = await world.call('GET', `/devices/${upper(ids.truck1)}/${path}?from=${T0}&to=${T0 + 3600}`, { token: keys.alice })
      expect({ path, status: res.status }).toEqual({ path, status: 200 })
    }
  })

  test('reach is unchanged: a device out of the user\'s groups is 404 in any case', async () => {
    await problem(await world.call('GET', `/devices/${upper(ids.truck1)}`, { token: keys.bob }), 404)
    await problem(await world.call('GET', `/devices/${upper(ids.globexCar)}`, { token: keys.alice }), 404)
  })

  test('a share token finds its device by an upper-case id', async () => {
    const created = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
    const link = (await created.json()) as { id: string; token: string }
    const res = await world.call('GET', `/devices/${upper(ids.truck1)}`, { token: link.token })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { id: string }).id).toBe(ids.truck1)
    await problem(await world.call('GET', `/devices/${upper(ids.truck2)}`, { token: link.token }), 404)
  })
})

describe('an upper-case share link id in the path', () => {
  test('reads, changes and revokes the link, which shows its lower-case id', async () => {
    const created = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
    const link = (await created.json()) as { id: string }
    expect(link.id).toBe(link.id.toLowerCase())
    const read = await world.call('GET', `/devices/share/${upper(link.id)}`, { token: keys.alice })
    expect(read.status).toBe(200)
    expect(((await read.json()) as { id: string }).id).toBe(link.id)
    const patched = await world.call('PATCH', `/devices/share/${upper(link.id)}`, { token: keys.alice, body: { ttl: 7200 } })
    expect(patched.status).toBe(200)
    expect(((await patched.json()) as { id: string }).id).toBe(link.id)
    expect((await world.call('DELETE', `/devices/share/${upper(link.id)}`, { token: keys.alice })).status).toBe(204)
    expect(((await (await world.call('GET', `/devices/share/${link.id}`, { token: keys.alice })).json()) as { revoked: boolean }).revoked).toBe(true)
  })
})

describe('upper-case ids in bodies and query strings', () => {
  test('POST /devices/share takes them and answers with the stored, lower-case ids; a repeat in another case is still a repeat', async () => {
    const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [upper(ids.truck1), ids.truck2], ttl: 3600 } })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { devices: string[] }).devices).toEqual([ids.truck1, ids.truck2])
    await problem(await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [upper(ids.truck1), ids.truck1], ttl: 3600 } }), 400)
  })

  test('GET /devices?groups= filters by an upper-case group id', async () => {
    const res = await world.call('GET', `/devices?groups=${upper(ids.vans)}`, { token: keys.alice })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { id: string }[]).map((d) => d.id)).toEqual([ids.truck2, ids.van1])
  })
})
