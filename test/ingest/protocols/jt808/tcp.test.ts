/**
 * JT808 over a real TCP socket, served by the one session handler through the protocol list: a
 * terminal imported by its phone number as the device's serial registers, authenticates and
 * reports; the fix and its alarm are read back through the API, the answers it waits for are read
 * off the socket byte for byte; an unknown terminal is told so and closed; a command of the
 * built-in model goes out as the standard's frame and the terminal's general response completes
 * it. Frames are built here from the standard's layouts (JT/T 808-2013 §4.4, §8), not by the
 * server's encoders; the location is t091's (test/fixtures/jt808/frames.ts), dated by the test's
 * clock (the capture's own date is years old and would be refused as too old).
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { manualClock } from '../../../../src/clock'
import { loadConfig } from '../../../../src/config'
import { openProduct } from '../../../../src/database'
import { importDataset } from '../../../../src/dataset/service'
import { PROTOCOLS } from '../../../../src/ingest/protocols'
import { jt808Model } from '../../../../src/ingest/protocols/jt808/model'
import type { Protocol } from '../../../../src/ingest/protocols/protocol'
import { createConnectionGate } from '../../../../src/ingest/tcp'
import type { TestClient } from '../../frames'
import { type CommandLine, commandLineOver } from '../../../support/command-line'
import { serverDatabase, type ServerDatabase } from '../../../support/server-database'
import { baseDataset, ids, keys } from '../../../support/world'
import { hex, toHex } from '../helpers'

const START = Date.UTC(2026, 10, 25, 12, 0, 0)
const PHONE = '013511221122'
const DEVICE = '0f000000-0000-4000-8000-0000000008a1'
const REBOOT = jt808Model.commands.find((command) => command.name === 'Reboot')!.id

const jt808: Protocol = PROTOCOLS.find((protocol) => protocol.name === 'jt808')!
let database: ServerDatabase
let line: CommandLine<'jt808'>

/** `plain` (header and body) framed: the XOR check code appended, 7E and 7D escaped, the flags around. */
function framed(plainHex: string): Uint8Array {
  const plain = hex(plainHex)
  const bytes = [...plain, plain.reduce((x, byte) => x ^ byte, 0)]
  const escaped = bytes.flatMap((byte) => (byte === 0x7e ? [0x7d, 0x02] : byte === 0x7d ? [0x7d, 0x01] : [byte]))
  return Uint8Array.from([0x7e, ...escaped, 0x7e])
}

const hex4 = (n: number) => n.toString(16).padStart(4, '0')
const two = (n: number) => String(n).padStart(2, '0')
/** a 2013 header: message id, properties (the body's length), the phone number, the serial */
const header = (messageId: number, bodyBytes: number, serial: number, phone = PHONE) => `${hex4(messageId)}${hex4(bodyBytes)}${phone}${hex4(serial)}`

/** t091's location (50.871735 N, 1.255923 W, 2.0 km/h, mileage 1.8 km) with `alarmFlags`, at `unixSeconds` (BCD, GMT+8). */
function location(unixSeconds: number, serial: number, alarmFlags = 0): Uint8Array {
  const d = new Date((unixSeconds + 8 * 3600) * 1000)
  const time = two(d.getUTCFullYear() % 100) + two(d.getUTCMonth() + 1) + two(d.getUTCDate()) + two(d.getUTCHours()) + two(d.getUTCMinutes()) + two(d.getUTCSeconds())
  const body = `${alarmFlags.toString(16).padStart(8, '0')} 0000000a 03083db7 001329f3 0000 0014 0000 ${time} 01 04 00000012`
  return framed(header(0x0200, hex(body).length, serial) + body)
}

/** 0x8001 to `serial`'s message `messageId`, result 0, as the terminal must receive it */
const generalResponse = (serial: number, messageId: number, result = 0) => toHex(framed(header(0x8001, 5, serial) + hex4(serial) + hex4(messageId) + two(result)))

beforeEach(async () => {
  const dataset = baseDataset() as ReturnType<typeof baseDataset> & { devices: unknown[] }
  dataset.devices.push({ id: DEVICE, account: ids.acme, model: jt808Model.id, groups: [ids.trucks], alias: 'Truck J', serial: PHONE, imei: '', state: 'off' })
  const clock = manualClock(START)
  // the product's database on the run's engine (TRACKER_TEST_ENGINE): opened as the server opens
  // it, so the built-in models are there before the import names one
  database = await serverDatabase('tracker-jt808')
  const product = await openProduct(loadConfig(database.env), { purpose: 'server', clock })
  await importDataset(product.stores.dataset, dataset)
  const close = async () => {
    await product.close()
    await database.close()
  }
  line = commandLineOver({ stores: product.stores, clock, close }, { jt808 }, { gate: createConnectionGate() })
})

afterEach(() => line.close())

const connect = (): Promise<TestClient> => line.connect('jt808')

async function readFrame(client: TestClient, expected: string): Promise<void> {
  expect(toHex(await client.read(hex(expected).length))).toBe(expected)
}

/** one frame as it arrives, at least `minimumBytes` long, through its closing 7E flag */
async function readWholeFrame(client: TestClient, minimumBytes: number): Promise<Uint8Array> {
  let bytes = await client.read(minimumBytes)
  while (bytes[bytes.length - 1] !== 0x7e) bytes = Uint8Array.from([...bytes, ...(await client.read(1))])
  return bytes
}

/** a frame with 7D 02 and 7D 01 read back as 7E and 7D (its fields at their places) */
function unescaped(frame: Uint8Array): Uint8Array {
  const bytes: number[] = []
  for (let i = 0; i < frame.length; i++) bytes.push(frame[i] === 0x7d ? (frame[++i] === 0x02 ? 0x7e : 0x7d) : frame[i]!)
  return Uint8Array.from(bytes)
}

const api = (path: string, method = 'GET', body?: unknown) => line.call(method, path, { token: keys.alice, body })

test('JT808 is on the protocol list with its port variable and default port', () => {
  expect(jt808).toMatchObject({ name: 'jt808', transport: 'tcp', portVariable: 'JT808_PORT', defaultPort: 5015 })
})

test('registration, authentication, a location with SOS: each answered byte for byte; the fix and the alarm read back through the API', async () => {
  const now = START / 1000
  const client = await connect()
  // registration (t085's body: province, city, maker, model, terminal id, plate colour, plate)
  const registration = '002c012f373031313142534a2d41362d424400000000000000000000003035363738373201d4c14238383838'
  client.send(framed(header(0x0100, hex(registration).length, 0x24) + registration))
  // 0x8100: the registration's serial, result 0, the authentication code (the phone number in ASCII)
  await readFrame(client, toHex(framed(header(0x8100, 15, 0x24) + '0024' + '00' + Array.from(PHONE, (c) => c.charCodeAt(0).toString(16)).join(''))))
  client.send(framed(header(0x0102, 12, 0x25) + Array.from(PHONE, (c) => c.charCodeAt(0).toString(16)).join('')))
  await readFrame(client, generalResponse(0x25, 0x0102))
  client.send(location(now - 60, 0x26, 0x00000001))
  await readFrame(client, generalResponse(0x26, 0x0200))
  // a heartbeat
  client.send(framed(header(0x0002, 0, 0x27)))
  await readFrame(client, generalResponse(0x27, 0x0002))

  const device = (await (await api(`/devices/${DEVICE}`)).json()) as Record<string, unknown>
  expect(device).toMatchObject({ connected: true })
  const route = await (await api(`/devices/${DEVICE}/route?from=${now - 3600}&to=${now}`)).json()
  // 50.871735 N, 1.255923 W (the status word's west bit), 20 × 0.1 km/h, the device's GMT+8 time as UTC
  expect(route).toMatchObject({ points: [{ latitude: 50.871735, longitude: -1.255923, speed: 2, timestamp: now - 60 }] })
  const events = await (await api(`/devices/${DEVICE}/events?from=${now - 3600}&to=${now}`)).json()
  expect(events).toEqual([expect.objectContaining({ alarm_code: 'sos', coordinates: [50.871735, -1.255923], timestamp: now - 60 })])
})

test('an unknown terminal registering is answered result 4 (no such terminal) and closed; nothing is stored', async () => {
  const client = await connect()
  const stranger = '019999999999'
  const registration = '002c012f373031313142534a2d41362d424400000000000000000000003035363738373201d4c14238383838'
  client.send(framed(header(0x0100, hex(registration).length, 1, stranger) + registration))
  await readFrame(client, toHex(framed(header(0x8100, 3, 1, stranger) + '0001' + '04')))
  await client.closed
  const count = await database.count('positions')
  expect(count).toBe(0)
})

test("a command of the built-in model goes out as 0x8105; the terminal's 0x0001 naming its serial answers it", async () => {
  const client = await connect()
  client.send(location(START / 1000 - 10, 1))
  await readFrame(client, generalResponse(1, 0x0200))
  const response = await api(`/devices/${DEVICE}/commands/${REBOOT}`, 'POST', {})
  expect(response.status).toBe(202)
  const sent = (await response.json()) as { id: string }
  // 0x8105, one byte of body (command word 4: reset), the serial the server chose; read through
  // its closing flag: a serial or check code of 7E or 7D goes out escaped, a byte longer
  const frame = await readWholeFrame(client, 2 + 12 + 1 + 1)
  const command = unescaped(frame)
  expect(toHex(command.subarray(0, 5))).toBe(toHex(hex('7e 81 05 00 01')))
  expect(toHex(command.subarray(5, 11))).toBe(toHex(hex(PHONE)))
  expect(command[13]).toBe(0x04)
  const serial = hex4((command[11] << 8) | command[12])
  expect(toHex(frame)).toBe(toHex(framed(`8105 0001 ${PHONE} ${serial} 04`)))
  // the terminal's general response: the command's serial, 0x8105, result 0
  client.send(framed(header(0x0001, 5, 2) + serial + '8105' + '00'))
  let answered: Record<string, unknown> = {}
  for (const deadline = Date.now() + 2000; Date.now() < deadline && answered.status !== 'answered'; await Bun.sleep(5)) {
    answered = (await (await api(`/devices/${DEVICE}/commands/sent/${sent.id}`)).json()) as Record<string, unknown>
  }
  expect(answered).toMatchObject({ status: 'answered', response: '8105 success', text: '8105:4' })
  // a general response needs no answer
  expect(client.pending).toBe(0)
})
