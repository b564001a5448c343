/**
 * Nothing crosses accounts through an import: groups stay within their account, and a device that
 * `import --upsert` moves to another account leaves its old account's groups and share links,
 * cached share tokens included, whichever process ran the import.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { embeddedMigrations, openDatabase } from '../../db/client'
import { DatasetError } from '../../src/dataset/service'
import { LivePositions } from '../../src/ingest/live'
import { baseDataset, ids, keys, openWorld, problem, testEngine, type EngineWorld } from '../support/world'
import { runCli } from '../support/process'

const HOUR = 3600

let world: EngineWorld
let live: LivePositions
/** a scratch folder for the files a test writes (the CLI's input, an old database) */
let dir: string
beforeEach(async () => {
  live = new LivePositions()
  world = await openWorld(undefined, { live })
  dir = mkdtempSync(join(tmpdir(), 'tracker-move-'))
})
afterEach(async () => {
  await world.close()
  rmSync(dir, { recursive: true, force: true })
})

interface Created { id: string; token: string }

async function share(devices: string[], token = keys.alice): Promise<Created> {
  const res = await world.call('POST', '/devices/share', { token, body: { devices, ttl: HOUR } })
  expect(res.status).toBe(200)
  return (await res.json()) as Created
}

const listedIds = async (res: Response) => {
  expect(res.status).toBe(200)
  return ((await res.json()) as { id: string }[]).map((d) => d.id)
}

/** A document that moves `device` (a base dataset device) to Globex, optionally into Globex's group. */
function moveToGlobex(device: string, groups?: string[]) {
  const stored = baseDataset().devices.find((d) => d.id === device)!
  const { groups: _old, ...rest } = stored
  return { devices: [{ ...rest, account: ids.globex, ...(groups ? { groups } : {}) }] }
}

/** `tracker import FILE --upsert` in its own process, against the world's database. */
function cliImport(document: object) {
  const file = join(dir, 'move.json')
  writeFileSync(file, JSON.stringify(document))
  const run = runCli(['import', file, '--upsert'], { cwd: dir, env: world.env })
  expect(run.stderr).toBe('')
  expect(run.code).toBe(0)
}

describe('a device moved to another account by import --upsert', () => {
  test('(CLI, another process) is gone from the old link: its cached token no longer serves it', async () => {
    const link = await share([ids.truck1, ids.truck2])
    // the token is resolved and cached, the moved device served
    expect(await listedIds(await world.call('GET', '/devices', { token: link.token }))).toEqual([ids.truck1, ids.truck2])
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: link.token })).status).toBe(200)

    await world.elsewhere(() => cliImport(moveToGlobex(ids.truck1)))

    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: link.token }), 404)
    expect(await listedIds(await world.call('GET', '/devices', { token: link.token }))).toEqual([ids.truck2])
    const range = `from=${Date.UTC(2026, 10, 25) / 1000}&to=${Date.UTC(2026, 10, 25, 1) / 1000}`
    await problem(await world.call('GET', `/devices/${ids.truck1}/history/route?${range}`, { token: link.token }), 404)
    // the link itself now names only the device that stayed
    const detail = await world.call('GET', `/devices/share/${link.id}`, { token: keys.alice })
    expect(((await detail.json()) as { devices: string[] }).devices).toEqual([ids.truck2])
  })

  test('an open live stream of the old link stops sending its fixes', async () => {
    const link = await share([ids.truck1, ids.truck2])
    const res = await world.call('GET', '/devices/stream', { token: link.token })
    expect(res.status).toBe(200)
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    /** the stream's text until it holds `marker` (fixes are sent synchronously on publish) */
    const until = async (marker: string) => {
      while (!text.includes(marker)) {
        const chunk = await reader.read()
        if (chunk.done) break
        text += chunk.value
      }
      return text
    }
    const deviceKeys = { [ids.truck1]: await world.deviceKey(ids.truck1), [ids.truck2]: await world.deviceKey(ids.truck2) }
    const publish = (id: string, timestamp: number) => live.publish({ deviceKey: deviceKeys[id]!, timestamp, latitude: 48.85, longitude: 2.35, speed: 10, course: null })

    await until('retry:')
    publish(ids.truck1, 1764000001)
    expect(await until('1764000001')).toContain(ids.truck1)

    await world.importMore(moveToGlobex(ids.truck1), { upsert: true })
    publish(ids.truck1, 1764000002)
    publish(ids.truck2, 1764000003)
    const after = (await until('1764000003')).slice(text.indexOf('1764000001'))
    expect(after).not.toContain('1764000002')
    expect(after).toContain(ids.truck2)
    await reader.cancel()
  })

  test('keeps none of its old groups: the old account\'s users no longer reach it, the new one\'s through its new groups only', async () => {
    await world.importMore(moveToGlobex(ids.truck2), { upsert: true })
    for (const key of [keys.alice, keys.bob]) await problem(await world.call('GET', `/devices/${ids.truck2}`, { token: key }), 404)
    await problem(await world.call('GET', `/devices/${ids.truck2}`, { token: keys.carol }), 404) // in no Globex group yet
    const groups = await world.execute(sql`SELECT group_id FROM device_groups WHERE device_key = (SELECT key FROM devices WHERE id = ${ids.truck2})`)
    expect(groups).toEqual([])

    await world.importMore(moveToGlobex(ids.truck2, [ids.globexGroup]), { upsert: true })
    expect((await world.call('GET', `/devices/${ids.truck2}`, { token: keys.carol })).status).toBe(200)
    await problem(await world.call('GET', `/devices/${ids.truck2}`, { token: keys.alice }), 404)
  })

  test('a link left with no device is revoked: its token is 401', async () => {
    const only = await share([ids.truck1])
    const kept = await share([ids.truck2])
    expect((await world.call('GET', '/devices', { token: only.token })).status).toBe(200)

    await world.importMore(moveToGlobex(ids.truck1, [ids.globexGroup]), { upsert: true })

    await problem(await world.call('GET', '/devices', { token: only.token }), 401)
    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: only.token }), 401)
    expect((await world.call('GET', '/devices', { token: kept.token })).status).toBe(200)
    // and nobody in the new account sees the old account's links
    expect(await listedIds(await world.call('GET', '/devices/share', { token: keys.carol }))).toEqual([])
  })

  test('a device upserted within its own account keeps its groups and links', async () => {
    const link = await share([ids.truck1])
    const same = baseDataset().devices.find((d) => d.id === ids.truck1)!
    const { groups: _groups, ...withoutGroups } = same
    await world.importMore({ devices: [{ ...withoutGroups, alias: 'Truck One' }] }, { upsert: true })
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: link.token })).status).toBe(200)
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.alice })).status).toBe(200)
  })
})

describe('a user moved to another account by import --upsert', () => {
  test('keeps none of its old groups', async () => {
    expect((await world.call('GET', `/devices/${ids.van1}`, { token: keys.bob })).status).toBe(200)
    await world.importMore({ users: [{ id: ids.bob, account: ids.globex, name: 'bob' }] }, { upsert: true })
    await problem(await world.call('GET', `/devices/${ids.van1}`, { token: keys.bob }), 404)
    const groups = await world.execute(sql`SELECT group_id FROM user_groups WHERE user_id = ${ids.bob}`)
    expect(groups).toEqual([])
  })
})

describe('groups never cross accounts', () => {
  const TABLES = ['groups', 'users', 'user_groups', 'devices', 'device_groups', 'share_links', 'share_link_devices']
  /** every row of the tables, each table's rows in one order whatever the engine returns them in */
  const snapshot = async () => {
    const tables = []
    for (const table of TABLES) tables.push((await world.execute(sql`SELECT * FROM ${sql.raw(table)}`)).map((row) => JSON.stringify(row)).sort())
    return tables
  }

  async function expectRejected(document: object, path: string) {
    await share([ids.truck1])
    const before = await snapshot()
    let error: unknown
    try {
      await world.importMore(document, { upsert: true })
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(DatasetError)
    expect((error as DatasetError).path).toBe(path)
    expect((error as DatasetError).reason).toMatch(/another account/)
    expect(await snapshot()).toEqual(before)
  }

  test('a device moved with a group of its old account is refused, naming the path, and nothing is written', async () => {
    await expectRejected(moveToGlobex(ids.truck1, [ids.globexGroup, ids.trucks]), '/devices/0/groups/1')
  })

  test('a user given a group of another account is refused, naming the path', async () => {
    await expectRejected({ users: [{ id: ids.bob, account: ids.acme, name: 'bob', groups: [ids.vans, ids.globexGroup] }] }, '/users/0/groups/1')
  })

  test('a group moved to another account is refused, naming the path, and nothing is written', async () => {
    await expectRejected(
      { accounts: [{ id: ids.globex, name: 'Globex' }], groups: [{ id: ids.vans, account: ids.globex, name: 'Vans' }] },
      '/groups/0/account',
    )
  })
})

describe('a database from before this rule', () => {
  // SQLite's own migration history: PostgreSQL's begins after this rule (db/postgres/migrations 0000)
  test.skipIf(testEngine !== 'sqlite')('is cleaned by the upgrade: cross-account memberships and link devices go, a link left empty is revoked', () => {
    const path = join(dir, 'old.db')
    // the database as version 0002 left it, with what its imports could write
    const old = new Database(path)
    old.run('CREATE TABLE "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)')
    for (const migration of embeddedMigrations().slice(0, 3)) {
      for (const statement of migration.sql) if (statement.trim()) old.run(statement)
      old.run('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)', [migration.hash, migration.folderMillis])
    }
    const acme = ids.acme
    const globex = ids.globex
    old.run('INSERT INTO accounts (id, name) VALUES (?, ?), (?, ?)', [acme, 'Acme', globex, 'Globex'])
    old.run('INSERT INTO groups (id, account_id, name) VALUES (?, ?, ?), (?, ?, ?)', [ids.trucks, acme, 'Trucks', ids.globexGroup, globex, 'Cars'])
    old.run('INSERT INTO users (id, account_id, name) VALUES (?, ?, ?), (?, ?, ?)', [ids.alice, acme, 'alice', ids.carol, globex, 'carol'])
    old.run('INSERT INTO user_groups (user_id, group_id) VALUES (?, ?), (?, ?)', [ids.alice, ids.trucks, ids.alice, ids.globexGroup])
    old.run("INSERT INTO models (id, name) VALUES (?, 'Bare')", [ids.bare])
    // truck1 moved to Globex by an old import: still in Trucks and in Acme's links
    old.run("INSERT INTO devices (key, id, account_id, model_id, alias, serial, imei) VALUES (1, ?, ?, ?, 'Truck 1', '', ''), (2, ?, ?, ?, 'Truck 2', '', '')", [
      ids.truck1, globex, ids.bare, ids.truck2, acme, ids.bare,
    ])
    old.run('INSERT INTO device_groups (group_id, device_key) VALUES (?, 1), (?, 2), (?, 1)', [ids.trucks, ids.trucks, ids.globexGroup])
    // made by alice, as the API records (migration 0015 revokes a link whose creator is gone)
    const link = (id: string) => [id, acme, ids.alice, id.slice(-8), id.slice(-10)]
    const [both, only] = ['1c000000-0000-4000-8000-000000000001', '1c000000-0000-4000-8000-000000000002']
    old.run(`INSERT INTO share_links (id, account_id, created_by, token, short_code, acl, expires_at) VALUES (?, ?, ?, ?, ?, '[]', 9e15), (?, ?, ?, ?, ?, '[]', 9e15)`, [
      ...link(both), ...link(only),
    ])
    old.run('INSERT INTO share_link_devices (link_id, device_key, ordinal) VALUES (?, 1, 0), (?, 2, 1), (?, 1, 0)', [both, both, only])
    old.close()

    const upgraded = openDatabase(path)
    try {
      const q = (sql: string) => upgraded.sqlite.query(sql).all()
      expect(q('SELECT user_id, group_id FROM user_groups ORDER BY user_id')).toEqual([{ user_id: ids.alice, group_id: ids.trucks }])
      expect(q('SELECT group_id, device_key FROM device_groups ORDER BY device_key')).toEqual([
        { group_id: ids.globexGroup, device_key: 1 },
        { group_id: ids.trucks, device_key: 2 },
      ])
      expect(q('SELECT link_id, device_key FROM share_link_devices')).toEqual([{ link_id: both, device_key: 2 }])
      expect(q('SELECT id, revoked FROM share_links ORDER BY id')).toEqual([
        { id: both, revoked: 0 },
        { id: only, revoked: 1 },
      ])
    } finally {
      upgraded.close()
    }
  })
})
