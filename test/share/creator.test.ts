/**
 * A share link ends with its creator (issue 19, item 9): deleting the user revokes the links they
 * made; a device they no longer reach (a group, role or account change) leaves their links, and a
 * link left with none is revoked. Through the API, the live stream and the import.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { importNow } from '../support/import'
import { LivePositions, type LiveFix } from '../../src/ingest/live'
import { sseBlocks } from '../support/sse'
import { baseDataset, type EngineWorld, ids, keys, makeWorld, openWorld, problem } from '../support/world'

const HOUR = 3600

let world: EngineWorld
let live: LivePositions
beforeEach(async () => {
  live = new LivePositions()
  world = await openWorld(undefined, { live })
})
afterEach(() => world.close())

interface Link {
  id: string
  token: string
}

async function share(devices: string[], token: string): Promise<Link> {
  const res = await world.call('POST', '/devices/share', { token, body: { devices, ttl: HOUR } })
  expect(res.status).toBe(200)
  return (await res.json()) as Link
}

/** the link as the account's admin sees it */
async function stored(link: Link): Promise<{ devices: string[]; revoked: boolean }> {
  const res = await world.call('GET', `/devices/share/${link.id}`, { token: keys.dana })
  expect(res.status).toBe(200)
  return (await res.json()) as { devices: string[]; revoked: boolean }
}

/** the device ids a token is served, by GET /devices (404 for an empty page) */
async function served(link: Link): Promise<string[]> {
  const res = await world.call('GET', '/devices', { token: link.token })
  if (res.status === 404) return []
  expect(res.status).toBe(200)
  return ((await res.json()) as { id: string }[]).map((d) => d.id).sort()
}

async function expectRevoked(link: Link) {
  const res = await world.call('GET', '/devices', { token: link.token })
  expect((await problem(res, 401)).detail).toContain('revoked')
  expect((await stored(link)).revoked).toBe(true)
}

const change = (method: string, path: string, body?: unknown) => world.call(method, path, { token: keys.dana, body })

const KEY = (id: string) => world.deviceKey(id)
const fix = async (id: string, timestamp: number): Promise<LiveFix> => ({ deviceKey: await KEY(id), timestamp, latitude: 48.85, longitude: 2.35, speed: 30, course: null })
const fixId = (block: string | null) => {
  expect(block).toStartWith('event: fix\ndata: ')
  return JSON.parse(block!.slice('event: fix\ndata: '.length)).id as string
}

describe('deleting a user revokes the links they made', () => {
  test('their token is 401 at once (cached or not), their open stream ends, the admin sees the link revoked; others\' links stay', async () => {
    const bobs = await share([ids.truck2, ids.van1], keys.bob)
    const alices = await share([ids.van1], keys.alice)
    expect(await served(bobs)).toEqual([ids.truck2, ids.van1].sort()) // the token is now in the cache
    const stream = sseBlocks(await world.call('GET', '/devices/stream', { token: bobs.token }))
    expect(await stream.next()).toBe('retry: 3000')

    expect((await change('DELETE', `/users/${ids.bob}`)).status).toBe(204)

    await expectRevoked(bobs)
    expect((await stored(bobs)).devices).toEqual([ids.truck2, ids.van1]) // kept as it was shared
    await problem(await world.call('GET', `/devices/${ids.van1}`, { token: bobs.token }), 401)
    // the stream ends rather than send another fix
    live.publish(await fix(ids.van1, 1764000001))
    expect(await stream.next()).toBeNull()

    expect(await served(alices)).toEqual([ids.van1])
    expect((await stored(alices)).revoked).toBe(false)
  })
})

describe('a device the creator no longer reaches leaves their links', () => {
  test('a member taken out of a group: the link keeps the devices they still reach, one left with none is revoked, at once', async () => {
    const both = await share([ids.truck2, ids.van1], keys.bob)
    const vanOnly = await share([ids.van1], keys.bob)
    const alices = await share([ids.van1], keys.alice)
    expect(await served(both)).toEqual([ids.truck2, ids.van1].sort())
    expect((await world.call('GET', `/devices/${ids.van1}`, { token: both.token })).status).toBe(200)
    const stream = sseBlocks(await world.call('GET', '/devices/stream', { token: both.token }))
    expect(await stream.next()).toBe('retry: 3000')

    // bob leaves vans for trucks: he reaches truck1 and truck2, no longer van1
    expect((await change('PATCH', `/users/${ids.bob}`, { groups: [ids.trucks] })).status).toBe(200)

    expect(await served(both)).toEqual([ids.truck2])
    await problem(await world.call('GET', `/devices/${ids.van1}`, { token: both.token }), 404)
    await problem(await world.call('GET', `/devices/${ids.van1}/history/route?from=1764000000&to=1764003600`, { token: both.token }), 404)
    expect(await stored(both)).toMatchObject({ devices: [ids.truck2], revoked: false })
    await expectRevoked(vanOnly)
    // the open stream follows: van1's fixes stop, truck2's go on
    live.publish(await fix(ids.van1, 1764000001))
    live.publish(await fix(ids.truck2, 1764000002))
    expect(fixId(await stream.next())).toBe(ids.truck2)
    await stream.cancel()
    // alice made hers, and still reaches van1
    expect(await served(alices)).toEqual([ids.van1])

    // for good: bob back in vans does not bring van1 back to his link
    expect((await change('PATCH', `/users/${ids.bob}`, { groups: [ids.trucks, ids.vans] })).status).toBe(200)
    expect(await served(both)).toEqual([ids.truck2])
  })

  test('a change that leaves the creator\'s reach as it was changes nothing, though it replaces their groups', async () => {
    const bobs = await share([ids.truck2, ids.van1], keys.bob)
    expect((await change('PATCH', `/users/${ids.bob}`, { groups: [ids.vans, ids.trucks] })).status).toBe(200)
    expect((await change('PATCH', `/groups/${ids.vans}`, { users: [ids.alice, ids.bob] })).status).toBe(200)
    expect((await change('PATCH', `/devices/${ids.van1}`, { groups: [ids.vans] })).status).toBe(200)
    expect(await served(bobs)).toEqual([ids.truck2, ids.van1].sort())
    expect(await stored(bobs)).toMatchObject({ devices: [ids.truck2, ids.van1], revoked: false })
  })

  test('a group changed or deleted: its users\' links lose the devices they reached only through it', async () => {
    const bobs = await share([ids.truck2, ids.van1], keys.bob)
    const alices = await share([ids.truck1, ids.van1], keys.alice)

    // van1 taken out of vans (PATCH /groups): neither reaches it any more
    expect((await change('PATCH', `/groups/${ids.vans}`, { devices: [ids.truck2] })).status).toBe(200)
    expect(await served(bobs)).toEqual([ids.truck2])
    expect(await served(alices)).toEqual([ids.truck1])

    // trucks deleted: alice's truck1 went with it (truck2 she still reaches through vans)
    expect((await change('DELETE', `/groups/${ids.trucks}`)).status).toBe(204)
    await expectRevoked(alices)
    expect(await served(bobs)).toEqual([ids.truck2])

    // bob taken out of vans by the group's users (PATCH /groups): nothing left
    expect((await change('PATCH', `/groups/${ids.vans}`, { users: [ids.alice] })).status).toBe(200)
    await expectRevoked(bobs)
  })

  test('a device moved to another group (PATCH /devices): links keep it where their creator still reaches it', async () => {
    const bobs = await share([ids.van1], keys.bob)
    const alices = await share([ids.van1], keys.alice)
    expect((await change('PATCH', `/devices/${ids.van1}`, { groups: [ids.trucks] })).status).toBe(200)
    await expectRevoked(bobs)
    expect(await served(alices)).toEqual([ids.van1])
  })

  test('an admin made a member: their links keep the devices of their groups', async () => {
    expect((await change('PATCH', `/users/${ids.alice}`, { role: 'admin' })).status).toBe(200)
    const danas = await share([ids.truck1, ids.van1], keys.dana)
    // role and groups in one change: judged once both are made
    const demoted = await world.call('PATCH', `/users/${ids.dana}`, { token: keys.alice, body: { role: 'member', groups: [ids.vans] } })
    expect(demoted.status).toBe(200)
    expect(await served(danas)).toEqual([ids.van1])
  })

  test('an import (--upsert) taking a user out of a group does the same; re-importing the same document changes nothing', async () => {
    const bobs = await share([ids.truck2, ids.van1], keys.bob)
    await world.importMore(baseDataset(), { upsert: true })
    expect(await served(bobs)).toEqual([ids.truck2, ids.van1].sort())

    const dataset = baseDataset()
    const bob = dataset.users.find((u) => u.id === ids.bob)!
    bob.groups = [ids.trucks]
    await world.importMore(dataset, { upsert: true })
    expect(await served(bobs)).toEqual([ids.truck2])
  })
})

describe('migration 0015 on a database from before', () => {
  test('revokes the links of deleted users and takes out of the others what their creator no longer reaches', async () => {
    const { Database } = await import('bun:sqlite')
    const { embeddedMigrations, openDatabase } = await import('../../db/client')
    const { join } = await import('node:path')
    // SQLite's migration: a SQLite file on either run
    const world = makeWorld()
    const path = join(world.dir, 'before.db')
    const migrations = embeddedMigrations()
    const mine = migrations.findIndex((m) => m.sql.some((statement) => statement.includes('users_delete_share_links')))
    expect(mine).toBeGreaterThan(0)
    // the database as the release before left it, with links made under the old rules
    const old = new Database(path)
    old.run('PRAGMA foreign_keys = ON')
    old.run('CREATE TABLE "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)')
    for (const migration of migrations.slice(0, mine)) {
      for (const statement of migration.sql) if (statement.trim()) old.run(statement)
      old.run('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)', [migration.hash, migration.folderMillis])
    }
    // the base dataset's people and devices in the columns that release had (the import of today
    // writes today's columns)
    const dataset = baseDataset()
    for (const account of dataset.accounts) old.run('INSERT INTO accounts (id, name) VALUES (?, ?)', [account.id, account.name])
    for (const group of dataset.groups) old.run('INSERT INTO groups (id, account_id, name) VALUES (?, ?, ?)', [group.id, group.account, group.name])
    for (const user of dataset.users) {
      old.run("INSERT INTO users (id, account_id, name, role) VALUES (?, ?, ?, ?)", [user.id, user.account, user.name, user.role ?? 'member'])
      for (const group of user.groups) old.run('INSERT INTO user_groups (user_id, group_id) VALUES (?, ?)', [user.id, group])
    }
    for (const model of dataset.models) old.run('INSERT INTO models (id, name) VALUES (?, ?)', [model.id, model.name])
    for (const device of dataset.devices) {
      old.run("INSERT INTO devices (id, account_id, model_id, alias, serial, imei) VALUES (?, ?, ?, ?, ?, ?)", [device.id, device.account, device.model, device.alias, device.serial, device.imei])
      for (const group of device.groups) old.run('INSERT INTO device_groups (group_id, device_key) VALUES (?, (SELECT key FROM devices WHERE id = ?))', [group, device.id])
    }
    old.close()
    const before = openDatabase(path, { migrate: false })
    const key = (id: string) => before.sqlite.query<{ key: number }, [string]>('SELECT key FROM devices WHERE id = ?').get(id)!.key
    const link = (id: string, createdBy: string | null, devices: string[]) => {
      before.sqlite.run(
        "INSERT INTO share_links (id, account_id, created_by, token, short_code, acl, expires_at) VALUES (?, ?, ?, ?, ?, '[]', 9e15)",
        [id, ids.acme, createdBy, `token-${id}`, `code-${id.slice(-4)}`],
      )
      devices.forEach((device, i) => before.sqlite.run('INSERT INTO share_link_devices (link_id, device_key, ordinal) VALUES (?, ?, ?)', [id, key(device), i]))
    }
    const orphan = '1c000000-0000-4000-8000-000000000001'
    const partly = '1c000000-0000-4000-8000-000000000002'
    const none = '1c000000-0000-4000-8000-000000000003'
    const kept = '1c000000-0000-4000-8000-000000000004'
    link(orphan, null, [ids.truck2]) // its creator deleted under the old rules
    link(partly, ids.bob, [ids.truck1, ids.van1]) // bob never reached truck1 (made before he left trucks, say)
    link(none, ids.bob, [ids.truck1])
    link(kept, ids.dana, [ids.truck1, ids.van1])
    before.close()

    const after = openDatabase(path)
    try {
      const state = after.sqlite
        .query<{ id: string; revoked: number; devices: string | null }, []>(
          `SELECT l.id, l.revoked, (SELECT group_concat(d.id) FROM share_link_devices s JOIN devices d ON d.key = s.device_key WHERE s.link_id = l.id) AS devices
           FROM share_links l ORDER BY l.id`,
        )
        .all()
      expect(state).toEqual([
        { id: orphan, revoked: 1, devices: ids.truck2 },
        { id: partly, revoked: 0, devices: ids.van1 },
        { id: none, revoked: 1, devices: ids.truck1 },
        { id: kept, revoked: 0, devices: `${ids.truck1},${ids.van1}` },
      ])
    } finally {
      after.close()
      world.close()
    }
  })
})
