/**
 * Many nodes on one PostgreSQL (contracts/scale-out.md, "Many nodes"): two real server processes
 * (`bun src/main.ts serve`), each with its own ports and NODE_NAME, on one fresh database, driven
 * through their HTTP APIs and real device sockets. Each "within 1 s" is polled with a deadline and
 * asserted to have held before 1 s had passed since the change was acknowledged.
 *
 * The tests run in order on the same two nodes (the last kills node A with SIGKILL).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { ATTEMPT_TIMEOUT_MS } from '../../src/alerts/delivery'
import { buildGt06Frame } from '../../src/ingest/protocols/gt06/replies'
import { connectClient, gt06Login, streamTeltonika, teltonikaImei, teltonikaPacket, type TestClient } from '../ingest/frames'
import { startReceiver, type Receiver } from '../alerts/delivery-receiver'
import { freshPostgres, postgresAvailable, testDatabaseUrl, type FreshPostgres } from '../support/postgres'
import { devicePortsOff, freePort, runCli, spawnServer, type ServerProcess } from '../support/process'
import { sseBlocks } from '../support/sse'
import { baseDataset, ids, keys } from '../support/world'

const ROOT = new URL('../..', import.meta.url).pathname
const enabled = postgresAvailable('test/nodes (two server processes on one PostgreSQL)')

const APP_URL = 'http://tracker.test'
/** every "within 1 s" of the contract */
const TRAVEL_MS = 1000
/** how long a poll goes on before it fails (beyond 1 s: so a late arrival says how late it was) */
const POLL_DEADLINE_MS = 4000
/** short, so that the stored offline sweep (every OFFLINE_AFTER/4 s) shows within the test */
const OFFLINE_AFTER_SECONDS = 3

const teltonika = { model: '0d000000-0000-4000-8000-0000000000aa', device: '0f000000-0000-4000-8000-0000000000aa', imei: '352093081452251' }
const commands = { relay: ids.engineStop }
const IMEI = { truck1: '359710049095001', truck2: '359710049095002' }

function dataset() {
  const data = baseDataset()
  const gt06 = data.models.find((m) => m.id === ids.gt06)!
  gt06.commands = [{ ...gt06.commands![0]!, send: { text: 'RELAY,1#' } }, gt06.commands![1]!] as typeof gt06.commands
  data.models.push({ id: teltonika.model, name: 'FMB920', protocol: 'teltonika' } as (typeof data.models)[number])
  data.devices.push({ id: teltonika.device, account: ids.acme, model: teltonika.model, groups: [ids.trucks], alias: 'Teltonika 1', serial: 'S-TEL1', imei: teltonika.imei, state: 'new' } as (typeof data.devices)[number])
  return data
}

interface Node {
  name: string
  process: ServerProcess
  http: number
  osmand: number
  gt06: number
  teltonika: number
  h02: number
  /** a request to this node's API; `token` a bearer key or share token, `cookie` a session */
  call(method: string, path: string, options?: { token?: string; cookie?: string; body?: unknown }): Promise<Response>
}

let database: FreshPostgres
let dir: string
let a: Node
let b: Node
const started: ServerProcess[] = []
const clients: TestClient[] = []
let receiver: Receiver

function nodeEnv(name: string, ports: Omit<Node, 'name' | 'process' | 'call'>, databaseUrl: string): Record<string, string | undefined> {
  return {
    ...process.env,
    ...devicePortsOff(),
    DATABASE_URL: databaseUrl,
    DATABASE_PATH: join(dir, `${name}.db`), // unused on PostgreSQL: never the repository's
    NODE_NAME: name,
    HOST: '127.0.0.1',
    PORT: String(ports.http),
    OSMAND_PORT: String(ports.osmand),
    GT06_PORT: String(ports.gt06),
    TELTONIKA_PORT: String(ports.teltonika),
    H02_PORT: String(ports.h02),
    // the protocols this test does not speak: off, so that two nodes do not both claim their default ports
    APP_URL,
    OFFLINE_AFTER: String(OFFLINE_AFTER_SECONDS),
    WEBHOOK_ALLOW_PRIVATE: '1',
    DATABASE_POOL_SIZE: '5',
    LOG_LEVEL: 'info',
  }
}

async function startNode(name: string): Promise<Node> {
  const ports = { http: freePort(), osmand: freePort(), gt06: freePort(), teltonika: freePort(), h02: freePort() }
  const child = spawnServer([process.execPath, `${ROOT}src/main.ts`, 'serve'], { cwd: dir, env: nodeEnv(name, ports, database.url) })
  started.push(child)
  await child.waitFor((line) => line.msg === 'serving', 20_000)
  return {
    name,
    process: child,
    ...ports,
    call(method, path, { token, cookie, body } = {}) {
      const headers: Record<string, string> = { origin: APP_URL }
      if (token !== undefined) headers.authorization = `Bearer ${token}`
      if (cookie !== undefined) headers.cookie = cookie
      if (body !== undefined) headers['content-type'] = 'application/json'
      return fetch(`http://127.0.0.1:${ports.http}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    },
  }
}

/** The body of a 2xx answer as JSON; any other status fails with the body. */
async function ok<T = any>(response: Response | Promise<Response>, status?: number): Promise<T> {
  const res = await response
  const text = await res.text()
  if (status !== undefined ? res.status !== status : res.status >= 300) throw new Error(`${res.url}: ${res.status} ${text}`)
  return (text ? JSON.parse(text) : null) as T
}

/**
 * Polls `probe` until it answers true; answers the milliseconds from `sinceMs` (performance.now()
 * when the change was acknowledged) to the probe that saw it. Throws after `deadlineMs`.
 */
async function arrival(what: string, sinceMs: number, probe: () => Promise<boolean>, deadlineMs = POLL_DEADLINE_MS): Promise<number> {
  for (;;) {
    if (await probe()) return performance.now() - sinceMs
    if (performance.now() - sinceMs > deadlineMs) throw new Error(`${what}: not seen within ${deadlineMs} ms`)
    await Bun.sleep(20)
  }
}

/** asserts that `what` was seen before 1 s had passed */
async function within1s(what: string, sinceMs: number, probe: () => Promise<boolean>): Promise<void> {
  const elapsedMs = await arrival(what, sinceMs, probe)
  if (process.env.NODES_TIMINGS) console.log(`${what}: ${elapsedMs.toFixed(0)} ms`)
  expect({ what, inTime: elapsedMs <= TRAVEL_MS }).toEqual({ what, inTime: true })
}

const statusOf = async (response: Promise<Response>) => {
  const res = await response
  await res.arrayBuffer()
  return res.status
}

// ---- GT06: the online command (0x80) a device receives, and its answer (0x15)

const ascii = (text: string) => Array.from(text, (c) => c.charCodeAt(0))
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]

async function readGt06Frame(client: TestClient, timeoutMs = 2000): Promise<Uint8Array> {
  const head = await client.read(3, timeoutMs)
  const rest = await client.read(head[2]! + 2, timeoutMs)
  return Uint8Array.from([...head, ...rest])
}

function gt06Answer(text: string, serverFlag: number, serial = 0x20): Uint8Array {
  return buildGt06Frame(0x15, Uint8Array.from([4 + text.length, ...u32(serverFlag), ...ascii(text), 0x00, 0x02]), serial)
}

async function gt06Session(node: Node, imei: string): Promise<TestClient> {
  const client = await connectClient(node.gt06)
  clients.push(client)
  client.send(gt06Login(imei, 1))
  const ack = await client.read(10)
  expect(ack[3]).toBe(0x01)
  return client
}

async function teltonikaSession(node: Node): Promise<TestClient> {
  const client = await connectClient(node.teltonika)
  clients.push(client)
  client.send(teltonikaImei(teltonika.imei))
  expect((await client.read(1))[0]).toBe(1)
  return client
}

/** sends one AVL record; resolves once the node acknowledged it (the count of records, 4 bytes) */
async function teltonikaFix(client: TestClient, fix: { timestampMs: number; latitude: number; longitude: number }): Promise<void> {
  client.send(teltonikaPacket([{ ...fix, speed: 30, satellites: 9 }]))
  const ack = await client.read(4, 5000)
  expect(new DataView(ack.buffer).getUint32(0)).toBe(1)
}

/** one OsmAnd report; answered 200 once stored */
async function osmand(node: Node, serial: string, fix: { ts: number; lat: number; lon: number }): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${node.osmand}/?id=${serial}&lat=${fix.lat}&lon=${fix.lon}&timestamp=${fix.ts}`)
  await res.arrayBuffer()
  expect(res.status).toBe(200)
}

const nowSeconds = () => Math.floor(Date.now() / 1000)

interface DeviceView {
  id: string
  location?: [number, number] | null
  connected?: boolean
  [key: string]: unknown
}

describe.skipIf(!enabled)('many nodes on one PostgreSQL', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tracker-nodes-'))
    database = await freshPostgres()
    const file = join(dir, 'dataset.json')
    writeFileSync(file, JSON.stringify(dataset()))
    const imported = runCli(['import', file], { cwd: dir, env: { DATABASE_URL: database.url } })
    if (imported.code !== 0) throw new Error(`import failed: ${imported.stderr}`)
    receiver = startReceiver()
    ;[a, b] = await Promise.all([startNode('node-a'), startNode('node-b')])
  }, 40_000)

  afterAll(async () => {
    for (const client of clients) if (!client.isClosed()) client.end()
    await Promise.all(started.map((child) => (child.child.exitCode === null ? child.terminate('SIGKILL') : undefined)))
    receiver?.stop()
    // the database may have been closed to connections by the /ready test: open it to drop it
    if (database) {
      const admin = postgres(testDatabaseUrl!, { max: 1, onnotice: () => {} })
      await admin.unsafe(`ALTER DATABASE "${database.name}" ALLOW_CONNECTIONS true`).catch(() => undefined)
      await admin.end({ timeout: 5 })
      await database.drop()
    }
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 20_000)

  test('reads are the same on both nodes, once a change had 1 s', async () => {
    const reads = [`/devices/${ids.truck1}`, '/devices', '/groups', '/me', `/devices/${teltonika.device}`]
    // the imported truck 1 was connected long ago: the stored offline sweep (one node, under its
    // lease) disconnects it soon after the start; both nodes show it within 1 s of the first
    let since = performance.now()
    const disconnectedOn = async (node: Node) => (await ok<DeviceView>(node.call('GET', `/devices/${ids.truck1}`, { token: keys.alice }))).connected === false
    await arrival('truck 1 disconnected by the offline sweep', since, async () => (await disconnectedOn(a)) || (await disconnectedOn(b)))
    since = performance.now()
    await within1s('the offline sweep seen on both nodes', since, async () => (await disconnectedOn(a)) && (await disconnectedOn(b)))
    for (const path of reads) expect(await ok(b.call('GET', path, { token: keys.alice }))).toEqual(await ok(a.call('GET', path, { token: keys.alice })))

    const changed = await ok(a.call('PATCH', `/devices/${ids.truck1}`, { token: keys.dana, body: { alias: 'Truck One' } }))
    since = performance.now()
    expect(changed.alias).toBe('Truck One')
    await within1s('a renamed device on node B', since, async () => (await ok(b.call('GET', `/devices/${ids.truck1}`, { token: keys.alice }))).alias === 'Truck One')
    for (const path of reads) expect(await ok(b.call('GET', path, { token: keys.alice }))).toEqual(await ok(a.call('GET', path, { token: keys.alice })))
  })

  test('a fix acknowledged by node A is in GET /devices/{id}, the route and a live stream on node B within 1 s (OsmAnd and Teltonika)', async () => {
    const stream = sseBlocks(await b.call('GET', '/devices/stream', { token: keys.alice }))
    expect(await stream.next()).toBe('retry: 3000')
    const from = nowSeconds() - 600

    // OsmAnd over HTTP
    const phoneTs = nowSeconds() - 5
    const seenOnStream = stream.until((block) => block.startsWith('event: fix') && block.includes(ids.van1), 3000).then(() => performance.now())
    await osmand(a, 'S-V1', { ts: phoneTs, lat: 48.1, lon: 11.5 })
    let since = performance.now()
    expect((await seenOnStream) - since).toBeLessThanOrEqual(TRAVEL_MS)
    await within1s('the OsmAnd fix in GET /devices/{id} on B', since, async () => {
      const device = await ok<DeviceView>(b.call('GET', `/devices/${ids.van1}`, { token: keys.alice }))
      return JSON.stringify(device.location) === JSON.stringify([48.1, 11.5])
    })
    const route = await ok(b.call('GET', `/devices/${ids.van1}/history/route?from=${from}&to=${nowSeconds() + 60}`, { token: keys.alice }))
    expect(JSON.stringify(route)).toContain('48.1')

    // Teltonika over TCP
    const client = await teltonikaSession(a)
    const seenTeltonika = stream.until((block) => block.startsWith('event: fix') && block.includes(teltonika.device), 3000).then(() => performance.now())
    await teltonikaFix(client, { timestampMs: (nowSeconds() - 3) * 1000, latitude: 54.6872, longitude: 25.2797 })
    since = performance.now()
    expect((await seenTeltonika) - since).toBeLessThanOrEqual(TRAVEL_MS)
    await within1s('the Teltonika fix in the route on B', since, async () => {
      const body = JSON.stringify(await ok(b.call('GET', `/devices/${teltonika.device}/history/route?from=${from}&to=${nowSeconds() + 60}`, { token: keys.alice })))
      return body.includes('54.6872')
    })
    await stream.cancel()
    client.end()
  })

  /** the change made on node A refuses `request` on A at once, and on B within 1 s */
  async function refusedEverywhere(what: string, request: (node: Node) => Promise<Response>, before: number, after: number, change: () => Promise<void>): Promise<void> {
    expect([await statusOf(request(a)), await statusOf(request(b))]).toEqual([before, before]) // both nodes have it cached
    await change()
    const since = performance.now()
    expect({ what, onA: await statusOf(request(a)) }).toEqual({ what, onA: after })
    await within1s(`${what} on node B`, since, async () => (await statusOf(request(b))) === after)
  }

  test('access changes made on node A are refused there on the very next request, and on node B within 1 s', async () => {
    // a revoked key
    const key = await ok<{ id: string; key: string }>(a.call('POST', `/users/${ids.bob}/keys`, { token: keys.dana, body: { name: 'nodes' } }), 201)
    await refusedEverywhere('a revoked key', (node) => node.call('GET', '/devices', { token: key.key }), 200, 401, async () => {
      await ok(a.call('DELETE', `/users/${ids.bob}/keys/${key.id}`, { token: keys.dana }), 204)
    })

    // an ended session
    const person = await ok<{ id: string }>(a.call('POST', '/users', { token: keys.dana, body: { name: 'frank', password: 'frank-password-1', groups: [ids.trucks] } }), 201)
    const signIn = await a.call('POST', '/session', { body: { name: 'frank', password: 'frank-password-1' } })
    expect(signIn.status).toBe(200)
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!
    await refusedEverywhere('an ended session', (node) => node.call('GET', `/devices/${ids.truck1}`, { cookie }), 200, 401, async () => {
      await ok(a.call('DELETE', '/session', { cookie }), 204)
    })

    // a revoked share link
    const link = await ok<{ id: string; token: string }>(a.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } }))
    await refusedEverywhere('a revoked share link', (node) => node.call('GET', `/devices/${ids.truck1}`, { token: link.token }), 200, 401, async () => {
      await ok(a.call('DELETE', `/devices/share/${link.id}`, { token: keys.alice }), 204)
    })

    // a user removed from a group: bob reaches truck2 through vans only
    await refusedEverywhere('a user removed from a group', (node) => node.call('GET', `/devices/${ids.truck2}`, { token: keys.bob }), 200, 404, async () => {
      await ok(a.call('PATCH', `/groups/${ids.vans}`, { token: keys.dana, body: { users: [ids.alice] } }))
    })

    // a device deleted
    await refusedEverywhere('a deleted device', (node) => node.call('GET', `/devices/${ids.unlinked}`, { token: keys.alice }), 200, 404, async () => {
      await ok(a.call('DELETE', `/devices/${ids.unlinked}`, { token: keys.dana }), 204)
    })
    expect(person.id).toBeString()
  })

  /** a command queued (through node A) for a device connected nowhere: the kill -9 test hands it to node B */
  let waitingCommand: string

  test('a command sent through node B goes out on the session node A holds within 1 s; its answer is recorded once and shows on both; a device connected nowhere keeps its command queued', async () => {
    const device = await gt06Session(a, IMEI.truck1)
    const sent = await ok<{ id: string; status: string }>(b.call('POST', `/devices/${ids.truck1}/commands/${commands.relay}`, { token: keys.alice, body: {} }), 202)
    const since = performance.now()
    const frame = await readGt06Frame(device, 3000)
    expect(performance.now() - since).toBeLessThanOrEqual(TRAVEL_MS)
    expect(frame[3]).toBe(0x80)
    const flag = new DataView(frame.buffer).getUint32(5)
    expect(new TextDecoder().decode(frame.slice(9, 9 + 'RELAY,1#'.length))).toBe('RELAY,1#')

    const queued = await ok<{ id: string; status: string }>(a.call('POST', `/devices/${ids.truck2}/commands/${commands.relay}`, { token: keys.alice, body: {} }), 202)
    waitingCommand = queued.id

    device.send(gt06Answer('Cut off the fuel supply: Success!', flag))
    const answered = Date.now()
    for (const node of [a, b]) {
      await arrival(`the answer on ${node.name}`, performance.now(), async () => {
        const shown = await ok<{ status: string }>(node.call('GET', `/devices/${ids.truck1}/commands/sent/${sent.id}`, { token: keys.alice }))
        return shown.status === 'answered'
      })
    }
    const shownA = await ok(a.call('GET', `/devices/${ids.truck1}/commands/sent/${sent.id}`, { token: keys.alice }))
    expect(shownA).toMatchObject({ status: 'answered', response: 'Cut off the fuel supply: Success!' })
    expect(await ok(b.call('GET', `/devices/${ids.truck1}/commands/sent/${sent.id}`, { token: keys.alice }))).toEqual(shownA)
    expect(Date.parse(shownA.answered_at)).toBeLessThanOrEqual(answered + 1000)
    for (const node of [a, b]) {
      const events = await ok<{ alarm_code: string; context: { id?: string } }[]>(node.call('GET', `/devices/${ids.truck1}/events?from=${nowSeconds() - 600}&to=${nowSeconds() + 60}`, { token: keys.alice }))
      expect(events.filter((event) => event.alarm_code === 'command_answered' && event.context.id === sent.id)).toHaveLength(1)
    }
    // the device connected nowhere: its command waits on both nodes
    for (const node of [a, b]) {
      expect(await ok(node.call('GET', `/devices/${ids.truck2}/commands/sent/${queued.id}`, { token: keys.alice }))).toMatchObject({ status: 'queued', sent_at: null })
    }
  })

  test('alerts are decided once: a fix ingested on node A derives its geofence entry once, and the webhook receives its delivery once', async () => {
    // made on node B, used by node A's ingest: once the change had its 1 s to travel
    const geofence = await ok<{ id: string }>(b.call('POST', '/geofences', { token: keys.dana, body: { name: 'Depot', area: { type: 'Circle', center: [48.2, 11.6], radius: 1000 } } }), 201)
    const channel = await ok<{ id: string }>(
      b.call('POST', '/notifications', { token: keys.dana, body: { name: 'Depot entries', events: ['geofence_enter'], channel: { type: 'webhook', url: receiver.url, secret: 'nodes-secret-0123' }, enabled: true } }),
      201,
    )
    await Bun.sleep(TRAVEL_MS)

    const ts = nowSeconds() - 2
    await osmand(a, 'S-V1', { ts, lat: 48.2, lon: 11.6 })
    const entries = async (node: Node) =>
      (await ok<{ alarm_code: string; context: { geofence?: string } }[]>(node.call('GET', `/devices/${ids.van1}/events?from=${ts - 60}&to=${ts + 60}`, { token: keys.alice }))).filter(
        (event) => event.alarm_code === 'geofence_enter' && event.context.geofence === geofence.id,
      )
    expect(await entries(a)).toHaveLength(1)
    await arrival('the geofence entry on node B', performance.now(), async () => (await entries(b)).length > 0)
    const hooked = () => receiver.received.filter((request) => request.json.event?.alarm_code === 'geofence_enter' && request.json.event?.device?.id === ids.van1)
    await arrival('the webhook delivery', performance.now(), async () => hooked().length > 0)
    await arrival('the delivery recorded as delivered', performance.now(), async () => {
      const deliveries = await ok<{ status: string }[]>(b.call('GET', `/notifications/${channel.id}/deliveries`, { token: keys.dana }))
      return deliveries.length === 1 && deliveries[0]!.status === 'delivered'
    })
    // both delivery workers poll each second: give the other node its turn to (wrongly) send it again
    await Bun.sleep(1500)
    expect(hooked()).toHaveLength(1)
    expect(await ok(a.call('GET', `/notifications/${channel.id}/deliveries`, { token: keys.dana }))).toEqual([
      expect.objectContaining({ status: 'delivered', attempts: 1 }),
    ])
    expect(await entries(a)).toHaveLength(1)
    expect(await entries(b)).toHaveLength(1)
  })

  test('after all of the above had 1 s, every read answers the same on both nodes', async () => {
    await Bun.sleep(TRAVEL_MS)
    const range = `from=${nowSeconds() - 900}&to=${nowSeconds() + 60}`
    const reads: [string, string][] = [
      ['/devices', keys.alice],
      [`/devices/${ids.van1}`, keys.alice],
      [`/devices/${ids.van1}/events?${range}`, keys.alice],
      [`/devices/${ids.van1}/history/route?${range}`, keys.alice],
      [`/devices/${teltonika.device}/history/route?${range}`, keys.alice],
      [`/devices/${ids.truck1}/commands/sent`, keys.alice],
      [`/devices/${ids.truck2}/commands/sent`, keys.alice],
      ['/devices', keys.bob],
      ['/groups', keys.dana],
      ['/users', keys.dana],
      ['/geofences', keys.dana],
      ['/notifications', keys.dana],
      ['/devices/share', keys.alice],
    ]
    for (const [path, token] of reads) {
      const [onA, onB] = await Promise.all([a.call('GET', path, { token }), b.call('GET', path, { token })])
      expect({ path, status: onB.status, body: await onB.text() }).toEqual({ path, status: onA.status, body: await onA.text() })
    }
  })

  test('/metrics is per node and carries node="<NODE_NAME>"', async () => {
    for (const node of [a, b]) {
      const res = await fetch(`http://127.0.0.1:${node.http}/metrics`)
      const text = await res.text()
      expect(res.status).toBe(200)
      const samples = text.split('\n').filter((line) => line.startsWith('tracker_'))
      expect(samples.length).toBeGreaterThan(0)
      expect(samples.filter((line) => !line.includes(`node="${node.name}"`))).toEqual([])
    }
  })

  test('kill -9 of node A loses no acknowledged fix, no committed event, no queued command or delivery; its device goes on through node B; background work goes on on B', async () => {
    // the webhook receiver holds every request open: the delivery is under way when node A dies
    const held: (() => void)[] = []
    receiver.answer(() => new Promise<Response>((resolve) => held.push(() => resolve(new Response(null, { status: 204 })))))

    // a device streaming fixes to node A, acknowledged ones counted
    const acknowledged: number[] = []
    let streaming = true
    const baseMs = (nowSeconds() - 300) * 1000
    const stream = streamTeltonika(a.teltonika, teltonika.imei, { recordsPerPacket: 5, baseMs, acknowledged, stopped: () => !streaming })
    // a committed event on node A (van 1 leaves the depot and enters it again: one more entry, its delivery in the outbox)
    // (the alerts test's fix was at least 2 s older than ts - 1: these are newer, so the rules see them)
    const ts = nowSeconds()
    await osmand(a, 'S-V1', { ts: ts - 1, lat: 48.1, lon: 11.5 })
    await osmand(a, 'S-V1', { ts, lat: 48.2, lon: 11.6 }) // and van 1 is left connected by node A
    const entries = async (node: Node) =>
      (await ok<{ alarm_code: string; timestamp: number }[]>(node.call('GET', `/devices/${ids.van1}/events?from=${ts - 1}&to=${ts + 60}`, { token: keys.alice }))).filter(
        (e) => e.alarm_code === 'geofence_enter',
      )
    const entryOnA = await entries(a)
    expect(entryOnA).toHaveLength(1)
    const isEntry = (r: { json: Record<string, any> }) =>
      r.json.event?.alarm_code === 'geofence_enter' && r.json.event?.device?.id === ids.van1 && r.json.event?.timestamp === entryOnA[0]!.timestamp
    await arrival('enough acknowledged fixes', performance.now(), async () => acknowledged.length >= 20)
    await arrival('the delivery under way', performance.now(), async () => receiver.received.some(isEntry))

    expect(await a.process.terminate('SIGKILL')).not.toBe(0)
    streaming = false
    await stream

    // every acknowledged fix is stored (the route on node B)
    const route = await ok<{ points: { timestamp: number }[] }>(
      b.call('GET', `/devices/${teltonika.device}/history/route?from=${baseMs / 1000 - 1}&to=${nowSeconds() + 60}`, { token: keys.alice }),
    )
    const stored = new Set(route.points.map((point) => point.timestamp))
    expect(acknowledged.filter((timestamp) => !stored.has(timestamp))).toEqual([])
    // no committed event lost
    expect(await entries(b)).toEqual(entryOnA)
    // the queued delivery: taken over by node B and delivered, under the one delivery id
    receiver.answer(() => new Response(null, { status: 204 }))
    for (const release of held.splice(0)) release()
    const acmeChannels = await ok<{ id: string }[]>(b.call('GET', '/notifications', { token: keys.dana }))
    expect(acmeChannels).toHaveLength(1)
    await arrival('the delivery delivered by node B', performance.now(), async () => {
      const deliveries = await ok<{ status: string; event: { device?: { id: string } } | string }[]>(b.call('GET', `/notifications/${acmeChannels[0]!.id}/deliveries`, { token: keys.dana }))
      return deliveries.length === 2 && deliveries.every((d) => d.status === 'delivered')
    }, ATTEMPT_TIMEOUT_MS + 3000) // node B leaves a delivery it saw under way on A for the longest an attempt lasts
    const deliveryIds = new Set(receiver.received.filter(isEntry).map((r) => r.headers.get('x-tracker-delivery')))
    expect(deliveryIds.size).toBe(1)

    // the device reconnects to node B and goes on
    const client = await teltonikaSession(b)
    const nextMs = (nowSeconds() - 1) * 1000
    await teltonikaFix(client, { timestampMs: nextMs, latitude: 54.7, longitude: 25.3 })
    const device = await ok<DeviceView>(b.call('GET', `/devices/${teltonika.device}`, { token: keys.alice }))
    expect(device.location).toEqual([54.7, 25.3])
    // the command queued through node A for a device connected nowhere goes out when it logs in to node B
    const truck2 = await gt06Session(b, IMEI.truck2)
    const frame = await readGt06Frame(truck2, 3000)
    expect(frame[3]).toBe(0x80)
    expect(new TextDecoder().decode(frame.slice(9, 9 + 'RELAY,1#'.length))).toBe('RELAY,1#')
    await arrival('the queued command sent', performance.now(), async () => (await ok<{ status: string }>(b.call('GET', `/devices/${ids.truck2}/commands/sent/${waitingCommand}`, { token: keys.alice }))).status === 'sent')
    // background work: node B's offline sweep disconnects van 1, which node A left connected,, once quiet for OFFLINE_AFTER
    await arrival('van 1, which node A left connected,, disconnected by node B', performance.now(), async () => {
      const van = await ok<DeviceView>(b.call('GET', `/devices/${ids.van1}`, { token: keys.alice }))
      return van.connected === false
    })
  }, 30_000)

  test('/ready answers 503 while node B cannot reach the database, 200 once it can again; a node that cannot reach it at start exits 1 with one line', async () => {
    const ready = () => statusOf(fetch(`http://127.0.0.1:${b.http}/ready`))
    expect(await ready()).toBe(200)
    const admin = postgres(testDatabaseUrl!, { max: 1, onnotice: () => {} })
    try {
      await admin.unsafe(`ALTER DATABASE "${database.name}" ALLOW_CONNECTIONS false`)
      await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${database.name}`
      await arrival('/ready 503 on node B', performance.now(), async () => (await ready()) === 503)
      const body = await (await fetch(`http://127.0.0.1:${b.http}/ready`)).json()
      expect(body).toMatchObject({ status: 503, detail: expect.stringContaining('the database does not answer') })
    } finally {
      await admin.unsafe(`ALTER DATABASE "${database.name}" ALLOW_CONNECTIONS true`)
      await admin.end({ timeout: 5 })
    }
    await arrival('/ready 200 on node B again', performance.now(), async () => (await ready()) === 200)
    // and it goes on serving: a fix through node B is acknowledged and read back (the first may be
    // refused, not acknowledged, on a pooled connection the outage ended: the device sends it again)
    let acknowledgedFix = { ts: 0, lat: 0, lon: 0 }
    await arrival('a fix acknowledged by node B after the outage', performance.now(), async () => {
      const fix = { ts: nowSeconds(), lat: 48.3, lon: Number((11.7 + Math.floor(Math.random() * 1000) / 100_000).toFixed(5)) }
      const res = await fetch(`http://127.0.0.1:${b.osmand}/?id=S-V1&lat=${fix.lat}&lon=${fix.lon}&timestamp=${fix.ts}`)
      await res.arrayBuffer()
      if (res.status === 200) acknowledgedFix = fix
      return res.status === 200
    })
    expect((await ok<DeviceView>(b.call('GET', `/devices/${ids.van1}`, { token: keys.alice }))).location).toEqual([acknowledgedFix.lat, acknowledgedFix.lon])

    // a third node whose DATABASE_URL cannot be reached
    const unreachable = new URL(database.url)
    unreachable.port = String(freePort())
    const ports = { http: freePort(), osmand: freePort(), gt06: freePort(), teltonika: freePort(), h02: freePort() }
    const third = spawnServer([process.execPath, `${ROOT}src/main.ts`, 'serve'], { cwd: dir, env: nodeEnv('node-c', ports, unreachable.toString()) })
    started.push(third)
    expect(await third.child.exited).toBe(1)
    await third.waitFor(() => true).catch(() => undefined)
    const lines = third.text().trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('127.0.0.1')
    expect(lines[0]).not.toContain('tracker:tracker')
  }, 20_000)
})
