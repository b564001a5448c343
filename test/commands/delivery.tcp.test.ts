/**
 * Commands reaching devices over real TCP sockets: the API queues (POST over app.handle), the
 * protocol listeners deliver from the same queue, and a client speaking GT06, Teltonika or H02
 * receives the command's bytes and answers. What the test client expects on the wire is built
 * here from the protocol documents, not by the server's encoders.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { manualClock } from '../../src/clock'
import { ANSWER_WAIT_MS, type CommandQueue, type OutgoingCommand } from '../../src/commands/queue'
import type { CommandDelivery } from '../../src/ingest/commands'
import { crc16Arc, crc16X25 } from '../../src/ingest/protocols/crc'
import { gt06 } from '../../src/ingest/protocols/gt06/descriptor'
import { buildGt06Frame } from '../../src/ingest/protocols/gt06/replies'
import { h02 } from '../../src/ingest/protocols/h02/descriptor'
import { teltonika } from '../../src/ingest/protocols/teltonika/descriptor'
import { until } from '../ingest/fleet'
import { gt06Login, gt06Status, hex, teltonikaImei, type TestClient } from '../ingest/frames'
import { type CommandLine, openCommandLine } from '../support/command-line'
import { freePort, serverEnv, spawnServer } from '../support/process'
import { serverDatabase } from '../support/server-database'
import { ids, keys } from '../support/world'
import { commandDataset, commandIds } from './support'

const TRUCK1_IMEI = '359710049095001'
const FMB = '0d000000-0000-4000-8000-0000000000f1'
const H02_MODEL = '0d000000-0000-4000-8000-0000000000f2'
const TRUCK_T = '0f000000-0000-4000-8000-0000000000f1'
const TRUCK_T_IMEI = '352093081452251'
const TRUCK_H = '0f000000-0000-4000-8000-0000000000f2'
const TRUCK_H_SERIAL = '4210051415'
const cmd = {
  info: '0e000000-0000-4000-8000-0000000000f1',
  setparam: '0e000000-0000-4000-8000-0000000000f2',
  cutFuel: '0e000000-0000-4000-8000-0000000000f3',
}

/** the command world's fleet, with a Teltonika FMB920 and an H02 tracker in Truck's group */
function tcpDataset() {
  const data = commandDataset() as ReturnType<typeof commandDataset> & { models: unknown[]; devices: unknown[] }
  const button = (label: string) => ({ type: 'button', label, confirm: false })
  data.models.push(
    {
      id: FMB, name: 'FMB920', protocol: 'teltonika',
      commands: [
        { id: cmd.info, name: 'Device info', widget: button('Info'), send: { text: 'getinfo' } },
        {
          id: cmd.setparam, name: 'Set parameter',
          widget: { type: 'form', fields: [{ name: 'id', type: 'text', label: 'ID' }, { name: 'value', type: 'text', label: 'Value' }] },
          send: { text: 'setparam {id}:{value}' },
        },
      ],
    },
    { id: H02_MODEL, name: 'Sinotrack ST-901', protocol: 'h02', commands: [{ id: cmd.cutFuel, name: 'Cut fuel', widget: button('Cut'), send: { text: 'S20,1,1' } }] },
  )
  data.devices.push(
    { id: TRUCK_T, account: ids.acme, model: FMB, groups: [ids.trucks], alias: 'Truck T', serial: 'S-TT', imei: TRUCK_T_IMEI, state: 'off' },
    { id: TRUCK_H, account: ids.acme, model: H02_MODEL, groups: [ids.trucks], alias: 'Truck H', serial: TRUCK_H_SERIAL, imei: '', state: 'off' },
  )
  return data
}

/** The queue as the listeners see it, counting what nextToSend hands out: a test can wait until a login's delivery has run. */
function watched(queue: CommandQueue) {
  const handedOut: (OutgoingCommand | null)[] = []
  let inFlight = 0
  const delivery: CommandDelivery = {
    nextToSend: async (...args) => {
      inFlight++
      try {
        const next = await queue.nextToSend(...args)
        handedOut.push(next)
        return next
      } finally {
        inFlight--
      }
    },
    markSent: (...args) => queue.markSent(...args),
    markAnswered: (...args) => queue.markAnswered(...args),
    markFailed: (...args) => queue.markFailed(...args),
    onReconnect: (...args) => queue.onReconnect(...args),
    onReady: (...args) => queue.onReady(...args),
  }
  return {
    delivery,
    /** how many deliveries have asked so far */
    get asked() {
      return handedOut.length
    },
    /** resolves once a delivery asked after `since` found nothing to send and none is under way */
    async nothingMoreAfter(since: number) {
      await until(() => inFlight === 0 && handedOut.length > since && handedOut.at(-1) === null, 2000, 'a delivery with nothing to send')
    },
  }
}

let line: CommandLine<'gt06' | 'teltonika' | 'h02'>
let clock: ReturnType<typeof manualClock>
let queue: CommandQueue
let watch: ReturnType<typeof watched>

beforeEach(async () => {
  // the listeners deliver from the watched queue, so a test can wait until a login's delivery has run
  line = await openCommandLine(tcpDataset(), { gt06, teltonika, h02 }, { delivery: (commandQueue) => (watch = watched(commandQueue)).delivery })
  clock = line.clock
  queue = line.queue
})

afterEach(() => line.close())

// ---- the API

const call = (method: string, path: string, body?: unknown): Promise<Response> => line.call(method, path, { token: keys.alice, body })

interface Sent {
  id: string
  status: string
  text: string
  sent_at: string | null
  answered_at: string | null
  response: string | null
}

async function send(device: string, command: string, body: unknown = {}): Promise<Sent> {
  const res = await call('POST', `/devices/${device}/commands/${command}`, body)
  expect(res.status).toBe(202)
  return (await res.json()) as Sent
}

async function shown(device: string, id: string): Promise<Sent> {
  const res = await call('GET', `/devices/${device}/commands/sent/${id}`)
  expect(res.status).toBe(200)
  return (await res.json()) as Sent
}

/** the sent command once it has `status` (answers are handled off the socket's turn) */
async function once(device: string, id: string, status: string): Promise<Sent> {
  let last: Sent | null = null
  const deadline = Date.now() + 2000
  while (Date.now() < deadline) {
    last = await shown(device, id)
    if (last.status === status) return last
    await Bun.sleep(5)
  }
  throw new Error(`command ${id} is ${last?.status}, not ${status}`)
}

async function events(device: string): Promise<{ alarm_code: string; context: Record<string, unknown> }[]> {
  const to = Math.floor(clock.now() / 1000) + 1
  const res = await call('GET', `/devices/${device}/events?from=${to - 3 * 86_400}&to=${to}`)
  expect(res.status).toBe(200)
  return (await res.json()) as { alarm_code: string; context: Record<string, unknown> }[]
}

// ---- GT06, built from the document: 78 78 | length | protocol | content | serial | CRC-ITU | 0D 0A

const ascii = (text: string) => Array.from(text, (c) => c.charCodeAt(0))
const u16 = (n: number) => [(n >>> 8) & 0xff, n & 0xff]
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]

/** The online command (0x80): command length (flag + text), server flag, ASCII text, language 0x0002 (English), serial. */
function gt06OnlineCommand(text: string, serverFlag: number, serial: number): Uint8Array {
  const body = [0x80, 4 + text.length, ...u32(serverFlag), ...ascii(text), 0x00, 0x02, ...u16(serial)]
  const framed = [0x78, 0x78, body.length + 2, ...body]
  const crc = crc16X25(Uint8Array.from(framed), 2)
  return Uint8Array.from([...framed, ...u16(crc), 0x0d, 0x0a])
}

/** The terminal's answer (0x15): command length (flag + text), the server flag it was sent, the text, language. */
function gt06Answer(text: string, serverFlag: number, serial = 0x20): Uint8Array {
  return buildGt06Frame(0x15, Uint8Array.from([4 + text.length, ...u32(serverFlag), ...ascii(text), 0x00, 0x02]), serial)
}

/** A newer model's answer (0x21) in a 0x7979 frame: server flag, encoding 0x02 (UTF-16BE), the text. */
function gt06EncodedAnswer(text: string, serverFlag: number, serial = 0x21): Uint8Array {
  const utf16 = Array.from(text).flatMap((c) => u16(c.charCodeAt(0)))
  const body = [0x21, ...u32(serverFlag), 0x02, ...utf16, ...u16(serial)]
  const framed = [0x79, 0x79, ...u16(body.length + 2), ...body]
  const crc = crc16X25(Uint8Array.from(framed), 2)
  return Uint8Array.from([...framed, ...u16(crc), 0x0d, 0x0a])
}

/** the next GT06 frame the server sends */
async function readGt06Frame(client: TestClient): Promise<Uint8Array> {
  const head = await client.read(3)
  const rest = await client.read(head[2] + 2)
  return Uint8Array.from([...head, ...rest])
}

async function gt06LoggedIn(imei = TRUCK1_IMEI): Promise<TestClient> {
  const client = await line.connect('gt06')
  client.send(gt06Login(imei, 1))
  expect(hex(await client.read(10))).toBe('78 78 05 01 00 01 D9 DC 0D 0A')
  return client
}

/** reads an online command: its server flag and serial, after checking every other byte against the document's layout */
async function readOnlineCommand(client: TestClient, text: string): Promise<{ flag: number; serial: number }> {
  const frame = await readGt06Frame(client)
  const view = new DataView(frame.buffer)
  const flag = view.getUint32(5)
  const serial = view.getUint16(frame.length - 6)
  expect(hex(frame)).toBe(hex(gt06OnlineCommand(text, flag, serial)))
  return { flag, serial }
}

describe('GT06', () => {
  test('a connected device gets the command at once, as an online command; its 0x15 answer completes it, with an event', async () => {
    const client = await gt06LoggedIn()
    const sent = await send(ids.truck1, ids.engineStop)
    const { flag } = await readOnlineCommand(client, 'RELAY,1#')
    expect(await shown(ids.truck1, sent.id)).toMatchObject({ status: 'sent', sent_at: new Date(clock.now()).toISOString() })

    clock.advance(3000)
    client.send(gt06Answer('Cut off the fuel supply: Success!', flag))
    const answered = await once(ids.truck1, sent.id, 'answered')
    expect(answered).toMatchObject({ response: 'Cut off the fuel supply: Success!', answered_at: new Date(clock.now()).toISOString() })
    expect((await events(ids.truck1)).filter((e) => e.alarm_code.startsWith('command_'))).toEqual([
      expect.objectContaining({ alarm_code: 'command_answered', context: { id: sent.id, command: ids.engineStop, name: 'Engine stop' } }),
    ])
    // the answer is not acknowledged, and the connection goes on
    client.send(gt06Status(9))
    expect(hex(await client.read(10))).toStartWith('78 78 05 13 00 09')
  })

  test('a command queued while the device is away goes out the moment it logs in, after the login ACK', async () => {
    const sent = await send(ids.truck1, ids.setApn, { apn: 'internet.example', password: 'hunter2' })
    expect(sent).toMatchObject({ status: 'queued', text: 'APN,internet.example,,***#' })
    const client = await gt06LoggedIn()
    // the device gets the real password; nobody else sees it
    await readOnlineCommand(client, 'APN,internet.example,,hunter2#')
    expect(await shown(ids.truck1, sent.id)).toMatchObject({ status: 'sent', text: 'APN,internet.example,,***#' })
  })

  test('one at a time: the next goes once the previous is answered; an answer names its command by the server flag', async () => {
    const first = await send(ids.truck1, ids.engineStop)
    const second = await send(ids.truck1, commandIds.setInterval, { seconds: 30 })
    const client = await gt06LoggedIn()
    const a = await readOnlineCommand(client, 'RELAY,1#')
    // the first waits for its answer; after 60 s without one the second goes
    clock.advance(ANSWER_WAIT_MS)
    await queue.sweep(clock.now())
    const b = await readOnlineCommand(client, 'TIMER,30#')
    expect(b.flag).not.toBe(a.flag)
    // the second's answer arrives first: it completes the second, not the oldest waiting
    client.send(gt06Answer('TIMER=30', b.flag))
    await once(ids.truck1, second.id, 'answered')
    expect(await shown(ids.truck1, first.id)).toMatchObject({ status: 'sent' })
    client.send(gt06EncodedAnswer('Relay on: OK ✓', a.flag))
    expect(await once(ids.truck1, first.id, 'answered')).toMatchObject({ response: 'Relay on: OK ✓' })
    expect((await shown(ids.truck1, second.id)).response).toBe('TIMER=30')
  })

  test('an answer whose server flag names no command sent on the connection (clones send 0) completes the oldest waiting', async () => {
    const sent = await send(ids.truck1, ids.engineStop)
    const client = await gt06LoggedIn()
    const { flag } = await readOnlineCommand(client, 'RELAY,1#')
    client.send(gt06Answer('OK', flag === 0 ? 1 : 0))
    expect(await once(ids.truck1, sent.id, 'answered')).toMatchObject({ response: 'OK' })
  })

  test('a reconnection while it waits for its answer sends it again (same server flag); a second miss is failed, with an event', async () => {
    const sent = await send(ids.truck1, ids.engineStop)
    const first = await gt06LoggedIn()
    const { flag } = await readOnlineCommand(first, 'RELAY,1#')
    first.end()
    await first.closed

    const second = await gt06LoggedIn()
    expect((await readOnlineCommand(second, 'RELAY,1#')).flag).toBe(flag)
    expect(await shown(ids.truck1, sent.id)).toMatchObject({ status: 'sent' })
    second.end()
    await second.closed

    const asked = watch.asked
    const third = await gt06LoggedIn()
    await watch.nothingMoreAfter(asked)
    expect(await shown(ids.truck1, sent.id)).toMatchObject({ status: 'failed', response: null })
    third.send(gt06Status(7))
    expect(hex(await third.read(10))).toStartWith('78 78 05 13 00 07')
    expect(third.pending).toBe(0)
    expect((await events(ids.truck1)).map((e) => e.alarm_code)).toContain('command_failed')
  })

  test('a text too long for an online command, or not ASCII, fails at once with its event; the next command goes', async () => {
    const client = await gt06LoggedIn()
    // APN,{apn},,{password}# with two 128-character values: 263 characters, over the 243 a 0x7878 frame carries
    const long = await send(ids.truck1, ids.setApn, { apn: 'a'.repeat(128), password: 'b'.repeat(128) })
    await once(ids.truck1, long.id, 'failed')
    const accented = await send(ids.truck1, ids.setApn, { apn: 'intérnet', password: '' })
    await once(ids.truck1, accented.id, 'failed')
    // the longest that fits: APN, + 128 + ,, + 108 + # = 243
    const fits = await send(ids.truck1, ids.setApn, { apn: 'a'.repeat(128), password: 'b'.repeat(108) })
    await readOnlineCommand(client, `APN,${'a'.repeat(128)},,${'b'.repeat(108)}#`)
    expect(await shown(ids.truck1, fits.id)).toMatchObject({ status: 'sent' })
    const failed = (await events(ids.truck1)).filter((e) => e.alarm_code === 'command_failed').map((e) => e.context.id)
    expect(failed.sort()).toEqual([long.id, accented.id].sort())
  })

  test('expiry on the injected clock: a command not sent within COMMAND_TTL is expired, with its event, and never goes out', async () => {
    const sent = await send(ids.truck1, ids.engineStop)
    clock.advance(86_400_000)
    await queue.sweep(clock.now())
    expect(await shown(ids.truck1, sent.id)).toMatchObject({ status: 'expired', sent_at: null })
    expect((await events(ids.truck1)).find((e) => e.alarm_code === 'command_expired')?.context).toMatchObject({ id: sent.id })
    const asked = watch.asked
    const client = await gt06LoggedIn()
    await watch.nothingMoreAfter(asked)
    client.send(gt06Status(5))
    expect(hex(await client.read(10))).toStartWith('78 78 05 13 00 05')
    expect(client.pending).toBe(0)
  })

  test('a command cancelled while queued never goes out', async () => {
    const sent = await send(ids.truck1, ids.engineStop)
    expect((await call('DELETE', `/devices/${ids.truck1}/commands/sent/${sent.id}`)).status).toBe(204)
    const asked = watch.asked
    const client = await gt06LoggedIn()
    await watch.nothingMoreAfter(asked)
    client.send(gt06Status(6))
    expect(hex(await client.read(10))).toStartWith('78 78 05 13 00 06')
    expect(client.pending).toBe(0)
  })
})

// ---- Teltonika: 00000000 | data size | codec 0x0C | 1 | type | size | text | 1 | CRC-16/IBM

function codec12(type: 0x05 | 0x06, text: string): Uint8Array {
  const data = [0x0c, 0x01, type, ...u32(text.length), ...ascii(text), 0x01]
  return Uint8Array.from([...u32(0), ...u32(data.length), ...data, ...u32(crc16Arc(Uint8Array.from(data)))])
}

async function teltonikaLoggedIn(): Promise<TestClient> {
  const client = await line.connect('teltonika')
  client.send(teltonikaImei(TRUCK_T_IMEI))
  expect(hex(await client.read(1))).toBe('01')
  return client
}

async function readCodec12(client: TestClient): Promise<Uint8Array> {
  const head = await client.read(8)
  const size = new DataView(head.buffer).getUint32(4)
  return Uint8Array.from([...head, ...(await client.read(size + 4))])
}

describe('Teltonika', () => {
  test('a connected device gets a Codec 12 command (the wiki’s own getinfo bytes); its Codec 12 response completes it', async () => {
    const client = await teltonikaLoggedIn()
    const sent = await send(TRUCK_T, cmd.info)
    // "Teltonika Data Sending Protocols", Codec 12, the getinfo example
    expect(hex(await readCodec12(client)).replaceAll(' ', '')).toBe('000000000000000F0C010500000007676574696E666F0100004312')
    expect(hex(codec12(0x05, 'getinfo')).replaceAll(' ', '')).toBe('000000000000000F0C010500000007676574696E666F0100004312')
    expect(await shown(TRUCK_T, sent.id)).toMatchObject({ status: 'sent' })
    const answer = 'INI:2019/7/22 7:22 RTC:2019/7/22 7:53 RST:2 ERR:1 SR:0 BR:0 CF:0 FG:0 FL:0 TU:0/0 UT:0 SMS:0 NOGPS:0:30 GPS:1 SAT:0 RS:3 RF:65 SF:1 MD:0'
    client.send(codec12(0x06, answer))
    expect(await once(TRUCK_T, sent.id, 'answered')).toMatchObject({ response: answer })
    expect((await events(TRUCK_T)).find((e) => e.alarm_code === 'command_answered')?.context).toMatchObject({ id: sent.id })
  })

  test('queued while away, sent after the handshake; a reconnection re-sends it once, the next reconnection fails it', async () => {
    const sent = await send(TRUCK_T, cmd.setparam, { id: '2001', value: 'internet' })
    const first = await teltonikaLoggedIn()
    expect(hex(await readCodec12(first))).toBe(hex(codec12(0x05, 'setparam 2001:internet')))
    first.end()
    await first.closed
    const second = await teltonikaLoggedIn()
    expect(hex(await readCodec12(second))).toBe(hex(codec12(0x05, 'setparam 2001:internet')))
    second.end()
    await second.closed
    const asked = watch.asked
    await teltonikaLoggedIn()
    await watch.nothingMoreAfter(asked)
    expect(await shown(TRUCK_T, sent.id)).toMatchObject({ status: 'failed' })
    expect((await events(TRUCK_T)).find((e) => e.alarm_code === 'command_failed')?.context).toMatchObject({ id: sent.id })
  })

  test('a text over the 160 characters of a Teltonika command fails at once', async () => {
    await teltonikaLoggedIn()
    // setparam + two 128-character values: 267 characters
    const sent = await send(TRUCK_T, cmd.setparam, { id: '1'.repeat(128), value: 'v'.repeat(128) })
    await once(TRUCK_T, sent.id, 'failed')
    expect((await events(TRUCK_T)).map((e) => e.alarm_code)).toContain('command_failed')
  })
})

// ---- H02: *<maker>,<id>,<command>,<hhmmss>,<parameters>#, answered by V4

describe('H02', () => {
  test('a text command in the maker the device uses, with the time; its V4 answer completes it', async () => {
    const client = await line.connect('h02')
    const sent = await send(TRUCK_H, cmd.cutFuel)
    const d = new Date(clock.now())
    const two = (n: number) => String(n).padStart(2, '0')
    const time = two(d.getUTCHours()) + two(d.getUTCMinutes()) + two(d.getUTCSeconds())
    const date = two(d.getUTCDate()) + two(d.getUTCMonth() + 1) + two(d.getUTCFullYear() % 100)
    // a Sinotrack reporting under maker TH (a Traccar capture's maker)
    client.send(new TextEncoder().encode(`*TH,${TRUCK_H_SERIAL},V1,${time},A,0956.3869,N,08406.7068,W,000.00,090,${date},FFFFFBFF#`))
    const expected = `*TH,${TRUCK_H_SERIAL},S20,${time},1,1#`
    expect(new TextDecoder().decode(await client.read(expected.length))).toBe(expected)
    client.send(new TextEncoder().encode(`*TH,${TRUCK_H_SERIAL},V4,S20,DONE,${time},${time},A,0956.3869,N,08406.7068,W,000.00,090,${date},FFFFFBFF#`))
    expect(await once(TRUCK_H, sent.id, 'answered')).toMatchObject({ response: `S20,DONE,${time}` })
  })
})

// ---- the real server in a child process: the queue is the database's, not the process's

describe('across a restart of the server', () => {
  test('a queued command survives a restart and goes out at the next login; one sent and unanswered goes again after the next', async () => {
    const root = join(import.meta.dir, '..', '..')
    const database = await serverDatabase('tracker-commands-restart', commandDataset())
    const ports = { http: freePort(), osmand: 0, teltonika: 0 }
    const gt06Port = freePort()
    const start = async () => {
      const server = spawnServer([process.execPath, 'src/main.ts', 'serve'], {
        cwd: root,
        env: { ...serverEnv(database, ports, 'info'), GT06_PORT: String(gt06Port), OSMAND_PORT: '0' },
      })
      await server.waitFor((line) => line.msg === 'serving', 20_000)
      return server
    }
    const base = `http://127.0.0.1:${ports.http}/devices/${ids.truck1}/commands`
    const headers = { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' }
    const login = async () => {
      // a client of the server process, ended with the line's own
      const client = await line.connect(gt06Port)
      client.send(gt06Login(TRUCK1_IMEI, 1))
      expect(hex(await client.read(10, 5000))).toBe('78 78 05 01 00 01 D9 DC 0D 0A')
      return client
    }

    let server = await start()
    try {
      const queued = await fetch(`${base}/${ids.engineStop}`, { method: 'POST', headers, body: '{}' })
      expect(queued.status).toBe(202)
      const { id } = (await queued.json()) as { id: string }
      expect(await server.terminate()).toBe(0)

      server = await start()
      const first = await login()
      const { flag } = await readOnlineCommand(first, 'RELAY,1#')
      expect(((await (await fetch(`${base}/sent/${id}`, { headers })).json()) as Sent).status).toBe('sent')
      expect(await server.terminate()).toBe(0)
      await first.closed

      // the first login after the restart is a reconnection: the unanswered command goes once more, flag and all
      server = await start()
      const second = await login()
      expect((await readOnlineCommand(second, 'RELAY,1#')).flag).toBe(flag)
      second.send(gt06Answer('Cut off the fuel supply: Success!', flag))
      let shownNow: Sent | null = null
      for (let tries = 0; tries < 200 && shownNow?.status !== 'answered'; tries++) {
        if (tries > 0) await Bun.sleep(10)
        shownNow = (await (await fetch(`${base}/sent/${id}`, { headers })).json()) as Sent
      }
      expect(shownNow).toMatchObject({ status: 'answered', response: 'Cut off the fuel supply: Success!' })
    } finally {
      await server.terminate()
      await database.close()
    }
  }, 60_000)
})
