/**
 * /notifications: an account admin manages webhook channels (events or positions, groups, a
 * write-only secret), reads their deliveries and sends a test delivery; the SSRF guard refuses
 * private targets at creation unless WEBHOOK_ALLOW_PRIVATE=1.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/log'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'
import { startReceiver, verifySignature, type Receiver } from './delivery-receiver'

const SECRET = 'whsec-test-secret-0123456789'

let world: EngineWorld
let receiver: Receiver
let logLines: string[]
beforeEach(async () => {
  logLines = []
  world = await openWorld(undefined, { config: loadConfig({ WEBHOOK_ALLOW_PRIVATE: '1' }), log: createLogger('debug', (line) => logLines.push(line)) })
  receiver = startReceiver()
})
afterEach(async () => {
  receiver.stop()
  await world.close()
})

interface NotificationBody {
  id: string
  name: string
  events: string[]
  groups: string[]
  channel: { type: string; url: string; secret_set: boolean; positions: boolean }
  enabled: boolean
  created_at: string
  updated_at: string
}

const create = async (body: Record<string, unknown>, token = keys.dana) => {
  const res = await world.call('POST', '/notifications', { token, body })
  if (res.status !== 201) throw new Error(`${res.status}: ${await res.text()}`)
  return { res, body: (await res.json()) as NotificationBody }
}

const sos = () => ({ name: 'SOS', events: ['sos'], channel: { type: 'webhook', url: receiver.url, secret: SECRET } })

async function shareToken(): Promise<string> {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
  return ((await res.json()) as { token: string }).token
}

const count = (table: string) => world.count(table)
const written = async () => [await count('notifications'), await count('notification_deliveries'), await count('audit_log')]

describe('POST /notifications', () => {
  test('201 with the channel and its Location; the secret is never shown, secret_set says there is one', async () => {
    const { res, body } = await create({ ...sos(), groups: [ids.trucks.toUpperCase()] })
    expect(res.headers.get('location')).toBe(`/notifications/${body.id}`)
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'SOS',
      events: ['sos'],
      groups: [ids.trucks],
      channel: { type: 'webhook', url: receiver.url, secret_set: true, positions: false },
      enabled: true,
      created_at: new Date(world.clock.now()).toISOString(),
      updated_at: new Date(world.clock.now()).toISOString(),
    })
    expect(await (await world.call('GET', `/notifications/${body.id}`, { token: keys.dana })).json()).toEqual(body)
    expect(JSON.stringify(await (await world.call('GET', '/notifications', { token: keys.dana })).json())).not.toContain(SECRET)
  })

  test('a positions channel (for integrators) takes no events; positions may be sent at the top level too', async () => {
    const inChannel = await create({ name: 'Integrator', channel: { type: 'webhook', url: receiver.url, positions: true } })
    expect(inChannel.body).toMatchObject({ events: [], groups: [], channel: { positions: true, secret_set: false } })
    const top = await create({ name: 'Integrator 2', positions: true, channel: { type: 'webhook', url: receiver.url } })
    expect(top.body.channel.positions).toBe(true)
    const every = await create({ name: 'Everything', events: ['*'], enabled: false, channel: { type: 'webhook', url: receiver.url } })
    expect(every.body).toMatchObject({ events: ['*'], enabled: false })
  })

  test('bad input is 400 naming the field; unknown fields 400; nothing is written', async () => {
    const before = await written()
    const channel = { type: 'webhook', url: receiver.url }
    for (const [body, path] of [
      [{ events: ['sos'], channel }, '/name'],
      [{ name: '', events: ['sos'], channel }, '/name'],
      [{ name: 'Trailing ', events: ['sos'], channel }, '/name'],
      [{ name: 'N', channel }, '/events'],
      [{ name: 'N', events: [], channel }, '/events'],
      [{ name: 'N', events: ['sos', 'sos'], channel }, '/events/1'],
      [{ name: 'N', events: ['*', 'sos'], channel }, '/events/0'],
      [{ name: 'N', events: ['not a code'], channel }, '/events/0'],
      [{ name: 'N', events: 'sos', channel }, '/events'],
      [{ name: 'N', events: ['sos'], channel: { ...channel, positions: true } }, '/events'],
      [{ name: 'N', positions: true, channel: { ...channel, positions: false } }, '/positions'],
      [{ name: 'N', events: ['sos'] }, '/channel'],
      [{ name: 'N', events: ['sos'], channel: { type: 'fax', url: receiver.url } }, '/channel/type'],
      [{ name: 'N', events: ['sos'], channel: { type: 'webhook' } }, '/channel/url'],
      [{ name: 'N', events: ['sos'], channel: { type: 'webhook', url: 'ftp://files.example.com/in' } }, '/channel/url'],
      [{ name: 'N', events: ['sos'], channel: { type: 'webhook', url: 'not a url' } }, '/channel/url'],
      [{ name: 'N', events: ['sos'], channel: { type: 'webhook', url: 'https://user:pass@hooks.example.com/' } }, '/channel/url'],
      [{ name: 'N', events: ['sos'], channel: { type: 'webhook', url: `https://hooks.example.com/${'x'.repeat(2100)}` } }, '/channel/url'],
      [{ name: 'N', events: ['sos'], channel: { ...channel, secret: '' } }, '/channel/secret'],
      [{ name: 'N', events: ['sos'], channel: { ...channel, extra: 1 } }, '/channel/extra'],
      [{ name: 'N', events: ['sos'], channel, groups: ['trucks'] }, '/groups/0'],
      [{ name: 'N', events: ['sos'], channel, groups: [ids.trucks, ids.trucks] }, '/groups/1'],
      [{ name: 'N', events: ['sos'], channel, enabled: 'yes' }, '/enabled'],
      [{ name: 'N', events: ['sos'], channel, account: ids.globex }, '/account'],
    ] as const) {
      const answer = await problem(await world.call('POST', '/notifications', { token: keys.dana, body }), 400)
      expect({ body, paths: answer.errors?.map((e) => e.path) }).toEqual({ body, paths: expect.arrayContaining([path]) })
    }
    expect(await written()).toEqual(before)
  })

  test("another account's group is 404 naming its place; nothing is written", async () => {
    const before = await written()
    const answer = await problem(await world.call('POST', '/notifications', { token: keys.dana, body: { ...sos(), groups: [ids.vans, ids.globexGroup] } }), 404)
    expect(answer.errors).toEqual([{ path: '/groups/1', message: expect.any(String) }])
    expect(await written()).toEqual(before)
  })
})

describe('who may', () => {
  test('a member and a share token get 403, no credentials 401, on every route', async () => {
    const { body } = await create(sos())
    const share = await shareToken()
    const routes: [string, string, unknown?][] = [
      ['GET', '/notifications'],
      ['POST', '/notifications', sos()],
      ['GET', `/notifications/${body.id}`],
      ['PATCH', `/notifications/${body.id}`, { name: 'X' }],
      ['DELETE', `/notifications/${body.id}`],
      ['GET', `/notifications/${body.id}/deliveries`],
      ['POST', `/notifications/${body.id}/test`],
    ]
    for (const [method, path, payload] of routes) {
      await problem(await world.call(method, path, { token: keys.alice, body: payload }), 403)
      await problem(await world.call(method, path, { token: share, body: payload }), 403)
      await problem(await world.call(method, path, { body: payload }), 401)
    }
    expect(receiver.received).toEqual([])
    expect((await world.call('GET', `/notifications/${body.id}`, { token: keys.dana })).status).toBe(200)
  })

  test("another account's admin gets 404 for every channel route, and lists only their own", async () => {
    const { body } = await create(sos())
    for (const [method, path, payload] of [
      ['GET', `/notifications/${body.id}`],
      ['PATCH', `/notifications/${body.id}`, { name: 'Mine now' }],
      ['DELETE', `/notifications/${body.id}`],
      ['GET', `/notifications/${body.id}/deliveries`],
      ['POST', `/notifications/${body.id}/test`],
    ] as const) {
      await problem(await world.call(method, path, { token: keys.erin, body: payload }), 404)
    }
    expect(await (await world.call('GET', '/notifications', { token: keys.erin })).json()).toEqual([])
    expect(receiver.received).toEqual([])
    await problem(await world.call('GET', '/notifications/not-a-uuid', { token: keys.dana }), 400)
  })
})

describe('GET /notifications', () => {
  test('by name then id, paged; [] past the end; limit checked', async () => {
    for (const name of ['Charlie', 'alpha', 'Bravo']) await create({ ...sos(), name })
    const names = async (query: string) => ((await (await world.call('GET', `/notifications${query}`, { token: keys.dana })).json()) as NotificationBody[]).map((n) => n.name)
    expect(await names('')).toEqual(['Bravo', 'Charlie', 'alpha'])
    expect(await names('?limit=1&offset=1')).toEqual(['Charlie'])
    expect(await names('?offset=3')).toEqual([])
    expect((await problem(await world.call('GET', '/notifications?limit=0', { token: keys.dana }), 400)).errors?.[0]?.path).toBe('/limit')
  })
})

describe('PATCH and DELETE /notifications/{id}', () => {
  test('only what is sent changes; the secret stays unless sent, null removes it; a new URL is checked', async () => {
    const { body } = await create(sos())
    world.clock.advance(60_000)
    const renamed = await world.call('PATCH', `/notifications/${body.id}`, { token: keys.dana, body: { name: 'SOS and power', events: ['sos', 'power_cut'], channel: { url: `${receiver.url}/v2` } } })
    expect(renamed.status).toBe(200)
    expect(await renamed.json()).toEqual({
      ...body,
      name: 'SOS and power',
      events: ['sos', 'power_cut'],
      channel: { ...body.channel, url: `${receiver.url}/v2`, secret_set: true },
      updated_at: new Date(world.clock.now()).toISOString(),
    })
    const unsigned = (await (await world.call('PATCH', `/notifications/${body.id}`, { token: keys.dana, body: { channel: { secret: null } } })).json()) as NotificationBody
    expect(unsigned.channel.secret_set).toBe(false)
    const signed = (await (await world.call('PATCH', `/notifications/${body.id}`, { token: keys.dana, body: { channel: { secret: 'another secret, 16+ bytes' }, enabled: false } })).json()) as NotificationBody
    expect(signed).toMatchObject({ enabled: false, channel: { secret_set: true } })
    // to positions: its events go; back to events: they must be given
    const positions = (await (await world.call('PATCH', `/notifications/${body.id}`, { token: keys.dana, body: { channel: { positions: true } } })).json()) as NotificationBody
    expect(positions).toMatchObject({ events: [], channel: { positions: true } })
    expect((await problem(await world.call('PATCH', `/notifications/${body.id}`, { token: keys.dana, body: { positions: false } }), 400)).errors?.[0]?.path).toBe('/events')
    const before = await written()
    for (const [patch, path] of [
      [{ channel: { url: 'gopher://x' } }, '/channel/url'],
      [{ events: ['sos'] }, '/events'],
      [{ name: '' }, '/name'],
      [{ secret: 'top-level' }, '/secret'],
    ] as const) {
      expect((await problem(await world.call('PATCH', `/notifications/${body.id}`, { token: keys.dana, body: patch }), 400)).errors?.map((e) => e.path)).toContain(path)
    }
    await problem(await world.call('PATCH', `/notifications/${body.id}`, { token: keys.dana, body: { groups: [ids.globexGroup] } }), 404)
    expect(await written()).toEqual(before)
  })

  test('DELETE: 204, then 404; its deliveries go with it', async () => {
    const { body } = await create(sos())
    expect((await world.call('POST', `/notifications/${body.id}/test`, { token: keys.dana })).status).toBe(200)
    expect(await count('notification_deliveries')).toBe(1)
    expect((await world.call('DELETE', `/notifications/${body.id}`, { token: keys.dana })).status).toBe(204)
    await problem(await world.call('GET', `/notifications/${body.id}`, { token: keys.dana }), 404)
    await problem(await world.call('DELETE', `/notifications/${body.id}`, { token: keys.dana }), 404)
    expect(await count('notification_deliveries')).toBe(0)
  })

  test('every change is in the audit log with its request id; no secret in the audit log or the server log', async () => {
    const { body } = await create(sos())
    await world.call('PATCH', `/notifications/${body.id}`, { token: keys.dana, body: { channel: { secret: `${SECRET}-2` } }, headers: { 'x-request-id': 'req-notify-0001' } })
    await world.call('DELETE', `/notifications/${body.id}`, { token: keys.dana })
    const audit = (await (await world.call('GET', '/audit', { token: keys.dana })).json()) as { action: string; object_type: string; object_id: string; actor: string; request_id: string | null }[]
    const mine = audit.filter((e) => e.object_type === 'notification')
    expect(mine.map((e) => [e.action, e.object_id, e.actor])).toEqual([
      ['delete', body.id, ids.dana],
      ['update', body.id, ids.dana],
      ['create', body.id, ids.dana],
    ])
    expect(mine[1]!.request_id).toBe('req-notify-0001')
    expect(JSON.stringify(audit)).not.toContain(SECRET)
    // the access log lines land just after each answer
    await Bun.sleep(5)
    expect(logLines.length).toBeGreaterThan(0)
    expect(logLines.join('\n')).not.toContain(SECRET)
  })
})

describe('secrets', () => {
  test('a secret sent is at least 16 bytes in UTF-8, on create and update: shorter is 400 naming /channel/secret, and changes nothing', async () => {
    const channel = { type: 'webhook', url: receiver.url }
    const before = await written()
    // 15 bytes: ASCII, and 7 two-byte letters and one ASCII letter
    for (const secret of ['x'.repeat(15), `${'é'.repeat(7)}a`, 'short']) {
      const answer = await problem(await world.call('POST', '/notifications', { token: keys.dana, body: { name: 'N', events: ['sos'], channel: { ...channel, secret } } }), 400)
      expect({ secret, errors: answer.errors }).toEqual({ secret, errors: [{ path: '/channel/secret', message: expect.stringContaining('at least 16 bytes (UTF-8)') }] })
    }
    expect(await written()).toEqual(before)
    // bytes, not characters: 8 two-byte letters are 16 bytes
    const { body } = await create({ name: 'Accents', events: ['sos'], channel: { ...channel, secret: 'é'.repeat(8) } })
    expect(body.channel.secret_set).toBe(true)
    expect((await create({ name: 'Sixteen', events: ['sos'], channel: { ...channel, secret: 'x'.repeat(16) } })).body.channel.secret_set).toBe(true)

    const unchanged = await written()
    const answer = await problem(await world.call('PATCH', `/notifications/${body.id}`, { token: keys.dana, body: { name: 'Renamed', channel: { secret: 'x'.repeat(15) } } }), 400)
    expect(answer.errors).toEqual([{ path: '/channel/secret', message: expect.stringContaining('this one has 15') }])
    expect(await written()).toEqual(unchanged)
    expect(((await (await world.call('GET', `/notifications/${body.id}`, { token: keys.dana })).json()) as NotificationBody).name).toBe('Accents')
    // removing it is no secret to measure
    const removed = await world.call('PATCH', `/notifications/${body.id}`, { token: keys.dana, body: { channel: { secret: null } } })
    expect(((await removed.json()) as NotificationBody).channel.secret_set).toBe(false)
  })

  test('a shorter secret set before the rule keeps working: other changes pass, and deliveries are signed with it', async () => {
    const { body } = await create(sos())
    // as a database from before the rule holds it
    await world.execute(sql`UPDATE notifications SET secret = ${'old'} WHERE id = ${body.id}`)
    const renamed = await world.call('PATCH', `/notifications/${body.id}`, { token: keys.dana, body: { name: 'Still signed', events: ['*'] } })
    expect(renamed.status).toBe(200)
    expect(((await renamed.json()) as NotificationBody).channel.secret_set).toBe(true)
    const tested = await world.call('POST', `/notifications/${body.id}/test`, { token: keys.dana })
    expect(((await tested.json()) as { status: string }).status).toBe('delivered')
    const [hit] = receiver.received
    expect(verifySignature(hit!.headers.get('x-tracker-signature'), hit!.body, 'old').ok).toBe(true)
  })
})

describe('the SSRF guard at creation', () => {
  test('without WEBHOOK_ALLOW_PRIVATE: private, loopback, link-local and special addresses, and localhost, are 400; public targets pass', async () => {
    const strict = await openWorld()
    try {
      const before = await count('notifications')
      for (const url of [
        'http://127.0.0.1:8080/hook',
        'http://10.1.2.3/hook',
        'http://172.16.0.1/hook',
        'http://192.168.1.10/hook',
        'http://169.254.169.254/latest/meta-data/',
        'http://[::1]/hook',
        'http://[fe80::1]/hook',
        'http://[fd00::1]/hook',
        'http://[::ffff:127.0.0.1]/hook',
        'http://0.0.0.0/hook',
        'http://100.64.0.1/hook',
        'http://2130706433/hook',
        'http://localhost:3000/hook',
        'https://api.localhost/hook',
      ]) {
        const answer = await problem(await strict.call('POST', '/notifications', { token: keys.dana, body: { name: 'N', events: ['sos'], channel: { type: 'webhook', url } } }), 400)
        expect({ url, errors: answer.errors }).toEqual({ url, errors: [{ path: '/channel/url', message: expect.stringContaining('WEBHOOK_ALLOW_PRIVATE') }] })
      }
      expect(await strict.count('notifications')).toBe(before)
      // a public address, and a name that does not resolve here (offline): checked again at each attempt
      for (const url of ['https://93.184.216.34/hook', 'https://hooks.example.com/fleet']) {
        const res = await strict.call('POST', '/notifications', { token: keys.dana, body: { name: 'N', events: ['sos'], channel: { type: 'webhook', url } } })
        expect({ url, status: res.status }).toEqual({ url, status: 201 })
      }
      // a change of URL is checked the same way
      const { id } = (await (await strict.call('GET', '/notifications', { token: keys.dana })).json() as NotificationBody[])[0]!
      const changed = await problem(await strict.call('PATCH', `/notifications/${id}`, { token: keys.dana, body: { channel: { url: 'http://10.0.0.1/' } } }), 400)
      expect(changed.errors?.[0]?.path).toBe('/channel/url')
    } finally {
      await strict.close()
    }
  })

  test('with WEBHOOK_ALLOW_PRIVATE=1 a receiver on the LAN or loopback is accepted', async () => {
    for (const url of ['http://127.0.0.1:8080/hook', 'http://10.1.2.3/hook', 'http://localhost/hook', 'http://[::1]/hook']) {
      expect((await world.call('POST', '/notifications', { token: keys.dana, body: { name: 'LAN', events: ['sos'], channel: { type: 'webhook', url } } })).status).toBe(201)
    }
  })
})

describe('POST /notifications/{id}/test', () => {
  test('sends one signed test delivery now and answers with its outcome; it is in the deliveries list', async () => {
    const { body } = await create(sos())
    const res = await world.call('POST', `/notifications/${body.id}/test`, { token: keys.dana })
    expect(res.status).toBe(200)
    const outcome = (await res.json()) as Record<string, unknown>
    expect(outcome).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      type: 'test',
      event: null,
      positions: null,
      status: 'delivered',
      attempts: 1,
      last_status_code: 204,
      last_error: null,
      next_attempt_at: null,
      delivered_at: new Date(world.clock.now()).toISOString(),
      created_at: new Date(world.clock.now()).toISOString(),
    })
    expect(receiver.received).toHaveLength(1)
    const [hit] = receiver.received
    expect(hit!.method).toBe('POST')
    expect(hit!.headers.get('content-type')).toBe('application/json')
    expect(hit!.headers.get('x-tracker-delivery')).toBe(outcome.id as string)
    expect(hit!.json).toEqual({ id: outcome.id, type: 'test', notification: { id: body.id, name: 'SOS' }, sent_at: new Date(world.clock.now()).toISOString() })
    const signature = verifySignature(hit!.headers.get('x-tracker-signature'), hit!.body, SECRET)
    expect(signature).toEqual({ ok: true, t: Math.floor(world.clock.now() / 1000) })
    expect(await (await world.call('GET', `/notifications/${body.id}/deliveries`, { token: keys.dana })).json()).toEqual([outcome])
  })

  test('a receiver that fails or is down: 200 with status dead, the status code or the error', async () => {
    const { body } = await create(sos())
    receiver.answer(() => new Response('nope', { status: 503 }))
    const failed = (await (await world.call('POST', `/notifications/${body.id}/test`, { token: keys.dana })).json()) as Record<string, unknown>
    expect(failed).toMatchObject({ status: 'dead', attempts: 1, last_status_code: 503, last_error: 'HTTP 503', delivered_at: null, next_attempt_at: null })
    receiver.down()
    const down = (await (await world.call('POST', `/notifications/${body.id}/test`, { token: keys.dana })).json()) as Record<string, unknown>
    expect(down).toMatchObject({ status: 'dead', attempts: 1, last_status_code: null, last_error: expect.stringContaining('ECONNREFUSED') })
    const list = (await (await world.call('GET', `/notifications/${body.id}/deliveries`, { token: keys.dana })).json()) as { id: string }[]
    expect(list.map((d) => d.id)).toEqual([down.id as string, failed.id as string])
  })

  test('an unsigned channel sends no signature', async () => {
    const { body } = await create({ name: 'Unsigned', events: ['*'], channel: { type: 'webhook', url: receiver.url } })
    await world.call('POST', `/notifications/${body.id}/test`, { token: keys.dana })
    expect(receiver.received[0]!.headers.get('x-tracker-signature')).toBeNull()
    expect(receiver.received[0]!.headers.get('x-tracker-delivery')).toMatch(/^[0-9a-f-]{36}$/)
  })
})

describe('GET /notifications/{id}/deliveries', () => {
  test('newest first, paged; [] when empty; limit checked', async () => {
    const { body } = await create(sos())
    const path = `/notifications/${body.id}/deliveries`
    expect(await (await world.call('GET', path, { token: keys.dana })).json()).toEqual([])
    const sent: string[] = []
    for (let i = 0; i < 3; i++) {
      world.clock.advance(1000)
      sent.push(((await (await world.call('POST', `/notifications/${body.id}/test`, { token: keys.dana })).json()) as { id: string }).id)
    }
    const page = async (query: string) => ((await (await world.call('GET', `${path}${query}`, { token: keys.dana })).json()) as { id: string }[]).map((d) => d.id)
    expect(await page('')).toEqual(sent.slice().reverse())
    expect(await page('?limit=1&offset=1')).toEqual([sent[1]])
    expect(await page('?offset=3')).toEqual([])
    expect((await problem(await world.call('GET', `${path}?limit=1001`, { token: keys.dana }), 400)).errors?.[0]?.path).toBe('/limit')
  })
})
