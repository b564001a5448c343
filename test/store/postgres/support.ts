/**
 * Store tests on both engines: `engines()` lists SQLite always and PostgreSQL when
 * TEST_DATABASE_URL is set (else one line says it is skipped). Each `open()` is an empty,
 * migrated database of its own; `close()` closes and removes it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, type DatabaseHandle } from '../../../db/client'
import { openPostgres, type PostgresHandle } from '../../../db/postgres/client'
import { freshPostgres, postgresAvailable } from '../../support/postgres'

export interface OpenedSqlite {
  engine: 'sqlite'
  handle: DatabaseHandle
  close(): Promise<void>
}

export interface OpenedPostgres {
  engine: 'postgres'
  handle: PostgresHandle
  /** the database's URL: another "node" may open it */
  url: string
  close(): Promise<void>
}

export type Opened = OpenedSqlite | OpenedPostgres

export async function openSqliteForTest(): Promise<OpenedSqlite> {
  const dir = mkdtempSync(join(tmpdir(), 'tracker-store-'))
  const handle = openDatabase(join(dir, 'tracker.db'))
  return {
    engine: 'sqlite',
    handle,
    async close() {
      handle.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export async function openPostgresForTest(): Promise<OpenedPostgres> {
  const fresh = await freshPostgres()
  const handle = await openPostgres(fresh.url, { poolSize: 4 })
  return {
    engine: 'postgres',
    handle,
    url: fresh.url,
    async close() {
      await handle.close()
      await fresh.drop()
    },
  }
}

/** The engines a store test runs on here: `what` names the test in the skip line. */
export function engines(what: string): { name: 'sqlite' | 'postgres'; open(): Promise<Opened> }[] {
  const list: { name: 'sqlite' | 'postgres'; open(): Promise<Opened> }[] = [{ name: 'sqlite', open: openSqliteForTest }]
  if (postgresAvailable(what)) list.push({ name: 'postgres', open: openPostgresForTest })
  return list
}
