/**
 * The operator's administration commands, run as a child process against a real database file:
 * what they print, their exit codes, what they write, and the audit trail with actor `cli`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { baseDataset } from '../support/world'

const root = join(import.meta.dir, '../..')
let dir: string
let databasePath: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tracker-cli-admin-'))
  databasePath = join(dir, 'tracker.db')
  const file = join(dir, 'fleet.json')
  writeFileSync(file, JSON.stringify(baseDataset()))
  expect(cli(['import', file]).code).toBe(0)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

export function cli(args: string[], stdin?: string) {
  const result = Bun.spawnSync([process.execPath, join(root, 'src/main.ts'), ...args], {
    cwd: dir,
    env: { ...process.env, LOG_LEVEL: 'silent', DATABASE_PATH: databasePath },
    stdin: stdin === undefined ? 'ignore' : Buffer.from(stdin),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() }
}

function query<T>(sql: string, ...params: string[]): T[] {
  const sqlite = new Database(databasePath, { readonly: true })
  try {
    return sqlite.query(sql).all(...params) as T[]
  } finally {
    sqlite.close()
  }
}

describe('account', () => {
  test('account create makes the account, prints its id, and the audit log says cli did it', () => {
    const run = cli(['account', 'create', '--name', 'Initech'])
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const id = /created account Initech \(([0-9a-f-]{36})\)/.exec(run.stdout)?.[1]
    expect(id).toBeDefined()
    expect(query('SELECT name FROM accounts WHERE id = ?', id!)).toEqual([{ name: 'Initech' }])
    expect(query('SELECT actor, action, object_type, object_id FROM audit_log WHERE account_id = ?', id!)).toEqual([
      { actor: 'cli', action: 'create', object_type: 'account', object_id: id },
    ])
  })

  test.each([
    [['account'], 'missing subcommand'],
    [['account', 'delete'], 'unknown subcommand delete'],
    [['account', 'create'], '--name is required'],
    [['account', 'create', '--name'], "Option '--name <value>' argument missing"],
    [['account', 'create', '--nam', 'x'], "Unknown option '--nam'"],
    [['account', 'create', '--name', '   '], '/name'],
  ])('%p exits 2 naming what is wrong, and writes nothing', (args, message) => {
    const before = query<{ n: number }>('SELECT count(*) AS n FROM accounts')[0]!.n
    const run = cli(args)
    expect(run.code).toBe(2)
    expect(run.stderr).toContain(message)
    expect(query<{ n: number }>('SELECT count(*) AS n FROM accounts')[0]!.n).toBe(before)
  })
})
