/**
 * A user's own email alerts (PUT /me/email-alerts): the events they chose reach the in-test SMTP
 * server, addressed to them, only for devices they reach (checked at each event: a change of
 * their groups or role counts); bad choices are 400 and change nothing; the admins' /notifications
 * neither shows nor touches them; they go with the user.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { createDeliveryWorker, type DeliveryWorker, messagingOf } from '../../src/alerts/delivery'
import { beginOutboxBatch, type EventToNotify } from '../../src/alerts/outbox'
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/log'
import { sql } from 'drizzle-orm'
import { type EngineWorld, ids, keys, openWorld, problem } from '../support/world'
import { type Smtp, startSmtp } from './messaging-receivers'

let world: EngineWorld
/** each device's internal key, by id */
let deviceKeys = new Map<string, number>()
let smtp: Smtp
const workers: DeliveryWorker[] = []
const configOf = () => loadConfig({ SMTP_URL: smtp.url, SMTP_FROM: 'Fleet tracker <tracker@fleet.example.com>', APP_URL: 'https://fleet.example.com' })

beforeEach(async () => {
  smtp = await startSmtp()
  world = await openWorld(undefined, { config: configOf() })
  deviceKeys = new Map((await world.execute<{ id: string; key: number }>(sql`SELECT id, key FROM devices`)).map((row) => [row.id, Number(row.key)]))
})
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.stop()
  await world.close()
  await smtp.close()
})

function worker(): DeliveryWorker {
  const created = createDeliveryWorker({ store: world.stores.deliveries, clock: world.clock, log: createLogger('error', () => {}), allowPrivate: true, messaging: messagingOf(configOf()) })
  workers.push(created)
  return created
}

const keyOf = (id: string) => deviceKeys.get(id)!
let second = 1_764_000_000
const event = (device: string, alarm_code = 'sos'): EventToNotify => ({
  device: keyOf(device),
  ts: second++,
  alarm_code,
  context: '{}',
  speed: 0,
  satellite: null,
  latitude: 45.7578,
  longitude: 4.832,
  mcc: null,
  mnc: null,
  dbm: null,
})
/** stores the events' deliveries as ingest does, sends what is due, and answers the mails that arrived, by recipient */
async function raise(...events: EventToNotify[]): Promise<{ to: string[]; subject: string }[]> {
  const before = smtp.mails.length
  // in a unit of ingest's store, on either engine
  await world.stores.ingest.commit(
    (unit) => {
      const batch = unit.inTransaction(beginOutboxBatch)
      for (const e of events) batch.enqueueEvent(e, world.clock.now())
    },
    { clock: world.clock, touches: () => ({ devices: [...new Set(events.map((e) => e.device))], fixes: [], alarms: [] }) },
  )
  await worker().deliverDue()
  return Promise.all(smtp.mails.slice(before).map(async (mail) => ({ to: mail.to, subject: (await simpleParser(mail.raw)).subject ?? '' })))
}

const put = (token: string, body: unknown) => world.call('PUT', '/me/email-alerts', { token, body })
async function subscribe(token: string, body: Record<string, unknown>) {
  const res = await put(token, body)
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${res.status}: ${text}`)
  return JSON.parse(text) as { enabled: boolean; events: string[]; address: string | null; email_configured: boolean }
}
const personalRows = () => world.execute<{ user_id: string }>(sql`SELECT user_id FROM notifications WHERE user_id IS NOT NULL`)

describe('a user subscribed to SOS by email', () => {
  test('is mailed an SOS of a device they reach, at their address; not one of a device of another group or account, nor another event', async () => {
    expect(await (await world.call('GET', '/me/email-alerts', { token: keys.bob })).json()).toEqual({ enabled: false, events: [], address: null, email_configured: true })
    const saved = await subscribe(keys.bob, { events: ['sos'], address: 'bob@example.com', enabled: true })
    expect(saved).toEqual({ enabled: true, events: ['sos'], address: 'bob@example.com', email_configured: true })
    expect(await (await world.call('GET', '/me/email-alerts', { token: keys.bob })).json()).toEqual(saved)

    // Van 1 is in Vans, bob's group
    expect(await raise(event(ids.van1))).toEqual([{ to: ['bob@example.com'], subject: '[Acme Logistics] Van 1: SOS' }])
    // Truck 1 is in Trucks only; Car is Globex's; a power cut is not what bob chose
    expect(await raise(event(ids.truck1), event(ids.globexCar), event(ids.van1, 'power_cut'))).toEqual([])
  })

  test("a change of the user's groups or role counts from the next event; disabled, nothing goes", async () => {
    await subscribe(keys.bob, { events: ['sos', 'power_cut'], address: 'bob@example.com', enabled: true })
    expect(await raise(event(ids.truck1))).toEqual([])
    // dana puts bob in Trucks
    expect((await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body: { groups: [ids.vans, ids.trucks] } })).status).toBe(200)
    expect(await raise(event(ids.truck1, 'power_cut'))).toEqual([{ to: ['bob@example.com'], subject: '[Acme Logistics] Truck 1: Power cut' }])
    // and out of every group: nothing, not even Van 1
    expect((await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body: { groups: [] } })).status).toBe(200)
    expect(await raise(event(ids.truck1), event(ids.van1))).toEqual([])
    // made an admin, bob reaches every device of Acme (but not Globex's)
    expect((await world.call('PATCH', `/users/${ids.bob}`, { token: keys.dana, body: { role: 'admin' } })).status).toBe(200)
    expect((await raise(event(ids.truck1), event(ids.globexCar))).map((m) => m.subject)).toEqual(['[Acme Logistics] Truck 1: SOS'])
    // turned off, the choice is kept and nothing is sent
    expect(await subscribe(keys.bob, { events: ['sos'], enabled: false })).toEqual({ enabled: false, events: ['sos'], address: 'bob@example.com', email_configured: true })
    expect(await raise(event(ids.truck1))).toEqual([])
  })

  test("two users' alerts go each to their own address, each for their own devices", async () => {
    await subscribe(keys.alice, { events: ['sos'], address: 'alice@example.com', enabled: true })
    await subscribe(keys.bob, { events: ['sos'], address: 'bob@example.com', enabled: true })
    await subscribe(keys.carol, { events: ['sos'], address: 'carol@example.org', enabled: true })
    const mails = await raise(event(ids.truck1), event(ids.van1), event(ids.globexCar))
    expect(mails.map((m) => `${m.to.join(',')} ${m.subject}`).sort()).toEqual([
      'alice@example.com [Acme Logistics] Truck 1: SOS',
      'alice@example.com [Acme Logistics] Van 1: SOS',
      'bob@example.com [Acme Logistics] Van 1: SOS',
      'carol@example.org [Globex] Car: SOS',
    ])
  })
})

describe('PUT /me/email-alerts', () => {
  test('bad choices are 400 naming the field, and change nothing', async () => {
    await subscribe(keys.bob, { events: ['sos'], address: 'bob@example.com', enabled: true })
    for (const [body, path] of [
      [{ events: ['sos', 'fuel_theft'], enabled: true }, '/events/1'],
      [{ events: ['sos', 'sos'], enabled: true }, '/events/1'],
      [{ events: ['*'], enabled: true }, '/events/0'],
      [{ events: [], enabled: true }, '/events'],
      [{ events: ['sos'], address: 'Bob <bob@example.com>', enabled: true }, '/address'],
      [{ events: ['sos'], address: 'a@example.com,b@example.com', enabled: true }, '/address'],
      [{ events: ['sos'], address: 'bob@localhost', enabled: true }, '/address'],
      [{ events: ['sos'], enabled: 'yes' }, '/enabled'],
      [{ events: ['sos'] }, '/enabled'],
      [{ events: ['sos'], enabled: true, groups: [] }, '/groups'],
    ] as const) {
      const answer = await problem(await put(keys.bob, body), 400)
      expect({ body, paths: answer.errors?.map((e) => e.path) }).toEqual({ body, paths: expect.arrayContaining([path]) })
    }
    expect((await problem(await world.call('PUT', '/me/email-alerts', { token: keys.bob, body: 'not json', headers: { 'content-type': 'application/json' } }), 400)).status).toBe(400)
    expect(await (await world.call('GET', '/me/email-alerts', { token: keys.bob })).json()).toEqual({ enabled: true, events: ['sos'], address: 'bob@example.com', email_configured: true })
    // the first save needs an address
    expect((await problem(await put(keys.alice, { events: ['sos'], enabled: true }), 400)).errors?.map((e) => e.path)).toEqual(['/address'])
    expect(await personalRows()).toEqual([{ user_id: ids.bob }])
  })

  test('without SMTP_URL, enabling is 400 saying email is not configured on this server; GET says so; turning off is accepted', async () => {
    const bare = await openWorld(undefined, { config: loadConfig({}) })
    try {
      expect(await (await bare.call('GET', '/me/email-alerts', { token: keys.bob })).json()).toEqual({ enabled: false, events: [], address: null, email_configured: false })
      const answer = await problem(await bare.call('PUT', '/me/email-alerts', { token: keys.bob, body: { events: ['sos'], address: 'bob@example.com', enabled: true } }), 400)
      expect(answer.detail).toContain('email is not configured on this server')
      expect(answer.errors?.map((e) => e.path)).toEqual(['/enabled'])
      expect({ n: await bare.count('notifications') }).toEqual({ n: 0 })
      const off = await bare.call('PUT', '/me/email-alerts', { token: keys.bob, body: { events: ['sos'], address: 'bob@example.com', enabled: false } })
      expect(off.status).toBe(200)
      expect(await off.json()).toEqual({ enabled: false, events: ['sos'], address: 'bob@example.com', email_configured: false })
    } finally {
      await bare.close()
    }
  })

  test('a share token gets 403; no credential 401', async () => {
    const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.van1], ttl: 3600 } })).json()) as { token: string }
    await problem(await world.call('GET', '/me/email-alerts', { token: link.token }), 403)
    await problem(await put(link.token, { events: ['sos'], address: 'x@example.com', enabled: true }), 403)
    await problem(await world.call('GET', '/me/email-alerts'), 401)
    expect(await personalRows()).toEqual([])
  })

  test('recorded in the audit log: created, then changed, by the user, the object the user', async () => {
    await subscribe(keys.bob, { events: ['sos'], address: 'bob@example.com', enabled: true })
    await subscribe(keys.bob, { events: ['sos', 'tamper'], enabled: true })
    const audit = (await (await world.call('GET', '/audit', { token: keys.dana })).json()) as { actor: string; action: string; object_type: string; object_id: string }[]
    expect(audit.filter((a) => a.object_type === 'email_alerts').map((a) => [a.actor, a.action, a.object_id])).toEqual([
      [ids.bob, 'update', ids.bob],
      [ids.bob, 'create', ids.bob],
    ])
  })
})

describe("the admins' channels", () => {
  test('/notifications neither lists, shows, changes nor deletes a personal row; an account channel still works beside it', async () => {
    await subscribe(keys.dana, { events: ['sos'], address: 'dana@example.com', enabled: true })
    await subscribe(keys.bob, { events: ['sos'], address: 'bob@example.com', enabled: true })
    const [row] = await world.execute<{ id: string }>(sql`SELECT id FROM notifications WHERE user_id = ${ids.bob}`)
    expect(await (await world.call('GET', '/notifications', { token: keys.dana })).json()).toEqual([])
    await problem(await world.call('GET', `/notifications/${row!.id}`, { token: keys.dana }), 404)
    await problem(await world.call('PATCH', `/notifications/${row!.id}`, { token: keys.dana, body: { enabled: false } }), 404)
    await problem(await world.call('DELETE', `/notifications/${row!.id}`, { token: keys.dana }), 404)
    await problem(await world.call('GET', `/notifications/${row!.id}/deliveries`, { token: keys.dana }), 404)
    await problem(await world.call('POST', `/notifications/${row!.id}/test`, { token: keys.dana }), 404)
    const created = await world.call('POST', '/notifications', { token: keys.dana, body: { name: 'Desk', events: ['sos'], channel: { type: 'email', to: ['desk@example.com'] } } })
    expect(created.status).toBe(201)
    expect(((await (await world.call('GET', '/notifications', { token: keys.dana })).json()) as { name: string }[]).map((n) => n.name)).toEqual(['Desk'])
    expect((await raise(event(ids.van1))).map((m) => m.to.join(',')).sort()).toEqual(['bob@example.com', 'dana@example.com', 'desk@example.com'])
  })

  test("deleting the user deletes their alerts, and nothing more is sent to them", async () => {
    await subscribe(keys.bob, { events: ['sos'], address: 'bob@example.com', enabled: true })
    expect(await personalRows()).toEqual([{ user_id: ids.bob }])
    expect((await world.call('DELETE', `/users/${ids.bob}`, { token: keys.dana })).status).toBe(204)
    expect(await personalRows()).toEqual([])
    expect(await raise(event(ids.van1))).toEqual([])
  })
})
