/**
 * Queclink @Track over a real TCP socket, served by the one session handler through the protocol
 * list: the device is found by the IMEI its frames carry, a GTFRI's positions are fixes (read back
 * through the API), alarms are events, the heartbeat gets its +SACK, and a command goes out as
 * AT text and is completed by the device's +ACK. The frame bodies are those of the captured frames
 * in test/fixtures/gl200/frames.ts, dated by the test's clock (the captures' own dates are years
 * old and would be refused as too old). What the client expects on the wire is written here from
 * the @Track document, not by the server's encoders.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { PROTOCOLS } from '../../../../src/ingest/protocols'
import type { Protocol } from '../../../../src/ingest/protocols/protocol'
import { commandDataset } from '../../../commands/support'
import { type CommandLine, openCommandLine } from '../../../support/command-line'
import { ids, keys } from '../../../support/world'

const IMEI = '862894020180553'
const DEVICE = '0f000000-0000-4000-8000-0000000000c1'
const MODEL = '0d000000-0000-4000-8000-0000000000c1'
const POSITION_COMMAND = '0e000000-0000-4000-8000-0000000000c1'
const START = Date.UTC(2026, 10, 25, 12, 0, 0)

const gl200: Protocol = PROTOCOLS.find((protocol) => protocol.name === 'gl200')!

let line: CommandLine<'gl200'>

/** the test world's fleet and a GV300 in Truck's group, of a model with the @Track position request */
function dataset() {
  const data = commandDataset() as ReturnType<typeof commandDataset> & { models: unknown[]; devices: unknown[] }
  data.models.push({
    id: MODEL,
    name: 'GV300',
    protocol: 'gl200',
    commands: [
      {
        id: POSITION_COMMAND,
        name: 'Position',
        widget: { type: 'form', fields: [{ name: 'password', type: 'password', label: 'Password', pattern: '[0-9A-Za-z]{4,6}' }] },
        send: { text: 'AT+GTRTO={password},1,,,,,,FFFF$' },
      },
    ],
  })
  data.devices.push({ id: DEVICE, account: ids.acme, model: MODEL, groups: [ids.trucks], alias: 'Truck Q', serial: 'S-TQ', imei: IMEI, state: 'off' })
  return data
}

// the world on the run's engine (TRACKER_TEST_ENGINE), with the command queue, app and @Track listener over its stores
beforeEach(async () => (line = await openCommandLine(dataset(), { gl200 }, { startAtMs: START })))

afterEach(() => line.close())

const connect = () => line.connect('gl200')

const call = (method: string, path: string, body?: unknown): Promise<Response> => line.call(method, path, { token: keys.alice, body })

async function json<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await call(method, path, body)
  expect(res.status).toBeLessThan(300)
  return (await res.json()) as T
}

/** polls the API until `read` gives something `done` accepts (answers are handled off the socket's turn) */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 3000
  let last: T = await read()
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(last)}`)
    await Bun.sleep(10)
    last = await read()
  }
  return last
}

interface RoutePoint {
  latitude: number
  longitude: number
  speed: number
  timestamp: number
}

const route = () => json<{ points: RoutePoint[] }>('GET', `/devices/${DEVICE}/history/route?from=${START / 1000 - 3600}&to=${START / 1000 + 60}`).then((body) => body.points)
const events = () => json<{ alarm_code: string; coordinates: number[] | null; timestamp: number }[]>('GET', `/devices/${DEVICE}/events?from=${START / 1000 - 3600}&to=${START / 1000 + 60}`)

const two = (n: number) => String(n).padStart(2, '0')
/** yyyyMMddHHmmss (UTC) of a Unix time */
function stamp(unixSeconds: number): string {
  const d = new Date(unixSeconds * 1000)
  return `${d.getUTCFullYear()}${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}${two(d.getUTCHours())}${two(d.getUTCMinutes())}${two(d.getUTCSeconds())}`
}
const ascii = (text: string) => new TextEncoder().encode(text)

/** The Bolivian GTFRI capture with two positions, `a` and `b` seconds (Unix) */
function fri(head: 'RESP' | 'BUFF', a: number, b: number, count: string): Uint8Array {
  return ascii(
    `+${head}:GTFRI,060228,${IMEI},,,10,2,1,20.0,147,329.7,-62.899703,-17.720434,${stamp(a)},0736,0003,6AAE,3381,00,1,35.0,150,330.1,-62.901000,-17.722000,${stamp(b)},0736,0003,6AAE,3381,00,913.3,,,,0,220101,,,,${stamp(b + 5)},${count}$\r\n`,
  )
}

test('@Track is on the protocol list with its port variable and default port', () => {
  expect(gl200).toMatchObject({ name: 'gl200', transport: 'tcp', portVariable: 'GL200_PORT', defaultPort: 5004 })
})

test('a GTFRI with two positions is two fixes of the device its IMEI names; +BUFF is stored the same; the heartbeat gets +SACK:GTHBD', async () => {
  const now = START / 1000
  const client = await connect()
  client.send(fri('RESP', now - 120, now - 90, '132B'))
  const points = await eventually(route, (p) => p.length === 2, 'the two fixes')
  expect(points).toEqual([
    { latitude: -17.720434, longitude: -62.899703, speed: 20, timestamp: now - 120 },
    { latitude: -17.722, longitude: -62.901, speed: 35, timestamp: now - 90 },
  ].map((point) => expect.objectContaining(point)))
  // reports are not answered
  expect(client.pending).toBe(0)

  client.send(fri('BUFF', now - 60, now - 30, '132C'))
  await eventually(route, (p) => p.length === 4, 'the buffered fixes')

  client.send(ascii(`+ACK:GTHBD,060228,${IMEI},,${stamp(now)},132D$`))
  const expected = '+SACK:GTHBD,060228,132D$'
  expect(new TextDecoder().decode(await client.read(expected.length))).toBe(expected)
  expect(client.isClosed()).toBe(false)
})

test('GTSOS is an sos event at its fix; GTIGF without a position keeps the ignition off as the device\'s status', async () => {
  const now = START / 1000
  const client = await connect()
  client.send(ascii(`+RESP:GTSOS,020102,${IMEI},,0,0,1,1,4.3,92,70.0,121.354335,31.222073,${stamp(now - 20)},0460,0000,18d8,6141,00,,${stamp(now - 19)},11F0$`))
  client.send(ascii(`+RESP:GTIGF,500101,${IMEI},,0,0,,,,,,,0730,0002,A08F,872B36,00,,0.0,${stamp(now - 10)},E3B1$`))
  const stored = await eventually(events, (e) => e.some((event) => event.alarm_code === 'ignition_off'), 'the ignition event')
  expect(stored.find((event) => event.alarm_code === 'sos')).toMatchObject({ coordinates: [31.222073, 121.354335], timestamp: now - 20, mcc: 460 })
  const status = await eventually(
    () => json<{ attributes: Record<string, unknown> }>('GET', `/devices/${DEVICE}/status`),
    (s) => s.attributes.ignition === false,
    'the ignition status',
  )
  expect(status.attributes.ignition).toBe(false)
})

test('the Position command goes out as its AT text; the device\'s +ACK:GTRTO completes it', async () => {
  const now = START / 1000
  const client = await connect()
  // the device speaks first (there is no login): its heartbeat opens its session
  client.send(ascii(`+ACK:GTHBD,060228,${IMEI},,${stamp(now)},0001$`))
  await client.read('+SACK:GTHBD,060228,0001$'.length)
  const sent = await json<{ id: string; text: string }>('POST', `/devices/${DEVICE}/commands/${POSITION_COMMAND}`, { password: 'gv300' })
  expect(sent.text).toBe('AT+GTRTO=***,1,,,,,,FFFF$')
  const command = 'AT+GTRTO=gv300,1,,,,,,FFFF$'
  expect(new TextDecoder().decode(await client.read(command.length))).toBe(command)
  client.send(ascii(`+ACK:GTRTO,060228,${IMEI},,RTL,FFFF,${stamp(now)},0002$`))
  const answered = await eventually(
    () => json<{ status: string; response: string | null }>('GET', `/devices/${DEVICE}/commands/sent/${sent.id}`),
    (c) => c.status === 'answered',
    'the answer',
  )
  expect(answered.response).toBe('GTRTO,RTL,FFFF')
})

test('an unknown IMEI closes the connection; nothing is stored', async () => {
  const client = await connect()
  client.send(fri('RESP', START / 1000 - 60, START / 1000 - 30, '0001'))
  // the same frame from another IMEI
  const other = new TextDecoder().decode(fri('RESP', START / 1000 - 60, START / 1000 - 30, '0001')).replace(IMEI, '862894020189999')
  const stranger = await connect()
  stranger.send(ascii(other))
  await stranger.closed
  await eventually(route, (p) => p.length === 2, 'the known device\'s fixes')
  expect(await route()).toHaveLength(2)
})
