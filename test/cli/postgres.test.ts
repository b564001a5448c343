/**
 * The command line with DATABASE_URL: `backup` names pg_dump instead (exit 2); a DATABASE_URL that
 * is not PostgreSQL stops at start naming the variable; an unreachable one is one line and exit 1;
 * and on a real PostgreSQL (TEST_DATABASE_URL) every administration command works as on SQLite.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCli } from '../support/process'
import { freshPostgres, postgresAvailable, type FreshPostgres } from '../support/postgres'

const dir = mkdtempSync(join(tmpdir(), 'tracker-cli-pg-'))
const dropLater: FreshPostgres[] = []
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  for (const fresh of dropLater) await fresh.drop()
})
const cli = (args: string[], env: Record<string, string>) => runCli(args, { cwd: dir, env })

describe('the command line and DATABASE_URL', () => {
  test('backup with DATABASE_URL exits 2 naming pg_dump, and opens nothing', () => {
    const run = cli(['backup', join(dir, 'copy.db')], { DATABASE_URL: 'postgres://tracker:secret@127.0.0.1:1/tracker' })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('pg_dump')
    expect(run.stderr).not.toContain('secret')
  })

  test('a DATABASE_URL that is not PostgreSQL stops at start naming the variable (exit 2)', () => {
    const run = cli(['migrate'], { DATABASE_URL: 'mysql://root@127.0.0.1/tracker' })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('DATABASE_URL')
  })

  test('an unreachable PostgreSQL: exit 1, one line naming the host and the reason, never the password', () => {
    const run = cli(['migrate'], { DATABASE_URL: 'postgres://tracker:Very-Secret-9@127.0.0.1:1/tracker' })
    expect(run.code).toBe(1)
    expect(run.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^error: cannot reach PostgreSQL at 127\.0\.0\.1:1\/tracker: connection refused$/)])
    expect(run.stderr).not.toContain('Very-Secret-9')
  })
})

describe.skipIf(!postgresAvailable('the command line on PostgreSQL (test/cli/postgres.test.ts)'))('the command line on PostgreSQL', () => {
  // seven commands in child processes, each opening a pool: seconds on a busy machine
  test('migrate, init, device add and list, key create, model list and import work against PostgreSQL', async () => {
    const fresh = await freshPostgres()
    dropLater.push(fresh)
    const env = { DATABASE_URL: fresh.url }
    const migrate = cli(['migrate'], env)
    expect(migrate.code).toBe(0)
    expect(migrate.stdout).toContain(`database ${new URL(fresh.url).hostname}:${new URL(fresh.url).port}/${fresh.name} is migrated`)
    expect(runCli(['init', '--account', 'Acme', '--admin', 'alice'], { cwd: dir, env, stdin: 'correct-horse-battery\n' }).code).toBe(0)
    expect(cli(['device', 'add', '--account', 'Acme', '--serial', 'phone-1', '--alias', 'Phone 1'], env).code).toBe(0)
    const list = cli(['device', 'list'], env)
    expect(list.stdout).toMatch(/\tPhone 1\t-\tphone-1\tnew/)
    const key = cli(['key', 'create', '--user', 'alice'], env)
    expect(key.code).toBe(0)
    expect(key.stdout.trim()).toMatch(/^trk_/)
    // the built-in catalogue is there, as after SQLite's migrate
    expect(cli(['model', 'list'], env).stdout).toContain('built-in')
    // the README's example fleet, into a database of its own (its alice is another alice): once, then refused
    const other = await freshPostgres()
    dropLater.push(other)
    const file = join(import.meta.dir, '../../examples/fleet.json')
    const imported = cli(['import', file], { DATABASE_URL: other.url })
    expect(imported.stderr).toBe('')
    expect(imported.code).toBe(0)
    expect(imported.stdout).toMatch(/^imported .*devices/)
    expect(cli(['import', file], { DATABASE_URL: other.url }).code).toBe(2)
  }, 30_000)
})
