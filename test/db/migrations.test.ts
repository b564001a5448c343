import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { embeddedMigrations, migrationsApplied, openDatabase } from '../../db/client'
import { migrationFiles, migrationJournal } from '../../db/migrations'

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
})
