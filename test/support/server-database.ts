/**
 * The database a server process under test runs on, on the run's engine (TRACKER_TEST_ENGINE:
 * `npm test` SQLite, `npm run test:pg` PostgreSQL): made and filled before the server starts,
 * handed to it by its environment (DATABASE_PATH or DATABASE_URL), read by the test afterwards.
 *
 * The dataset goes in through the real dataset import on either engine, as `openWorld` does.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Database } from 'bun:sqlite'
import { type SQL, sql } from 'drizzle-orm'
import { drizzle as drizzleSqlite } from 'drizzle-orm/bun-sqlite'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { openDatabase } from '../../db/client'
import { openPostgres } from '../../db/postgres/client'
import { importDataset, type ImportOptions, type ImportSummary } from '../../src/dataset/service'
import { createPostgresStores } from '../../src/store/postgres'
import { importNow } from './import'
import { freshPostgres } from './postgres'
import { rowCounter, testEngine } from './world'

export interface ServerDatabase {
  engine: 'sqlite' | 'postgres'
  /** the variables that point a server or a command at it: DATABASE_PATH, or DATABASE_URL (and NODE_NAME, which its /metrics samples name) */
  env: Record<string, string>
  /**
   * A /metrics sample's name and labels as a server on this database writes them: on PostgreSQL
   * every sample carries `node="…"` first (README: NODE_NAME), on SQLite none. `labels` as they
   * are written, e.g. `outcome="delivered"`.
   */
  sample(name: string, labels?: string): string
  /** the SQLite file (null on PostgreSQL): for the few tests of SQLite itself */
  sqlitePath: string | null
  /** a scratch directory of the test's own (on both engines), removed by close */
  dir: string
  /** imports more through the real dataset import */
  importMore(document: unknown, options?: ImportOptions): Promise<ImportSummary>
  /**
   * Runs a statement in SQL both engines read alike (a Drizzle `sql` template) on a connection of
   * its own, closed after it, and answers its rows: what a test sets up or checks that no API
   * shows. While a server runs, a write here is another process's (the server hears of it as it
   * hears of the command line's).
   */
  execute<Row = Record<string, unknown>>(query: SQL): Promise<Row[]>
  /** how many rows a table holds (optionally: a WHERE condition as a `sql` template) */
  count(table: string, where?: SQL): Promise<number>
  /** removes the file or drops the database (the server must have stopped) */
  close(): Promise<void>
}

/** the NODE_NAME of a server on a PostgreSQL serverDatabase */
const SERVER_NODE_NAME = 'test-node'

/** A fresh database on the run's engine holding `dataset` (imported as `tracker import` would). */
export async function serverDatabase(name: string, dataset?: unknown): Promise<ServerDatabase> {
  const dir = mkdtempSync(join(tmpdir(), `${name}-`))
  if (testEngine === 'sqlite') {
    const path = join(dir, 'tracker.db')
    const setup = openDatabase(path)
    try {
      if (dataset !== undefined) importNow(setup, dataset)
    } finally {
      setup.close()
    }
    const execute = async <Row>(query: SQL): Promise<Row[]> => {
      const connection = new Database(path)
      try {
        connection.exec('PRAGMA busy_timeout = 5000')
        return drizzleSqlite(connection).all(query) as Row[]
      } finally {
        connection.close()
      }
    }
    return {
      engine: 'sqlite',
      env: { DATABASE_PATH: path },
      sample: (name, labels = '') => (labels ? `${name}{${labels}}` : name),
      sqlitePath: path,
      dir,
      async importMore(document, options) {
        const other = openDatabase(path)
        try {
          return importNow(other, document, options)
        } finally {
          other.close()
        }
      },
      execute,
      count: rowCounter(execute),
      async close() {
        rmSync(dir, { recursive: true, force: true })
      },
    }
  }
  const fresh = await freshPostgres()
  const importInto = async (document: unknown, options?: ImportOptions) => {
    const handle = await openPostgres(fresh.url, { poolSize: 1, migrate: false })
    try {
      return await importDataset(createPostgresStores(handle).dataset, document, options)
    } finally {
      await handle.close()
    }
  }
  try {
    if (dataset !== undefined) await importInto(dataset)
  } catch (error) {
    await fresh.drop()
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  const execute = async <Row>(query: SQL): Promise<Row[]> => {
    const connection = postgres(fresh.url, { max: 1, onnotice: () => {} })
    try {
      return [...(await drizzlePostgres(connection).execute(query))] as Row[]
    } finally {
      await connection.end({ timeout: 5 })
    }
  }
  return {
    engine: 'postgres',
    env: { DATABASE_URL: fresh.url, NODE_NAME: SERVER_NODE_NAME },
    sample: (name, labels = '') => `${name}{node="${SERVER_NODE_NAME}"${labels ? `,${labels}` : ''}}`,
    sqlitePath: null,
    dir,
    importMore: importInto,
    execute,
    count: rowCounter(execute),
    async close() {
      await fresh.drop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Every stored position as `identifier@second` (the device's IMEI and its serial, each): what a
 * durability test checks the fixes it saw acknowledged against, in one read.
 */
export async function storedFixes(database: Pick<ServerDatabase, 'execute'>): Promise<Set<string>> {
  const rows = await database.execute<{ imei: string | null; serial: string | null; ts: number | string }>(
    sql`SELECT devices.imei AS imei, devices.serial AS serial, positions.ts AS ts FROM positions JOIN devices ON devices.key = positions.device`,
  )
  return new Set(rows.flatMap((row) => [row.imei, row.serial].filter((id) => id !== null && id !== '').map((id) => `${id}@${Number(row.ts)}`)))
}

