/**
 * Opening PostgreSQL: a pool of at most DATABASE_POOL_SIZE connections (postgres.js, through
 * drizzle-orm/postgres-js), a check that the server is 15 or newer, and the migrations applied
 * under an advisory lock, so that nodes starting together migrate once: the first takes the lock,
 * the others wait for it and then find nothing to do.
 *
 * What cannot be opened throws `DatabaseUnavailable`, whose message is one line naming the host
 * and the reason, never the password: the command line prints it and exits 1.
 */
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import type { MigrationMeta } from 'drizzle-orm/migrator'
import postgres, { type Sql } from 'postgres'
import * as schema from './schema'
import { migrationFiles, migrationJournal } from './migrations'
import { type AccessVersions, createAccessVersions } from './versions'

export type PgDb = PostgresJsDatabase<typeof schema>
/** a transaction of PgDb (what `db.transaction(async (tx) => …)` hands its callback) */
export type PgTx = Parameters<Parameters<PgDb['transaction']>[0]>[0]
/** a database or one of its transactions: where an in-transaction writer runs */
export type PgConnectable = PgDb | PgTx

export interface PostgresHandle {
  engine: 'postgres'
  /** the pool (postgres.js): LISTEN, advisory locks, COPY and the few raw statements of src/store/postgres */
  sql: Sql
  db: PgDb
  /** `host:port/database`, for messages (never the password) */
  where: string
  /** the access counters as this node knows them (LISTEN tracker_versions; started on first use) */
  versions: AccessVersions
  close(): Promise<void>
}

/** The oldest PostgreSQL the schema is written for (declarative partitioning, MERGE-free upserts, `jsonb`). */
export const MIN_SERVER_VERSION_NUM = 150000

/** The advisory lock the migrations take: nodes that start together migrate once. */
const MIGRATION_LOCK = 0x7472_6b01 // "trk" 01

export class DatabaseUnavailable extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'DatabaseUnavailable'
  }
}

export interface PostgresOptions {
  /** DATABASE_POOL_SIZE: at most this many connections (default 10) */
  poolSize?: number
  migrate?: boolean
  /** run after the migrations, as SQLite's opening does (the built-in models) */
  afterMigrate?: (db: PgDb) => Promise<void>
  /** seconds to wait for a connection before giving up (default 10) */
  connectTimeoutSeconds?: number
  /** told of the server's notices (default: ignored; PostgreSQL sends one per IF NOT EXISTS that finds the thing) */
  onNotice?: (message: string) => void
}

/** Whether a URL names PostgreSQL (postgres:// or postgresql://). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url)
}

/** host:port/database of a URL, for messages: never its user or password. */
export function describePostgresUrl(url: string): string {
  try {
    const parsed = new URL(url)
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || '(default database)'
    return `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}/${database}`
  } catch {
    return '(an unreadable DATABASE_URL)'
  }
}

export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<PostgresHandle> {
  const where = describePostgresUrl(url)
  let sql: Sql
  try {
    sql = connect(url, options.poolSize ?? 10, options)
  } catch (error) {
    throw new DatabaseUnavailable(`cannot use DATABASE_URL (${where}): ${reasonOf(error, url)}`)
  }
  const versions = createAccessVersions(sql)
  const close = async () => {
    await versions.close()
    await sql.end({ timeout: 5 })
  }
  try {
    const [row] = await sql<{ server_version_num: string }[]>`SHOW server_version_num`
    const version = Number(row?.server_version_num)
    if (!(version >= MIN_SERVER_VERSION_NUM)) {
      throw new DatabaseUnavailable(`PostgreSQL at ${where} is version ${formatVersion(version)}; this server needs 15 or newer`)
    }
    const db = drizzle(sql, { schema })
    if (options.migrate !== false) {
      await migrateLocked(url, options)
      await options.afterMigrate?.(db)
    }
    return { engine: 'postgres', sql, db, where, versions, close }
  } catch (error) {
    await close().catch(() => {})
    if (error instanceof DatabaseUnavailable) throw error
    throw new DatabaseUnavailable(`cannot reach PostgreSQL at ${where}: ${reasonOf(error, url)}`)
  }
}

/** The migrations as drizzle's migrator expects them, built from the embedded texts. */
export function embeddedPostgresMigrations(): MigrationMeta[] {
  return migrationJournal.entries.map((entry) => {
    const text = migrationFiles[entry.tag]
    if (text === undefined) throw new Error(`migration ${entry.tag} is in the journal but not in db/postgres/migrations/index.ts`)
    return {
      sql: text.split('--> statement-breakpoint'),
      bps: entry.breakpoints,
      folderMillis: entry.when,
      hash: new Bun.CryptoHasher('sha256').update(text).digest('hex'),
    }
  })
}

/**
 * Applies every migration newer than the newest applied one, holding the migration lock for the
 * whole of it on a connection of its own (an advisory lock belongs to its session).
 */
export async function migrateLocked(url: string, options: Pick<PostgresOptions, 'connectTimeoutSeconds' | 'onNotice'> = {}): Promise<void> {
  const sql = connect(url, 1, options)
  try {
    await sql`SELECT pg_advisory_lock(${MIGRATION_LOCK})`
    const db = drizzle(sql, { schema })
    const internals = db as unknown as { dialect: { migrate(m: MigrationMeta[], s: unknown, c: object): Promise<void> }; session: unknown }
    await internals.dialect.migrate(embeddedPostgresMigrations(), internals.session, {})
    await sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`
  } finally {
    // ending the session releases the lock too, when a migration failed
    await sql.end({ timeout: 5 })
  }
}

function connect(url: string, max: number, options: Pick<PostgresOptions, 'connectTimeoutSeconds' | 'onNotice'>): Sql {
  return postgres(url, {
    max,
    connect_timeout: options.connectTimeoutSeconds ?? 10,
    onnotice: (notice) => options.onNotice?.(String(notice.message ?? '')),
    // the schema's bigints are Unix ms and s, counts and keys: every value fits in a double, so
    // raw statements get numbers as Drizzle's bigint columns (mode number) do
    types: { bigint: { to: 20, from: [20], parse: (value: string) => Number(value), serialize: (value: number) => String(value) } },
    connection: { application_name: 'tracker' },
  })
}

/** Whether every embedded migration has been applied (for /ready). */
export async function postgresMigrationsApplied(sql: Sql): Promise<boolean> {
  try {
    const [row] = await sql<{ newest: string | null }[]>`SELECT max(created_at)::text AS newest FROM drizzle.__drizzle_migrations`
    const newest = Math.max(...migrationJournal.entries.map((e) => e.when))
    return row?.newest != null && Number(row.newest) >= newest
  } catch {
    return false
  }
}

function formatVersion(versionNum: number): string {
  if (!Number.isFinite(versionNum)) return 'unknown'
  return versionNum >= 100000 ? `${Math.floor(versionNum / 10000)}.${versionNum % 10000}` : `${Math.floor(versionNum / 10000)}.${Math.floor(versionNum / 100) % 100}`
}

/** One line: the driver's reason, with the URL's password taken out wherever it appears. */
function reasonOf(error: unknown, url: string): string {
  const code = (error as { code?: string }).code
  let message = error instanceof Error ? error.message : String(error)
  try {
    const password = decodeURIComponent(new URL(url).password)
    if (password) message = message.split(password).join('***')
  } catch {
    /* an unreadable URL holds no password we could name */
  }
  message = message.split('\n')[0]!.trim()
  if (code === 'ECONNREFUSED') return 'connection refused'
  if (code === 'CONNECT_TIMEOUT') return 'no answer (connect timeout)'
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found'
  if (code === '28P01' || code === '28000') return `authentication failed (${message})`
  if (code === '3D000') return `database does not exist (${message})`
  return code ? `${message} (${code})` : message
}
