/** The example fleet's models carry real command texts, and a command to its bus goes into the queue. */
import { afterEach, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type EngineWorld, openWorld } from '../support/world'

let world: EngineWorld | undefined
afterEach(async () => {
  await world?.close()
  world = undefined
})

test('examples/fleet.json: GT06 and Teltonika commands with their texts; Set APN sends the form with the password hidden', async () => {
  world = await openWorld(JSON.parse(readFileSync(join(import.meta.dir, '../../examples/fleet.json'), 'utf8')))
  const call = (method: string, path: string, body?: unknown) => world!.call(method, path, { token: 'alice-demo-key-0001', body })
  const models = (await (await call('GET', '/models')).json()) as { protocol: string; commands: { id: string; name: string; send?: { text: string } }[] }[]
  const texts = Object.fromEntries(models.map((m) => [m.protocol, m.commands.map((c) => c.send?.text)]))
  expect(texts).toEqual({
    gt06: ['RELAY,1#', 'RELAY,0#', 'WHERE#', 'RESET#', 'APN,{apn},{user},{password}#'],
    teltonika: ['setdigout 1', 'setdigout 0', 'getgps', 'cpureset', 'setparam 2001:{apn};2002:{user};2003:{password}'],
  })
  const setApn = models.find((m) => m.protocol === 'gt06')!.commands.find((c) => c.name === 'Set APN')!
  const bus = '4d2a6c1e-8f1b-4a8e-9c53-1b7e2d9f0001'
  const res = await call('POST', `/devices/${bus}/commands/${setApn.id}`, { apn: 'internet', user: '', password: 'secret-pw' })
  expect(res.status).toBe(202)
  expect(((await res.json()) as { text: string }).text).toBe('APN,internet,,***#')
})
