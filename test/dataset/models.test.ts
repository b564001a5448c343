/**
 * Models in the import: imported models are server-wide; a device may use a server-wide model or
 * one of its own account's; built-in ids are the server's; a model an --upsert changes is in the
 * audit log of every account whose devices use it.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { DatasetError } from '../../src/dataset/service'
import { baseDataset, ids, keys, openWorld, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  world = await openWorld()
})
afterEach(() => world.close())

const modelAudit = () =>
  world.execute<{ account_id: string; actor: string; action: string; object_id: string }>(
    sql`SELECT account_id, actor, action, object_id FROM audit_log WHERE object_type = 'model' ORDER BY id`,
  )

async function problems(document: object, upsert = false): Promise<string[]> {
  try {
    await world.importMore(document, { upsert })
  } catch (error) {
    if (error instanceof DatasetError) return error.problems.map((p) => `${p.path}: ${p.message}`)
    throw error
  }
  throw new Error('the import was accepted')
}

/** a model of acme's, made by its admin over the API */
async function acmeModel(): Promise<string> {
  const res = await world.call('POST', '/models', { token: keys.dana, body: { name: 'Acme only', protocol: 'gt06' } })
  expect(res.status).toBe(201)
  return ((await res.json()) as { id: string }).id
}

describe('models in the import', () => {
  test("a device may not use another account's model, whether the device is new or moved by --upsert; nothing is written", async () => {
    const model = await acmeModel()
    const car = baseDataset().devices.find((d) => d.id === ids.globexCar)!
    const newCar = { ...car, id: '0f000000-0000-4000-8000-0000000000aa', imei: '359710049095099', serial: 'S-NEW', model }
    expect(await problems({ devices: [newCar] })).toEqual([`/devices/0/model: model ${model} belongs to another account: a device may use a server-wide model or one of its own account's`])
    expect(await problems({ devices: [{ ...car, model }] }, true)).toHaveLength(1)
    // a truck of acme's moved to globex keeping acme's model
    const truck = baseDataset().devices.find((d) => d.id === ids.truck1)!
    expect(await problems({ devices: [{ ...truck, account: ids.globex, groups: [], model }] }, true)).toHaveLength(1)
    expect((await world.execute(sql`SELECT model_id FROM devices WHERE id = ${ids.globexCar}`))[0]).toEqual({ model_id: ids.bare })
    // acme's own device may
    await world.importMore({ devices: [{ ...truck, model }] }, { upsert: true })
    expect((await world.execute(sql`SELECT model_id FROM devices WHERE id = ${ids.truck1}`))[0]).toEqual({ model_id: model })
  })

  test("--upsert of an account's model keeps its account; a change to a model is audited in every account using it, an unchanged one not", async () => {
    const model = await acmeModel()
    const [gt06, bare] = baseDataset().models
    await world.importMore({ models: [{ id: model, name: 'Acme renamed', protocol: 'gt06' }, gt06!] }, { upsert: true, now: 1_800_000_000_000 })
    expect((await world.execute(sql`SELECT name, account_id FROM models WHERE id = ${model}`))[0]).toEqual({ name: 'Acme renamed', account_id: ids.acme })
    // gt06 was imported as it is: no change, no entry
    expect((await modelAudit()).slice(1)).toEqual([{ account_id: ids.acme, actor: 'cli', action: 'update', object_id: model }])

    // Bare: acme's van and globex's car use it
    await world.importMore({ models: [{ ...bare!, name: 'Bare v2' }] }, { upsert: true })
    expect((await modelAudit()).slice(2)).toEqual([
      { account_id: ids.acme, actor: 'cli', action: 'update', object_id: ids.bare },
      { account_id: ids.globex, actor: 'cli', action: 'update', object_id: ids.bare },
    ])
  })

  test("the built-in models' ids and their commands' are the server's: a file may not take them", async () => {
    const gt06Builtin = 'b0000002-0000-4000-8000-000000000000'
    const positionBuiltin = 'b0000002-0000-4000-8000-000000000003'
    expect(await problems({ models: [{ id: gt06Builtin, name: 'Mine' }] }, true)).toEqual([`/models/0/id: ${gt06Builtin} is a built-in model's id: the server keeps that model up to date itself`])
    const widget = { type: 'button', label: 'x', confirm: false }
    expect(await problems({ models: [{ id: '0d000000-0000-4000-8000-0000000000aa', name: 'Mine', commands: [{ id: positionBuiltin, name: 'x', widget }] }] })).toEqual([
      `/models/0/commands/0/id: ${positionBuiltin} is a command of a built-in model`,
    ])
  })

  test('a field pattern that is not a regular expression, or that could be slow to match, is refused naming it', async () => {
    const field = (pattern: unknown) => ({ type: 'form', fields: [{ name: 'v', type: 'text', label: 'V' }, { name: 'w', type: 'text', label: 'W', pattern }] })
    const document = {
      models: [
        {
          id: '0d000000-0000-4000-8000-0000000000aa',
          commands: [
            { id: '0e000000-0000-4000-8000-0000000000a1', widget: field('[0-9') },
            { id: '0e000000-0000-4000-8000-0000000000a2', widget: field('(a|a)*b') },
            { id: '0e000000-0000-4000-8000-0000000000a3', widget: field(5) },
            { id: '0e000000-0000-4000-8000-0000000000a4', widget: field('[0-9]{1,5}') },
          ],
        },
      ],
    }
    expect((await problems(document)).map((p) => p.split(':')[0])).toEqual([
      '/models/0/commands/0/widget/fields/1/pattern',
      '/models/0/commands/1/widget/fields/1/pattern',
      '/models/0/commands/2/widget/fields/1/pattern',
    ])
  })
})
