/**
 * Seeding a store test's database on either engine with plain inserts of that engine's schema
 * (the tables have the same names and columns in both), and running a statement both speak.
 */
import type { SQL } from 'drizzle-orm'
import * as pg from '../../../db/postgres/schema'
import * as sqlite from '../../../db/schema'
import type { Opened } from './support'

type Tables = 'accounts' | 'users' | 'groups' | 'userGroups' | 'devices' | 'deviceGroups' | 'shareLinks' | 'shareLinkDevices' | 'sentCommands' | 'events' | 'positions'

/** Inserts the rows (property names of the schema, values as the SQLite schema takes them: booleans as booleans). */
export async function insertRows(opened: Opened, table: Tables, rows: Record<string, unknown>[]): Promise<void> {
  if (rows.length === 0) return
  // the two schemas' tables have the same properties; their types differ only in the builders
  if (opened.engine === 'sqlite') opened.handle.db.insert(sqlite[table] as typeof sqlite.accounts).values(rows as never).run()
  else await opened.handle.db.insert(pg[table] as typeof pg.accounts).values(rows as never)
}

/** Runs a statement both engines speak, outside any store (a change another process makes). */
export async function runStatement(opened: Opened, statement: SQL): Promise<void> {
  if (opened.engine === 'sqlite') opened.handle.db.run(statement)
  else await opened.handle.db.execute(statement)
}

/** Rows of a query both engines speak. */
export async function selectRows<T>(opened: Opened, query: SQL): Promise<T[]> {
  if (opened.engine === 'sqlite') return opened.handle.db.all<T>(query)
  return (await opened.handle.db.execute(query)) as unknown as T[]
}

/** Waits (at most `ms`) until `check` holds: what another connection's change takes to reach a cache. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 3000): Promise<boolean> {
  const until = Date.now() + ms
  for (;;) {
    if (await check()) return true
    if (Date.now() >= until) return false
    await Bun.sleep(10)
  }
}
