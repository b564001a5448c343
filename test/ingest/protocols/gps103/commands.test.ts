/**
 * GPS103 and watch commands reaching devices over real TCP sockets: the API queues them (POST over
 * app.handle), the listener delivers from the same queue, and a client speaking the protocol
 * receives the bytes the protocol documents give (built here, not by the server's encoders) and,
 * for a watch, answers by echoing the command.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { gps103 } from '../../../../src/ingest/protocols/gps103/descriptor'
import { watch } from '../../../../src/ingest/protocols/watch/descriptor'
import { commandDataset } from '../../../commands/support'
import { type CommandLine, openCommandLine } from '../../../support/command-line'
import { ids, keys } from '../../../support/world'
import type { TestClient } from '../../frames'

const COBAN_MODEL = '0d000000-0000-4000-8000-0000000001a1'
const WATCH_MODEL = '0d000000-0000-4000-8000-0000000001a2'
const COBAN = '0f000000-0000-4000-8000-0000000001a1'
const COBAN_IMEI = '359586015829802'
const KID = '0f000000-0000-4000-8000-0000000001a2'
const KID_WATCH_ID = '8800000015'
/** a second watch, of a maker that numbers its frames (ZJ) */
const GRAN = '0f000000-0000-4000-8000-0000000001a3'
const GRAN_WATCH_ID = '8800000016'
const cmd = { locate: '0e000000-0000-4000-8000-0000000001a1', interval: '0e000000-0000-4000-8000-0000000001a2', watchLocate: '0e000000-0000-4000-8000-0000000001a3' }

function dataset() {
  const data = commandDataset() as ReturnType<typeof commandDataset> & { models: unknown[]; devices: unknown[] }
  const button = (label: string) => ({ type: 'button', label, confirm: false })
  data.models.push(
    {
      id: COBAN_MODEL,
      name: 'Coban TK303',
      protocol: 'gps103',
      commands: [
        { id: cmd.locate, name: 'Locate', widget: button('Locate'), send: { text: 'B' } },
        { id: cmd.interval, name: 'Interval', widget: { type: 'form', fields: [{ name: 'every', type: 'text', label: 'Every', pattern: '[0-9]{2}[smh]' }] }, send: { text: 'C,{every}' } },
      ],
    },
    { id: WATCH_MODEL, name: 'Q50 watch', protocol: 'watch', commands: [{ id: cmd.watchLocate, name: 'Locate', widget: button('Locate'), send: { text: 'CR' } }] },
  )
  data.devices.push(
    { id: COBAN, account: ids.acme, model: COBAN_MODEL, groups: [ids.trucks], alias: 'Coban', serial: 'S-COBAN', imei: COBAN_IMEI, state: 'off' },
    // a watch is found by its id, imported as the serial
    { id: KID, account: ids.acme, model: WATCH_MODEL, groups: [ids.trucks], alias: 'Kid', serial: KID_WATCH_ID, imei: '', state: 'off' },
    { id: GRAN, account: ids.acme, model: WATCH_MODEL, groups: [ids.trucks], alias: 'Gran', serial: GRAN_WATCH_ID, imei: '', state: 'off' },
  )
  return data
}

let line: CommandLine<'gps103' | 'watch'>

// the world on the run's engine (TRACKER_TEST_ENGINE), with the command queue, app and listeners over its stores
beforeEach(async () => (line = await openCommandLine(dataset(), { gps103, watch })))

afterEach(() => line.close())

interface Sent {
  id: string
  status: string
  response: string | null
}

const call = (method: string, path: string, body?: unknown): Promise<Response> => line.call(method, path, { token: keys.alice, body })

async function send(device: string, command: string, body: unknown = {}): Promise<Sent> {
  const res = await call('POST', `/devices/${device}/commands/${command}`, body)
  expect(res.status).toBe(202)
  return (await res.json()) as Sent
}

async function once(device: string, id: string, status: string): Promise<Sent> {
  let last: Sent | null = null
  const deadline = Date.now() + 2000
  while (Date.now() < deadline) {
    last = (await (await call('GET', `/devices/${device}/commands/sent/${id}`)).json()) as Sent
    if (last.status === status) return last
    await Bun.sleep(5)
  }
  throw new Error(`command ${id} is ${last?.status}, not ${status}`)
}

const ascii = (text: string) => new TextEncoder().encode(text)
const read = async (client: TestClient, expected: string) => new TextDecoder().decode(await client.read(expected.length))

test('GPS103: a command waiting for a Coban goes out after its log on is answered, as **,imei:<IMEI>,<code>;', async () => {
  const locate = await send(COBAN, cmd.locate)
  const client = await line.connect('gps103')
  client.send(ascii(`##,imei:${COBAN_IMEI},A;`))
  expect(await read(client, 'LOAD')).toBe('LOAD')
  expect(await read(client, `**,imei:${COBAN_IMEI},B;`)).toBe(`**,imei:${COBAN_IMEI},B;`)
  expect(await once(COBAN, locate.id, 'sent')).toMatchObject({ response: null })
  // a form value that would smuggle another command is refused before anything is sent
  expect((await call('POST', `/devices/${COBAN}/commands/${cmd.interval}`, { every: '30s;J' })).status).toBe(400)
})

test("watch: a command goes out in the watch's own maker once it has spoken; its echo answers it", async () => {
  const locate = await send(KID, cmd.watchLocate)
  const client = await line.connect('watch')
  client.send(ascii(`[3G*${KID_WATCH_ID}*0002*LK]`))
  // the LK's reply waits for the commit, the command line starts when the session opens: either may come first
  const both = await read(client, `[3G*${KID_WATCH_ID}*0002*LK][3G*${KID_WATCH_ID}*0002*CR]`)
  expect(both.match(/\[[^\]]*\]/g)!.sort()).toEqual([`[3G*${KID_WATCH_ID}*0002*CR]`, `[3G*${KID_WATCH_ID}*0002*LK]`])
  client.send(ascii(`[3G*${KID_WATCH_ID}*0002*CR]`))
  expect(await once(KID, locate.id, 'answered')).toMatchObject({ response: 'CR' })
})

test("two watches of two dialects on two connections: each command goes out in its own watch's maker and numbering", async () => {
  // queued before either is connected: each waits for the frame that identifies its watch
  const kidLocate = await send(KID, cmd.watchLocate)
  const granLocate = await send(GRAN, cmd.watchLocate)
  const kid = await line.connect('watch')
  const gran = await line.connect('watch')
  kid.send(ascii(`[3G*${KID_WATCH_ID}*0002*LK]`))
  gran.send(ascii(`[ZJ*${GRAN_WATCH_ID}*0034*0002*LK]`))
  // the LK's reply (its number echoed) and the command (number 0001), in either order
  const kidFrames = await read(kid, `[3G*${KID_WATCH_ID}*0002*LK][3G*${KID_WATCH_ID}*0002*CR]`)
  expect(kidFrames.match(/\[[^\]]*\]/g)!.sort()).toEqual([`[3G*${KID_WATCH_ID}*0002*CR]`, `[3G*${KID_WATCH_ID}*0002*LK]`])
  const granFrames = await read(gran, `[ZJ*${GRAN_WATCH_ID}*0034*0002*LK][ZJ*${GRAN_WATCH_ID}*0001*0002*CR]`)
  expect(granFrames.match(/\[[^\]]*\]/g)!.sort()).toEqual([`[ZJ*${GRAN_WATCH_ID}*0001*0002*CR]`, `[ZJ*${GRAN_WATCH_ID}*0034*0002*LK]`])
  gran.send(ascii(`[ZJ*${GRAN_WATCH_ID}*0001*0002*CR]`))
  expect(await once(GRAN, granLocate.id, 'answered')).toMatchObject({ response: 'CR' })
  expect(await once(KID, kidLocate.id, 'sent')).toMatchObject({ response: null })
})
