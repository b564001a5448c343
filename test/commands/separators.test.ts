/**
 * Issue 19, item 8: a form value cannot smuggle another command or parameter into the text a device
 * receives. A value holding the protocol's separators (GT06 `#` and `,`; Teltonika `;`; H02 `,`,
 * `*` and `#`) is 400 naming the field, unless the field's pattern allows it; nothing is queued.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ids, keys, problem } from '../support/world'
import { commandIds, openCommandWorld, type EngineCommandWorld } from './support'

let world: EngineCommandWorld
beforeEach(async () => {
  world = await openCommandWorld()
})
afterEach(() => world.close())

const send = (device: string, command: string, body: unknown) => world.call('POST', `/devices/${device}/commands/${command}`, { token: keys.alice, body })
const queued = () => world.world.count('sent_commands')

/** a model of acme's with one form command, given to `device` */
async function formModel(device: string, protocol: string, text: string, field: Record<string, unknown>): Promise<string> {
  const res = await world.call('POST', '/models', {
    token: keys.dana,
    body: { name: `${protocol} form`, protocol, commands: [{ name: 'Form', widget: { type: 'form', fields: [{ name: 'value', type: 'text', label: 'Value', ...field }] }, send: { text } }] },
  })
  expect(res.status).toBe(201)
  const model = (await res.json()) as { id: string; commands: { id: string }[] }
  expect((await world.call('PATCH', `/devices/${device}`, { token: keys.dana, body: { model: model.id } })).status).toBe(200)
  return model.commands[0]!.id
}

async function refused(res: Response, path: string, separator: string) {
  const body = await problem(res, 400)
  expect(body.errors).toEqual([{ path, message: expect.stringContaining(`must not contain ${JSON.stringify(separator)}`) }])
  return body
}

describe('GT06: # ends a command, , separates its parameters', () => {
  test('an APN holding "#RELAY,1" (a second command) or a "," (another parameter) is 400 naming the field; nothing is queued', async () => {
    await refused(await send(ids.truck1, ids.setApn, { apn: 'internet#RELAY,1', password: '' }), '/apn', '#')
    await refused(await send(ids.truck1, ids.setApn, { apn: 'internet,evil', password: '' }), '/apn', ',')
    // a password is named, never quoted
    const body = await refused(await send(ids.truck1, ids.setApn, { apn: 'internet', password: 'se#cret' }), '/password', '#')
    expect(JSON.stringify(body)).not.toContain('se#cret')
    expect(await queued()).toBe(0)
    // the same form without them goes
    expect((await send(ids.truck1, ids.setApn, { apn: 'internet.example', password: 'secret' })).status).toBe(202)
  })

  test("a field whose pattern allows a separator takes it; a value the pattern refuses is 400 saying so", async () => {
    const command = await formModel(ids.truck1, 'gt06', 'SOS,A,{value}#', { pattern: '[0-9]{3,15}(,[0-9]{3,15}){0,2}' })
    const res = await send(ids.truck1, command, { value: '0612345678,0698765432' })
    expect(res.status).toBe(202)
    expect(((await res.json()) as { text: string }).text).toBe('SOS,A,0612345678,0698765432#')
    const body = await problem(await send(ids.truck1, command, { value: '0612345678#RELAY,1' }), 400)
    expect(body.errors).toEqual([{ path: '/value', message: "must match the field's pattern [0-9]{3,15}(,[0-9]{3,15}){0,2}" }])
    expect(await queued()).toBe(1)
  })

  test("a number field's pattern is matched against the number as it is sent", async () => {
    expect((await send(ids.truck1, commandIds.setInterval, { seconds: 30 })).status).toBe(202)
    const command = await formModel(ids.truck1, 'gt06', 'TIMER,{value}#', { type: 'number', pattern: '[1-9][0-9]{0,4}' })
    expect((await send(ids.truck1, command, { value: 60 })).status).toBe(202)
    for (const value of [0, -5, 1.5, 100_000]) {
      expect((await problem(await send(ids.truck1, command, { value }), 400)).errors![0]!.path).toBe('/value')
    }
  })
})

describe('Teltonika: ; separates the parameters one setparam sets', () => {
  test('an APN holding ";2004:…" (another parameter: the server address) is 400; a "," is no separator there', async () => {
    const command = await formModel(ids.truck2, 'teltonika', 'setparam 2001:{value}', {})
    await refused(await send(ids.truck2, command, { value: 'internet;2004:evil.example' }), '/value', ';')
    expect(await queued()).toBe(0)
    const res = await send(ids.truck2, command, { value: 'a,b' })
    expect(res.status).toBe(202)
    expect(((await res.json()) as { text: string }).text).toBe('setparam 2001:a,b')
  })
})

describe('H02: , separates parameters, * and # open and close a frame', () => {
  test.each([
    [',', '30,1'],
    ['#', '30#'],
    ['*', '*HQ'],
  ])('a value holding %p is 400 naming the field', async (separator, value) => {
    const command = await formModel(ids.truck2, 'h02', 'S71,22,{value}', {})
    await refused(await send(ids.truck2, command, { value }), '/value', separator)
    expect(await queued()).toBe(0)
  })
})

test('a pattern stored before patterns were checked, that could be slow to match, makes the command 409, not a stalled server', async () => {
  const command = await formModel(ids.truck1, 'gt06', 'X,{value}#', {})
  // as an older version could have stored it: widgets were kept as written
  const widget = JSON.stringify({ type: 'form', fields: [{ name: 'value', type: 'text', label: 'V', pattern: '(a|aa)+$' }] })
  await world.world.execute(sql`UPDATE commands SET widget = ${widget} WHERE id = ${command}`)
  // matched, this value would backtrack for minutes: the pattern is judged, never run
  const body = await problem(await send(ids.truck1, command, { value: `${'a'.repeat(40)}!` }), 409)
  expect(body.detail).toContain('pattern')
  expect(await queued()).toBe(0)
})
