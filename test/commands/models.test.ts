/** A model's command carries `send` through the import and POST/PATCH /models; GET /devices/{id}/commands keeps its shape. */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { ids, keys, problem } from '../support/world'
import { openCommandWorld, type EngineCommandWorld } from './support'

let world: EngineCommandWorld
beforeEach(async () => {
  world = await openCommandWorld()
})
afterEach(() => world.close())

const model = async (id: string) => (await (await world.call('GET', `/models/${id}`, { token: keys.dana })).json()) as { commands: Record<string, unknown>[] }

describe('send on a model\'s commands', () => {
  test('the import stores it; /models shows it; GET /devices/{id}/commands does not', async () => {
    const commands = (await model(ids.gt06)).commands
    expect(commands[0]).toEqual(expect.objectContaining({ id: ids.engineStop, send: { text: 'RELAY,1#' } }))
    expect(commands.find((c) => c.name === 'Reboot')).not.toHaveProperty('send')
    const forDevice = (await (await world.call('GET', `/devices/${ids.truck1}/commands`, { token: keys.alice })).json()) as Record<string, unknown>[]
    for (const command of forDevice) expect(Object.keys(command).sort()).toEqual(['id', 'name', 'widget'])
  })

  test('POST /models takes it; PATCH without it removes it, and the command can no longer be sent', async () => {
    const res = await world.call('POST', '/models', {
      token: keys.dana,
      body: { name: 'FMB920', protocol: 'teltonika', commands: [{ name: 'Position', widget: { type: 'button', label: 'Where', confirm: false }, send: { text: 'getgps' } }] },
    })
    expect(res.status).toBe(201)
    const created = (await res.json()) as { id: string; commands: { id: string; send?: unknown }[] }
    expect(created.commands[0]!.send).toEqual({ text: 'getgps' })
    expect((await model(created.id)).commands[0]!.send).toEqual({ text: 'getgps' })

    // an account's own model (server-wide ones are the operator's): truck 1 uses it
    const own = (await (
      await world.call('POST', '/models', {
        token: keys.dana,
        body: { name: 'Acme GT06', protocol: 'gt06', commands: [{ name: 'Engine stop', widget: { type: 'button', label: 'Stop', confirm: true }, send: { text: 'RELAY,1#' } }] },
      })
    ).json()) as { id: string; commands: { id: string; send?: unknown }[] }
    expect((await world.call('PATCH', `/devices/${ids.truck1}`, { token: keys.dana, body: { model: own.id } })).status).toBe(200)
    expect((await world.call('POST', `/devices/${ids.truck1}/commands/${own.commands[0]!.id}`, { token: keys.alice, body: {} })).status).toBe(202)
    const withoutSend = (await model(own.id)).commands.map(({ send: _, ...rest }) => rest)
    const patched = await world.call('PATCH', `/models/${own.id}`, { token: keys.dana, body: { commands: withoutSend } })
    expect(patched.status).toBe(200)
    expect((await model(own.id)).commands.every((c) => !('send' in c))).toBe(true)
    await problem(await world.call('POST', `/devices/${ids.truck1}/commands/${own.commands[0]!.id}`, { token: keys.alice, body: {} }), 409)
  })

  test.each([
    ['an empty text', { text: '' }],
    ['an unknown key', { text: 'RELAY,1#', retries: 3 }],
    ['a string instead of an object', 'RELAY,1#'],
    ['a text of 513 characters', { text: 'x'.repeat(513) }],
  ])('a bad send is 400 naming it: %s', async (_, send) => {
    const res = await world.call('POST', '/models', {
      token: keys.dana,
      body: { name: 'Bad', protocol: 'gt06', commands: [{ name: 'Stop', widget: { type: 'button' }, send }] },
    })
    const body = await problem(res, 400)
    expect(body.errors!.some((e) => e.path.startsWith('/commands/0/send'))).toBe(true)
  })

  test('the import refuses a bad send, naming it', async () => {
    const document = {
      models: [{ id: '0d000000-0000-4000-8000-0000000000aa', name: 'X', commands: [{ id: '0e000000-0000-4000-8000-0000000000aa', name: 'Stop', widget: { type: 'button' }, send: { text: '' } }] }],
    }
    await expect(world.world.importMore(document)).rejects.toThrow(/\/models\/0\/commands\/0\/send\/text/)
  })
})
