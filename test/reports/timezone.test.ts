import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

/** A user's own time zone (the default `tz` of their reports): PATCH /me sets it, GET /me shows it. */
let world: EngineWorld
beforeAll(async () => {
  world = await openWorld()
})
afterAll(() => world.close())

const me = async (token = keys.alice) => (await (await world.call('GET', '/me', { token })).json()) as { timezone: string | null }
const patch = (body: unknown, token = keys.alice) => world.call('PATCH', '/me', { token, body })

describe('PATCH /me timezone', () => {
  test('none at first; an IANA zone is kept (in its canonical spelling), shown in GET /me, and null clears it', async () => {
    expect((await me()).timezone).toBeNull()
    const res = await patch({ timezone: 'europe/dublin' })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { timezone: string }).timezone).toBe('Europe/Dublin')
    expect((await me()).timezone).toBe('Europe/Dublin')
    // another user's is their own
    expect((await me(keys.bob)).timezone).toBeNull()
    expect((await (await patch({ timezone: null })).json()) as { timezone: null }).toMatchObject({ timezone: null })
    expect((await me()).timezone).toBeNull()
  })

  test('anything but an IANA zone is 400 naming /timezone and changes nothing; an empty body is 400; a share token 403', async () => {
    expect((await patch({ timezone: 'America/New_York' })).status).toBe(200)
    for (const bad of ['Mars/Olympus', '+01:00', 'UTC+1', '', 'Europe/Dublin; DROP TABLE users', 'x'.repeat(300), 42]) {
      const body = await problem(await patch({ timezone: bad }), 400)
      expect(body.errors!.map((e) => e.path)).toContain('/timezone')
    }
    await problem(await patch({}), 400)
    // a refused password change leaves the zone as it was too
    await problem(await patch({ timezone: 'Asia/Tokyo', password: 'a brand new passphrase' }), 400)
    expect((await me()).timezone).toBe('America/New_York')
    const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { token: string }
    await problem(await patch({ timezone: 'UTC' }, link.token), 403)
    expect((await me()).timezone).toBe('America/New_York')
  })
})
