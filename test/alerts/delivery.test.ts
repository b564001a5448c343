/**
 * The outbox and its delivery worker, against a real HTTP receiver on 127.0.0.1: what the
 * pipeline enqueues (matched by account, groups and codes) is POSTed signed, with its delivery
 * id; a receiver that is down is retried with backoff on the injected clock (no sleeping) and
 * gets the same delivery id; after 24 h it is dead; positions go in batches, in order per device;
 * a new worker on the same database delivers what the last one left.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { createServer, type Server } from 'node:net'
import { createDeliveryWorker, type DeliveryWorker, type DeliveryWorkerOptions } from '../../src/alerts/delivery'
import { sql } from 'drizzle-orm'
import { beginOutboxBatch, type EventToNotify, type FixToNotify, type OutboxBatch } from '../../src/alerts/outbox'
import { createWebhookGuard, refusedAddress } from '../../src/alerts/ssrf'
import { loadConfig } from '../../src/config'
import { createLogger, silentLogger } from '../../src/log'
import { createServerMetrics } from '../../src/ops/server-metrics'
import { type EngineWorld, ids, keys, openWorld } from '../support/world'
import { startHanging, startReceiver, verifySignature, type Receiver } from './delivery-receiver'

/** waiting for the worker's look under way: it reads the outbox through its store (promises) before it starts attempts */
const lookWaiters: (() => void)[] = []
const looked = () => new Promise<void>((resolve) => lookWaiters.push(resolve))

const SECRET = 'delivery-test-secret-0123456789'

let world: EngineWorld
/** each device's internal key, by id */
let deviceKeys = new Map<string, number>()
let receiver: Receiver
const workers: DeliveryWorker[] = []
beforeEach(async () => {
  world = await openWorld(undefined, { config: loadConfig({ WEBHOOK_ALLOW_PRIVATE: '1' }) })
  deviceKeys = new Map((await world.execute<{ id: string; key: number }>(sql`SELECT id, key FROM devices`)).map((row) => [row.id, Number(row.key)]))
  receiver = startReceiver()
})
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.stop()
  receiver.stop()
  await world.close()
})

function worker(options: Partial<DeliveryWorkerOptions> = {}): DeliveryWorker {
  const created = createDeliveryWorker({
    store: world.stores.deliveries,
    clock: world.clock,
    log: silentLogger,
    allowPrivate: true,
    onLook: () => {
      for (const resolve of lookWaiters.splice(0)) resolve()
    },
    ...options,
  })
  workers.push(created)
  return created
}

const keyOf = (id: string) => deviceKeys.get(id)!

async function channel(body: Record<string, unknown>): Promise<string> {
  const res = await world.call('POST', '/notifications', { token: body.token as string ?? keys.dana, body: { ...body, token: undefined } })
  if (res.status !== 201) throw new Error(`${res.status}: ${await res.text()}`)
  return ((await res.json()) as { id: string }).id
}
const eventsChannel = (events: string[], extra: Record<string, unknown> = {}) =>
  channel({ name: `Events ${events.join(',')}`, events, channel: { type: 'webhook', url: receiver.url, secret: SECRET }, ...extra })
const positionsChannel = (extra: Record<string, unknown> = {}) => channel({ name: 'Integrator', channel: { type: 'webhook', url: receiver.url, secret: SECRET, positions: true }, ...extra })

function event(deviceId: string, code: string, ts = 1_764_000_000): EventToNotify {
  return { device: keyOf(deviceId), ts, alarm_code: code, context: '{"source":"test"}', speed: 42, satellite: null, latitude: 48.85, longitude: 2.35, mcc: null, mnc: null, dbm: null }
}

/** as the pipeline will: inside the transaction that stores the event */
function commitEvent(e: EventToNotify): Promise<number> {
  return inUnit((outbox) => outbox.enqueueEvent(e, world.clock.now()))
}

/** the outbox of one unit of ingest's store, as the pipeline opens it (on either engine), committed */
function inUnit<T>(write: (outbox: OutboxBatch) => T): Promise<T> {
  return world.stores.ingest.commit((unit) => write(unit.inTransaction(beginOutboxBatch)), {
    clock: world.clock,
    touches: () => ({ devices: [...deviceKeys.values()], fixes: [], alarms: [] }),
  })
}

function fixes(deviceId: string, from: number, count: number): FixToNotify[] {
  const device = keyOf(deviceId)
  return Array.from({ length: count }, (_, i) => ({
    device,
    timestamp: from + i,
    latitude: 48 + i / 1e4,
    longitude: 2 + i / 1e4,
    speed: i % 90,
    course: 90,
    altitude: 35,
    attributes: i === 0 ? { ignition: true } : null,
  }))
}

const deliveries = async (id: string) =>
  (await (await world.call('GET', `/notifications/${id}/deliveries`, { token: keys.dana })).json()) as {
    id: string
    type: string
    event: Record<string, unknown> | null
    positions: number | null
    status: string
    attempts: number
    last_status_code: number | null
    last_error: string | null
    next_attempt_at: string | null
    delivered_at: string | null
    created_at: string
  }[]

describe('events', () => {
  test('an event is POSTed once, signed, with its delivery id, as the events API shows it with its device', async () => {
    const id = await eventsChannel(['sos'])
    expect(await commitEvent(event(ids.truck1, 'sos'))).toBe(1)
    expect(await worker().deliverDue()).toBe(1)
    expect(receiver.received).toHaveLength(1)
    const [hit] = receiver.received
    const [delivery] = await deliveries(id)
    expect(hit!.method).toBe('POST')
    expect(hit!.path).toBe('/hook')
    expect(hit!.headers.get('content-type')).toBe('application/json')
    expect(hit!.headers.get('x-tracker-delivery')).toBe(delivery!.id)
    expect(hit!.json).toEqual({
      id: delivery!.id,
      type: 'event',
      event: {
        alarm_code: 'sos',
        context: { source: 'test' },
        speed: 42,
        satellite: null,
        coordinates: [48.85, 2.35],
        mcc: null,
        mnc: null,
        dbm: null,
        timestamp: 1_764_000_000,
        device: { id: ids.truck1, alias: 'Truck 1' },
      },
      sent_at: new Date(world.clock.now()).toISOString(),
    })
    expect(verifySignature(hit!.headers.get('x-tracker-signature'), hit!.body, SECRET)).toEqual({ ok: true, t: Math.floor(world.clock.now() / 1000) })
    expect(verifySignature(hit!.headers.get('x-tracker-signature'), hit!.body, 'another secret').ok).toBe(false)
    expect(delivery).toEqual({
      id: delivery!.id,
      type: 'event',
      event: hit!.json.event,
      positions: null,
      status: 'delivered',
      attempts: 1,
      last_status_code: 204,
      last_error: null,
      next_attempt_at: null,
      delivered_at: new Date(world.clock.now()).toISOString(),
      created_at: new Date(world.clock.now()).toISOString(),
    })
    // nothing is sent twice
    world.clock.advance(3_600_000)
    expect(await worker().deliverDue()).toBe(0)
    expect(receiver.received).toHaveLength(1)
  })

  test("channels are matched by the device's account, groups and the alarm code; disabled and positions channels get no events", async () => {
    const every = await eventsChannel(['*'])
    const sosOnly = await eventsChannel(['sos', 'power_cut'])
    const trucks = await eventsChannel(['*'], { groups: [ids.trucks] })
    const disabled = await eventsChannel(['*'], { enabled: false })
    const positions = await positionsChannel()
    const globex = await channel({ token: keys.erin, name: 'Globex', events: ['*'], channel: { type: 'webhook', url: receiver.url } })
    expect(await commitEvent(event(ids.truck1, 'sos'))).toBe(3)
    expect(await commitEvent(event(ids.van1, 'overspeed'))).toBe(1)
    expect(await commitEvent(event(ids.globexCar, 'sos'))).toBe(1)
    const codes = async (id: string) => (await deliveries(id)).map((d) => `${(d.event!.device as { alias: string }).alias}:${d.event!.alarm_code}`)
    expect(await codes(every)).toEqual(['Van 1:overspeed', 'Truck 1:sos'])
    expect(await codes(sosOnly)).toEqual(['Truck 1:sos'])
    expect(await codes(trucks)).toEqual(['Truck 1:sos'])
    expect(await deliveries(disabled)).toEqual([])
    expect(await deliveries(positions)).toEqual([])
    expect((await (await world.call('GET', `/notifications/${globex}/deliveries`, { token: keys.erin })).json()).map((d: { event: { alarm_code: string } }) => d.event.alarm_code)).toEqual(['sos'])
    expect(await worker().deliverDue()).toBe(5)
    expect(receiver.received).toHaveLength(5)
  })

  test('a deleted group matches no device: the channel does not widen to the whole account', async () => {
    const id = await eventsChannel(['*'], { groups: [ids.vans] })
    expect((await world.call('DELETE', `/groups/${ids.vans}`, { token: keys.dana })).status).toBe(204)
    expect(await commitEvent(event(ids.van1, 'sos'))).toBe(0)
    expect(await commitEvent(event(ids.truck1, 'sos'))).toBe(0)
    expect(await deliveries(id)).toEqual([])
  })

  test('written in the transaction of the event: a rolled-back commit leaves no delivery', async () => {
    const id = await eventsChannel(['sos'])
    await expect(
      inUnit((outbox) => {
        outbox.enqueueEvent(event(ids.truck1, 'sos'), world.clock.now())
        throw new Error('the commit failed')
      }),
    ).rejects.toThrow('the commit failed')
    // the raw connection works too (the pipeline's prepared statements use it); on PostgreSQL the unit's outbox
    const sqlite = world.sqlite?.database.sqlite
    if (sqlite) sqlite.transaction(() => beginOutboxBatch(sqlite).enqueueEvent(event(ids.truck2, 'sos'), world.clock.now()))()
    else await commitEvent(event(ids.truck2, 'sos'))
    expect((await deliveries(id)).map((d) => (d.event!.device as { id: string }).id)).toEqual([ids.truck2])
  })
})

describe('retries', () => {
  test('a receiver down for a while, then up: retried after 10 s, 20 s, then delivered, with the same delivery id', async () => {
    const id = await eventsChannel(['sos'])
    const work = worker()
    receiver.down()
    await commitEvent(event(ids.truck1, 'sos'))
    const start = world.clock.now()
    expect(await work.deliverDue()).toBe(1)
    let [delivery] = await deliveries(id)
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null, last_error: expect.stringContaining('ECONNREFUSED'), delivered_at: null })
    expect(delivery!.next_attempt_at).toBe(new Date(start + 10_000).toISOString())
    // not due yet: nothing is tried
    world.clock.advance(9_999)
    expect(await work.deliverDue()).toBe(0)
    world.clock.advance(1)
    expect(await work.deliverDue()).toBe(1)
    ;[delivery] = await deliveries(id)
    expect(delivery).toMatchObject({ status: 'pending', attempts: 2, next_attempt_at: new Date(start + 30_000).toISOString() })
    // up again, answering 500 once
    receiver.up()
    receiver.answer(() => new Response('busy', { status: 500 }))
    world.clock.set(start + 30_000)
    expect(await work.deliverDue()).toBe(1)
    ;[delivery] = await deliveries(id)
    expect(delivery).toMatchObject({ status: 'pending', attempts: 3, last_status_code: 500, last_error: 'HTTP 500', next_attempt_at: new Date(start + 70_000).toISOString() })
    receiver.answer(() => new Response('ok'))
    world.clock.set(start + 70_000)
    expect(await work.deliverDue()).toBe(1)
    ;[delivery] = await deliveries(id)
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 4, last_status_code: 200, last_error: null, next_attempt_at: null, delivered_at: new Date(start + 70_000).toISOString() })
    expect(receiver.received.map((r) => r.headers.get('x-tracker-delivery'))).toEqual([delivery!.id, delivery!.id])
    expect(receiver.received.map((r) => r.json.id)).toEqual([delivery!.id, delivery!.id])
    // each attempt is signed at its own time
    expect(receiver.received.map((r) => verifySignature(r.headers.get('x-tracker-signature'), r.body, SECRET))).toEqual([
      { ok: true, t: Math.floor((start + 30_000) / 1000) },
      { ok: true, t: Math.floor((start + 70_000) / 1000) },
    ])
  })

  test('the wait doubles from 10 s up to 1 h; after 24 h of failures the delivery is dead', async () => {
    const id = await eventsChannel(['sos'])
    const metrics = createServerMetrics()
    const work = worker({ metrics })
    receiver.answer(() => new Response(null, { status: 503 }))
    await commitEvent(event(ids.truck1, 'sos'))
    const start = world.clock.now()
    const waits: number[] = []
    for (;;) {
      expect(await work.deliverDue()).toBe(1)
      const [delivery] = await deliveries(id)
      if (delivery!.status === 'dead') break
      const next = Date.parse(delivery!.next_attempt_at!)
      waits.push(next - world.clock.now())
      world.clock.set(next)
    }
    const expected = [10, 20, 40, 80, 160, 320, 640, 1280, 2560].map((s) => s * 1000)
    expect(waits.slice(0, expected.length)).toEqual(expected)
    expect(waits.slice(expected.length, -1).every((w) => w === 3_600_000)).toBe(true)
    // the last attempt is at 24 h exactly
    expect(world.clock.now()).toBe(start + 86_400_000)
    const [dead] = await deliveries(id)
    expect(dead).toMatchObject({ status: 'dead', attempts: waits.length + 1, last_status_code: 503, next_attempt_at: null, delivered_at: null })
    expect(receiver.received).toHaveLength(waits.length + 1)
    expect(new Set(receiver.received.map((r) => r.headers.get('x-tracker-delivery')))).toEqual(new Set([dead!.id]))
    world.clock.advance(86_400_000)
    expect(await work.deliverDue()).toBe(0)
    expect(metrics.notificationDeliveries.get(['failed'])).toBe(waits.length)
    expect(metrics.notificationDeliveries.get(['dead'])).toBe(1)
  })

  test('a receiver that does not answer in time is a failed attempt', async () => {
    const silent: Server = createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    try {
      const port = (silent.address() as { port: number }).port
      const id = await channel({ name: 'Silent', events: ['*'], channel: { type: 'webhook', url: `http://127.0.0.1:${port}/hook` } })
      await commitEvent(event(ids.truck1, 'sos'))
      expect(await worker({ timeoutMs: 100 }).deliverDue()).toBe(1)
      expect((await deliveries(id))[0]).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null, last_error: 'no answer within 0.1 s' })
    } finally {
      silent.close()
    }
  })

  test('a change to a channel, through the API or by another process, is matched from the next event on', async () => {
    const id = await eventsChannel(['sos'])
    expect(await commitEvent(event(ids.truck1, 'sos', 1))).toBe(1)
    await world.call('PATCH', `/notifications/${id}`, { token: keys.dana, body: { events: ['power_cut'] } })
    expect(await commitEvent(event(ids.truck1, 'sos', 2))).toBe(0)
    expect(await commitEvent(event(ids.truck1, 'power_cut', 3))).toBe(1)
    await world.call('PATCH', `/notifications/${id}`, { token: keys.dana, body: { groups: [ids.vans] } })
    expect(await commitEvent(event(ids.truck1, 'power_cut', 4))).toBe(0)
    expect(await commitEvent(event(ids.van1, 'power_cut', 4))).toBe(1)
    await world.call('PATCH', `/notifications/${id}`, { token: keys.dana, body: { enabled: false } })
    expect(await commitEvent(event(ids.van1, 'power_cut', 5))).toBe(0)
    // another process (a second server on the same file) writes the row itself
    await world.executeElsewhere(sql`UPDATE notifications SET enabled = ${true} WHERE id = ${id}`)
    expect(await commitEvent(event(ids.van1, 'power_cut', 6))).toBe(1)
    await world.call('DELETE', `/notifications/${id}`, { token: keys.dana })
    expect(await commitEvent(event(ids.van1, 'power_cut', 7))).toBe(0)
  })

  test('a disabled channel keeps its deliveries waiting; enabled again, they go', async () => {
    const id = await eventsChannel(['sos'])
    await commitEvent(event(ids.truck1, 'sos'))
    await world.call('PATCH', `/notifications/${id}`, { token: keys.dana, body: { enabled: false } })
    expect(await worker().deliverDue()).toBe(0)
    await world.call('PATCH', `/notifications/${id}`, { token: keys.dana, body: { enabled: true } })
    expect(await worker().deliverDue()).toBe(1)
    expect((await deliveries(id))[0]!.status).toBe('delivered')
  })
})

describe('restarts', () => {
  test('a new worker on the same database delivers what was pending, and what was cut off by a stop (same delivery id)', async () => {
    const id = await eventsChannel(['sos'])
    // the receiver holds every request until released
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    receiver.answer(async () => {
      await held
      return new Response('ok')
    })
    await commitEvent(event(ids.truck1, 'sos'))
    const first = worker()
    const cutOff = first.deliverDue()
    while (receiver.received.length === 0) await Bun.sleep(1)
    await first.stop()
    await cutOff
    release()
    // the attempt was cut off before its answer: it stays pending, never counted
    expect((await deliveries(id))[0]).toMatchObject({ status: 'pending', attempts: 0 })
    await commitEvent(event(ids.truck2, 'sos'))

    // another process, after a restart: its own connection to the same file
    const reopened = await world.otherStores()
    try {
      const second = createDeliveryWorker({ store: reopened.deliveries, clock: world.clock, log: silentLogger, allowPrivate: true })
      workers.push(second)
      expect(await second.deliverDue()).toBe(2)
    } finally {
      await workers.at(-1)!.stop()
      // its connection is closed with the world
    }
    const list = await deliveries(id)
    expect(list.map((d) => d.status)).toEqual(['delivered', 'delivered'])
    const cut = list[1]!.id
    expect(receiver.received.map((r) => r.headers.get('x-tracker-delivery'))).toEqual([cut, cut, list[0]!.id])
  })

  test('start() delivers in the background within the poll interval, and stop() ends it', async () => {
    const id = await eventsChannel(['sos'])
    const work = worker({ pollMs: 20 })
    work.start()
    await commitEvent(event(ids.truck1, 'sos'))
    while (receiver.received.length === 0) await Bun.sleep(5)
    while ((await deliveries(id))[0]!.status !== 'delivered') await Bun.sleep(5)
    await work.stop()
    await commitEvent(event(ids.truck1, 'sos', 1_764_000_100))
    // a stopped worker makes no attempt, even when asked
    expect(await work.deliverDue()).toBe(0)
    expect(receiver.received).toHaveLength(1)
  })
})

describe('bounded concurrency', () => {
  /** the receiver holds every request until the returned function is called */
  function hold(): () => void {
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    receiver.answer(async () => {
      await held
      return new Response('ok')
    })
    return release
  }

  test('one account alone: at most 8 attempts at once, at most 4 to one channel', async () => {
    const channels = [await eventsChannel(['sos']), await eventsChannel(['sos']), await eventsChannel(['sos'])]
    for (let i = 0; i < 10; i++) await commitEvent(event(ids.truck1, 'sos', 1_764_000_000 + i))
    let release = hold()
    const work = worker()
    const running = work.deliverDue()
    await looked()
    // three channels could take 12: an account alone takes 8 (the other 2 stay for other accounts)
    expect(work.inFlight).toBe(8)
    release()
    expect(await running).toBe(30)
    // one channel alone takes 4
    for (const id of channels.slice(1)) await world.call('PATCH', `/notifications/${id}`, { token: keys.dana, body: { enabled: false } })
    for (let i = 0; i < 10; i++) await commitEvent(event(ids.truck1, 'sos', 1_764_001_000 + i))
    release = hold()
    const again = work.deliverDue()
    await looked()
    expect(work.inFlight).toBe(4)
    release()
    expect(await again).toBe(10)
    expect(receiver.received).toHaveLength(40)
  })
})

describe('tenants apart', () => {
  /** the receiver holds every request until the returned function is called */
  function holdOn(target: Receiver): () => void {
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    target.answer(async () => {
      await held
      return new Response('ok')
    })
    return release
  }
  const globexChannel = (url: string) => channel({ token: keys.erin, name: 'Globex', events: ['sos'], channel: { type: 'webhook', url } })

  test('two accounts with deliveries due share the 10 slots; one alone borrows up to 8, and the 2 left start the next account at once', async () => {
    const other = startReceiver()
    try {
      for (let i = 0; i < 3; i++) await eventsChannel(['sos'])
      for (let i = 0; i < 2; i++) await globexChannel(other.url)
      // Acme's 30 deliveries are written first: the oldest do not take every slot
      for (let i = 0; i < 10; i++) await commitEvent(event(ids.truck1, 'sos', 1_764_000_000 + i))
      for (let i = 0; i < 10; i++) await commitEvent(event(ids.globexCar, 'sos', 1_764_000_000 + i))
      let releases = [holdOn(receiver), holdOn(other)]
      const work = worker()
      const both = work.deliverDue()
      await looked()
      expect(work.inFlight).toBe(10)
      while (receiver.received.length + other.received.length < 10) await Bun.sleep(1)
      expect([receiver.received.length, other.received.length]).toEqual([5, 5])
      for (const release of releases) release()
      expect(await both).toBe(50)

      // Acme alone: 8 at most, however much it has due
      for (let i = 0; i < 10; i++) await commitEvent(event(ids.truck1, 'sos', 1_764_001_000 + i))
      releases = [holdOn(receiver), holdOn(other)]
      const alone = work.deliverDue()
      await looked()
      expect(work.inFlight).toBe(8)
      // Globex's next alarm starts at once, whatever Acme's attempts are waiting for
      await commitEvent(event(ids.globexCar, 'sos', 1_764_001_000))
      const next = work.deliverDue()
      await looked()
      expect(work.inFlight).toBe(10)
      for (const release of releases) release()
      expect((await alone) + (await next)).toBe(32)
      expect(receiver.received).toHaveLength(60)
      expect(other.received).toHaveLength(22)
    } finally {
      other.stop()
    }
  })

  test('a channel that times out is backed off: one attempt at a time, its deliveries wait 10 s, 20 s… (said by next_attempt_at), until it answers', async () => {
    const id = await eventsChannel(['sos'])
    holdOn(receiver)
    for (let i = 0; i < 6; i++) await commitEvent(event(ids.truck1, 'sos', 1_764_000_000 + i))
    const work = worker({ timeoutMs: 100 })
    const start = world.clock.now()
    const at = (ms: number) => new Date(start + ms).toISOString()
    // four at once (a channel's most); they time out together: one timeout, and the channel waits 10 s
    expect(await work.deliverDue()).toBe(4)
    expect(receiver.received).toHaveLength(4)
    let list = await deliveries(id)
    expect(list.map((d) => [d.status, d.attempts, d.next_attempt_at])).toEqual([
      ['pending', 0, at(10_000)],
      ['pending', 0, at(10_000)],
      ...Array(4).fill(['pending', 1, at(10_000)]),
    ])
    expect(list[5]!.last_error).toBe('no answer within 0.1 s')
    world.clock.advance(9_999)
    expect(await work.deliverDue()).toBe(0)
    // then one attempt, not four: it times out again, and the channel waits 20 s
    world.clock.advance(1)
    expect(await work.deliverDue()).toBe(1)
    expect(receiver.received).toHaveLength(5)
    list = await deliveries(id)
    expect(list.map((d) => d.next_attempt_at)).toEqual(Array(6).fill(at(30_000)))
    expect(list.map((d) => d.attempts)).toEqual([0, 0, 1, 1, 1, 2])
    // an event written meanwhile waits with them
    await commitEvent(event(ids.truck1, 'sos', 1_764_000_100))
    expect(await work.deliverDue()).toBe(0)
    expect((await deliveries(id))[0]).toMatchObject({ attempts: 0, next_attempt_at: at(30_000) })
    // the receiver answers again: everything goes
    receiver.answer(() => new Response(null, { status: 204 }))
    world.clock.set(start + 30_000)
    expect(await work.deliverDue()).toBe(7)
    expect((await deliveries(id)).map((d) => d.status)).toEqual(Array(7).fill('delivered'))
  })

  test('channels backed off hold half of the slots at most, together: the rest stay for channels that answer', async () => {
    const hanging = await Promise.all(Array.from({ length: 7 }, () => startHanging()))
    try {
      for (const h of hanging) await channel({ name: 'Hangs', events: ['sos'], channel: { type: 'webhook', url: h.url } })
      await globexChannel(receiver.url)
      await commitEvent(event(ids.truck1, 'sos'))
      const work = worker({ timeoutMs: 100 })
      // each channel times out once: seven backed off
      expect(await work.deliverDue()).toBe(7)
      world.clock.advance(10_000)
      const probes = work.deliverDue()
      await looked()
      expect(work.inFlight).toBe(5)
      // another account's delivery still finds a slot
      await commitEvent(event(ids.globexCar, 'sos'))
      const next = work.deliverDue()
      await looked()
      expect(work.inFlight).toBe(6)
      // the two left go once a backed-off slot is free
      expect((await probes) + (await next)).toBe(8)
      expect(receiver.received).toHaveLength(1)
      expect(hanging.reduce((sum, h) => sum + h.accepted, 0)).toBe(14)
    } finally {
      for (const h of hanging) h.close()
    }
  })
})

describe('positions', () => {
  test('fixes of several commits go in one batch, in order per device, with the fix fields and the device id', async () => {
    const id = await positionsChannel()
    expect(await inUnit((outbox) => outbox.enqueuePositions([...fixes(ids.truck1, 1_764_000_000, 3), ...fixes(ids.truck2, 1_764_000_000, 2)], world.clock.now()))).toBe(2)
    // a later commit, one fix out of order within it
    const later = fixes(ids.truck1, 1_764_000_010, 2).reverse()
    expect(await inUnit((outbox) => outbox.enqueuePositions(later, world.clock.now()))).toBe(1)
    expect(await worker().deliverDue()).toBe(1)
    expect(receiver.received).toHaveLength(1)
    const [hit] = receiver.received
    expect(verifySignature(hit!.headers.get('x-tracker-signature'), hit!.body, SECRET).ok).toBe(true)
    const batch = hit!.json as { id: string; type: string; positions: Record<string, unknown>[]; sent_at: string }
    expect(Object.keys(batch).sort()).toEqual(['id', 'positions', 'sent_at', 'type'])
    expect(batch.type).toBe('positions')
    expect(batch.positions[0]).toEqual({ device: ids.truck1, timestamp: 1_764_000_000, latitude: 48, longitude: 2, speed: 0, course: 90, altitude: 35, attributes: { ignition: true } })
    expect(batch.positions[1]!.attributes).toEqual({})
    const order = (device: string) => batch.positions.filter((p) => p.device === device).map((p) => p.timestamp)
    expect(order(ids.truck1)).toEqual([1_764_000_000, 1_764_000_001, 1_764_000_002, 1_764_000_010, 1_764_000_011])
    expect(order(ids.truck2)).toEqual([1_764_000_000, 1_764_000_001])
    expect(await deliveries(id)).toEqual([expect.objectContaining({ id: batch.id, type: 'positions', event: null, positions: 7, status: 'delivered' })])
  })

  test('at most 500 a batch; the next batch waits until the one before is delivered, so each device stays in order', async () => {
    const id = await positionsChannel({ groups: [ids.trucks] })
    expect(await inUnit((outbox) => outbox.enqueuePositions([...fixes(ids.truck1, 1_764_000_000, 1200), ...fixes(ids.van1, 1_764_000_000, 5)], world.clock.now()))).toBe(3)
    const work = worker()
    receiver.answer(() => new Response(null, { status: 502 }))
    expect(await work.deliverDue()).toBe(1)
    world.clock.advance(10_000)
    expect(await work.deliverDue()).toBe(1)
    // the first batch failed twice; the others were not tried meanwhile
    expect(new Set(receiver.received.map((r) => r.json.id)).size).toBe(1)
    receiver.answer(() => new Response('ok'))
    world.clock.advance(20_000)
    expect(await work.deliverDue()).toBe(3)
    const batches = receiver.received.slice(2).map((r) => r.json.positions as { device: string; timestamp: number }[])
    expect(batches.map((b) => b.length)).toEqual([500, 500, 200])
    const timestamps = batches.flat().map((p) => p.timestamp)
    expect(timestamps).toEqual(fixes(ids.truck1, 1_764_000_000, 1200).map((f) => f.timestamp))
    expect(batches.flat().every((p) => p.device === ids.truck1)).toBe(true)
    const list = await deliveries(id)
    expect(list.map((d) => [d.status, d.positions])).toEqual([
      ['delivered', 200],
      ['delivered', 500],
      ['delivered', 500],
    ])
    // a settled batch keeps its count, not its fixes
    expect(await world.count('notification_deliveries', sql`payload IS NOT NULL`)).toBe(0)
  })

  test('no positions channel: nothing is written', async () => {
    expect(await inUnit((outbox) => outbox.enqueuePositions(fixes(ids.truck1, 1_764_000_000, 10), world.clock.now()))).toBe(0)
    expect(await world.count('notification_deliveries')).toBe(0)
  })
})

describe('the SSRF guard at each attempt', () => {
  test('without WEBHOOK_ALLOW_PRIVATE a worker refuses a loopback target after creation let it in; nothing is sent', async () => {
    const id = await eventsChannel(['sos'])
    await commitEvent(event(ids.truck1, 'sos'))
    expect(await worker({ allowPrivate: false }).deliverDue()).toBe(1)
    expect(receiver.received).toEqual([])
    expect((await deliveries(id))[0]).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null, last_error: expect.stringContaining('refused: 127.0.0.1 is a loopback address') })
  })

  test('a name is resolved again at each attempt: one that now resolves to a private address is refused', async () => {
    const id = await channel({ name: 'Rebinding', events: ['*'], channel: { type: 'webhook', url: `http://hooks.example.test:${receiver.port}/hook` } })
    await commitEvent(event(ids.truck1, 'sos'))
    const answers = ['10.20.30.40']
    const guard = createWebhookGuard({ allowPrivate: false, resolve: async () => answers })
    expect(await worker({ allowPrivate: false, guard }).deliverDue()).toBe(1)
    expect(receiver.received).toEqual([])
    expect((await deliveries(id))[0]!.last_error).toContain('10.20.30.40 is a private address')
  })

  test('plain http connects to the address it checked, naming the host in the Host header', async () => {
    await channel({ name: 'Pinned', events: ['*'], channel: { type: 'webhook', url: `http://hooks.example.test:${receiver.port}/hook` } })
    await commitEvent(event(ids.truck1, 'sos'))
    // this test's rule lets the receiver's address through, and nothing else that is private
    const guard = createWebhookGuard({ allowPrivate: false, resolve: async () => ['127.0.0.1'], refuse: (address) => (address === '127.0.0.1' ? null : refusedAddress(address)) })
    expect(await worker({ allowPrivate: false, guard }).deliverDue()).toBe(1)
    expect(receiver.received).toHaveLength(1)
    expect(receiver.received[0]!.headers.get('host')).toBe(`hooks.example.test:${receiver.port}`)
  })

  test('redirects are not followed: a 3xx to a private address (or any) is a failed attempt, and nothing reaches it', async () => {
    const inside = startReceiver()
    try {
      const id = await eventsChannel(['sos'])
      receiver.answer(() => new Response(null, { status: 307, headers: { location: inside.url } }))
      await commitEvent(event(ids.truck1, 'sos'))
      const guard = createWebhookGuard({ allowPrivate: false, refuse: (address) => (address === '127.0.0.1' ? null : refusedAddress(address)) })
      expect(await worker({ allowPrivate: false, guard }).deliverDue()).toBe(1)
      expect(receiver.received).toHaveLength(1)
      expect(inside.received).toEqual([])
      expect((await deliveries(id))[0]).toMatchObject({ status: 'pending', last_status_code: 307, last_error: `HTTP 307: redirects are not followed (Location: ${inside.url})` })
      // with WEBHOOK_ALLOW_PRIVATE=1 too
      world.clock.advance(10_000)
      expect(await worker().deliverDue()).toBe(1)
      expect(inside.received).toEqual([])
    } finally {
      inside.stop()
    }
  })
})

describe('metrics and logs', () => {
  test('outcomes by kind, the outbox depth and its oldest pending age; no secret in the log', async () => {
    const lines: string[] = []
    const metrics = createServerMetrics()
    const id = await eventsChannel(['*'])
    const work = worker({ metrics, log: createLogger('debug', (line) => lines.push(line)) })
    const render = () => metrics.registry.render()
    expect(render()).toContain('tracker_notification_outbox_pending 0')
    receiver.answer(() => new Response(null, { status: 500 }))
    await commitEvent(event(ids.truck1, 'sos'))
    await commitEvent(event(ids.truck2, 'sos'))
    await work.deliverDue()
    world.clock.advance(90_000)
    expect(render()).toContain('tracker_notification_outbox_pending 2')
    expect(render()).toContain('tracker_notification_outbox_oldest_pending_seconds 90')
    receiver.answer(() => new Response('ok'))
    await work.deliverDue()
    expect(render()).toContain('tracker_notification_outbox_pending 0')
    expect(render()).toContain('tracker_notification_outbox_oldest_pending_seconds 0')
    expect(render()).toContain('tracker_notification_deliveries_total{outcome="failed"} 2')
    expect(render()).toContain('tracker_notification_deliveries_total{outcome="delivered"} 2')
    expect(lines.some((line) => line.includes('notification delivery failed'))).toBe(true)
    expect(lines.join('\n')).not.toContain(SECRET)
    expect((await deliveries(id)).every((d) => d.status === 'delivered')).toBe(true)
  })
})
