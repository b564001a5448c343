/** The example fleet's models carry real command texts, and a command to its bus goes into the queue. */
import { afterEach, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { createApp } from '../../src/app'
import { manualClock } from '../../src/clock'
import { importNow } from '../support/import'

const dir = mkdtempSync(join(tmpdir(), 'tracker-example-commands-'))
afterEach(() => rmSync(dir, { recursive: true, force: true }))

test('examples/fleet.json: GT06 and Teltonika commands with their texts; Set APN sends the form with the password hidden', async () => {
  const database = openDatabase(join(dir, 'tracker.db'))
  try {
    importNow(database, JSON.parse(readFileSync(join(import.meta.dir, '../../examples/fleet.json'), 'utf8')))
    const app = createApp({ database, clock: manualClock() })
    const call = (method: string, path: string, body?: unknown) =>
      app.handle(new Request(`http://localhost${path}`, { method, headers: { authorization: 'Bearer alice-demo-key-0001' }, body: body === undefined ? undefined : JSON.stringify(body) }))
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
  } finally {
    database.close()
  }
})
