import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../../src/config'
import { DEFAULT_ACL, PERMISSION } from '../../src/share/permissions'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld(undefined, { config: loadConfig({ APP_URL: 'https://track.example.com', SHORT_URL_BASE: 'https://trk.example/s' }) })
})
afterEach(() => world.close())

const HOUR = 3600
const NOW = Date.UTC(2026, 10, 25, 12, 0, 0) // manualClock's start
const LIST_FIELDS = ['account', 'acl', 'created_at', 'devices', 'expires_at', 'id', 'last_accessed_at', 'original_url', 'revoked', 'token', 'unique_views']
const UPDATE_FIELDS = LIST_FIELDS.filter((f) => f !== 'token' && f !== 'original_url')

interface Created { id: string; token: string; devices: string[]; expires_at: string; original_url: string; short_url: string }
interface Listed { id: string; account: string; devices: string[]; acl: string[]; revoked: boolean; expires_at: string; unique_views: number; last_accessed_at: string | null; created_at: string; token: string; original_url: string }

async function create(body: unknown, token = keys.alice): Promise<Created> {
  const res = await world.call('POST', '/devices/share', { token, body })
  expect(res.status).toBe(200)
  return (await res.json()) as Created
}

async function list(token = keys.alice): Promise<Listed[]> {
  const res = await world.call('GET', '/devices/share', { token })
  expect(res.status).toBe(200)
  return (await res.json()) as Listed[]
}

/** The problem's errors[] paths, after asserting a 400 problem. */
async function badRequest(res: Response): Promise<string[]> {
  const body = await problem(res, 400)
  expect(body.errors?.length).toBeGreaterThan(0)
  return body.errors!.map((e) => e.path)
}

describe('POST /devices/share', () => {
  test('answers the creation shape: a random token, expires_at = now + ttl, the long and the short URL', async () => {
    const link = await create({ devices: [ids.truck1, ids.truck2], ttl: HOUR })
    expect(Object.keys(link).sort()).toEqual(['devices', 'expires_at', 'id', 'original_url', 'short_url', 'token'])
    expect(link.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(link.token).toMatch(/^[A-Za-z0-9_-]{43}$/) // 256 bits, base64url
    expect(link.devices).toEqual([ids.truck1, ids.truck2])
    expect(link.expires_at).toBe(new Date(NOW + HOUR * 1000).toISOString())
    expect(link.original_url).toBe(`https://track.example.com/share?token=${link.token}`)
    expect(link.short_url).toMatch(/^https:\/\/trk\.example\/s\/[0-9A-Za-z]{8,}$/)

    const other = await create({ devices: [ids.truck1], ttl: HOUR })
    expect(other.token).not.toBe(link.token)
    expect(other.short_url).not.toBe(link.short_url)
  })

  test('gives the default acl (all three permissions) without an acl, and keeps a given one', async () => {
    const plain = await create({ devices: [ids.truck1], ttl: HOUR })
    const limited = await create({ devices: [ids.truck1], ttl: HOUR, acl: [PERMISSION.history, PERMISSION.location] })
    const byId = new Map((await list()).map((l) => [l.id, l]))
    expect(byId.get(plain.id)!.acl).toEqual([...DEFAULT_ACL])
    expect(DEFAULT_ACL).toEqual([PERMISSION.location, PERMISSION.history, PERMISSION.events])
    expect(byId.get(limited.id)!.acl).toEqual([PERMISSION.history, PERMISSION.location])
  })

  test('the permission table in the database is the documented one', async () => {
    const rows = await world.execute(sql`SELECT id, name FROM permissions ORDER BY id`)
    expect(rows).toEqual([
      { id: PERMISSION.location, name: 'location' },
      { id: PERMISSION.history, name: 'history' },
      { id: PERMISSION.events, name: 'events' },
    ])
  })

  test('accepts ttl at both bounds', async () => {
    expect((await create({ devices: [ids.truck1], ttl: 60 })).expires_at).toBe(new Date(NOW + 60_000).toISOString())
    expect((await create({ devices: [ids.truck1], ttl: 31_536_000 })).expires_at).toBe(new Date(NOW + 31_536_000_000).toISOString())
  })

  test.each([
    ['ttl below 60', { devices: ['TRUCK1'], ttl: 59 }, ['/ttl']],
    ['ttl above one year', { devices: ['TRUCK1'], ttl: 31_536_001 }, ['/ttl']],
    ['a fractional ttl', { devices: ['TRUCK1'], ttl: 60.5 }, ['/ttl']],
    ['a ttl in a string', { devices: ['TRUCK1'], ttl: '3600' }, ['/ttl']],
    ['no ttl', { devices: ['TRUCK1'] }, ['/ttl']],
    ['no devices', { ttl: 3600 }, ['/devices']],
    ['an empty device list', { devices: [], ttl: 3600 }, ['/devices']],
    ['a malformed device id', { devices: ['TRUCK1', 'not-a-uuid'], ttl: 3600 }, ['/devices/1']],
    ['a repeated device', { devices: ['TRUCK1', 'TRUCK2', 'TRUCK1'], ttl: 3600 }, ['/devices/2']],
    ['an unknown field', { devices: ['TRUCK1'], ttl: 3600, owner: 'me' }, ['/owner']],
    ['an unknown permission', { devices: ['TRUCK1'], ttl: 3600, acl: ['a3c1f6d0-2b7e-4f5a-8c9d-000000000009'] }, ['/acl/0']],
    ['a repeated permission', { devices: ['TRUCK1'], ttl: 3600, acl: [PERMISSION.events, PERMISSION.events] }, ['/acl/1']],
    ['an empty acl', { devices: ['TRUCK1'], ttl: 3600, acl: [] }, ['/acl']],
    ['an acl that is not ids', { devices: ['TRUCK1'], ttl: 3600, acl: ['location'] }, ['/acl/0']],
  ])('%s is 400 with errors[] naming the field', async (_, body, paths) => {
    const resolved = JSON.parse(JSON.stringify(body).replaceAll('TRUCK1', ids.truck1).replaceAll('TRUCK2', ids.truck2))
    expect(await badRequest(await world.call('POST', '/devices/share', { token: keys.alice, body: resolved }))).toEqual(expect.arrayContaining(paths))
    expect(await list()).toEqual([])
  })

  test('more than 1,000 devices is 400', async () => {
    const many = Array.from({ length: 1001 }, () => crypto.randomUUID())
    expect(await badRequest(await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: many, ttl: 60 } }))).toContain('/devices')
  })

  test('a body that is not JSON is 400', async () => {
    await problem(await world.call('POST', '/devices/share', { token: keys.alice, body: '{"devices": [', headers: { 'content-type': 'application/json' } }), 400)
  })

  test('a device out of reach, of another account, or unknown is 404, and nothing is created', async () => {
    // bob is in vans only: truck1 is not his
    await problem(await world.call('POST', '/devices/share', { token: keys.bob, body: { devices: [ids.truck2, ids.truck1], ttl: HOUR } }), 404)
    await problem(await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.globexCar], ttl: HOUR } }), 404)
    await problem(await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [crypto.randomUUID()], ttl: HOUR } }), 404)
    expect(await list()).toEqual([])
    expect({ n: await world.count('share_links') }).toEqual({ n: 0 })
  })

  test('without credentials it is 401', async () => {
    await problem(await world.call('POST', '/devices/share', { body: { devices: [ids.truck1], ttl: HOUR } }), 401)
  })
})

describe('GET /devices/share', () => {
  test('is routed to the links, not read as a device id', async () => {
    expect(await list()).toEqual([])
    const trailing = await world.call('GET', '/devices/share/', { token: keys.alice })
    expect(trailing.status).toBe(200)
  })

  test('lists the active links of the account in the list shape, with token and original_url', async () => {
    const link = await create({ devices: [ids.truck2, ids.truck1], ttl: HOUR })
    const [listed] = await list()
    expect(Object.keys(listed).sort()).toEqual(LIST_FIELDS)
    expect(listed).toEqual({
      id: link.id,
      account: ids.acme,
      devices: [ids.truck2, ids.truck1],
      acl: [...DEFAULT_ACL],
      revoked: false,
      expires_at: link.expires_at,
      unique_views: 0,
      last_accessed_at: null,
      created_at: new Date(NOW).toISOString(),
      token: link.token,
      original_url: link.original_url,
    })
  })

  test('leaves out revoked and expired links, newest first', async () => {
    const short = await create({ devices: [ids.truck1], ttl: 60 })
    world.clock.advance(1000)
    const revoked = await create({ devices: [ids.truck1], ttl: HOUR })
    world.clock.advance(1000)
    const kept = await create({ devices: [ids.truck1], ttl: HOUR })
    world.clock.advance(1000)
    const newest = await create({ devices: [ids.truck2], ttl: HOUR })
    expect((await world.call('DELETE', `/devices/share/${revoked.id}`, { token: keys.alice })).status).toBe(204)
    expect((await list()).map((l) => l.id)).toEqual([newest.id, kept.id, short.id])
    world.clock.set(NOW + 60_000) // exactly at expires_at: expired
    expect((await list()).map((l) => l.id)).toEqual([newest.id, kept.id])
  })

  test('another user of the account who reaches every device sees the link; another account does not', async () => {
    const link = await create({ devices: [ids.truck2, ids.van1], ttl: HOUR }) // both in vans: bob's group
    expect((await list(keys.bob)).map((l) => l.id)).toEqual([link.id])
    expect(await list(keys.carol)).toEqual([])
  })
})

describe('GET /devices/share/{id}', () => {
  test('answers the list shape plus short_url, revoked links too', async () => {
    const link = await create({ devices: [ids.truck1], ttl: HOUR })
    await world.call('DELETE', `/devices/share/${link.id}`, { token: keys.alice })
    const res = await world.call('GET', `/devices/share/${link.id}`, { token: keys.alice })
    expect(res.status).toBe(200)
    const body = (await res.json()) as Listed & { short_url: string }
    expect(Object.keys(body).sort()).toEqual([...LIST_FIELDS, 'short_url'].sort())
    expect(body).toMatchObject({ id: link.id, revoked: true, token: link.token, short_url: link.short_url, original_url: link.original_url })
  })

  test('another account\'s link and an unknown id are 404; a malformed id is 400', async () => {
    const link = await create({ devices: [ids.truck1], ttl: HOUR })
    await problem(await world.call('GET', `/devices/share/${link.id}`, { token: keys.carol }), 404)
    await problem(await world.call('GET', `/devices/share/${crypto.randomUUID()}`, { token: keys.alice }), 404)
    expect(await badRequest(await world.call('GET', '/devices/share/nope', { token: keys.alice }))).toEqual(['/id'])
  })
})

describe('PATCH /devices/share/{id}', () => {
  test('ttl recomputes expires_at from now; the answer is the update shape', async () => {
    const link = await create({ devices: [ids.truck1], ttl: HOUR })
    world.clock.advance(10 * 60_000)
    const res = await world.call('PATCH', `/devices/share/${link.id}`, { token: keys.alice, body: { ttl: 2 * HOUR } })
    expect(res.status).toBe(200)
    const body = (await res.json()) as Listed
    expect(Object.keys(body).sort()).toEqual(UPDATE_FIELDS)
    expect(body.expires_at).toBe(new Date(NOW + 10 * 60_000 + 2 * HOUR * 1000).toISOString())
    expect(body.devices).toEqual([ids.truck1])
    expect(body.created_at).toBe(new Date(NOW).toISOString())
  })

  test('devices replaces the list; acl replaces the permissions; fields not sent stay', async () => {
    const link = await create({ devices: [ids.truck1], ttl: HOUR })
    const res = await world.call('PATCH', `/devices/share/${link.id}`, { token: keys.alice, body: { devices: [ids.van1, ids.truck2], acl: [PERMISSION.location] } })
    expect(res.status).toBe(200)
    const body = (await res.json()) as Listed
    expect(body.devices).toEqual([ids.van1, ids.truck2])
    expect(body.acl).toEqual([PERMISSION.location])
    expect(body.expires_at).toBe(link.expires_at)
    const empty = await world.call('PATCH', `/devices/share/${link.id}`, { token: keys.alice, body: {} })
    expect(((await empty.json()) as Listed).devices).toEqual([ids.van1, ids.truck2])
  })

  test('ttl brings an expired link back; a revoked link stays revoked', async () => {
    const link = await create({ devices: [ids.truck1], ttl: 60 })
    world.clock.advance(120_000)
    expect((await world.call('GET', '/devices', { token: link.token })).status).toBe(401)
    await world.call('PATCH', `/devices/share/${link.id}`, { token: keys.alice, body: { ttl: HOUR } })
    expect((await world.call('GET', '/devices', { token: link.token })).status).toBe(200)

    await world.call('DELETE', `/devices/share/${link.id}`, { token: keys.alice })
    const res = await world.call('PATCH', `/devices/share/${link.id}`, { token: keys.alice, body: { ttl: HOUR } })
    expect(((await res.json()) as Listed).revoked).toBe(true)
    expect((await world.call('GET', '/devices', { token: link.token })).status).toBe(401)
  })

  test('invalid fields are 400, a device out of reach 404, and nothing changes', async () => {
    const link = await create({ devices: [ids.truck1], ttl: HOUR })
    const patch = (body: unknown, token = keys.alice) => world.call('PATCH', `/devices/share/${link.id}`, { token, body })
    expect(await badRequest(await patch({ ttl: 30 }))).toEqual(['/ttl'])
    expect(await badRequest(await patch({ devices: [] }))).toEqual(['/devices'])
    expect(await badRequest(await patch({ devices: [ids.truck2, ids.truck2] }))).toEqual(['/devices/1'])
    expect(await badRequest(await patch({ devices: ['x'] }))).toEqual(['/devices/0'])
    expect(await badRequest(await patch({ acl: [crypto.randomUUID()] }))).toEqual(['/acl/0'])
    expect(await badRequest(await patch({ revoked: false }))).toEqual(['/revoked'])
    await problem(await patch({ devices: [ids.globexCar] }), 404)
    await problem(await patch({ devices: [ids.truck1] }, keys.bob), 404) // bob cannot reach truck1
    const [listed] = await list()
    expect(listed.devices).toEqual([ids.truck1])
    expect(listed.expires_at).toBe(link.expires_at)
  })

  test('a malformed link id is 400; another account\'s or an unknown link is 404', async () => {
    const link = await create({ devices: [ids.truck1], ttl: HOUR })
    expect(await badRequest(await world.call('PATCH', '/devices/share/123', { token: keys.alice, body: { ttl: HOUR } }))).toEqual(['/id'])
    await problem(await world.call('PATCH', `/devices/share/${link.id}`, { token: keys.carol, body: { ttl: HOUR } }), 404)
    await problem(await world.call('PATCH', `/devices/share/${crypto.randomUUID()}`, { token: keys.alice, body: { ttl: HOUR } }), 404)
  })
})

describe('DELETE /devices/share/{id}', () => {
  test('revokes: 204, the token is 401 at once, the link leaves the list; again is 204', async () => {
    const link = await create({ devices: [ids.truck1], ttl: HOUR })
    expect((await world.call('GET', '/devices', { token: link.token })).status).toBe(200) // the token is now cached
    const res = await world.call('DELETE', `/devices/share/${link.id}`, { token: keys.alice })
    expect(res.status).toBe(204)
    expect(await res.text()).toBe('')
    const refused = await world.call('GET', '/devices', { token: link.token })
    await problem(refused, 401)
    expect(refused.headers.get('www-authenticate')).toContain('invalid_token')
    expect(await list()).toEqual([])
    expect((await world.call('DELETE', `/devices/share/${link.id}`, { token: keys.alice })).status).toBe(204)
  })

  test('another account\'s link is 404 and stays active', async () => {
    const link = await create({ devices: [ids.truck1], ttl: HOUR })
    await problem(await world.call('DELETE', `/devices/share/${link.id}`, { token: keys.carol }), 404)
    expect((await world.call('GET', '/devices', { token: link.token })).status).toBe(200)
  })
})

describe('managing links with a share token', () => {
  test('is 403 for every operation', async () => {
    const link = await create({ devices: [ids.truck1], ttl: HOUR })
    const as = { token: link.token }
    await problem(await world.call('GET', '/devices/share', as), 403)
    await problem(await world.call('POST', '/devices/share', { ...as, body: { devices: [ids.truck1], ttl: HOUR } }), 403)
    await problem(await world.call('GET', `/devices/share/${link.id}`, as), 403)
    await problem(await world.call('PATCH', `/devices/share/${link.id}`, { ...as, body: { ttl: 31_536_000 } }), 403)
    await problem(await world.call('DELETE', `/devices/share/${link.id}`, as), 403)
    expect((await list())[0].expires_at).toBe(link.expires_at)
  })
})

describe('who sees a link: only a user who reaches every one of its devices', () => {
  const dave = { id: '0c000000-0000-4000-8000-0000000000d0', key: 'dave-key-0123456789abcdef' }

  /** GET, PATCH and DELETE of the link as `token`: each must be 404 and must not carry the link's token. */
  async function expectHidden(link: Created, token: string) {
    const answers = [
      await world.call('GET', `/devices/share/${link.id}`, { token }),
      await world.call('PATCH', `/devices/share/${link.id}`, { token, body: { ttl: 31_536_000 } }),
      await world.call('DELETE', `/devices/share/${link.id}`, { token }),
    ]
    for (const res of answers) {
      const body = await problem(res, 404)
      expect(JSON.stringify(body)).not.toContain(link.token)
    }
    const listing = await world.call('GET', '/devices/share', { token })
    expect(listing.status).toBe(200)
    const text = await listing.text()
    expect(text).not.toContain(link.token)
    expect((JSON.parse(text) as Listed[]).map((l) => l.id)).not.toContain(link.id)
  }

  /** The link as its creator sees it: still active, lifetime unchanged. */
  async function expectUntouched(link: Created) {
    const own = (await list()).find((l) => l.id === link.id)
    expect(own).toMatchObject({ revoked: false, expires_at: link.expires_at })
    expect((await world.call('GET', '/devices', { token: link.token })).status).toBe(200)
  }

  test('a user of the account in no group sees no link, and another\'s link is 404 to them on detail, patch and delete', async () => {
    await world.importMore({ users: [{ id: dave.id, account: ids.acme, name: 'dave', api_keys: [dave.key] }] })
    const link = await create({ devices: [ids.truck1], ttl: HOUR })
    const other = await create({ devices: [ids.van1], ttl: HOUR }, keys.bob)
    expect(await list(dave.key)).toEqual([])
    await expectHidden(link, dave.key)
    await expectHidden(other, dave.key)
    await expectUntouched(link)
    await expectUntouched(other)
  })

  test('reaching some of a link\'s devices is not enough: 404, and the token is never shown', async () => {
    const mixed = await create({ devices: [ids.truck2, ids.truck1], ttl: HOUR }) // bob reaches truck2 (vans), not truck1
    const reachable = await create({ devices: [ids.van1, ids.truck2], ttl: HOUR })
    expect((await list(keys.bob)).map((l) => l.id)).toEqual([reachable.id])
    await expectHidden(mixed, keys.bob)
    await expectUntouched(mixed)
    // the link he does see, he may change and revoke
    expect((await world.call('PATCH', `/devices/share/${reachable.id}`, { token: keys.bob, body: { devices: [ids.van1] } })).status).toBe(200)
    expect((await world.call('DELETE', `/devices/share/${reachable.id}`, { token: keys.bob })).status).toBe(204)
  })

  test('after a user leaves a group (another process), the links of its devices vanish for them at once', async () => {
    const link = await create({ devices: [ids.truck2, ids.van1], ttl: HOUR })
    const bobSees = async () => (await list(keys.bob)).map((l) => l.id)
    expect(await bobSees()).toEqual([link.id])
    expect((await world.call('GET', `/devices/share/${link.id}`, { token: keys.bob })).status).toBe(200)

    // as `cli import --upsert` would, from its own connection
    {
      await world.executeElsewhere(sql`DELETE FROM user_groups WHERE user_id = ${ids.bob} AND group_id = ${ids.vans}`)
      expect(await bobSees()).toEqual([])
      await expectHidden(link, keys.bob)
      await expectUntouched(link) // alice still reaches both

      await world.executeElsewhere(sql`INSERT INTO user_groups (user_id, group_id) VALUES (${ids.bob}, ${ids.vans})`)
      expect(await bobSees()).toEqual([link.id])
      // and a device leaving the group does the same
      await world.executeElsewhere(sql`DELETE FROM device_groups WHERE group_id = ${ids.vans} AND device_key = (SELECT key FROM devices WHERE id = ${ids.van1})`)
      expect(await bobSees()).toEqual([])
      await expectHidden(link, keys.bob)
    }
  })
})

describe('active links per user (MAX_SHARE_LINKS_PER_USER, default 100)', () => {
  test('the 101st active link of a user is 409 and creates nothing; revoked and expired ones make room; another user has their own', async () => {
    const made: Created[] = []
    for (let i = 0; i < 100; i++) made.push(await create({ devices: [ids.truck1], ttl: HOUR }))
    const refused = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: HOUR } })
    expect((await problem(refused, 409)).detail).toContain('100')
    expect({ n: await world.count('share_links') }).toEqual({ n: 100 })

    // another user of the account is not counted against alice
    await create({ devices: [ids.truck2], ttl: HOUR }, keys.bob)

    // a revoked link makes room for one
    expect((await world.call('DELETE', `/devices/share/${made[0].id}`, { token: keys.alice })).status).toBe(204)
    await create({ devices: [ids.truck1], ttl: 2 * HOUR })
    await problem(await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: HOUR } }), 409)

    // the 99 one-hour links expire: room again, and a ttl bringing one back counts as a new one
    world.clock.advance(HOUR * 1000)
    for (let i = 0; i < 98; i++) await create({ devices: [ids.truck1], ttl: HOUR })
    expect((await world.call('PATCH', `/devices/share/${made[1].id}`, { token: keys.alice, body: { ttl: HOUR } })).status).toBe(200)
    const revive = await world.call('PATCH', `/devices/share/${made[2].id}`, { token: keys.alice, body: { ttl: HOUR } })
    expect((await problem(revive, 409)).detail).toContain('100')
    // nor by an admin on the creator's behalf; a patch that revives nothing passes
    await problem(await world.call('PATCH', `/devices/share/${made[2].id}`, { token: keys.dana, body: { ttl: HOUR } }), 409)
    expect((await world.call('PATCH', `/devices/share/${made[1].id}`, { token: keys.alice, body: { ttl: 2 * HOUR } })).status).toBe(200)
    expect((await world.call('PATCH', `/devices/share/${made[2].id}`, { token: keys.alice, body: { devices: [ids.truck2] } })).status).toBe(200)
    expect((await list()).length).toBe(100) // alice's (bob's has expired too)
  })

  test('is MAX_SHARE_LINKS_PER_USER when set', async () => {
    await world.close()
    world = await openWorld(undefined, { config: loadConfig({ MAX_SHARE_LINKS_PER_USER: '2' }) })
    await create({ devices: [ids.truck1], ttl: HOUR })
    await create({ devices: [ids.truck1], ttl: HOUR })
    await problem(await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: HOUR } }), 409)
  })
})
