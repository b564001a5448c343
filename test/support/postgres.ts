/**
 * PostgreSQL for tests. `TEST_DATABASE_URL` names a server and a role that may create databases
 * (CI gives one: .ci/run installs PostgreSQL from Debian); without it, the tests that need
 * PostgreSQL skip, saying so in one line.
 *
 * Each `freshPostgres()` is a database of its own, copied from a template migrated once per run of
 * the migrations (CREATE DATABASE … TEMPLATE: a file copy, far quicker than migrating again).
 */
import postgres from 'postgres'
import { embeddedPostgresMigrations, migrateLocked } from '../../db/postgres/client'

export const testDatabaseUrl: string | null = process.env.TEST_DATABASE_URL || null

const announced = new Set<string>()

/** Whether PostgreSQL tests can run; when not, one line says which tests skip and why. */
export function postgresAvailable(what: string): boolean {
  if (testDatabaseUrl) return true
  if (!announced.has(what)) {
    announced.add(what)
    console.log(`skip: ${what} needs PostgreSQL: set TEST_DATABASE_URL (e.g. postgres://tracker:tracker@127.0.0.1:5432/tracker)`)
  }
  return false
}

function urlOf(database: string): string {
  const url = new URL(testDatabaseUrl!)
  url.pathname = `/${database}`
  return url.toString()
}

let templateReady: Promise<string> | null = null
let counter = 0

function templateName(): string {
  const hash = new Bun.CryptoHasher('sha256')
  for (const migration of embeddedPostgresMigrations()) hash.update(migration.hash)
  return `tracker_tpl_${hash.digest('hex').slice(0, 12)}`
}

async function ensureTemplate(): Promise<string> {
  const name = templateName()
  const admin = postgres(testDatabaseUrl!, { max: 1, onnotice: () => {} })
  try {
    await admin`SELECT pg_advisory_lock(7472)`
    const [found] = await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`
    if (!found) {
      await admin.unsafe(`CREATE DATABASE "${name}"`)
      await migrateLocked(urlOf(name))
      await admin.unsafe(`ALTER DATABASE "${name}" WITH IS_TEMPLATE true`)
    }
    await admin`SELECT pg_advisory_unlock(7472)`
  } finally {
    await admin.end({ timeout: 5 })
  }
  return name
}

export interface FreshPostgres {
  url: string
  name: string
  /** drops the database (its connections must be closed first; any left are ended) */
  drop(): Promise<void>
}

/** A new, migrated, empty database of its own. */
export async function freshPostgres(): Promise<FreshPostgres> {
  if (!testDatabaseUrl) throw new Error('freshPostgres() needs TEST_DATABASE_URL')
  templateReady ??= ensureTemplate()
  const template = await templateReady
  const name = `tracker_test_${process.pid}_${Date.now().toString(36)}_${counter++}`
  const admin = postgres(testDatabaseUrl, { max: 1, onnotice: () => {} })
  try {
    // two processes copying the template at once: the second is told it is in use; try again
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.unsafe(`CREATE DATABASE "${name}" TEMPLATE "${template}"`)
        break
      } catch (error) {
        if ((error as { code?: string }).code !== '55006' || attempt >= 50) throw error
        await Bun.sleep(20 + Math.random() * 80)
      }
    }
  } finally {
    await admin.end({ timeout: 5 })
  }
  return {
    url: urlOf(name),
    name,
    async drop() {
      const admin = postgres(testDatabaseUrl!, { max: 1, onnotice: () => {} })
      try {
        await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
      } finally {
        await admin.end({ timeout: 5 })
      }
    },
  }
}
