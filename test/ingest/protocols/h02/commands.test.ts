/**
 * H02 commands over real TCP sockets, as the maker a device names decides them: the API queues
 * (POST over app.handle), the H02 listener delivers from the same queue, and clients speaking H02
 * receive `*<maker>,<id>,<command>,<hhmmss>,<parameters>#` (the H02 document's "command structure
 * from center sending", built here, not by the server's encoder). Each connection's device gets
 * its commands under the maker its own frames named: a device that reconnects names it again
 * before its first command, and nothing other connections send can make the server forget it.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { h02 } from '../../../../src/ingest/protocols/h02/descriptor'
import { commandDataset } from '../../../commands/support'
import { openCommandLine, type WorldCommandLine } from '../../../support/command-line'
import { type EngineWorld, ids, keys } from '../../../support/world'
import { positionCount, untilRead } from '../../fleet'
import type { TestClient } from '../../frames'

const H02_MODEL = '0d000000-0000-4000-8000-0000000002a1'
const CUT_FUEL = '0e000000-0000-4000-8000-0000000002a1'
/** a Sinotrack whose firmware names itself TH, a Coban that names HQ, and a third tracker */
const TH_TRACKER = '0f000000-0000-4000-8000-0000000002a1'
const TH_ID = '4210051401'
const HQ_TRACKER = '0f000000-0000-4000-8000-0000000002a2'
const HQ_ID = '4210051402'
const OTHER_TRACKER = '0f000000-0000-4000-8000-0000000002a3'
const OTHER_ID = '4210051403'

function dataset() {
  const data = commandDataset() as ReturnType<typeof commandDataset> & { models: unknown[]; devices: unknown[] }
  data.models.push({
    id: H02_MODEL,
    name: 'Sinotrack ST-901',
    protocol: 'h02',
    commands: [{ id: CUT_FUEL, name: 'Cut fuel', widget: { type: 'button', label: 'Cut', confirm: false }, send: { text: 'S20,1,1' } }],
  })
  const tracker = (id: string, alias: string, serial: string) => ({ id, account: ids.acme, model: H02_MODEL, groups: [ids.trucks], alias, serial, imei: '', state: 'off' })
  data.devices.push(tracker(TH_TRACKER, 'Sinotrack TH', TH_ID), tracker(HQ_TRACKER, 'Coban HQ', HQ_ID), tracker(OTHER_TRACKER, 'Third', OTHER_ID))
  return data
}

let line: WorldCommandLine<'h02'>
let world: EngineWorld

beforeEach(async () => {
  // every unknown identifier masked (answered as a known one, its data dropped): a client may name as many as it likes
  line = await openCommandLine(dataset(), { h02 }, { pipeline: { unknownIdentifiers: { perSource: 0 } } })
  world = line.world
})

afterEach(() => line.close())

async function send(device: string): Promise<void> {
  const res = await line.call('POST', `/devices/${device}/commands/${CUT_FUEL}`, { token: keys.alice })
  expect(res.status).toBe(202)
}

const connect = (): Promise<TestClient> => line.connect('h02')

const two = (n: number) => String(n).padStart(2, '0')
/** hhmmss of the server's clock (UTC) */
const hhmmss = () => {
  const d = new Date(world.clock.now())
  return two(d.getUTCHours()) + two(d.getUTCMinutes()) + two(d.getUTCSeconds())
}
/** A V1 position frame (the Costa Rica capture's body) of device `id` under `maker`, `ageSeconds` old. */
function v1(maker: string, id: string, ageSeconds = 60): Uint8Array {
  const d = new Date(world.clock.now() - ageSeconds * 1000)
  const time = two(d.getUTCHours()) + two(d.getUTCMinutes()) + two(d.getUTCSeconds())
  const date = two(d.getUTCDate()) + two(d.getUTCMonth() + 1) + two(d.getUTCFullYear() % 100)
  return new TextEncoder().encode(`*${maker},${id},V1,${time},A,0956.3869,N,08406.7068,W,010.00,090,${date},FFFFFBFF,712,01,0,0,6#`)
}
/** The cut-fuel command as the H02 document frames it for device `id` under `maker`. */
const cutFuel = (maker: string, id: string) => `*${maker},${id},S20,${hhmmss()},1,1#`
const read = async (client: TestClient, expected: string) => new TextDecoder().decode(await client.read(expected.length))

test('two trackers on two connections, one naming maker TH and one HQ: each command goes out under its own device’s maker, once its first frame is in', async () => {
  // queued before either is connected: each waits for the frame that identifies its device
  await send(TH_TRACKER)
  await send(HQ_TRACKER)
  const th = await connect()
  const hq = await connect()
  th.send(v1('TH', TH_ID))
  hq.send(v1('HQ', HQ_ID))
  expect(await read(th, cutFuel('TH', TH_ID))).toBe(cutFuel('TH', TH_ID))
  expect(await read(hq, cutFuel('HQ', HQ_ID))).toBe(cutFuel('HQ', HQ_ID))
})

test('a tracker that reconnects names its maker again before a command goes out on the new connection: TH as before', async () => {
  const first = await connect()
  first.send(v1('TH', TH_ID))
  await untilRead(async () => (await positionCount(world, TH_TRACKER)) === 1, 2000, 'the first fix')
  await send(TH_TRACKER)
  expect(await read(first, cutFuel('TH', TH_ID))).toBe(cutFuel('TH', TH_ID))
  first.end()
  await first.closed
  world.clock.advance(1000)
  const again = await connect()
  again.send(v1('TH', TH_ID))
  // the command, sent and unanswered, goes once more at the reconnection, encoded again on the new connection
  expect(await read(again, cutFuel('TH', TH_ID))).toBe(cutFuel('TH', TH_ID))
})

test('a connected tracker keeps its maker however many other identifiers the server hears meanwhile', async () => {
  const th = await connect()
  th.send(v1('TH', TH_ID))
  await untilRead(async () => (await positionCount(world, TH_TRACKER)) === 1, 2000, 'the fix')
  // other clients name ten thousand made-up trackers under another maker (masked: answered as known, dropped),
  // each then a known one, whose fix shows that every frame before it was read
  const FLOODS = 25
  const floods = await Promise.all(Array.from({ length: FLOODS }, connect))
  floods.forEach((flood, f) => {
    const frames: Uint8Array[] = []
    for (let i = 0; i < 10_000 / FLOODS; i++) frames.push(v1('XX', String(9_000_000_000 + f * 10_000 + i)))
    frames.push(v1('HQ', OTHER_ID, 100 + f))
    flood.send(new Uint8Array(Buffer.concat(frames)))
  })
  await untilRead(async () => (await positionCount(world, OTHER_TRACKER)) === FLOODS, 25_000, 'the floods read')
  await send(TH_TRACKER)
  expect(await read(th, cutFuel('TH', TH_ID))).toBe(cutFuel('TH', TH_ID))
}, 30_000)
