/**
 * Email and Telegram channels: an SOS reaches a real SMTP server started here (smtp-server on
 * 127.0.0.1) as a mail naming the vehicle, the event, the place and a console link, and a fake
 * Telegram Bot API (Bun.serve on 127.0.0.1) as sendMessage to the chat; an SMTP 4xx or a
 * Telegram 5xx is retried through the same outbox and delivery log as webhooks; bad channels are
 * 400; the bot token is never in an answer, the audit log or the server log.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { simpleParser, type ParsedMail } from 'mailparser'
import { createDeliveryWorker, type DeliveryWorker, messagingOf } from '../../src/alerts/delivery'
import { beginOutboxBatch, type EventToNotify } from '../../src/alerts/outbox'
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/log'
import { sql } from 'drizzle-orm'
import { type EngineWorld, ids, keys, openWorld, problem } from '../support/world'
import { type FakeTelegram, type Smtp, startSmtp, startTelegram } from './messaging-receivers'

const BOT_TOKEN = '7654321:AAFakeBotTokenForTests_abcdefghij'
const APP_URL = 'https://fleet.example.com'

let world: EngineWorld
/** each device's internal key, by id */
let deviceKeys = new Map<string, number>()
let smtp: Smtp
let telegram: FakeTelegram
let logLines: string[]
const workers: DeliveryWorker[] = []

const configOf = (env: Record<string, string> = {}) =>
  loadConfig({ WEBHOOK_ALLOW_PRIVATE: '1', SMTP_URL: smtp.url, SMTP_FROM: 'Fleet tracker <tracker@fleet.example.com>', TELEGRAM_API_URL: telegram.url, APP_URL, ...env })

beforeEach(async () => {
  smtp = await startSmtp()
  telegram = startTelegram()
  logLines = []
  world = await openWorld(undefined, { config: configOf(), log: createLogger('debug', (line) => logLines.push(line)) })
  deviceKeys = new Map((await world.execute<{ id: string; key: number }>(sql`SELECT id, key FROM devices`)).map((row) => [row.id, Number(row.key)]))
})
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.stop()
  await world.close()
  telegram.stop()
  await smtp.close()
})

function worker(): DeliveryWorker {
  const created = createDeliveryWorker({
    store: world.stores.deliveries,
    clock: world.clock,
    log: createLogger('debug', (line) => logLines.push(line)),
    allowPrivate: true,
    messaging: messagingOf(configOf()),
  })
  workers.push(created)
  return created
}

const keyOf = (id: string) => deviceKeys.get(id)!

/** an SOS of Truck 1 in Lyon, 2025-11-24 16:00:00 UTC */
const sos = (): EventToNotify => ({
  device: keyOf(ids.truck1),
  ts: 1_764_000_000,
  alarm_code: 'sos',
  context: '{}',
  speed: 42,
  satellite: null,
  latitude: 45.7578,
  longitude: 4.832,
  mcc: null,
  mnc: null,
  dbm: null,
})
/** the event's deliveries, stored in a unit of ingest's store as ingest does, on either engine */
const commit = (event: EventToNotify) =>
  world.stores.ingest.commit((unit) => unit.inTransaction(beginOutboxBatch).enqueueEvent(event, world.clock.now()), {
    clock: world.clock,
    touches: () => ({ devices: [event.device], fixes: [], alarms: [] }),
  })

async function create(body: Record<string, unknown>): Promise<{ id: string; text: string }> {
  const res = await world.call('POST', '/notifications', { token: keys.dana, body })
  const text = await res.text()
  if (res.status !== 201) throw new Error(`${res.status}: ${text}`)
  return { id: (JSON.parse(text) as { id: string }).id, text }
}

const deliveries = async (id: string) =>
  (await (await world.call('GET', `/notifications/${id}/deliveries`, { token: keys.dana })).json()) as {
    id: string
    status: string
    attempts: number
    last_status_code: number | null
    last_error: string | null
    next_attempt_at: string | null
  }[]

describe('email', () => {
  test('an SOS is mailed through SMTP_URL from SMTP_FROM: To, Subject, and text and HTML naming the vehicle, the event, the place and a console link', async () => {
    const { id, text } = await create({ name: 'SOS by mail', events: ['sos'], channel: { type: 'email', to: ['ops@example.com', 'owner@example.org'] } })
    expect(JSON.parse(text).channel).toEqual({ type: 'email', to: ['ops@example.com', 'owner@example.org'] })
    await commit(sos())
    expect(await worker().deliverDue()).toBe(1)

    expect(smtp.users).toEqual(['mailer'])
    expect(smtp.mails).toHaveLength(1)
    const envelope = smtp.mails[0]!
    expect(envelope.from).toBe('tracker@fleet.example.com')
    expect(envelope.to).toEqual(['ops@example.com', 'owner@example.org'])
    const mail: ParsedMail = await simpleParser(envelope.raw)
    expect(mail.to && !Array.isArray(mail.to) ? mail.to.value.map((a) => a.address) : null).toEqual(['ops@example.com', 'owner@example.org'])
    expect(mail.from?.value).toEqual([{ name: 'Fleet tracker', address: 'tracker@fleet.example.com' }])
    expect(mail.subject).toBe('[Acme Logistics] Truck 1: SOS')
    const link = `${APP_URL}/#/devices/${ids.truck1}`
    for (const body of [mail.text ?? '', mail.html || '']) {
      expect(body).toContain('Truck 1')
      expect(body).toContain('SOS')
      expect(body).toContain('Lyon, FR')
      expect(body).toContain('2025-11-24 16:00:00 UTC')
      expect(body).toContain(link)
    }
    expect(mail.html).toContain(`<a href="${link}">`)
    const [delivery] = await deliveries(id)
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 1, last_error: null })
    expect(mail.headers.get('x-tracker-delivery')).toBe(delivery!.id)
  })

  test('an SMTP 4xx is retried with the same backoff and delivery log as webhooks, then delivered', async () => {
    const { id } = await create({ name: 'SOS by mail', events: ['sos'], channel: { type: 'email', to: ['ops@example.com'] } })
    smtp.refusals.push([451, 'Try again later'])
    await commit(sos())
    const deliver = worker()
    expect(await deliver.deliverDue()).toBe(1)
    const [failed] = await deliveries(id)
    expect(failed).toMatchObject({ status: 'pending', attempts: 1, last_status_code: 451, next_attempt_at: new Date(world.clock.now() + 10_000).toISOString() })
    expect(failed!.last_error).toContain('451')
    expect(smtp.mails).toHaveLength(0)
    // not before its time
    expect(await deliver.deliverDue()).toBe(0)
    world.clock.advance(10_000)
    expect(await deliver.deliverDue()).toBe(1)
    expect(smtp.mails).toHaveLength(1)
    expect(await deliveries(id)).toMatchObject([{ id: failed!.id, status: 'delivered', attempts: 2, last_error: null }])
  })

  test('POST /notifications/{id}/test mails now and answers with the outcome', async () => {
    const { id } = await create({ name: 'Night desk', events: ['*'], channel: { type: 'email', to: ['ops@example.com'] } })
    const res = await world.call('POST', `/notifications/${id}/test`, { token: keys.dana })
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ type: 'test', status: 'delivered' })
    const mail = await simpleParser(smtp.mails[0]!.raw)
    expect(mail.subject).toBe('[Acme Logistics] Test notification: Night desk')
  })

  test('without SMTP_URL an email channel is 400 naming it; bad addresses are 400 naming each; nothing is written', async () => {
    const count = () => world.count('notifications')
    for (const [to, path] of [
      [['not an address'], '/channel/to/0'],
      [['ops@example.com', 'Ops <ops@example.com>'], '/channel/to/1'],
      [['a@example.com,b@example.com'], '/channel/to/0'],
      [['ops@localhost'], '/channel/to/0'],
      [['ops@example.com', 'OPS@example.com'], '/channel/to/1'],
      [[], '/channel/to'],
      [Array.from({ length: 21 }, (_, i) => `u${i}@example.com`), '/channel/to'],
      ['ops@example.com', '/channel/to'],
    ] as const) {
      const answer = await problem(await world.call('POST', '/notifications', { token: keys.dana, body: { name: 'N', events: ['sos'], channel: { type: 'email', to } } }), 400)
      expect({ to, paths: answer.errors?.map((e) => e.path) }).toEqual({ to, paths: expect.arrayContaining([path]) })
    }
    for (const [channel, path] of [
      [{ type: 'email' }, '/channel/to'],
      [{ type: 'email', to: ['ops@example.com'], url: 'https://hooks.example.com/' }, '/channel/url'],
      [{ type: 'email', to: ['ops@example.com'], positions: true }, '/channel/positions'],
    ] as const) {
      const answer = await problem(await world.call('POST', '/notifications', { token: keys.dana, body: { name: 'N', events: ['sos'], channel } }), 400)
      expect(answer.errors?.map((e) => e.path)).toContain(path)
    }

    const noSmtp = await openWorld(undefined, { config: loadConfig({ TELEGRAM_API_URL: telegram.url }) })
    try {
      const res = await noSmtp.call('POST', '/notifications', { token: keys.dana, body: { name: 'N', events: ['sos'], channel: { type: 'email', to: ['ops@example.com'] } } })
      const answer = await problem(res, 400)
      expect(answer.detail).toContain('SMTP_URL')
      expect(answer.errors?.map((e) => e.path)).toEqual(['/channel/type'])
      expect(await noSmtp.count('notifications')).toBe(0)
    } finally {
      await noSmtp.close()
    }
    expect(await count()).toBe(0)
  })

  test('SMTP_URL must be smtp:// or smtps:// and needs SMTP_FROM: the start fails naming them, never showing the password', () => {
    expect(() => loadConfig({ SMTP_URL: 'http://mail.example.com' })).toThrow('SMTP_URL')
    expect(() => loadConfig({ SMTP_URL: 'smtp://user:s3cret@mail.example.com:587' })).toThrow('SMTP_FROM')
    try {
      loadConfig({ SMTP_URL: 'smtps://user:s3cret@' })
    } catch (error) {
      expect((error as Error).message).toContain('SMTP_URL')
      expect((error as Error).message).not.toContain('s3cret')
    }
    expect(loadConfig({ SMTP_URL: 'smtps://user:s3cret@mail.example.com', SMTP_FROM: 'tracker@example.com' })).toMatchObject({ smtpUrl: 'smtps://user:s3cret@mail.example.com', smtpFrom: 'tracker@example.com' })
  })
})

describe('telegram', () => {
  test('an SOS is posted to <TELEGRAM_API_URL>/bot<token>/sendMessage with the chat id and the words', async () => {
    const { id } = await create({ name: 'SOS to Telegram', events: ['sos'], channel: { type: 'telegram', chat_id: '-1001234567890', bot_token: BOT_TOKEN } })
    await commit(sos())
    expect(await worker().deliverDue()).toBe(1)
    expect(telegram.calls).toHaveLength(1)
    const [call] = telegram.calls
    expect(call!.path).toBe(`/bot${BOT_TOKEN}/sendMessage`)
    expect(call!.json.chat_id).toBe('-1001234567890')
    expect(call!.json.text.split('\n')[0]).toBe('[Acme Logistics] Truck 1: SOS')
    for (const words of ['Lyon, FR', '2025-11-24 16:00:00 UTC', `${APP_URL}/#/devices/${ids.truck1}`]) expect(call!.json.text).toContain(words)
    expect(await deliveries(id)).toMatchObject([{ status: 'delivered', attempts: 1, last_status_code: 200 }])
  })

  test('a 5xx from the API is retried through the delivery log; the token is not in the log', async () => {
    const { id } = await create({ name: 'SOS to Telegram', events: ['sos'], channel: { type: 'telegram', chat_id: '@fleet_alerts', bot_token: BOT_TOKEN } })
    telegram.failures.push(502, 500)
    await commit(sos())
    const deliver = worker()
    expect(await deliver.deliverDue()).toBe(1)
    expect(await deliveries(id)).toMatchObject([{ status: 'pending', attempts: 1, last_status_code: 502, last_error: 'HTTP 502: Internal Server Error' }])
    world.clock.advance(10_000)
    expect(await deliver.deliverDue()).toBe(1)
    expect(await deliveries(id)).toMatchObject([{ status: 'pending', attempts: 2, last_status_code: 500 }])
    world.clock.advance(20_000)
    expect(await deliver.deliverDue()).toBe(1)
    expect(await deliveries(id)).toMatchObject([{ status: 'delivered', attempts: 3, last_status_code: 200, last_error: null }])
    expect(telegram.calls.map((c) => c.json.chat_id)).toEqual(['@fleet_alerts', '@fleet_alerts', '@fleet_alerts'])
  })

  test('an unreachable API: the error is recorded without the token', async () => {
    const { id } = await create({ name: 'SOS to Telegram', events: ['sos'], channel: { type: 'telegram', chat_id: '42', bot_token: BOT_TOKEN } })
    telegram.stop()
    await commit(sos())
    expect(await worker().deliverDue()).toBe(1)
    const [failed] = await deliveries(id)
    expect(failed).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null })
    expect(failed!.last_error).not.toBeNull()
    expect(failed!.last_error).not.toContain(BOT_TOKEN)
    expect(logLines.join('\n')).not.toContain(BOT_TOKEN)
  })

  test('bad or missing chat id and bot token are 400 naming the field, never echoing the token; nothing is written', async () => {
    for (const [channel, path] of [
      [{ type: 'telegram', chat_id: '', bot_token: BOT_TOKEN }, '/channel/chat_id'],
      [{ type: 'telegram', chat_id: 'my chat', bot_token: BOT_TOKEN }, '/channel/chat_id'],
      [{ type: 'telegram', bot_token: BOT_TOKEN }, '/channel/chat_id'],
      [{ type: 'telegram', chat_id: '42' }, '/channel/bot_token'],
      [{ type: 'telegram', chat_id: '42', bot_token: 'not/a-token/../x' }, '/channel/bot_token'],
      [{ type: 'telegram', chat_id: '42', bot_token: BOT_TOKEN, secret: 'whsec-0123456789abcdef' }, '/channel/secret'],
    ] as const) {
      const res = await world.call('POST', '/notifications', { token: keys.dana, body: { name: 'N', events: ['sos'], channel } })
      const answer = await problem(res, 400)
      expect({ channel, paths: answer.errors?.map((e) => e.path) }).toEqual({ channel, paths: expect.arrayContaining([path]) })
      expect(JSON.stringify(answer)).not.toContain(BOT_TOKEN)
      expect(JSON.stringify(answer)).not.toContain('not/a-token')
    }
    expect(await world.count('notifications')).toBe(0)
  })

  test('the bot token is write-only: no answer, audit entry or log line holds it; PATCH keeps it unless sent, and the type cannot change', async () => {
    const answers: string[] = []
    const created = await create({ name: 'SOS to Telegram', events: ['sos'], channel: { type: 'telegram', chat_id: '42', bot_token: BOT_TOKEN } })
    answers.push(created.text)
    expect(JSON.parse(created.text).channel).toEqual({ type: 'telegram', chat_id: '42', bot_token_set: true })
    const id = created.id
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await world.call(method, path, { token: keys.dana, body })
      const text = await res.text()
      answers.push(text)
      return { status: res.status, text }
    }
    expect((await call('GET', `/notifications/${id}`)).status).toBe(200)
    expect((await call('GET', '/notifications')).status).toBe(200)
    const patched = await call('PATCH', `/notifications/${id}`, { channel: { chat_id: '-100200300' } })
    expect(patched.status).toBe(200)
    expect(JSON.parse(patched.text).channel).toEqual({ type: 'telegram', chat_id: '-100200300', bot_token_set: true })
    expect((await call('PATCH', `/notifications/${id}`, { channel: { type: 'email' } })).status).toBe(400)
    expect((await call('PATCH', `/notifications/${id}`, { channel: { url: 'https://hooks.example.com/' } })).status).toBe(400)
    expect((await call('PATCH', `/notifications/${id}`, { channel: { bot_token: 'short' } })).status).toBe(400)
    expect((await call('POST', `/notifications/${id}/test`)).status).toBe(200)
    expect(telegram.calls.at(-1)).toMatchObject({ path: `/bot${BOT_TOKEN}/sendMessage`, json: { chat_id: '-100200300' } })
    expect((await call('GET', `/notifications/${id}/deliveries`)).status).toBe(200)
    const newToken = '1234567:BBAnotherFakeTokenForTests_xyz'
    expect((await call('PATCH', `/notifications/${id}`, { channel: { bot_token: newToken } })).status).toBe(200)
    await call('POST', `/notifications/${id}/test`)
    expect(telegram.calls.at(-1)!.path).toBe(`/bot${newToken}/sendMessage`)
    const audit = JSON.stringify(await world.execute(sql`SELECT * FROM audit_log`))
    for (const text of [...answers, audit, logLines.join('\n')]) {
      expect(text).not.toContain(BOT_TOKEN)
      expect(text).not.toContain(newToken)
    }
  })
})
