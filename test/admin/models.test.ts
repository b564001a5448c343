/**
 * /models: device models and their commands. A model made through the API is its admin's
 * account's (only its devices use it, only its admins see and change it); server-wide models (the
 * world's imported ones here) are read by every user and read-only over the API (403).
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { PROTOCOLS } from '../../src/ingest/protocols'
import { PROTOCOL_NAMES } from '../../src/ingest/protocols/names'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld()
})
afterEach(() => world.close())

const NOW = Date.UTC(2026, 10, 25, 12, 0, 0) // manualClock's start
const UNKNOWN = '0d000000-0000-4000-8000-0000000000ff'

interface CommandJson { id: string; name: string; widget: Record<string, unknown> }
interface ModelJson { id: string; name: string; protocol: string | null; commands: CommandJson[]; account: string | null }

/** `token` null: no credentials */
const call = (method: string, path: string, body?: unknown, token: string | null = keys.dana) => world.call(method, path, { token: token ?? undefined, body })

async function created(body: unknown, token = keys.dana): Promise<ModelJson> {
  const res = await call('POST', '/models', body, token)
  if (res.status !== 201) throw new Error(`expected 201, got ${res.status}: ${await res.text()}`)
  return (await res.json()) as ModelJson
}

async function list(query = '', token = keys.dana): Promise<ModelJson[]> {
  const res = await call('GET', `/models${query}`, undefined, token)
  expect(res.status).toBe(200)
  return (await res.json()) as ModelJson[]
}

async function badPaths(res: Response): Promise<string[]> {
  const body = await problem(res, 400)
  expect(body.errors?.length).toBeGreaterThan(0)
  return body.errors!.map((e) => e.path)
}

const count = (table: string) => world.count(table)
const audit = () =>
  world.execute<{ account_id: string; actor: string; action: string; object_type: string; object_id: string; request_id: string | null; at: number }>(
    sql`SELECT account_id, actor, action, object_type, object_id, request_id, at FROM audit_log ORDER BY id`,
  )

/** a model of acme (dana's) that acme's truck 1 uses */
async function acmeModelInUse(body: Record<string, unknown> = {}): Promise<ModelJson> {
  const model = await created({ name: 'Acme GT06', protocol: 'gt06', commands: [{ name: 'Engine stop', widget: BUTTON }, { name: 'Set APN', widget: FORM }], ...body })
  expect((await call('PATCH', `/devices/${ids.truck1}`, { model: model.id })).status).toBe(200)
  return model
}

const BUTTON = { type: 'button', label: 'Reboot', confirm: true }
const FORM = { type: 'form', fields: [{ name: 'interval', type: 'number', label: 'Seconds' }] }
const patterned = (pattern: unknown) => ({ type: 'form', fields: [{ name: 'value', type: 'text', label: 'Value', pattern }] })

describe('GET /models', () => {
  test('the catalogue with its commands as imported, by name then id', async () => {
    const models = await list()
    expect(models.map((m) => m.name)).toEqual(['Bare', 'GT06N'])
    expect(models[0]).toEqual({ id: ids.bare, name: 'Bare', protocol: 'osmand', commands: [], account: null })
    expect(models[1]!.commands.map((c) => c.id)).toEqual([ids.engineStop, ids.setApn])
    expect(models[1]!.commands[0]).toEqual({
      id: ids.engineStop, name: 'Engine stop', widget: { type: 'button', label: 'Stop engine', confirm: true, confirm_message: 'The vehicle will stop. Continue?' },
    })
    expect(await (await call('GET', `/models/${ids.gt06.toUpperCase()}`)).json()).toEqual(models[1]!)
  })

  test('limit and offset page it; past the end is []', async () => {
    const same = await created({ name: 'Bare' })
    const all = await list()
    expect(all.map((m) => m.name)).toEqual(['Bare', 'Bare', 'GT06N'])
    // equal names by id
    expect(all.slice(0, 2).map((m) => m.id)).toEqual([ids.bare, same.id].sort())
    expect((await list('?limit=1&offset=2')).map((m) => m.name)).toEqual(['GT06N'])
    expect(await list('?offset=3')).toEqual([])
    expect(await badPaths(await call('GET', '/models?limit=0'))).toEqual(['/limit'])
    expect(await badPaths(await call('GET', '/models?limit=1001'))).toEqual(['/limit'])
  })

  test("server-wide models are every user's to read; an account's model is its own: another account's admin gets 404 and does not list it", async () => {
    const own = await created({ name: 'Acme only', protocol: 'teltonika' })
    expect(own.account).toBe(ids.acme)
    // acme: its admin and its members see it beside the server-wide ones
    for (const token of [keys.dana, keys.alice, keys.bob]) expect((await list('', token)).map((m) => m.name)).toEqual(['Acme only', 'Bare', 'GT06N'])
    expect(await (await call('GET', `/models/${own.id}`, undefined, keys.bob)).json()).toEqual(own)
    // globex: the server-wide ones only
    for (const token of [keys.erin, keys.carol]) expect((await list('', token)).map((m) => m.id)).toEqual([ids.bare, ids.gt06])
    expect((await problem(await call('GET', `/models/${own.id}`, undefined, keys.erin), 404)).detail).not.toContain('Acme')
    expect((await call('GET', `/models/${ids.gt06}`, undefined, keys.carol)).status).toBe(200)
  })

  test('a share token gets 403, no credentials 401; an unknown model 404', async () => {
    const link = (await (await call('POST', '/devices/share', { devices: [ids.truck1], ttl: 3600 }, keys.alice)).json()) as { token: string }
    await problem(await call('GET', '/models', undefined, link.token), 403)
    await problem(await call('GET', '/models', undefined, null), 401)
    await problem(await call('GET', `/models/${UNKNOWN}`), 404)
    expect(await badPaths(await call('GET', '/models/gt06'))).toEqual(['/id'])
  })
})

describe('POST /models', () => {
  test('201 with the model, a Location, server-chosen ids, commands in order; audited', async () => {
    const res = await call('POST', '/models', { name: 'FMB920', protocol: 'teltonika', commands: [{ name: 'Reboot', widget: BUTTON }, { name: 'Interval', widget: FORM }] })
    expect(res.status).toBe(201)
    const model = (await res.json()) as ModelJson
    expect(Object.keys(model).sort()).toEqual(['account', 'commands', 'id', 'name', 'protocol'])
    expect(res.headers.get('location')).toBe(`/models/${model.id}`)
    expect(model).toMatchObject({ name: 'FMB920', protocol: 'teltonika', account: ids.acme })
    expect(model.commands.map((c) => [c.name, c.widget])).toEqual([['Reboot', BUTTON], ['Interval', FORM]])
    for (const c of model.commands) expect(c.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(await (await call('GET', `/models/${model.id}`)).json()).toEqual(model)
    expect(await audit()).toEqual([
      { account_id: ids.acme, actor: ids.dana, action: 'create', object_type: 'model', object_id: model.id, request_id: res.headers.get('x-request-id'), at: NOW },
    ])

    // devices of the new model offer its commands
    const device = await call('POST', '/devices', { alias: 'Tracker', model: model.id, imei: '352093081234567', groups: [ids.trucks] })
    expect(device.status).toBe(201)
    const { id } = (await device.json()) as { id: string }
    expect(await (await call('GET', `/devices/${id}/commands`, undefined, keys.alice)).json()).toEqual(model.commands)
    // and only acme's: globex's admin cannot give it to a device of theirs (404, as an unknown model)
    await problem(await call('POST', '/devices', { alias: 'Car 2', model: model.id, imei: '352093081234568' }, keys.erin), 404)
    await problem(await call('PATCH', `/devices/${ids.globexCar}`, { model: model.id }, keys.erin), 404)
    expect((await world.execute(sql`SELECT model_id FROM devices WHERE id = ${ids.globexCar}`))[0]).toEqual({ model_id: ids.bare })
  })

  test('a field may declare a pattern: kept as written', async () => {
    const model = await created({ name: 'Patterned', commands: [{ name: 'Interval', widget: patterned('[1-9][0-9]{0,4}') }] })
    expect(model.commands[0]!.widget).toEqual(patterned('[1-9][0-9]{0,4}'))
  })

  test('name alone is enough; a command may bring its own new id (as in an import), in any case', async () => {
    expect(await created({ name: 'Plain' })).toMatchObject({ name: 'Plain', protocol: null, commands: [], account: ids.acme })
    const own = '0e000000-0000-4000-8000-0000000000aa'
    const model = await created({ name: 'Own ids', protocol: null, commands: [{ id: own.toUpperCase(), name: 'Reboot', widget: BUTTON }] })
    expect(model.commands.map((c) => c.id)).toEqual([own])
  })

  test.each([
    ['no name', { protocol: 'gt06' }, ['/name']],
    ['a blank name', { name: '  ' }, ['/name']],
    ['a name of 101 characters', { name: 'x'.repeat(101) }, ['/name']],
    ['an unknown field', { name: 'M', vendor: 'Concox' }, ['/vendor']],
    ['an id (the server chooses it)', { id: UNKNOWN, name: 'M' }, ['/id']],
    ['a protocol that is not a string', { name: 'M', protocol: 6 }, ['/protocol']],
    ['commands that are not an array', { name: 'M', commands: {} }, ['/commands']],
    ['a widget without a type', { name: 'M', commands: [{ name: 'C', widget: { label: 'x' } }] }, ['/commands/0/widget/type']],
    ['a widget that is not an object', { name: 'M', commands: [{ name: 'C', widget: 'button' }] }, ['/commands/0/widget']],
    ['a command without a widget', { name: 'M', commands: [{ name: 'C' }] }, ['/commands/0/widget']],
    ['an unknown command field', { name: 'M', commands: [{ name: 'C', widget: BUTTON, colour: 'red' }] }, ['/commands/0/colour']],
    ['a malformed command id', { name: 'M', commands: [{ id: 'reboot', name: 'C', widget: BUTTON }] }, ['/commands/0/id']],
    ['a field pattern that is not a regular expression', { name: 'M', commands: [{ name: 'C', widget: patterned('[0-9') }] }, ['/commands/0/widget/fields/0/pattern']],
    ['a field pattern that could be slow to match', { name: 'M', commands: [{ name: 'C', widget: patterned('(a+)+$') }] }, ['/commands/0/widget/fields/0/pattern']],
    ['a field pattern that is not a string', { name: 'M', commands: [{ name: 'C', widget: patterned(5) }] }, ['/commands/0/widget/fields/0/pattern']],
    [
      'a 17th different pattern',
      { name: 'M', commands: Array.from({ length: 17 }, (_, i) => ({ name: `C${i}`, widget: patterned(`[0-9]{${i + 1}}`) })) },
      ['/commands/16/widget/fields/0/pattern'],
    ],
    [
      'a repeated command id',
      { name: 'M', commands: [{ id: UNKNOWN, name: 'A', widget: BUTTON }, { id: UNKNOWN.toUpperCase(), name: 'B', widget: BUTTON }] },
      ['/commands/1/id'],
    ],
  ])('%s is 400 naming the field, and nothing is written', async (_, body, paths) => {
    expect(await badPaths(await call('POST', '/models', body))).toEqual(paths)
    expect(await count('models')).toBe(2)
    expect(await count('commands')).toBe(2)
    expect(await audit()).toEqual([])
  })

  test("a command id of another model is 409, and nothing is written", async () => {
    await problem(await call('POST', '/models', { name: 'Thief', commands: [{ id: ids.engineStop, name: 'Mine', widget: BUTTON }] }), 409)
    expect(await count('models')).toBe(2)
    expect((await list())[1]!.commands[0]!.name).toBe('Engine stop')
  })

  test('a member and a share token get 403, no credentials 401, and nothing is written', async () => {
    await problem(await call('POST', '/models', { name: 'M' }, keys.alice), 403)
    const link = (await (await call('POST', '/devices/share', { devices: [ids.truck1], ttl: 3600 }, keys.alice)).json()) as { token: string }
    await problem(await call('POST', '/models', { name: 'M' }, link.token), 403)
    await problem(await call('POST', '/models', { name: 'M' }, null), 401)
    expect(await count('models')).toBe(2)
  })
})

describe('PATCH /models/{id}', () => {
  test("changes the fields sent; commands replace the list, keeping those named by id; the account's devices see it at once", async () => {
    const mine = await acmeModelInUse()
    const [stop, apn] = mine.commands
    const res = await call('PATCH', `/models/${mine.id}`, {
      name: 'Acme GT06 v2',
      commands: [{ id: apn!.id, name: 'Set APN', widget: { type: 'form', fields: [] } }, { name: 'Reboot', widget: BUTTON }],
    })
    expect(res.status).toBe(200)
    const model = (await res.json()) as ModelJson
    expect(model).toMatchObject({ id: mine.id, name: 'Acme GT06 v2', protocol: 'gt06', account: ids.acme })
    expect(model.commands.map((c) => c.name)).toEqual(['Set APN', 'Reboot'])
    expect(model.commands[0]).toEqual({ id: apn!.id, name: 'Set APN', widget: { type: 'form', fields: [] } })
    expect(model.commands[1]!.id).not.toBe(stop!.id)
    expect(await (await call('GET', `/devices/${ids.truck1}/commands`, undefined, keys.alice)).json()).toEqual(model.commands)
    expect((await audit()).slice(2)).toEqual([
      { account_id: ids.acme, actor: ids.dana, action: 'update', object_type: 'model', object_id: mine.id, request_id: res.headers.get('x-request-id'), at: NOW },
    ])

    // without commands, they stay; protocol null clears it
    const renamed = (await (await call('PATCH', `/models/${mine.id}`, { protocol: null })).json()) as ModelJson
    expect(renamed).toEqual({ ...model, protocol: null })
    // an empty list removes them all
    expect(((await (await call('PATCH', `/models/${mine.id}`, { commands: [] })).json()) as ModelJson).commands).toEqual([])
    expect(await count('commands')).toBe(2)
  })

  test("a command id of another model is 409; bad input 400; an unknown model 404; nothing is written", async () => {
    const mine = await acmeModelInUse()
    const other = await created({ name: 'Other', commands: [{ name: 'Reboot', widget: BUTTON }] })
    await problem(await call('PATCH', `/models/${mine.id}`, { commands: [{ id: other.commands[0]!.id, name: 'Mine', widget: BUTTON }] }), 409)
    await problem(await call('PATCH', `/models/${mine.id}`, { commands: [{ id: ids.engineStop, name: 'Mine', widget: BUTTON }] }), 409)
    expect(await badPaths(await call('PATCH', `/models/${mine.id}`, { name: '', colour: 'red' }))).toEqual(expect.arrayContaining(['/name', '/colour']))
    expect(await badPaths(await call('PATCH', `/models/${mine.id}`, { commands: [{ name: 'x', widget: {} }] }))).toEqual(['/commands/0/widget/type'])
    await problem(await call('PATCH', `/models/${UNKNOWN}`, { name: 'X' }), 404)
    const stored = (await list()).find((m) => m.id === mine.id)!
    expect(stored).toEqual(mine)
    expect((await audit()).map((e) => [e.action, e.object_id])).toEqual([
      ['create', mine.id],
      ['update', ids.truck1],
      ['create', other.id],
    ])
  })

  test('a server-wide model is read-only over the API: 403 for PATCH and DELETE, its admin told the operator changes it; nothing changes', async () => {
    const before = await list()
    for (const token of [keys.dana, keys.erin]) {
      const patched = await problem(await call('PATCH', `/models/${ids.gt06}`, { name: 'Hijacked', commands: [] }, token), 403)
      expect(patched.detail).toContain('server-wide')
      expect(patched.detail).toContain('tracker model update')
      await problem(await call('DELETE', `/models/${ids.bare}`, undefined, token), 403)
    }
    expect(await list()).toEqual(before)
    expect(await audit()).toEqual([])
  })

  test("another account's model is 404 for PATCH and DELETE, as an unknown one; nothing changes", async () => {
    const mine = await acmeModelInUse()
    await problem(await call('PATCH', `/models/${mine.id}`, { name: 'Hijacked' }, keys.erin), 404)
    await problem(await call('DELETE', `/models/${mine.id}`, undefined, keys.erin), 404)
    expect(await (await call('GET', `/models/${mine.id}`)).json()).toEqual(mine)
    expect((await audit()).every((e) => e.account_id === ids.acme)).toBe(true)
  })

  test('a member and a share token get 403, no credentials 401', async () => {
    const mine = await acmeModelInUse()
    await problem(await call('PATCH', `/models/${mine.id}`, { name: 'X' }, keys.alice), 403)
    const link = (await (await call('POST', '/devices/share', { devices: [ids.truck1], ttl: 3600 }, keys.alice)).json()) as { token: string }
    await problem(await call('PATCH', `/models/${mine.id}`, { name: 'X' }, link.token), 403)
    await problem(await call('PATCH', `/models/${mine.id}`, { name: 'X' }, null), 401)
    expect((await list()).find((m) => m.id === mine.id)!.name).toBe('Acme GT06')
  })
})

describe('DELETE /models/{id}', () => {
  test('204 for a model no device uses: it and its commands are gone; audited', async () => {
    const model = await created({ name: 'Spare', commands: [{ name: 'Reboot', widget: BUTTON }] })
    const res = await call('DELETE', `/models/${model.id}`)
    expect(res.status).toBe(204)
    await problem(await call('GET', `/models/${model.id}`), 404)
    expect(await count('commands')).toBe(2)
    expect((await audit()).map((e) => [e.action, e.object_id, e.request_id])).toEqual([
      ['create', model.id, expect.any(String)],
      ['delete', model.id, res.headers.get('x-request-id')],
    ])
    await problem(await call('DELETE', `/models/${model.id}`), 404)
  })

  test('409 while a device uses it; 204 once none does', async () => {
    const mine = await acmeModelInUse()
    const conflict = await problem(await call('DELETE', `/models/${mine.id}`), 409)
    expect(conflict.detail).not.toContain(ids.truck1)
    expect((await call('DELETE', `/devices/${ids.truck1}`)).status).toBe(204)
    expect((await call('DELETE', `/models/${mine.id}`)).status).toBe(204)
    expect((await list()).map((m) => m.id)).toEqual([ids.bare, ids.gt06])
  })

  test('a member and a share token get 403, no credentials 401; a malformed id 400', async () => {
    const model = await created({ name: 'Spare' })
    await problem(await call('DELETE', `/models/${model.id}`, undefined, keys.alice), 403)
    const link = (await (await call('POST', '/devices/share', { devices: [ids.truck1], ttl: 3600 }, keys.alice)).json()) as { token: string }
    await problem(await call('DELETE', `/models/${model.id}`, undefined, link.token), 403)
    await problem(await call('DELETE', `/models/${model.id}`, undefined, null), 401)
    expect(await badPaths(await call('DELETE', '/models/spare'))).toEqual(['/id'])
    expect((await call('GET', `/models/${model.id}`)).status).toBe(200)
  })
})

describe('a model made in the console can be sent (issue 20, item 2)', () => {
  test("protocol must be one the server speaks: 400 naming it on POST and PATCH, and nothing changes", async () => {
    expect(await badPaths(await call('POST', '/models', { name: 'Mystery', protocol: 'gt-06' }))).toEqual(['/protocol'])
    const model = await created({ name: 'Acme H02', protocol: 'h02' })
    expect(await badPaths(await call('PATCH', `/models/${model.id}`, { protocol: 'free text' }))).toEqual(['/protocol'])
    expect((await (await call('GET', `/models/${model.id}`)).json()) as ModelJson).toMatchObject({ protocol: 'h02' })
    // the OpenAPI document lists them, so a client (the console's editor) offers exactly these
    const openapi = (await (await call('GET', '/openapi/json', undefined, null)).json()) as { paths: Record<string, { post?: { requestBody?: { content: Record<string, { schema: unknown }> } } }> }
    const text = JSON.stringify(openapi.paths['/models']!.post!.requestBody)
    for (const name of ['osmand', 'gt06', 'teltonika', 'h02']) expect(text).toContain(`"${name}"`)
    // the console's editor offers the names alone (no decoders in its bundle): the same list
    expect([...PROTOCOL_NAMES] as string[]).toEqual(PROTOCOLS.map((protocol) => protocol.name))
  })

  test('send text, a field pattern, required and optional fields: a required field empty is 400, an optional one left empty is never sent', async () => {
    const apn = {
      name: 'Set APN',
      widget: {
        type: 'form',
        fields: [
          { name: 'apn', type: 'text', label: 'APN', pattern: '[A-Za-z0-9.-]{1,40}', required: true },
          { name: 'user', type: 'text', label: 'User', required: false },
        ],
      },
      send: { text: 'APN,{apn},{user}#' },
    }
    const notBoolean = { ...apn, widget: { ...apn.widget, fields: [{ ...apn.widget.fields[0], required: 'yes' }] } }
    expect(await badPaths(await call('POST', '/models', { name: 'X', protocol: 'gt06', commands: [notBoolean] }))).toEqual(['/commands/0/widget/fields/0/required'])
    const model = await acmeModelInUse({ commands: [apn] })
    const setApn = model.commands[0]!.id
    const send = (body: unknown) => call('POST', `/devices/${ids.truck1}/commands/${setApn}`, body)
    expect(await badPaths(await send({ apn: '', user: 'x' }))).toEqual(['/apn'])
    expect(await badPaths(await send({ apn: 'bad apn!' }))).toEqual(['/apn'])
    const queued = await send({ apn: 'internet' })
    expect(queued.status).toBe(202)
    expect(((await queued.json()) as { text: string }).text).toBe('APN,internet#')
    const withUser = await send({ apn: 'internet', user: 'me' })
    expect(((await withUser.json()) as { text: string }).text).toBe('APN,internet,me#')
  })
})
