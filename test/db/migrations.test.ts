import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { embeddedMigrations, migrationsApplied, openDatabase } from '../../db/client'
import { migrationFiles, migrationJournal } from '../../db/migrations'
import { createEventStore, encodeEvent } from '../../src/store/events'

describe('migrations', () => {
  test('every SQL file in db/migrations is in the journal and embedded, in order', () => {
    const files = readdirSync(join(import.meta.dir, '../../db/migrations')).filter((f) => f.endsWith('.sql')).map((f) => f.replace(/\.sql$/, '')).sort()
    expect(migrationJournal.entries.map((e) => e.tag)).toEqual(files)
    expect(Object.keys(migrationFiles).sort()).toEqual(files)
    const when = embeddedMigrations().map((m) => m.folderMillis)
    expect(when).toEqual([...when].sort((a, b) => a - b))
  })

  test('a database from an older version is brought up to date, its data kept', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tracker-migrate-'))
    try {
      const path = join(dir, 'old.db')
      // build the database as the first release left it: only the first migration applied
      const first = embeddedMigrations()[0]
      const old = new Database(path)
      for (const statement of first.sql) if (statement.trim()) old.run(statement)
      old.run('CREATE TABLE "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)')
      old.run('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)', [first.hash, first.folderMillis])
      old.run("INSERT INTO accounts (id, name) VALUES ('0a000000-0000-4000-8000-000000000001', 'Kept')")
      expect(migrationsApplied(old)).toBe(false)
      old.close()

      const upgraded = openDatabase(path)
      try {
        expect(migrationsApplied(upgraded.sqlite)).toBe(true)
        expect(upgraded.sqlite.query('SELECT name FROM accounts').all()).toEqual([{ name: 'Kept' }])
        expect(upgraded.sqlite.query('SELECT version FROM access_version').get()).toEqual({ version: 0 })
      } finally {
        upgraded.close()
      }
      // and opening it again applies nothing twice
      openDatabase(path).close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test("0013: an older database's models stay server-wide, but one an account's admin made through the API, used only by that account's devices, becomes that account's", () => {
    const dir = mkdtempSync(join(tmpdir(), 'tracker-migrate-'))
    try {
      const path = join(dir, 'old.db')
      const old = new Database(path)
      old.run('CREATE TABLE "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)')
      for (const migration of embeddedMigrations().filter((_, i) => migrationJournal.entries[i]!.tag < '0013')) {
        for (const statement of migration.sql) if (statement.trim()) old.run(statement)
        old.run('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)', [migration.hash, migration.folderMillis])
      }
      const [a, b] = ['0a000000-0000-4000-8000-000000000001', '0a000000-0000-4000-8000-000000000002']
      old.run("INSERT INTO accounts (id, name) VALUES (?, 'A'), (?, 'B')", [a, b])
      // made by A's admin over the API; the second is also used by B's device (the old rule let it)
      const [own, shared, imported, operators] = ['m1', 'm2', 'm3', 'm4'].map((n) => `0d000000-0000-4000-8000-0000000000${n.slice(1).padStart(2, '0')}`)
      for (const id of [own, shared, imported, operators]) old.run("INSERT INTO models (id, name) VALUES (?, 'M')", [id!])
      for (const id of [own, shared]) old.run("INSERT INTO audit_log (account_id, actor, action, object_type, object_id, at) VALUES (?, 'a-user', 'create', 'model', ?, 0)", [a, id!])
      old.run("INSERT INTO audit_log (account_id, actor, action, object_type, object_id, at) VALUES (?, 'cli', 'create', 'model', ?, 0)", [a, operators!])
      const device = (n: number, account: string, model: string) =>
        old.run("INSERT INTO devices (id, account_id, model_id, alias, serial, imei, created_at, updated_at) VALUES (?, ?, ?, 'd', ?, '', 0, 0)", [`0f000000-0000-4000-8000-00000000000${n}`, account, model, `S${n}`])
      device(1, a, own!)
      device(2, a, shared!)
      device(3, b, shared!)
      device(4, b, imported!)
      old.close()

      const upgraded = openDatabase(path)
      try {
        const owners = upgraded.sqlite.query<{ id: string; account_id: string | null }, []>('SELECT id, account_id FROM models ORDER BY id').all()
        expect(owners).toEqual([
          { id: own!, account_id: a },
          { id: shared!, account_id: null },
          { id: imported!, account_id: null },
          { id: operators!, account_id: null },
        ])
      } finally {
        upgraded.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a database from before 0014 keeps every event, and then takes two events of one code in one second', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tracker-migrate-events-'))
    try {
      const path = join(dir, 'old.db')
      // the database as the release before migration 0014 left it (0012, or 0013 when that has landed)
      const before = embeddedMigrations().filter((_, i) => Number(migrationJournal.entries[i]!.tag.slice(0, 4)) < 14)
      const old = new Database(path)
      for (const migration of before) for (const statement of migration.sql) if (statement.trim()) old.run(statement)
      old.run('CREATE TABLE "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)')
      for (const migration of before) old.run('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)', [migration.hash, migration.folderMillis])
      const insert = old.query('INSERT INTO events (device, ts, alarm_code, context, speed, latitude, longitude) VALUES (?, ?, ?, ?, ?, ?, ?)')
      insert.run(1, 1764000000, 'sos', '{"a":1}', 12, 48.85, 2.35)
      insert.run(1, 1764000000, 'device_online', '{}', null, null, null)
      insert.run(1, 1763999999, 'device_online', '{}', null, null, null) // a second one, moved a second earlier as it used to be
      insert.run(2, 1764000000, 'sos', '{}', null, null, null)
      const kept = old.query('SELECT id, device, ts, alarm_code, context, speed, latitude, longitude FROM events ORDER BY id').all()
      old.close()

      const upgraded = openDatabase(path)
      try {
        expect(migrationsApplied(upgraded.sqlite)).toBe(true)
        expect(upgraded.sqlite.query('SELECT id, device, ts, alarm_code, context, speed, latitude, longitude FROM events ORDER BY id').all()).toEqual(kept)
        // each as a device's own alarm: a re-send of it is still stored once
        expect(upgraded.sqlite.query('SELECT DISTINCT seq FROM events').all()).toEqual([{ seq: 0 }])
        const store = createEventStore(upgraded.sqlite)
        const online = encodeEvent({ timestamp: 1764000000, alarmCode: 'device_online', latitude: null, longitude: null, speed: null, satellites: null, mcc: null, mnc: null, dbm: null }, false)
        expect(store.insert(1, online)).toBe(false)
        store.append(1, online)
        expect(store.ofDevice(1, 1764000000, 1764000000).map((e) => e.alarm_code)).toEqual(['sos', 'device_online', 'device_online'])
      } finally {
        upgraded.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
  test("0017: an older database's devices keep every row, key, reference, index and trigger, and a device may then have no model", () => {
    const dir = mkdtempSync(join(tmpdir(), 'tracker-migrate-'))
    try {
      const path = join(dir, 'old.db')
      const old = new Database(path)
      old.run('PRAGMA foreign_keys = ON')
      old.run('CREATE TABLE "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)')
      for (const migration of embeddedMigrations().filter((_, i) => migrationJournal.entries[i]!.tag < '0017')) {
        for (const statement of migration.sql) if (statement.trim()) old.run(statement)
        old.run('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)', [migration.hash, migration.folderMillis])
      }
      const account = '0a000000-0000-4000-8000-000000000001'
      const model = '0d000000-0000-4000-8000-000000000001'
      const group = '0b000000-0000-4000-8000-000000000001'
      old.run("INSERT INTO accounts (id, name) VALUES (?, 'A')", [account])
      old.run("INSERT INTO models (id, name) VALUES (?, 'M')", [model])
      old.run("INSERT INTO groups (id, account_id, name) VALUES (?, ?, 'G')", [group, account])
      for (const n of [1, 2, 3])
        old.run("INSERT INTO devices (id, account_id, model_id, alias, serial, imei, properties, created_at, updated_at) VALUES (?, ?, ?, ?, ?, '', '{\"plate\":\"X\"}', 5, 6)", [
          `0f000000-0000-4000-8000-00000000000${n}`,
          account,
          model,
          `Van ${n}`,
          `S${n}`,
        ])
      // the newest device was deleted: its key must never come back
      old.run("DELETE FROM devices WHERE serial = 'S3'")
      old.run('INSERT INTO device_groups (group_id, device_key) VALUES (?, 1), (?, 2)', [group, group])
      old.run("INSERT INTO device_status (device_key, attributes, updated_at) VALUES (1, '{\"battery\":90}', 7)")
      const schemaOfDevices = (db: Database) =>
        db.query("SELECT type, name, sql FROM sqlite_schema WHERE tbl_name = 'devices' AND type IN ('index', 'trigger') ORDER BY name").all()
      const before = schemaOfDevices(old)
      const rowsBefore = old.query('SELECT * FROM devices ORDER BY key').all()
      expect(before.length).toBeGreaterThan(5)
      old.close()

      const upgraded = openDatabase(path)
      try {
        const db = upgraded.sqlite
        expect(db.query('SELECT * FROM devices ORDER BY key').all()).toEqual(rowsBefore)
        // nothing went with the old table through ON DELETE CASCADE
        expect(db.query('SELECT count(*) AS n FROM device_groups').get()).toEqual({ n: 2 })
        expect(db.query('SELECT device_key, attributes FROM device_status').all()).toEqual([{ device_key: 1, attributes: '{"battery":90}' }])
        // the same indexes and triggers (the table's own definition is the one thing that changed)
        expect(schemaOfDevices(db)).toEqual(before)
        // a device without a model, and the next key after the deleted one
        const version = () => (db.query('SELECT version FROM access_version WHERE id = 2').get() as { version: number }).version
        const counted = version()
        db.run("INSERT INTO devices (id, account_id, model_id, alias, serial, imei, created_at, updated_at) VALUES ('0f000000-0000-4000-8000-000000000009', ?, NULL, 'New', 'S9', '', 0, 0)", [account])
        expect(db.query("SELECT key, model_id FROM devices WHERE serial = 'S9'").get()).toEqual({ key: 4, model_id: null })
        // the identity trigger still counts, and the references are still enforced
        expect(version()).toBe(counted + 1)
        expect(() => db.run("INSERT INTO devices (id, account_id, model_id, alias, serial, imei, created_at, updated_at) VALUES ('0f000000-0000-4000-8000-00000000000a', ?, 'no-such-model', 'X', 'S10', '', 0, 0)", [account])).toThrow()
        db.run("DELETE FROM devices WHERE serial = 'S1'")
        expect(db.query('SELECT count(*) AS n FROM device_groups').get()).toEqual({ n: 1 })
      } finally {
        upgraded.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
