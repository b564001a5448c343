import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { createApp } from '../../src/app'
import { loadConfig } from '../../src/config'
import { openProduct } from '../../src/database'
import { PROTOCOLS } from '../../src/ingest/protocols'
import { baseDataset, ids } from '../support/world'
import { devicePortsOff, runCli } from '../support/process'
import { type ServerDatabase, serverDatabase } from '../support/server-database'

// the command line in child processes, each opening the database (on PostgreSQL a pool): seconds on a busy machine
setDefaultTimeout(30_000)

const root = join(import.meta.dir, '../..')
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tracker-cli-'))
})
const databases: ServerDatabase[] = []
afterAll(async () => {
  for (const database of databases) await database.close()
  rmSync(dir, { recursive: true, force: true })
})

function cli(args: string[], env: Record<string, string> = {}) {
  return runCli(args, { cwd: dir, env })
}

/** an empty database of the test's own on the run's engine (a SQLite file not made yet: the command makes it) */
async function fresh(): Promise<ServerDatabase> {
  const database = await serverDatabase('tracker-cli-db')
  databases.push(database)
  // SQLite: no file yet, as before a first command (serverDatabase made one)
  if (database.sqlitePath !== null) for (const suffix of ['', '-wal', '-shm']) rmSync(`${database.sqlitePath}${suffix}`, { force: true })
  return database
}

/** the app over the database, as a server would open it */
async function withApp<T>(database: ServerDatabase, use: (app: ReturnType<typeof createApp>) => Promise<T>): Promise<T> {
  const opened = await openProduct(loadConfig(database.env), { purpose: 'command' })
  try {
    return await use(createApp({ stores: opened.stores }))
  } finally {
    await opened.close()
  }
}

describe('command line', () => {
  test('no command prints the usage and exits 2, starting nothing', async () => {
    const run = cli([], { ...devicePortsOff(), PORT: '0', DATABASE_PATH: join(dir, 'none', 'tracker.db') })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('no command given')
    expect(run.stderr).toContain('Usage: tracker <command>')
    expect(run.stdout).toBe('')
  })

  test('the usage names the port variable of every protocol the server listens for', async () => {
    const run = cli([])
    expect(run.stderr).toContain('PORT, HOST')
    for (const protocol of PROTOCOLS) expect(run.stderr).toContain(`${protocol.portVariable} (${protocol.title}, default ${protocol.defaultPort})`)
  })

  test('import loads a dataset, creating and migrating the database', async () => {
    const file = join(dir, 'fleet.json')
    writeFileSync(file, JSON.stringify(baseDataset()))
    const db = await fresh()
    const run = cli(['import', file], db.env)
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('5 devices')
    expect(await db.count('devices')).toBe(5)
  })

  test('a second import of the same file exits 2 naming the duplicate; --upsert succeeds and stores no event twice', async () => {
    const file = join(dir, 'twice.json')
    // a device that reconnected within one second: two of each code at that second
    const events = ['device_offline', 'device_online', 'device_offline', 'device_online'].map((alarm_code) => ({ device: ids.truck1, alarm_code, timestamp: 1764000000 }))
    writeFileSync(file, JSON.stringify({ ...baseDataset(), events }))
    const db = await fresh()
    expect(cli(['import', file], db.env).code).toBe(0)
    expect(await db.count('events')).toBe(4)
    const again = cli(['import', file], db.env)
    expect(again.code).toBe(2)
    expect(again.stderr).toContain('/accounts/0/id')
    expect(cli(['import', file, '--upsert'], db.env).code).toBe(0)
    expect(await db.count('events')).toBe(4)
  })

  test('an invalid dataset exits 2 listing every bad field, one a line, with its path and a plain message, and writes nothing', async () => {
    const document = baseDataset() as Record<string, unknown> & ReturnType<typeof baseDataset>
    ;(document.devices[1] as Record<string, unknown>).state = 'flying'
    ;(document.devices[1] as Record<string, unknown>).alias = 7
    ;(document.devices[2] as Record<string, unknown>).plate = 'AB-123-CD'
    delete (document.accounts[1] as Partial<(typeof document.accounts)[1]>).id
    const file = join(dir, 'bad.json')
    writeFileSync(file, JSON.stringify(document))
    const db = await fresh()
    const run = cli(['import', file], db.env)
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      'error: 4 problems in the dataset (nothing was imported):',
      '  /accounts/1/id: is required',
      '  /devices/1/alias: must be a string',
      '  /devices/1/state: must be one of new, off, moving, stopped, suspended, unlink, stolen',
      '  /devices/2/plate: is not a known field',
    ])
    expect(await db.count('accounts')).toBe(0)
  })

  test('a file that is not JSON exits 2', async () => {
    const file = join(dir, 'garbage.json')
    writeFileSync(file, '{ not json')
    const run = cli(['import', file], (await fresh()).env)
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('JSON')
  })

  test.each([
    ['a CSV file', 'fleet.csv', 'alias,imei\nTruck,359710049095001\n', 'line 1, column 1: unexpected "a"'],
    ['a trailing comma on line 3', 'comma.json', '{\n  "accounts": [],\n  "groups": [],\n}\n', 'line 4, column 1: unexpected "}"'],
    ['a file cut short', 'cut.json', '{\n  "devices": [\n    {"id": "x"', 'line 3, column 15: the file ends too early'],
    ['a control character', 'tab.json', '{"a": "x\ty"}', 'line 1, column 9: unexpected U+0009'],
  ])('%s: exits 2 saying the format is JSON, with the line and column of the first bad character; nothing written', async (_, name, text, where) => {
    const file = join(dir, name)
    writeFileSync(file, text)
    const run = cli(['import', file], (await fresh()).env)
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr.trimEnd()).toBe(`error: not JSON: the import format is JSON (docs/import-format.md); ${file}, ${where}`)
  })

  test('import refuses an identifier the API and `device add` refuse, in the same words, with its path; nothing is written', async () => {
    const document = baseDataset()
    ;(document.devices[0] as Record<string, unknown>).imei = '35971004909500'
    ;(document.devices[2] as Record<string, unknown>).imei = '35971004909500X'
    ;(document.devices[1] as Record<string, unknown>).serial = 'has space'
    const file = join(dir, 'bad-imei.json')
    writeFileSync(file, JSON.stringify(document))
    const db = await fresh()
    const run = cli(['import', file], db.env)
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      'error: 3 problems in the dataset (nothing was imported):',
      '  /devices/0/imei: must be 15 digits (or "" for none)',
      '  /devices/1/serial: must be 1 to 64 printable ASCII characters, no spaces (or "" for none)',
      '  /devices/2/imei: must be 15 digits (or "" for none)',
    ])
    expect(await db.count('devices')).toBe(0)

    // the command line's own `device add`, on a good import of the same fleet: the same rule and words
    document.devices.splice(0, 3)
    writeFileSync(file, JSON.stringify(document))
    const good = await fresh()
    expect(cli(['import', file], good.env).code).toBe(0)
    const add = cli(['device', 'add', '--account', ids.acme, '--model', ids.gt06, '--imei', '35971004909500'], good.env)
    expect(add.code).toBe(2)
    expect(add.stderr.trimEnd()).toBe('error: /imei must be 15 digits (or "" for none)')
  })

  /** the database the key tests share */
  let keysDatabase: ServerDatabase
  test('key create prints a new key once, and it authenticates', async () => {
    const file = join(dir, 'keys.json')
    writeFileSync(file, JSON.stringify(baseDataset()))
    keysDatabase = await fresh()
    const db = keysDatabase
    expect(cli(['import', file], db.env).code).toBe(0)
    const run = cli(['key', 'create', '--user', ids.bob], db.env)
    expect(run.code).toBe(0)
    const key = run.stdout.trim()
    expect(key).toMatch(/^trk_[A-Za-z0-9_-]{43}$/)
    const stored = await db.execute<{ hash: string }>(sql`SELECT hash FROM api_keys`)
    expect(stored.some((row) => row.hash === key)).toBe(false)
    await withApp(db, async (app) => {
      const res = await app.handle(new Request('http://localhost/devices', { headers: { authorization: `Bearer ${key}` } }))
      expect(res.status).toBe(200)
      expect(((await res.json()) as { id: string }[]).map((d) => d.id)).toEqual([ids.truck2, ids.van1])
    })
  })

  test('key create takes the user id in any case', async () => {
    const run = cli(['key', 'create', '--user', ids.bob.toUpperCase()], keysDatabase.env)
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout.trim()).toMatch(/^trk_/)
  })

  test('key create for an unknown user is a bad argument: exit 2, naming it', async () => {
    const run = cli(['key', 'create', '--user', '0c000000-0000-4000-8000-0000000000ff'], keysDatabase.env)
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--user: no user named or with id "0c000000-0000-4000-8000-0000000000ff"')
  })

  test('migrate creates the schema and exits 0', async () => {
    // on SQLite the file is made by the command; on PostgreSQL the test's database is made for it, and migrate brings it up to date
    const db = await fresh()
    expect(cli(['migrate'], db.env).code).toBe(0)
    // each table answers (a missing one is an error on either engine)
    for (const table of ['devices', 'positions', 'events', 'share_links']) expect(await db.count(table)).toBe(0)
    expect(await db.count('permissions')).toBe(3)
  })

  test("the README's example fleet imports, and its demo key works", async () => {
    const db = await fresh()
    const run = cli(['import', join(root, 'examples/fleet.json')], db.env)
    expect(run.code).toBe(0)
    await withApp(db, async (app) => {
      const res = await app.handle(new Request('http://localhost/devices', { headers: { authorization: 'Bearer alice-demo-key-0001' } }))
      expect(((await res.json()) as { alias: string }[]).map((d) => d.alias)).toEqual(['Bus 304', 'Service van'])
    })
  })

  test('usage errors exit 2', async () => {
    expect(cli(['frobnicate']).code).toBe(2)
    expect(cli(['import']).code).toBe(2)
    expect(cli(['key', 'create']).code).toBe(2)
  })

  test('a bad environment value stops with a message naming it', async () => {
    const run = cli(['migrate'], { PORT: 'eighty', DATABASE_PATH: join(dir, 'env.db') })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('PORT')
  })
})
