/**
 * `tracker model …` and the built-in catalogue, as the operator meets them: child processes
 * against a real database on the run's engine, then the API over the same database.
 */
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type SQL, sql } from 'drizzle-orm'
import { createApp } from '../../src/app'
import { manualClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { openProduct } from '../../src/database'
import { baseDataset, ids, keys } from '../support/world'
import { runCli } from '../support/process'
import { PROTOCOLS } from '../../src/ingest/protocols'
import { type ServerDatabase, serverDatabase } from '../support/server-database'

// the command line in child processes, each opening the database (on PostgreSQL a pool): seconds on a busy machine
setDefaultTimeout(30_000)

let database: ServerDatabase
let dir: string
beforeEach(async () => {
  database = await serverDatabase('tracker-cli-models')
  dir = database.dir
  // SQLite: no file yet, as before a first command (serverDatabase made one)
  if (database.sqlitePath !== null) for (const suffix of ['', '-wal', '-shm']) rmSync(`${database.sqlitePath}${suffix}`, { force: true })
})
afterEach(() => database.close())

function cli(args: string[], stdin?: string) {
  return runCli(args, { cwd: dir, env: database.env, stdin })
}

function ok(args: string[], stdin?: string): string {
  const run = cli(args, stdin)
  if (run.code !== 0) throw new Error(`${args.join(' ')} exited ${run.code}: ${run.stderr}`)
  return run.stdout
}

function file(name: string, content: unknown): string {
  const path = join(dir, name)
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content))
  return path
}

const query = <T = Record<string, unknown>>(statement: SQL): Promise<T[]> => database.execute<T>(statement)

const modelAudit = () => query<{ account_id: string; actor: string; action: string; object_id: string }>(
  sql`SELECT account_id, actor, action, object_id FROM audit_log WHERE object_type = 'model' ORDER BY id`,
)

/** the API over the database file, as the server would serve it */
async function api<T>(path: string, token: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: T }> {
  // opened as the tests' own reads are: nothing brought up to date on the way
  const opened = await openProduct(loadConfig(database.env), { purpose: 'command', migrate: false })
  try {
    const app = createApp({ stores: opened.stores, clock: manualClock() })
    const headers: Record<string, string> = { authorization: `Bearer ${token}` }
    if (init.body !== undefined) headers['content-type'] = 'application/json'
    const res = await app.handle(new Request(`http://localhost${path}`, { method: init.method ?? 'GET', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) }))
    return { status: res.status, body: (await res.json()) as T }
  } finally {
    await opened.close()
  }
}

const BUILTIN = {
  osmand: 'b0000001-0000-4000-8000-000000000000',
  gt06: 'b0000002-0000-4000-8000-000000000000',
  gt06Position: 'b0000002-0000-4000-8000-000000000003',
  teltonika: 'b0000003-0000-4000-8000-000000000000',
  h02: 'b0000004-0000-4000-8000-000000000000',
  gl200: 'a2e8e3ec-0a69-42b5-bb84-217f30704842',
  jt808: 'c537678f-ed1a-4806-a924-ef58d8373f18',
  meitrack: '97d3cb82-1487-4f66-895a-2266089cde81',
  gps103: '9c3ca291-4744-423c-a6f1-4f36f212fec9',
  watch: 'e356c98b-e483-4cfd-8593-f84814f855cd',
}

describe('the built-in catalogue', () => {
  test('a fresh database has one model per protocol: `model list` shows them, GET /models too, and a GT06 added with its built-in model is sent WHERE#', async () => {
    ok(['migrate'])
    const lines = ok(['model', 'list']).trim().split('\n').map((line) => line.split('\t'))
    expect(lines.map(([id, , protocol, owner]) => [id, protocol, owner])).toEqual(
      expect.arrayContaining([
        [BUILTIN.osmand, 'osmand', 'built-in'],
        [BUILTIN.gt06, 'gt06', 'built-in'],
        [BUILTIN.teltonika, 'teltonika', 'built-in'],
        [BUILTIN.h02, 'h02', 'built-in'],
        [BUILTIN.gl200, 'gl200', 'built-in'],
        [BUILTIN.jt808, 'jt808', 'built-in'],
        [BUILTIN.meitrack, 'meitrack', 'built-in'],
        [BUILTIN.gps103, 'gps103', 'built-in'],
        [BUILTIN.watch, 'watch', 'built-in'],
      ]),
    )
    // one a protocol of the list, none other
    expect(lines).toHaveLength(PROTOCOLS.length)

    ok(['init', '--account', 'Acme', '--admin', 'dana'], 'a long enough password')
    const key = ok(['key', 'create', '--user', 'dana']).trim()
    const { status, body: models } = await api<{ id: string; protocol: string; account: string | null; commands: { id: string; name: string; widget: { type: string; fields?: { pattern?: string }[] }; send?: { text: string } }[] }[]>('/models', key)
    expect(status).toBe(200)
    expect(models.map((m) => [m.id, m.protocol, m.account]).sort()).toEqual([
      [BUILTIN.meitrack, 'meitrack', null],
      [BUILTIN.gps103, 'gps103', null],
      [BUILTIN.osmand, 'osmand', null],
      [BUILTIN.gt06, 'gt06', null],
      [BUILTIN.teltonika, 'teltonika', null],
      [BUILTIN.h02, 'h02', null],
      [BUILTIN.gl200, 'gl200', null],
      [BUILTIN.jt808, 'jt808', null],
      [BUILTIN.watch, 'watch', null],
    ].sort())
    const texts = Object.fromEntries(models.map((m) => [m.protocol, Object.fromEntries(m.commands.map((c) => [c.name, c.send?.text]))]))
    // OsmAnd phones cannot be called back: no commands
    expect(texts.osmand).toEqual({})
    expect(texts.gt06).toMatchObject({ 'Engine stop': 'RELAY,1#', 'Engine resume': 'RELAY,0#', Position: 'WHERE#', Reboot: 'RESET#', 'Reporting interval': 'TIMER,{seconds}#' })
    expect(texts.teltonika).toMatchObject({ 'Engine stop': 'setdigout 1', 'Engine resume': 'setdigout 0', Position: 'getgps', Reboot: 'cpureset' })
    expect(texts.h02).toMatchObject({ 'Engine stop': 'S20,1,1', 'Engine resume': 'S20,1,0', 'Reporting interval': 'S71,22,{seconds}' })
    expect(texts.gl200).toMatchObject({ Position: 'AT+GTRTO={password},1,,,,,,FFFF$', 'Engine stop': 'AT+GTOUT={password},1,,,0,0,0,0,0,0,0,,,,,,,FFFF$', Reboot: 'AT+GTRTO={password},3,,,,,,FFFF$' })
    expect(texts.jt808).toMatchObject({ Position: '8201', Reboot: '8105:4', 'Reporting interval': '8103:0029={seconds}', 'Text message': '8300:{text}' })
    expect(texts.meitrack).toMatchObject({ 'Position now': 'A10', 'Engine stop': 'C01,0,12222', 'Engine resume': 'C01,0,02222', 'Reporting interval': 'A12,{tens_of_seconds}' })
    expect(texts.gps103).toMatchObject({ 'Position request': 'B', 'Engine stop': 'J', 'Engine resume': 'K', 'Reporting interval': 'C,{interval}' })
    expect(texts.watch).toMatchObject({ 'Locate now': 'CR', 'Reporting interval': 'UPLOAD,{seconds}', 'SOS number': 'SOS{slot},{phone}' })
    // every form field says what it takes
    for (const model of models) for (const command of model.commands) for (const field of command.widget.fields ?? []) expect(typeof field.pattern).toBe('string')

    // the README's first device needs no model of its own
    const added = ok(['device', 'add', '--account', 'Acme', '--model', BUILTIN.gt06, '--imei', '359710049099999', '--alias', 'Van'])
    const device = /\(([0-9a-f-]{36})\)/.exec(added)![1]!
    const sent = await api<{ text: string }>(`/devices/${device}/commands/${BUILTIN.gt06Position}`, key, { method: 'POST', body: {} })
    expect(sent).toEqual({ status: 202, body: expect.objectContaining({ text: 'WHERE#' }) })
  }, 30_000)

  test('a built-in model changed by hand is brought back at the next start (migrate), in the audit log of the accounts using it; the CLI will not change one', async () => {
    ok(['import', file('fleet.json', baseDataset())])
    ok(['device', 'add', '--account', 'Globex', '--model', 'GT06 / Concox', '--imei', '359710049099998'])
    await database.execute(sql`UPDATE commands SET send = ${'{"text":"RELAY,1#"}'} WHERE id = ${BUILTIN.gt06Position}`)
    await database.execute(sql`DELETE FROM commands WHERE id = 'b0000002-0000-4000-8000-000000000007'`)

    ok(['migrate'])
    expect(await query(sql`SELECT send FROM commands WHERE id = ${BUILTIN.gt06Position}`)).toEqual([{ send: '{"text":"WHERE#"}' }])
    expect(await database.count('commands', sql`model_id = ${BUILTIN.gt06}`)).toBe(7)
    expect(await modelAudit()).toEqual([{ account_id: ids.globex, actor: 'cli', action: 'update', object_id: BUILTIN.gt06 }])
    // as declared now: the next start writes nothing
    ok(['migrate'])
    expect(await modelAudit()).toHaveLength(1)

    for (const args of [['model', 'update', BUILTIN.gt06, '--file', file('rename.json', { name: 'Mine' })], ['model', 'delete', BUILTIN.h02]]) {
      const run = cli(args)
      expect(run.code).toBe(2)
      expect(run.stderr).toContain('built in')
    }
    expect(await query(sql`SELECT name FROM models WHERE id = ${BUILTIN.gt06}`)).toEqual([{ name: 'GT06 / Concox' }])
  }, 30_000)
})

describe('tracker model', () => {
  beforeEach(() => ok(['import', file('fleet.json', baseDataset())]))

  test('model update changes a server-wide model; it is in the audit log of every account whose devices use it, actor cli; the API sees it', async () => {
    // Bare is used by acme's van and globex's car
    const locate = { name: 'Locate', widget: { type: 'button', label: 'Locate', confirm: false }, send: { text: 'WHERE#' } }
    const out = ok(['model', 'update', 'Bare', '--file', file('bare.json', { name: 'Bare v2', commands: [locate] })])
    expect(out).toContain(`changed model Bare v2 (${ids.bare})`)
    expect(await modelAudit()).toEqual([
      { account_id: ids.acme, actor: 'cli', action: 'update', object_id: ids.bare },
      { account_id: ids.globex, actor: 'cli', action: 'update', object_id: ids.bare },
    ])
    const { body } = await api<{ name: string; account: null; commands: { name: string; send: { text: string } }[] }>(`/models/${ids.bare}`, keys.carol)
    expect(body).toMatchObject({ name: 'Bare v2', account: null, commands: [{ name: 'Locate', send: { text: 'WHERE#' } }] })
    // and GET /audit shows it to each account's admin
    const audit = await api<{ actor: string; action: string; object_type: string; object_id: string }[]>('/audit', keys.erin)
    expect(audit.body[0]).toMatchObject({ actor: 'cli', action: 'update', object_type: 'model', object_id: ids.bare })
  }, 30_000)

  test('model show prints what model update --file takes; a bad file exits 2 naming the field, and nothing changes', async () => {
    const shown = JSON.parse(ok(['model', 'show', ids.gt06])) as { name: string; protocol: string; commands: unknown[] }
    expect(Object.keys(shown)).toEqual(['name', 'protocol', 'commands'])
    expect(shown.commands).toHaveLength(2)
    ok(['model', 'update', 'GT06N', '--file', file('same.json', shown)])

    const bad = cli(['model', 'update', 'GT06N', '--file', file('bad.json', { colour: 'red' })])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('/colour')
    const badPattern = cli(['model', 'update', 'GT06N', '--file', file('slow.json', { commands: [{ name: 'x', widget: { type: 'form', fields: [{ name: 'v', type: 'text', label: 'V', pattern: '(a+)+$' }] } }] })])
    expect(badPattern.code).toBe(2)
    expect(badPattern.stderr).toContain('/commands/0/widget/fields/0/pattern')
    expect(cli(['model', 'update', 'GT06N', '--file', join(dir, 'missing.json')]).code).toBe(2)
    expect(JSON.parse(ok(['model', 'show', 'GT06N']))).toEqual(shown)
  }, 30_000)

  test("model add makes a server-wide model, or an account's with --account; another account cannot give it to a device; model delete", async () => {
    const commands = file('commands.json', [{ name: 'Position', widget: { type: 'button', label: 'Where', confirm: false }, send: { text: 'WHERE#' } }])
    const shared = /\(([0-9a-f-]{36})\), server-wide, with 1 commands/.exec(ok(['model', 'add', '--name', 'TK103', '--protocol', 'gt06', '--commands', commands]))?.[1]
    const globexOnly = /\(([0-9a-f-]{36})\), of account Globex/.exec(ok(['model', 'add', '--name', 'Globex tracker', '--account', 'Globex']))?.[1]
    expect(shared).toBeDefined()
    expect(globexOnly).toBeDefined()
    expect(await query(sql`SELECT account_id FROM models WHERE id IN (${shared!}, ${globexOnly!}) ORDER BY name`)).toEqual([{ account_id: ids.globex }, { account_id: null }])
    const listed = ok(['model', 'list', '--account', 'Acme Logistics'])
    expect(listed).toContain('TK103')
    expect(listed).not.toContain('Globex tracker')
    expect(ok(['model', 'list'])).toContain('account Globex')

    // acme's device cannot use globex's model, by name or id
    for (const model of ['Globex tracker', globexOnly!]) {
      const refused = cli(['device', 'add', '--account', 'Acme Logistics', '--model', model, '--imei', '359710049099997'])
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain("another account's model")
    }
    ok(['device', 'add', '--account', 'Globex', '--model', 'Globex tracker', '--imei', '359710049099997'])

    // a model a device uses stays; one none uses goes (a server-wide one no device uses is in no account's log)
    const inUse = cli(['model', 'delete', 'Globex tracker'])
    expect(inUse.code).toBe(2)
    expect(inUse.stderr).toContain('still used by a device')
    expect(ok(['model', 'delete', 'TK103'])).toContain(`deleted model TK103 (${shared})`)
    expect(await query(sql`SELECT id FROM models WHERE id = ${shared!}`)).toEqual([])
    expect(await modelAudit()).toEqual([{ account_id: ids.globex, actor: 'cli', action: 'create', object_id: globexOnly! }])
  }, 30_000)

  test.each([
    [['model'], 'missing subcommand'],
    [['model', 'rename'], 'unknown subcommand rename'],
    [['model', 'add'], '--name is required'],
    [['model', 'add', '--name', 'X', '--account', 'Nobody'], '--account: no account'],
    [['model', 'update', 'GT06N'], '--file is required'],
    [['model', 'delete', 'Nothing'], 'model: no model named or with id "Nothing"'],
  ])('%p exits 2 naming what is wrong', async (args, message) => {
    const before = await database.count('models')
    const run = cli(args)
    expect(run.code).toBe(2)
    expect(run.stderr).toContain(message)
    expect(await database.count('models')).toBe(before)
  })
})

describe('devices without a model (issue 20, item 2)', () => {
  test('on a fresh database, device add needs only an account, an identifier and a name: no model to invent first', async () => {
    ok(['account', 'create', '--name', 'Fleet'])
    const added = ok(['device', 'add', '--account', 'Fleet', '--serial', 'phone-1', '--alias', 'My phone'])
    expect(added).toContain('added device My phone')
    expect(ok(['device', 'list'])).toContain('My phone')
    expect(await query<{ alias: string; model_id: string | null }>(sql`SELECT alias, model_id FROM devices`)).toEqual([{ alias: 'My phone', model_id: null }])
  })

  test('import takes a device without a model; --upsert without one keeps the model a stored device has', async () => {
    const account = '0a000000-0000-4000-8000-0000000000a1'
    const device = '0f000000-0000-4000-8000-0000000000a1'
    const fleet = { accounts: [{ id: account, name: 'Fleet' }], devices: [{ id: device, account, alias: 'Van', imei: '359710049095123' }] }
    ok(['import', file('fleet.json', fleet)])
    expect(await query<{ model_id: string | null }>(sql`SELECT model_id FROM devices`)).toEqual([{ model_id: null }])
    // the device has reported as GT06 meanwhile: its built-in model, set here directly
    const gt06 = (await query<{ id: string }>(sql`SELECT id FROM models WHERE protocol = 'gt06' AND account_id IS NULL ORDER BY id LIMIT 1`))[0]!.id
    await database.execute(sql`UPDATE devices SET model_id = ${gt06}`)
    ok(['import', '--upsert', file('fleet.json', { ...fleet, devices: [{ ...fleet.devices[0], alias: 'Van 2' }] })])
    expect(await query<{ alias: string; model_id: string | null }>(sql`SELECT alias, model_id FROM devices`)).toEqual([{ alias: 'Van 2', model_id: gt06 }])
  })
})
