import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { createApp } from '../../src/app'
import { PROTOCOLS } from '../../src/ingest/protocols'
import { baseDataset, ids } from '../support/world'
import { runCli } from '../support/process'

const root = join(import.meta.dir, '../..')
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tracker-cli-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function cli(args: string[], env: Record<string, string> = {}) {
  return runCli(args, { cwd: dir, env })
}

describe('command line', () => {
  test('no command prints the usage and exits 2, starting nothing', () => {
    const run = cli([], { PORT: '0', OSMAND_PORT: '0', GT06_PORT: '0', TELTONIKA_PORT: '0', H02_PORT: '0', MEITRACK_PORT: '0', DATABASE_PATH: join(dir, 'none', 'tracker.db') })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('no command given')
    expect(run.stderr).toContain('Usage: tracker <command>')
    expect(run.stdout).toBe('')
  })

  test('the usage names the port variable of every protocol the server listens for', () => {
    const run = cli([])
    expect(run.stderr).toContain('PORT, HOST')
    for (const protocol of PROTOCOLS) expect(run.stderr).toContain(`${protocol.portVariable} (${protocol.title}, default ${protocol.defaultPort})`)
  })

  test('import loads a dataset, creating and migrating the database', () => {
    const file = join(dir, 'fleet.json')
    writeFileSync(file, JSON.stringify(baseDataset()))
    const db = join(dir, 'fresh', 'tracker.db')
    const run = cli(['import', file], { DATABASE_PATH: db })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('5 devices')
    const sqlite = new Database(db, { readonly: true })
    expect(sqlite.query('SELECT count(*) AS n FROM devices').get()).toEqual({ n: 5 })
    sqlite.close()
  })

  test('a second import of the same file exits 2 naming the duplicate; --upsert succeeds and stores no event twice', () => {
    const file = join(dir, 'twice.json')
    // a device that reconnected within one second: two of each code at that second
    const events = ['device_offline', 'device_online', 'device_offline', 'device_online'].map((alarm_code) => ({ device: ids.truck1, alarm_code, timestamp: 1764000000 }))
    writeFileSync(file, JSON.stringify({ ...baseDataset(), events }))
    const db = join(dir, 'twice.db')
    const eventCount = () => {
      const sqlite = new Database(db, { readonly: true })
      try {
        return sqlite.query('SELECT count(*) AS n FROM events').get()
      } finally {
        sqlite.close()
      }
    }
    expect(cli(['import', file], { DATABASE_PATH: db }).code).toBe(0)
    expect(eventCount()).toEqual({ n: 4 })
    const again = cli(['import', file], { DATABASE_PATH: db })
    expect(again.code).toBe(2)
    expect(again.stderr).toContain('/accounts/0/id')
    expect(cli(['import', file, '--upsert'], { DATABASE_PATH: db }).code).toBe(0)
    expect(eventCount()).toEqual({ n: 4 })
  })

  test('an invalid dataset exits 2 listing every bad field, one a line, with its path and a plain message, and writes nothing', () => {
    const document = baseDataset() as Record<string, unknown> & ReturnType<typeof baseDataset>
    ;(document.devices[1] as Record<string, unknown>).state = 'flying'
    ;(document.devices[1] as Record<string, unknown>).alias = 7
    ;(document.devices[2] as Record<string, unknown>).plate = 'AB-123-CD'
    delete (document.accounts[1] as Partial<(typeof document.accounts)[1]>).id
    const file = join(dir, 'bad.json')
    writeFileSync(file, JSON.stringify(document))
    const db = join(dir, 'bad.db')
    const run = cli(['import', file], { DATABASE_PATH: db })
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      'error: 4 problems in the dataset (nothing was imported):',
      '  /accounts/1/id: is required',
      '  /devices/1/alias: must be a string',
      '  /devices/1/state: must be one of new, off, moving, stopped, suspended, unlink, stolen',
      '  /devices/2/plate: is not a known field',
    ])
    const sqlite = new Database(db, { readonly: true })
    expect(sqlite.query('SELECT count(*) AS n FROM accounts').get()).toEqual({ n: 0 })
    sqlite.close()
  })

  test('a file that is not JSON exits 2', () => {
    const file = join(dir, 'garbage.json')
    writeFileSync(file, '{ not json')
    const run = cli(['import', file], { DATABASE_PATH: join(dir, 'garbage.db') })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('JSON')
  })

  test.each([
    ['a CSV file', 'fleet.csv', 'alias,imei\nTruck,359710049095001\n', 'line 1, column 1: unexpected "a"'],
    ['a trailing comma on line 3', 'comma.json', '{\n  "accounts": [],\n  "groups": [],\n}\n', 'line 4, column 1: unexpected "}"'],
    ['a file cut short', 'cut.json', '{\n  "devices": [\n    {"id": "x"', 'line 3, column 15: the file ends too early'],
    ['a control character', 'tab.json', '{"a": "x\ty"}', 'line 1, column 9: unexpected U+0009'],
  ])('%s: exits 2 saying the format is JSON, with the line and column of the first bad character; nothing written', (_, name, text, where) => {
    const file = join(dir, name)
    writeFileSync(file, text)
    const db = join(dir, `${name}.db`)
    const run = cli(['import', file], { DATABASE_PATH: db })
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr.trimEnd()).toBe(`error: not JSON: the import format is JSON (docs/import-format.md); ${file}, ${where}`)
  })

  test('import refuses an identifier the API and `device add` refuse, in the same words, with its path; nothing is written', () => {
    const document = baseDataset()
    ;(document.devices[0] as Record<string, unknown>).imei = '35971004909500'
    ;(document.devices[2] as Record<string, unknown>).imei = '35971004909500X'
    ;(document.devices[1] as Record<string, unknown>).serial = 'has space'
    const file = join(dir, 'bad-imei.json')
    writeFileSync(file, JSON.stringify(document))
    const db = join(dir, 'bad-imei.db')
    const run = cli(['import', file], { DATABASE_PATH: db })
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      'error: 3 problems in the dataset (nothing was imported):',
      '  /devices/0/imei: must be 15 digits (or "" for none)',
      '  /devices/1/serial: must be 1 to 64 printable ASCII characters, no spaces (or "" for none)',
      '  /devices/2/imei: must be 15 digits (or "" for none)',
    ])
    const sqlite = new Database(db, { readonly: true })
    expect(sqlite.query('SELECT count(*) AS n FROM devices').get()).toEqual({ n: 0 })
    sqlite.close()

    // the command line's own `device add`, on a good import of the same fleet: the same rule and words
    document.devices.splice(0, 3)
    writeFileSync(file, JSON.stringify(document))
    const good = join(dir, 'good-imei.db')
    expect(cli(['import', file], { DATABASE_PATH: good }).code).toBe(0)
    const add = cli(['device', 'add', '--account', ids.acme, '--model', ids.gt06, '--imei', '35971004909500'], { DATABASE_PATH: good })
    expect(add.code).toBe(2)
    expect(add.stderr.trimEnd()).toBe('error: /imei must be 15 digits (or "" for none)')
  })

  test('key create prints a new key once, and it authenticates', async () => {
    const file = join(dir, 'keys.json')
    writeFileSync(file, JSON.stringify(baseDataset()))
    const db = join(dir, 'keys.db')
    expect(cli(['import', file], { DATABASE_PATH: db }).code).toBe(0)
    const run = cli(['key', 'create', '--user', ids.bob], { DATABASE_PATH: db })
    expect(run.code).toBe(0)
    const key = run.stdout.trim()
    expect(key).toMatch(/^trk_[A-Za-z0-9_-]{43}$/)
    const database = openDatabase(db)
    try {
      const stored = database.sqlite.query('SELECT hash FROM api_keys').all() as { hash: string }[]
      expect(stored.some((row) => row.hash === key)).toBe(false)
      const res = await createApp({ database }).handle(new Request('http://localhost/devices', { headers: { authorization: `Bearer ${key}` } }))
      expect(res.status).toBe(200)
      expect(((await res.json()) as { id: string }[]).map((d) => d.id)).toEqual([ids.truck2, ids.van1])
    } finally {
      database.close()
    }
  })

  test('key create takes the user id in any case', () => {
    const run = cli(['key', 'create', '--user', ids.bob.toUpperCase()], { DATABASE_PATH: join(dir, 'keys.db') })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout.trim()).toMatch(/^trk_/)
  })

  test('key create for an unknown user is a bad argument: exit 2, naming it', () => {
    const run = cli(['key', 'create', '--user', '0c000000-0000-4000-8000-0000000000ff'], { DATABASE_PATH: join(dir, 'keys.db') })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--user: no user named or with id "0c000000-0000-4000-8000-0000000000ff"')
  })

  test('migrate creates the schema and exits 0', () => {
    const db = join(dir, 'migrated', 'tracker.db')
    expect(cli(['migrate'], { DATABASE_PATH: db }).code).toBe(0)
    const sqlite = new Database(db, { readonly: true })
    const tables = (sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name)
    expect(tables).toEqual(expect.arrayContaining(['devices', 'positions', 'events', 'share_links', 'permissions']))
    expect(sqlite.query('SELECT count(*) AS n FROM permissions').get()).toEqual({ n: 3 })
    sqlite.close()
  })

  test("the README's example fleet imports, and its demo key works", async () => {
    const db = join(dir, 'example.db')
    const run = cli(['import', join(root, 'examples/fleet.json')], { DATABASE_PATH: db })
    expect(run.code).toBe(0)
    const database = openDatabase(db)
    try {
      const res = await createApp({ database }).handle(new Request('http://localhost/devices', { headers: { authorization: 'Bearer alice-demo-key-0001' } }))
      expect(((await res.json()) as { alias: string }[]).map((d) => d.alias)).toEqual(['Bus 304', 'Service van'])
    } finally {
      database.close()
    }
  })

  test('usage errors exit 2', () => {
    expect(cli(['frobnicate']).code).toBe(2)
    expect(cli(['import']).code).toBe(2)
    expect(cli(['key', 'create']).code).toBe(2)
  })

  test('a bad environment value stops with a message naming it', () => {
    const run = cli(['migrate'], { PORT: 'eighty', DATABASE_PATH: join(dir, 'env.db') })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('PORT')
  })
})
