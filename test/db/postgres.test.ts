/**
 * The PostgreSQL engine's schema and opening: the twin schema matches SQLite's table for table,
 * its migrations are embedded, nodes that start together migrate once, positions are partitioned
 * by month, access changes move the counters and are announced, and what cannot be opened says
 * why in one line without the password.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { getTableConfig as sqliteTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core'
import { getTableConfig as pgTableConfig, PgTable } from 'drizzle-orm/pg-core'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import * as sqliteSchema from '../../db/schema'
import * as pgSchema from '../../db/postgres/schema'
import { DatabaseUnavailable, openPostgres, postgresMigrationsApplied } from '../../db/postgres/client'
import { migrationFiles, migrationJournal } from '../../db/postgres/migrations'
import { dropPartitionsBefore, ensurePartitions, existingPartitions, partitionOf } from '../../db/postgres/partitions'
import { freshPostgres, postgresAvailable, testDatabaseUrl } from '../support/postgres'

interface TableShape {
  columns: string[]
  notNull: string[]
  primaryKey: string[]
  indexes: string[]
  foreignKeys: string[]
}

function describeIndex(config: { name?: string; unique?: boolean; columns: unknown[]; where?: unknown }): string {
  const columns = config.columns.map((c) => ((c as { name?: string }).name ?? 'expression'))
  return `${config.name}${config.unique ? ' unique' : ''} (${columns.join(', ')})${config.where ? ' partial' : ''}`
}

/** A table's config as both dialects' getTableConfig answer it, in the parts compared. */
interface ColumnLike {
  name: string
  notNull: boolean
  primary: boolean
}
interface TableConfigLike {
  name: string
  columns: ColumnLike[]
  primaryKeys: { columns: { name: string }[] }[]
  indexes: { config: unknown }[]
  foreignKeys: { onDelete?: string; reference(): { columns: { name: string }[]; foreignTable: unknown } }[]
}

/** Every table of a schema module, as its dialect's getTableConfig describes it. */
function shapesOf(schema: Record<string, unknown>, isTable: (value: unknown) => boolean, configOf: (table: never) => TableConfigLike): Record<string, TableShape> {
  const shapes: Record<string, TableShape> = {}
  for (const table of Object.values(schema)) {
    if (!isTable(table)) continue
    const config = configOf(table as never)
    shapes[config.name] = {
      columns: config.columns.map((c) => c.name).sort(),
      notNull: config.columns.filter((c) => c.notNull).map((c) => c.name).sort(),
      primaryKey: [...config.columns.filter((c) => c.primary).map((c) => c.name), ...config.primaryKeys.flatMap((pk) => pk.columns.map((c) => c.name))].sort(),
      indexes: config.indexes.map((i) => describeIndex(i.config as never)).sort(),
      foreignKeys: config.foreignKeys
        .map((fk) => {
          const ref = fk.reference()
          return `${ref.columns.map((c) => c.name).join(',')} -> ${configOf(ref.foreignTable as never).name} on delete ${fk.onDelete ?? 'no action'}`
        })
        .sort(),
    }
  }
  return shapes
}

const sqliteShapes = () => shapesOf(sqliteSchema, (t) => t instanceof SQLiteTable, (t) => sqliteTableConfig(t) as unknown as TableConfigLike)
const pgShapes = () => shapesOf(pgSchema, (t) => t instanceof PgTable, (t) => pgTableConfig(t) as unknown as TableConfigLike)

describe('the PostgreSQL schema twin', () => {
  test('has the same tables, columns, keys, indexes and references as the SQLite schema', () => {
    const sqlite = sqliteShapes()
    const pg = pgShapes()
    expect(Object.keys(sqlite).length).toBeGreaterThan(20)
    expect(Object.keys(pg).sort()).toEqual(Object.keys(sqlite).sort())
    for (const name of Object.keys(sqlite)) expect({ table: name, ...pg[name] }).toEqual({ table: name, ...sqlite[name]! })
  })

  test('every SQL file in db/postgres/migrations is in the journal and embedded', () => {
    const files = readdirSync(join(import.meta.dir, '../../db/postgres/migrations')).filter((f) => f.endsWith('.sql')).map((f) => f.replace(/\.sql$/, '')).sort()
    expect(migrationJournal.entries.map((e) => e.tag)).toEqual(files)
    expect(Object.keys(migrationFiles).sort()).toEqual(files)
  })

  test('a month partition covers its month exactly, in UTC', () => {
    const november = partitionOf(Date.UTC(2026, 10, 15, 12) / 1000)
    expect(november).toEqual({ name: 'positions_y2026m11', fromSeconds: Date.UTC(2026, 10, 1) / 1000, toSeconds: Date.UTC(2026, 11, 1) / 1000 })
    expect(partitionOf(november.toSeconds - 1).name).toBe('positions_y2026m11')
    expect(partitionOf(november.toSeconds).name).toBe('positions_y2026m12')
    expect(partitionOf(Date.UTC(2026, 11, 31, 23, 59, 59) / 1000).toSeconds).toBe(Date.UTC(2027, 0, 1) / 1000)
  })
})

describe.skipIf(!postgresAvailable('opening PostgreSQL (test/db/postgres.test.ts)'))('opening PostgreSQL', () => {
  const dropLater: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const drop of dropLater) await drop()
  })

  async function emptyDatabase(): Promise<string> {
    const name = `tracker_empty_${process.pid}_${Date.now().toString(36)}`
    const admin = postgres(testDatabaseUrl!, { max: 1, onnotice: () => {} })
    await admin.unsafe(`CREATE DATABASE "${name}"`)
    await admin.end()
    dropLater.push(async () => {
      const admin = postgres(testDatabaseUrl!, { max: 1, onnotice: () => {} })
      await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
      await admin.end()
    })
    const url = new URL(testDatabaseUrl!)
    url.pathname = `/${name}`
    return url.toString()
  }

  test('three nodes opening an empty database at once migrate it once', async () => {
    const url = await emptyDatabase()
    const handles = await Promise.all([openPostgres(url), openPostgres(url), openPostgres(url)])
    try {
      const [first] = handles
      const applied = await first!.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`
      expect(applied[0]!.n).toBe(migrationJournal.entries.length)
      expect(await postgresMigrationsApplied(first!.sql)).toBe(true)
      const partitioned = await first!.sql`SELECT 1 FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid WHERE c.relname = 'positions'`
      expect(partitioned.length).toBe(1)
    } finally {
      for (const handle of handles) await handle.close()
    }
  })

  test('positions land in their month partition, created on demand; retention drops whole months', async () => {
    const fresh = await freshPostgres()
    dropLater.push(fresh.drop)
    const handle = await openPostgres(fresh.url)
    try {
      const [device] = await handle.sql<{ key: number }[]>`
        WITH a AS (INSERT INTO accounts (id, name) VALUES ('0a000000-0000-4000-8000-000000000001', 'A') RETURNING id)
        INSERT INTO devices (id, account_id, alias, serial, imei) SELECT '0f000000-0000-4000-8000-000000000001', id, 'Van', 'S1', '359710049095001' FROM a RETURNING key`
      const october = Date.UTC(2026, 9, 20) / 1000
      const november = Date.UTC(2026, 10, 20) / 1000
      await expect(handle.sql`INSERT INTO positions (device, ts, lat, lon) VALUES (${device!.key}, ${october}, 1, 2)`).rejects.toThrow(/no partition/)
      await ensurePartitions(handle.sql, [october, november, november + 60])
      await ensurePartitions(handle.sql, [november]) // again: nothing to do, no error
      await handle.sql`INSERT INTO positions (device, ts, lat, lon) VALUES (${device!.key}, ${october}, 1, 2), (${device!.key}, ${november}, 3, 4)`
      expect((await existingPartitions(handle.sql)).map((p) => p.name)).toEqual(['positions_y2026m10', 'positions_y2026m11'])
      const [inOctober] = await handle.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM positions_y2026m10`
      expect(inOctober!.n).toBe(1)
      // a cutoff inside November drops October only
      expect(await dropPartitionsBefore(handle.sql, november)).toEqual(['positions_y2026m10'])
      const rows = await handle.sql<{ ts: number }[]>`SELECT ts FROM positions ORDER BY ts`
      expect(rows.map((r) => r.ts)).toEqual([november])
    } finally {
      await handle.close()
    }
  })

  test('a change of access moves its counter and is announced on tracker_versions', async () => {
    const fresh = await freshPostgres()
    dropLater.push(fresh.drop)
    const handle = await openPostgres(fresh.url)
    const heard: string[] = []
    const listening = await handle.sql.listen('tracker_versions', (payload) => heard.push(payload))
    try {
      const version = async (id: number) => (await handle.sql<{ version: number }[]>`SELECT version FROM access_version WHERE id = ${id}`)[0]!.version
      const before = await version(1)
      await handle.sql`INSERT INTO accounts (id, name) VALUES ('a', 'A')`
      await handle.sql`INSERT INTO groups (id, account_id, name) VALUES ('g', 'a', 'G')`
      await handle.sql`INSERT INTO users (id, account_id, name) VALUES ('u', 'a', 'u')`
      await handle.sql`INSERT INTO user_groups (user_id, group_id) VALUES ('u', 'g')`
      expect(await version(1)).toBe(before + 1)
      const credentials = await version(4)
      await handle.sql`UPDATE users SET role = 'admin' WHERE id = 'u'`
      await handle.sql`UPDATE users SET name = 'v' WHERE id = 'u'` // not a credential: no move
      expect(await version(4)).toBe(credentials + 1)
      for (let i = 0; i < 50 && heard.length < 2; i++) await Bun.sleep(20)
      expect(heard).toEqual(['1', '1,4'])
    } finally {
      await listening.unlisten()
      await handle.close()
    }
  })

  test('what cannot be opened is one line naming the host and the reason, never the password', async () => {
    const url = new URL(testDatabaseUrl!)
    const wrong = new URL(url)
    wrong.password = 'not-the-Password-42'
    const failures = [
      [wrong.toString(), /authentication failed/],
      [Object.assign(new URL(url), { port: '1' }).toString(), /connection refused/],
      [Object.assign(new URL(url), { pathname: '/no_such_database_here' }).toString(), /database does not exist/],
    ] as const
    for (const [target, reason] of failures) {
      const error = await openPostgres(target, { connectTimeoutSeconds: 3 }).then(
        () => null,
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(DatabaseUnavailable)
      const message = (error as Error).message
      expect(message).toMatch(reason)
      expect(message).toContain(new URL(target).hostname)
      expect(message).not.toContain('not-the-Password-42')
      expect(message.includes('\n')).toBe(false)
    }
  })
})
