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
})
