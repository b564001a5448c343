/**
 * Meitrack over a real TCP socket, served by the one session handler through the protocol list:
 * the device is found by the IMEI its frames carry, an AAA report is a fix (its SOS an event), a
 * CCE batch is stored and confirmed with `CCE,<count>` after the commit, an unknown IMEI closes
 * the connection; and a command sent through the API reaches the device as `@@…` and its answer
 * completes it. Frame bodies are those of captured frames (test/fixtures/meitrack/frames.ts),
 * dated by the test's clock (the captures' own dates are years old and would be refused as too
 * old); lengths and checksums are computed here from the document's rule, not by the server's code.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { manualClock } from '../../../../src/clock'
import { LivePositions } from '../../../../src/ingest/live'
import { createIngestPipeline, type IngestPipeline } from '../../../../src/ingest/pipeline'
import { PROTOCOLS } from '../../../../src/ingest/protocols'
import type { Protocol } from '../../../../src/ingest/protocols/protocol'
import { createConnectionGate, startTcpListener, type TcpListener } from '../../../../src/ingest/tcp'
import { silentLogger } from '../../../../src/log'
import { type EngineWorld, ids, keys } from '../../../support/world'
import { commandDataset } from '../../../commands/support'
import { openCommandLine, type WorldCommandLine } from '../../../support/command-line'
import { sql } from 'drizzle-orm'
import { deviceRow, firstRow, openFleet, positionCount, rows, untilRead } from '../../fleet'
import { connectClient, type TestClient } from '../../frames'

const START = Date.UTC(2026, 10, 25, 12, 0, 0)
const IMEI = '869013024733944'
const DEVICE = '00000000-0000-4000-9000-000000000000'

const meitrack: Protocol = PROTOCOLS.find((protocol) => protocol.name === 'meitrack')!
const two = (n: number) => String(n).padStart(2, '0')
const bytesOf = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0) & 0xff)
const textOf = (bytes: Uint8Array) => String.fromCharCode(...bytes)

/** `<marker><flag><length><body>*<checksum>\r\n`: the length counts from the first comma through CR LF, the checksum sums every byte through `*` */
function seal(marker: '$$' | '@@', flag: string, body: string): string {
  const head = `${marker}${flag}${body.length + 1 + 4}${body}*`
  const sum = Array.from(head).reduce((total, c) => (total + (c.charCodeAt(0) & 0xff)) & 0xff, 0)
  return `${head}${sum.toString(16).toUpperCase().padStart(2, '0')}\r\n`
}

/** yymmddHHMMSS of a Unix time */
function stamp(unixSeconds: number): string {
  const d = new Date(unixSeconds * 1000)
  return two(d.getUTCFullYear() % 100) + two(d.getUTCMonth() + 1) + two(d.getUTCDate()) + two(d.getUTCHours()) + two(d.getUTCMinutes()) + two(d.getUTCSeconds())
}

/** The Dominican Republic AAA capture (frames.ts AAA_29) at `unixSeconds` with `event` */
function aaa(imei: string, unixSeconds: number, event: number, flag = 'T'): Uint8Array {
  return bytesOf(seal('$$', flag, `,${imei},AAA,${event},18.459575,-69.947161,${stamp(unixSeconds)},A,5,15,10,300,1.6,115,3989,187884,370|2|5337|2B2C,0100,0000|0000|0000|0964|0B04,,`))
}

const le16 = (n: number) => [n & 0xff, (n >> 8) & 0xff]
const le32 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff]

/**
 * A CCE batch of one record, laid out as the T366 document's CCE section: records still cached
 * (4), record count (2); the record's length (2), index (2), then its 1-, 2-, 4-byte and
 * variable-length parameter groups: valid, satellites; speed, course, event; latitude,
 * longitude and time (s since 2000) ×10⁶ (the Singapore capture CCE_17's place); no cell.
 */
function cce(imei: string, unixSeconds: number, flag = 'A'): Uint8Array {
  const record = [
    ...le16(0), // index
    2, 0x05, 1, 0x06, 9,
    3, 0x08, ...le16(28), 0x09, ...le16(313), 0x40, ...le16(35),
    3, 0x02, ...le32(1_356_200), 0x03, ...le32(103_739_715), 0x04, ...le32(unixSeconds - 946_684_800),
    0,
  ]
  const data = [...le32(0), ...le16(1), ...le16(record.length), ...record]
  return bytesOf(seal('$$', flag, `,${imei},CCE,${String.fromCharCode(...data)}`))
}

describe('reports', () => {
  let db: EngineWorld
  let clock: ReturnType<typeof manualClock>
  let pipeline: IngestPipeline
  let listener: TcpListener

  beforeEach(async () => {
    db = await openFleet([{ imei: IMEI }])
    clock = manualClock(START)
    pipeline = createIngestPipeline({ stores: db.stores, clock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, sweepIntervalMs: 0 })
    if (meitrack.transport !== 'tcp') throw new Error('Meitrack is a TCP protocol')
    listener = startTcpListener(meitrack, { pipeline, clock, log: silentLogger, port: 0, hostname: '127.0.0.1', gate: createConnectionGate() })
  })

  afterEach(async () => {
    await listener.stop()
    await pipeline.stop()
    await db.close()
  })

  test('Meitrack is on the protocol list with its port variable and default port', () => {
    expect(meitrack).toMatchObject({ name: 'meitrack', transport: 'tcp', portVariable: 'MEITRACK_PORT', defaultPort: 5020 })
  })

  test('an AAA report is a fix of the device its IMEI names, its SOS an event; AAA is answered nothing', async () => {
    const now = START / 1000
    const client = await connectClient(listener.port)
    client.send(aaa(IMEI, now - 60, 35))
    client.send(aaa(IMEI, now - 50, 1))
    await untilRead(async () => (await positionCount(db, DEVICE)) === 2, 2000, 'the fixes')
    const stored = await rows(db, sql`SELECT ts, lat, lon, speed, course, flags, attributes FROM positions ORDER BY ts`) as Record<string, unknown>[]
    // speed 10 km/h (stored in tenths), course 300
    expect(stored[0]).toMatchObject({ ts: now - 60, lat: 184_595_750, lon: -699_471_610, speed: 100, course: 300, flags: 0 })
    expect(JSON.parse(stored[0].attributes as string)).toMatchObject({ event: 35, mcc: 370, lac: 0x5337, gsm_signal: 15, inputs: 1, odometer: 3989 })
    expect(await rows(db, sql`SELECT alarm_code, ts, latitude FROM events`)).toEqual([{ alarm_code: 'sos', ts: now - 50, latitude: 18.459575 }])
    expect(await deviceRow(db, DEVICE)).toMatchObject({ connected: 1 })
    const status = (await db.stores.statuses.latest((await deviceRow(db, DEVICE)).key))!
    expect(status.attributes).toMatchObject({ gsm_signal: 15, inputs: 1, outputs: 0 })
    await pipeline.afterCommit()
    expect(client.pending).toBe(0)
    client.end()
  })

  test('a CCE batch is stored, then confirmed with `CCE,<count>` and the batch\'s flag', async () => {
    const now = START / 1000
    const client = await connectClient(listener.port)
    client.send(cce(IMEI, now - 30, 'k'))
    const expected = seal('@@', 'k', `,${IMEI},CCE,1`)
    expect(textOf(await client.read(expected.length))).toBe(expected)
    // the answer comes once the batch is committed
    expect(await positionCount(db, DEVICE)).toBe(1)
    const stored = await firstRow(db, sql`SELECT ts, lat, lon, speed, course, flags FROM positions`)
    expect(stored).toEqual({ ts: now - 30, lat: 13_562_000, lon: 1_037_397_150, speed: 280, course: 313, flags: 0 })
    client.end()
  })

  test('an unknown IMEI closes the connection; nothing is stored', async () => {
    const client = await connectClient(listener.port)
    client.send(aaa('999999999999999', START / 1000 - 10, 35))
    await client.closed
    expect(await positionCount(db)).toBe(0)
  })
})

describe('commands', () => {
  const MODEL = '0d000000-0000-4000-8000-0000000000a1'
  const TRUCK = '0f000000-0000-4000-8000-0000000000a1'
  const STOP = '0e000000-0000-4000-8000-0000000000a1'
  const LOCATE = '0e000000-0000-4000-8000-0000000000a2'
  let line: WorldCommandLine<'meitrack'>
  let client: TestClient

  beforeEach(async () => {
    const data = commandDataset() as ReturnType<typeof commandDataset> & { models: unknown[]; devices: unknown[] }
    const button = (label: string) => ({ type: 'button', label, confirm: false })
    data.models.push({
      id: MODEL,
      name: 'Meitrack T366',
      protocol: 'meitrack',
      commands: [
        { id: STOP, name: 'Engine stop', widget: button('Stop'), send: { text: 'C01,0,12222' } },
        { id: LOCATE, name: 'Position now', widget: button('Locate'), send: { text: 'A10' } },
      ],
    })
    data.devices.push({ id: TRUCK, account: ids.acme, model: MODEL, groups: [ids.trucks], alias: 'Truck M', serial: 'S-TM', imei: IMEI, state: 'off' })
    // the world on the run's engine (TRACKER_TEST_ENGINE), with the command queue, app and Meitrack listener over its stores
    line = await openCommandLine(data, { meitrack }, { startAtMs: START })
    client = await line.connect('meitrack')
  })

  afterEach(() => line.close())

  const call = (method: string, path: string): Promise<Response> => line.call(method, path, { token: keys.alice, body: method === 'POST' ? {} : undefined })

  async function once(id: string, status: string): Promise<Record<string, unknown>> {
    let last: Record<string, unknown> | null = null
    const deadline = Date.now() + 2000
    while (Date.now() < deadline) {
      last = (await (await call('GET', `/devices/${TRUCK}/commands/sent/${id}`)).json()) as Record<string, unknown>
      if (last.status === status) return last
      await Bun.sleep(5)
    }
    throw new Error(`command ${id} is ${last?.status}, not ${status}`)
  }

  /** reads one `@@` frame the server sends */
  async function readCommand(): Promise<string> {
    let head = ''
    while (!head.endsWith(',')) head += textOf(await client.read(1))
    return head + textOf(await client.read(Number(head.slice(3, -1)) - 1))
  }

  test('a command goes out as `@@<flag><length>,<IMEI>,<text>*<checksum>`; the answer with its flag completes it', async () => {
    client.send(aaa(IMEI, START / 1000 - 10, 35))
    const sent = (await (await call('POST', `/devices/${TRUCK}/commands/${STOP}`)).json()) as { id: string }
    const frame = await readCommand()
    const flag = frame[2]
    expect(frame).toBe(seal('@@', flag, `,${IMEI},C01,0,12222`))
    client.send(bytesOf(seal('$$', flag, `,${IMEI},C01,OK`)))
    expect(await once(sent.id, 'answered')).toMatchObject({ response: 'C01,OK' })

    // A10 is answered by an AAA report with event 34 under the command's flag: it completes A10 and is stored as a fix
    const locate = (await (await call('POST', `/devices/${TRUCK}/commands/${LOCATE}`)).json()) as { id: string }
    const ask = await readCommand()
    expect(ask).toBe(seal('@@', ask[2], `,${IMEI},A10`))
    client.send(aaa(IMEI, START / 1000 - 5, 34, ask[2]))
    expect(String((await once(locate.id, 'answered')).response).startsWith('AAA,34,18.459575,-69.947161,')).toBe(true)
    await untilRead(async () => (await positionCount(line.world, TRUCK)) === 2, 2000, 'the two fixes')
  })
})
