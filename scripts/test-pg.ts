/**
 * `npm run test:pg`: the suite's PostgreSQL run. Needs TEST_DATABASE_URL (a role that may create
 * databases: every test makes its own); runs the tests with TRACKER_TEST_ENGINE=postgres, under
 * which the test world (test/support/world.ts) and the store tests open PostgreSQL.
 *
 * Arguments are passed to `bun test` (a file or a directory to run only that).
 */
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')

if (!process.env.TEST_DATABASE_URL) {
  console.error('npm run test:pg needs TEST_DATABASE_URL, e.g. postgres://tracker:tracker@127.0.0.1:5432/tracker (a role that may create databases)')
  process.exit(2)
}

/**
 * The files whose subject is SQLite itself, with why: everything else runs on PostgreSQL. (Within
 * the files that run, a few cases of SQLite's own — its write lock, its migration history — stay
 * on a SQLite world on either run, each saying so.) A test that opens no database at all (the
 * decoders, track/) runs again here, the same: cheaper than keeping a second list.
 */
const SQLITE_ONLY: Record<string, string> = {
  'test/db/migrations.test.ts': "SQLite's migration history and file; PostgreSQL's are tested in test/db/postgres.test.ts",
  'test/ops/backup.test.ts': "`tracker backup` copies the SQLite file; on PostgreSQL it exits 2 naming pg_dump (test/cli/postgres.test.ts)",
  'test/ops/locked.test.ts': "another process holding SQLite's write lock; PostgreSQL locks rows, not the database",
  'test/history/memory.test.ts':
    'four concurrent 7-day routes at 1 Hz wait their turns for the history memory budget (5 s at most): on PostgreSQL a route reads in 0.9 s against 0.4 s, so the fourth waits about 2.6 s, too close to the bound for an unattended run on a shared 2-core machine. Run by hand (`npm run test:pg test/history/memory.test.ts`): peak memory grew 139-184 MiB against the 300 MiB limit',
}

/** every test file of the suite but those above */
function postgresSuite(): string[] {
  const files = [...new Bun.Glob('test/**/*.test.ts').scanSync({ cwd: ROOT })].sort()
  for (const file of Object.keys(SQLITE_ONLY)) if (!files.includes(file)) throw new Error(`${file} is listed as SQLite-only but is not a test file`)
  return files.filter((file) => !(file in SQLITE_ONLY)).map((file) => `./${file}`)
}

const args = process.argv.slice(2)
const run = spawnSync(process.execPath, ['test', ...(args.length > 0 ? args : postgresSuite())], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, TRACKER_TEST_ENGINE: 'postgres' },
})
process.exit(run.status ?? 1)
