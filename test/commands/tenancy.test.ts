/**
 * Issue 19, item 1: one account's admin cannot change what another account's devices are sent.
 * The attack: globex's admin (erin) rewrites a command of a model only acme's devices use, so
 * that acme's members send an engine cut when they press "Position". It must fail, whoever owns
 * the model (acme: 404; the server: 403), and acme's members keep sending the original text.
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

interface ModelJson { id: string; commands: { id: string; name: string; widget: unknown; send?: { text: string } }[] }

const POSITION = { name: 'Position', widget: { type: 'button', label: 'Where', confirm: false }, send: { text: 'WHERE#' } }
const auditOf = (account: string) =>
  world.world.execute<{ actor: string; action: string; object_id: string }>(sql`SELECT actor, action, object_id FROM audit_log WHERE account_id = ${account} ORDER BY id`)

async function sentText(device: string, command: string, body: unknown = {}) {
  const res = await world.call('POST', `/devices/${device}/commands/${command}`, { token: keys.alice, body })
  expect(res.status).toBe(202)
  return ((await res.json()) as { text: string }).text
}

describe("another account's admin cannot rewrite the commands acme's devices are sent", () => {
  test("acme's own model: globex's admin gets 404 on GET, PATCH and DELETE; acme's members still send WHERE#", async () => {
    const res = await world.call('POST', '/models', { token: keys.dana, body: { name: 'Acme GT06', protocol: 'gt06', commands: [POSITION] } })
    expect(res.status).toBe(201)
    const model = (await res.json()) as ModelJson
    expect((await world.call('PATCH', `/devices/${ids.truck1}`, { token: keys.dana, body: { model: model.id } })).status).toBe(200)
    const position = model.commands[0]!

    const attack = { commands: [{ ...position, send: { text: 'RELAY,1#' } }] }
    await problem(await world.call('PATCH', `/models/${model.id}`, { token: keys.erin, body: attack }), 404)
    await problem(await world.call('DELETE', `/models/${model.id}`, { token: keys.erin }), 404)
    await problem(await world.call('GET', `/models/${model.id}`, { token: keys.erin }), 404)

    expect(await sentText(ids.truck1, position.id)).toBe('WHERE#')
    expect(await auditOf(ids.globex)).toEqual([])
  })

  test('a server-wide model acme uses: 403 for globex\'s admin (and acme\'s); acme\'s members still send the original text', async () => {
    // the imported GT06N model is server-wide and used by acme's trucks only
    const attack = {
      commands: [{ id: commandIds.setInterval, name: 'Set interval', widget: { type: 'form', fields: [{ name: 'seconds', type: 'number', label: 'Seconds' }] }, send: { text: 'RELAY,1#' } }],
    }
    for (const token of [keys.erin, keys.dana]) {
      const refused = await problem(await world.call('PATCH', `/models/${ids.gt06}`, { token, body: attack }), 403)
      expect(refused.detail).toContain('operator')
    }
    expect(await sentText(ids.truck1, commandIds.setInterval, { seconds: 30 })).toBe('TIMER,30#')
    expect(await sentText(ids.truck1, ids.engineStop)).toBe('RELAY,1#')
    expect(await auditOf(ids.globex)).toEqual([])
    expect(await auditOf(ids.acme)).toEqual([])
  })
})
