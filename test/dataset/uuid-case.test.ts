/**
 * UUIDs are case-insensitive: an import stores every id and reference in lower case (a file
 * written with upper-case UUIDs, as macOS `uuidgen` prints them, imports and is found by the API),
 * and migration 0004 lower-cases the ids older imports stored as written.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { embeddedMigrations, openDatabase } from '../../db/client'
import { createApp } from '../../src/app'
import { hashKey } from '../../src/keys/service'
import { baseDataset, type EngineWorld, ids, keys, makeWorld, openWorld } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld({})
})
afterEach(() => world.close())

const upper = (id: string) => id.toUpperCase()
/** every string in `value` that is one of the world's ids, in upper case */
function upperIds<T>(value: T): T {
  const known = new Set(Object.values(ids))
  return JSON.parse(JSON.stringify(value), (_key, v) => (typeof v === 'string' && known.has(v) ? upper(v) : v))
}
const deviceIds = async () => (await world.execute<{ id: string }>(sql`SELECT id FROM devices ORDER BY id`)).map((r) => r.id)

describe('an import with upper-case UUIDs', () => {
  test('imports, its references resolving within the file, and stores every id in lower case', async () => {
    const document = upperIds({ ...baseDataset(), positions: [{ device: ids.truck1, timestamp: 1764000000, latitude: 48.85, longitude: 2.35 }] })
    expect(document.devices[0].id).toBe(upper(ids.truck1))
    const summary = await world.importMore(document)
    expect(summary.devices).toBe(5)
    expect(summary.positions).toBe(1)
    expect(await deviceIds()).toEqual([ids.truck1, ids.truck2, ids.van1, ids.unlinked, ids.globexCar].sort())
    const all = await world.execute<Record<string, string>>(
      sql`SELECT id FROM accounts UNION ALL SELECT id || account_id FROM groups UNION ALL SELECT id || account_id FROM users
          UNION ALL SELECT user_id || group_id FROM user_groups UNION ALL SELECT id FROM models UNION ALL SELECT id || model_id FROM commands
          UNION ALL SELECT account_id || model_id FROM devices UNION ALL SELECT group_id FROM device_groups`,
    )
    for (const row of all) expect(Object.values(row)[0]).toBe(Object.values(row)[0].toLowerCase())

    const res = await world.call('GET', '/devices', { token: keys.alice })
    expect(((await res.json()) as { id: string }[]).map((d) => d.id)).toEqual([ids.truck1, ids.truck2, ids.van1])
    const one = await world.call('GET', `/devices/${upper(ids.truck1)}`, { token: keys.alice })
    expect(((await one.json()) as { id: string }).id).toBe(ids.truck1)
  })

  test('two ids differing only in case are one id: a duplicate in the file', async () => {
    const document = baseDataset()
    document.devices[1].id = upper(document.devices[0].id)
    await expect(world.importMore(document)).rejects.toThrow(/\/devices\/1\/id: duplicate id/)
    expect(await deviceIds()).toEqual([])
  })

  test('names a stored record in any case: without --upsert it already exists, with --upsert it is updated, not doubled', async () => {
    await world.importMore(baseDataset())
    const again = upperIds({ devices: [{ ...baseDataset().devices[0], alias: 'Renamed' }] })
    await expect(world.importMore(again)).rejects.toThrow(/already exists/)
    await world.importMore(again, { upsert: true })
    expect(await deviceIds()).toHaveLength(5)
    const res = await world.call('GET', `/devices/${ids.truck1}`, { token: keys.alice })
    expect(((await res.json()) as { alias: string }).alias).toBe('Renamed')
  })
})

describe('a database an older version imported upper-case UUIDs into', () => {
  test('is lower-cased by the upgrade, every reference with its key, and the API finds its records', async () => {
    // SQLite's migration 0004: a SQLite file on either run
    const world = makeWorld({})
    const path = join(world.dir, 'old.db')
    // the database as version 0003 left it, written as its imports wrote upper-case ids: as given
    const old = new Database(path)
    old.run('PRAGMA foreign_keys = ON')
    old.run('CREATE TABLE "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)')
    for (const migration of embeddedMigrations().slice(0, 4)) {
      for (const statement of migration.sql) if (statement.trim()) old.run(statement)
      old.run('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)', [migration.hash, migration.folderMillis])
    }
    const U = (id: string) => upper(id)
    old.run('INSERT INTO accounts (id, name) VALUES (?, ?)', [U(ids.acme), 'Acme'])
    old.run('INSERT INTO groups (id, account_id, name) VALUES (?, ?, ?)', [U(ids.trucks), U(ids.acme), 'Trucks'])
    old.run('INSERT INTO users (id, account_id, name) VALUES (?, ?, ?)', [U(ids.alice), U(ids.acme), 'alice'])
    old.run('INSERT INTO user_groups (user_id, group_id) VALUES (?, ?)', [U(ids.alice), U(ids.trucks)])
    old.run('INSERT INTO api_keys (user_id, hash) VALUES (?, ?)', [U(ids.alice), hashKey(keys.alice)])
    old.run("INSERT INTO models (id, name) VALUES (?, 'GT06N')", [U(ids.gt06)])
    old.run(`INSERT INTO commands (id, model_id, name, widget) VALUES (?, ?, 'Engine stop', '{"type":"button"}')`, [U(ids.engineStop), U(ids.gt06)])
    old.run("INSERT INTO devices (key, id, account_id, model_id, alias, serial, imei) VALUES (1, ?, ?, ?, 'Truck 1', '', '')", [U(ids.truck1), U(ids.acme), U(ids.gt06)])
    // the same UUID imported twice, in two cases: two rows an older version could not tell apart
    old.run("INSERT INTO devices (key, id, account_id, model_id, alias, serial, imei) VALUES (2, ?, ?, ?, 'Twin A', '', ''), (3, ?, ?, ?, 'Twin B', '', '')", [
      U(ids.truck2), U(ids.acme), U(ids.gt06), ids.truck2, U(ids.acme), U(ids.gt06),
    ])
    old.run('INSERT INTO device_groups (group_id, device_key) VALUES (?, 1)', [U(ids.trucks)])
    old.run("INSERT INTO share_links (id, account_id, created_by, token, short_code, acl, expires_at) VALUES ('1c000000-0000-4000-8000-000000000001', ?, ?, 't', 'c', '[]', 9e15)", [
      U(ids.acme), U(ids.alice),
    ])
    old.close()

    const upgraded = openDatabase(path)
    try {
      const q = (sql: string) => upgraded.sqlite.query(sql).all()
      expect(q('PRAGMA foreign_key_check')).toEqual([])
      expect(q('SELECT id FROM accounts')).toEqual([{ id: ids.acme }])
      expect(q('SELECT id, account_id FROM groups')).toEqual([{ id: ids.trucks, account_id: ids.acme }])
      expect(q('SELECT id, account_id FROM users')).toEqual([{ id: ids.alice, account_id: ids.acme }])
      expect(q('SELECT user_id, group_id FROM user_groups')).toEqual([{ user_id: ids.alice, group_id: ids.trucks }])
      expect(q('SELECT user_id FROM api_keys')).toEqual([{ user_id: ids.alice }])
      expect(q('SELECT id, model_id FROM commands')).toEqual([{ id: ids.engineStop, model_id: ids.gt06 }])
      expect(q('SELECT group_id FROM device_groups')).toEqual([{ group_id: ids.trucks }])
      expect(q('SELECT account_id, created_by FROM share_links')).toEqual([{ account_id: ids.acme, created_by: ids.alice }])
      // the twins are left as they were (renaming either would clash); the rest is lower case
      expect(q('SELECT key, id, account_id, model_id FROM devices ORDER BY key')).toEqual([
        { key: 1, id: ids.truck1, account_id: ids.acme, model_id: ids.gt06 },
        { key: 2, id: upper(ids.truck2), account_id: ids.acme, model_id: ids.gt06 },
        { key: 3, id: ids.truck2, account_id: ids.acme, model_id: ids.gt06 },
      ])

      const app = createApp({ database: upgraded })
      const get = (path: string) => app.handle(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${keys.alice}` } }))
      const one = await get(`/devices/${upper(ids.truck1)}`)
      expect(one.status).toBe(200)
      expect(((await one.json()) as { id: string }).id).toBe(ids.truck1)
      expect((await get(`/devices/${ids.truck1}/commands`)).status).toBe(200)
    } finally {
      upgraded.close()
      world.close()
    }
  })
})
