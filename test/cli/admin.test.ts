/**
 * The operator's administration commands, run as a child process against a real database on the
 * run's engine (a SQLite file, or PostgreSQL with TRACKER_TEST_ENGINE=postgres):
 * what they print, their exit codes, what they write, and the audit trail with actor `cli`.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type SQL, sql } from 'drizzle-orm'
import { baseDataset } from '../support/world'
import { runCli } from '../support/process'
import { type ServerDatabase, serverDatabase } from '../support/server-database'

// each test runs the command line in child processes, each opening the database (on PostgreSQL a pool): seconds on a busy machine
setDefaultTimeout(30_000)

let database: ServerDatabase
let dir: string
/** the init tests' databases, each its own */
const initDatabases: ServerDatabase[] = []
beforeAll(async () => {
  database = await serverDatabase('tracker-cli-admin')
  dir = database.dir
  const file = join(dir, 'fleet.json')
  writeFileSync(file, JSON.stringify(baseDataset()))
  expect(cli(['import', file]).code).toBe(0)
})
afterAll(async () => {
  await database.close()
  for (const other of initDatabases) await other.close()
})

export function cli(args: string[], stdin?: string) {
  return runCli(args, { cwd: dir, env: database.env, stdin })
}

const query = <T = Record<string, unknown>>(statement: SQL): Promise<T[]> => database.execute<T>(statement)

describe('account', () => {
  test('account create makes the account, prints its id, and the audit log says cli did it', async () => {
    const run = cli(['account', 'create', '--name', 'Initech'])
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const id = /created account Initech \(([0-9a-f-]{36})\)/.exec(run.stdout)?.[1]
    expect(id).toBeDefined()
    expect(await query(sql`SELECT name FROM accounts WHERE id = ${id!}`)).toEqual([{ name: 'Initech' }])
    expect(await query(sql`SELECT actor, action, object_type, object_id FROM audit_log WHERE account_id = ${id!}`)).toEqual([
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
  ])('%p exits 2 naming what is wrong, and writes nothing', async (args, message) => {
    const before = await database.count('accounts')
    const run = cli(args)
    expect(run.code).toBe(2)
    expect(run.stderr).toContain(message)
    expect(await database.count('accounts')).toBe(before)
  })
})

describe('device', () => {
  test('device add takes names (account, model, groups), prints the new device, and it is in the audit log as cli', async () => {
    const run = cli(['device', 'add', '--account', 'acme logistics', '--model', 'GT06N', '--imei', '359710049099999', '--alias', 'Truck 9', '--groups', 'Trucks,vans'])
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const id = /added device Truck 9 \(([0-9a-f-]{36})\)/.exec(run.stdout)?.[1]
    expect(id).toBeDefined()
    expect(await query(sql`SELECT alias, imei, serial, state FROM devices WHERE id = ${id!}`)).toEqual([{ alias: 'Truck 9', imei: '359710049099999', serial: '', state: 'new' }])
    expect(await database.count('device_groups', sql`device_key = (SELECT key FROM devices WHERE id = ${id!})`)).toBe(2)
    expect(await query(sql`SELECT actor, action, object_type FROM audit_log WHERE object_id = ${id!}`)).toEqual([{ actor: 'cli', action: 'create', object_type: 'device' }])
    const listed = cli(['device', 'list', '--account', 'Acme Logistics'])
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain(`${id}\tTruck 9\t359710049099999\t-\tnew`)
    expect(cli(['device', 'list', '--account', 'globex']).stdout).not.toContain('Truck 9')
  })

  test.each([
    [['device', 'add', '--account', 'Acme Logistics', '--model', 'GT06N'], '--imei or --serial is required'],
    [['device', 'add', '--account', 'Nobody Inc', '--model', 'GT06N', '--serial', 'X1'], '--account: no account named or with id "Nobody Inc"'],
    [['device', 'add', '--account', 'Acme Logistics', '--model', 'T800', '--serial', 'X1'], '--model: no model'],
    [['device', 'add', '--account', 'Acme Logistics', '--model', 'GT06N', '--serial', 'X1', '--groups', 'Cars'], '--groups: no group'],
    [['device', 'add', '--account', 'Acme Logistics', '--model', 'GT06N', '--imei', '12345'], '/imei'],
    [['device', 'add', '--account', 'Acme Logistics', '--model', 'GT06N', '--serial', 'S-T1'], 'already'],
    [['device', 'add', '--account', 'Acme Logistics', '--model', 'GT06N', '--serial', 'X1', '--colour', 'red'], "Unknown option '--colour'"],
  ])('%p exits 2 naming what is wrong, and adds nothing', async (args, message) => {
    const before = await database.count('devices')
    const run = cli(args)
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 2, stderr: expect.stringContaining(message) })
    expect(await database.count('devices')).toBe(before)
  })
})

describe('user and key', () => {
  test('user create with a password from standard input; the user signs in over the API; user list shows them', async () => {
    const run = cli(['user', 'create', '--account', 'Acme Logistics', '--name', 'frank', '--role', 'admin', '--groups', 'Vans', '--password-stdin'], 'correct horse battery\n')
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const id = /created admin frank \(([0-9a-f-]{36})\)/.exec(run.stdout)?.[1]
    expect(id).toBeDefined()
    const [stored] = await query<{ role: string; password_hash: string }>(sql`SELECT role, password_hash FROM users WHERE id = ${id!}`)
    expect(stored!.role).toBe('admin')
    expect(stored!.password_hash).toStartWith('$argon2id$')
    expect(await Bun.password.verify('correct horse battery', stored!.password_hash)).toBe(true)
    const listed = cli(['user', 'list', '--account', 'acme logistics']).stdout.split('\n').find((line) => line.startsWith(id!))
    expect(listed?.split('\t')).toEqual([id!, 'frank', 'admin', expect.stringMatching(/^[0-9a-f-]{36}$/), 'Acme Logistics'])
    expect(await query(sql`SELECT actor, action FROM audit_log WHERE object_id = ${id!}`)).toEqual([{ actor: 'cli', action: 'create' }])
    // the audit log never holds the password
    expect(JSON.stringify(await query(sql`SELECT * FROM audit_log`))).not.toContain('correct horse')
  })

  test('user passwd changes the password from standard input', async () => {
    const run = cli(['user', 'passwd', 'FRANK'], 'another long password\n')
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' })
    const [stored] = await query<{ password_hash: string }>(sql`SELECT password_hash FROM users WHERE name = 'frank'`)
    expect(await Bun.password.verify('another long password', stored!.password_hash)).toBe(true)
  })

  test('key create by user name prints the key alone; key list shows it by id; key revoke ends it', async () => {
    const created = cli(['key', 'create', '--user', 'bob', '--name', 'laptop'])
    expect({ code: created.code, stderr: created.stderr }).toEqual({ code: 0, stderr: '' })
    expect(created.stdout.trim()).toMatch(/^trk_[A-Za-z0-9_-]{43}$/)
    const listed = cli(['key', 'list', '--user', 'bob'])
    const line = listed.stdout.split('\n').find((l) => l.includes('\tlaptop\t'))
    expect(line).toBeDefined()
    expect(listed.stdout).not.toContain(created.stdout.trim())
    const keyId = line!.split('\t')[0]!
    const revoked = cli(['key', 'revoke', keyId])
    expect({ code: revoked.code, stderr: revoked.stderr }).toEqual({ code: 0, stderr: '' })
    expect(cli(['key', 'list', '--user', 'bob']).stdout).not.toContain('\tlaptop\t')
    expect(await query(sql`SELECT actor, action, object_type FROM audit_log WHERE object_id = ${keyId} ORDER BY id`)).toEqual([
      { actor: 'cli', action: 'create', object_type: 'key' },
      { actor: 'cli', action: 'delete', object_type: 'key' },
    ])
  })

  test.each([
    [['user', 'create', '--account', 'Acme Logistics', '--name', 'alice'], 'already'],
    [['user', 'create', '--account', 'Acme Logistics', '--name', 'gina', '--role', 'owner'], '--role must be admin or member'],
    [['user', 'create', '--account', 'Acme Logistics', '--name', 'gina', '--password-stdin'], 'at least 10 characters'],
    [['user', 'passwd'], 'name the user'],
    [['user', 'passwd', 'nobody-at-all'], 'user: no user named or with id "nobody-at-all"'],
    [['key', 'create'], '--user is required'],
    [['key', 'revoke', '0c000000-0000-4000-8000-0000000000ff'], 'no key with id'],
  ])('%p exits 2 naming what is wrong', async (args, message) => {
    const run = cli(args, 'short\n')
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 2, stderr: expect.stringContaining(message) })
  })
})

describe('init', () => {
  /** an empty database of the test's own, on the run's engine */
  const fresh = async () => {
    const empty = await serverDatabase('tracker-init')
    initDatabases.push(empty)
    return empty
  }
  const initCli = (empty: ServerDatabase, args: string[], stdin?: string) => runCli(['init', ...args], { cwd: empty.dir, env: empty.env, stdin })
  const read = <T = Record<string, unknown>>(empty: ServerDatabase, statement: SQL) => empty.execute<T>(statement)

  test('on an empty database: the account and its admin, password from standard input; a second init is refused', async () => {
    const empty = await fresh()
    const run = initCli(empty, ['--account', 'Initech', '--admin', 'peter'], 'a long passphrase\n')
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' })
    expect(run.stdout).toContain('created account Initech')
    const [admin] = await read<{ name: string; role: string; password_hash: string }>(empty, sql`SELECT name, role, password_hash FROM users`)
    expect({ name: admin!.name, role: admin!.role }).toEqual({ name: 'peter', role: 'admin' })
    expect(await Bun.password.verify('a long passphrase', admin!.password_hash)).toBe(true)
    expect(await read(empty, sql`SELECT actor, action, object_type FROM audit_log ORDER BY id`)).toEqual([
      { actor: 'cli', action: 'setup', object_type: 'account' },
      { actor: 'cli', action: 'setup', object_type: 'user' },
    ])
    const again = initCli(empty, ['--account', 'Other', '--admin', 'bill'], 'a long passphrase\n')
    expect(again.code).toBe(2)
    expect(again.stderr).toContain('Setup is done')
    expect(await empty.count('users')).toBe(1)
  })

  test('--password-file reads the password from a file', async () => {
    const empty = await fresh()
    const file = join(dir, 'password.txt')
    writeFileSync(file, 'from a file, long enough\n')
    expect(initCli(empty, ['--account', 'Initech', '--admin', 'peter', '--password-file', file]).code).toBe(0)
    const [admin] = await read<{ password_hash: string }>(empty, sql`SELECT password_hash FROM users`)
    expect(await Bun.password.verify('from a file, long enough', admin!.password_hash)).toBe(true)
  })

  test.each([
    [['--account', 'Initech'], '--admin is required', 'a long passphrase'],
    [['--account', 'Initech', '--admin', 'peter'], 'at least 10 characters', 'short'],
    [['--account', 'Initech', '--admin', 'peter', '--password-file', '/nonexistent/pw'], '--password-file: no file', ''],
  ])('%p exits 2 naming what is wrong, and creates nothing', async (args, message, stdin) => {
    const empty = await fresh()
    const run = initCli(empty, args, stdin)
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 2, stderr: expect.stringContaining(message) })
  })
})
