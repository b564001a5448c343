/**
 * Scheduled reports (contracts/reports.md, "Scheduled reports"), through the API and the scheduler
 * on the run's engine, with the world's manual clock: who sees and changes which schedule, what is
 * refused (400 with paths), a day's report mailed once at its local time (across the end of summer
 * time, and not again after a restart), produced as its owner, retried then failed, posted to a
 * webhook, the runs list, and run-now. Mail goes to a real SMTP server on 127.0.0.1 and is parsed.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import ExcelJS from 'exceljs'
import { simpleParser } from 'mailparser'
import postgres from 'postgres'
import { createApp } from '../../src/app'
import { createLocalLeases, type Leases } from '../../src/store/leases'
import { createPostgresLeases } from '../../src/store/postgres/leases'
import { loadConfig } from '../../src/config'
import type { ReportScheduler } from '../../src/reports/scheduler'
import { type Smtp, startSmtp } from '../alerts/messaging-receivers'
import { baseDataset, type EngineWorld, ids, keys, openWorld, problem, testEngine } from '../support/world'

const utc = (iso: string) => Date.parse(iso)
const unix = (iso: string) => utc(iso) / 1000

/** events on either side of the end of summer time in Dublin (Sunday 25 October 2026, 01:00 UTC) */
const EVENTS = [
  { device: ids.truck1, alarm_code: 'sos', timestamp: unix('2026-10-24T09:00:00Z'), coordinates: [48.85, 2.3] }, // Sat 10:00 IST
  { device: ids.van1, alarm_code: 'power_cut', timestamp: unix('2026-10-24T22:30:00Z'), coordinates: [48.85, 2.3] }, // Sat 23:30 IST
  { device: ids.truck1, alarm_code: 'overspeed', timestamp: unix('2026-10-25T23:30:00Z'), coordinates: [48.85, 2.3] }, // Sun 23:30 GMT (Monday in summer time)
  { device: ids.truck1, alarm_code: 'sos', timestamp: unix('2026-11-17T10:00:00Z'), coordinates: [48.85, 2.3] }, // Tue of the week 16–22 Nov
  { device: ids.van1, alarm_code: 'sos', timestamp: unix('2026-11-18T10:00:00Z'), coordinates: [48.85, 2.3] },
]

let smtp: Smtp
let world: EngineWorld
let scheduler: ReportScheduler
const configOf = (extra: Record<string, string> = {}) =>
  loadConfig({ SMTP_URL: smtp.url, SMTP_FROM: 'Fleet tracker <tracker@fleet.example.com>', APP_URL: 'https://fleet.example.com', WEBHOOK_ALLOW_PRIVATE: '1', ...extra })

beforeEach(async () => {
  smtp = await startSmtp()
  world = await openWorld({ ...baseDataset(), events: EVENTS }, { config: configOf(), reportSchedules: { expose: (s) => (scheduler = s) } })
})
afterEach(async () => {
  await scheduler.stop()
  await world.close()
  await smtp.close()
})

type Schedule = Record<string, unknown> & { id: string }
type Run = { id: string; period: { from: number; to: number }; status: string; attempts: number; error: string | null; created_at: number; sent_at: number | null; next_attempt_at: number | null; manual: boolean }

const DAILY = { name: 'Daily events', kind: 'events', devices: [ids.truck1, ids.van1], period: 'day', at: '07:00', tz: 'Europe/Dublin', format: 'csv', to: ['boss@example.com', 'desk@example.com'] }

async function create(body: Record<string, unknown>, token = keys.alice): Promise<Schedule> {
  const res = await world.call('POST', '/reports/schedules', { token, body })
  const text = await res.text()
  if (res.status !== 201) throw new Error(`${res.status}: ${text}`)
  const created = JSON.parse(text) as Schedule
  expect(res.headers.get('location')).toBe(`/reports/schedules/${created.id}`)
  return created
}
const list = async (token: string) => ((await (await world.call('GET', '/reports/schedules', { token })).json()) as Schedule[]).map((s) => s.name)
const runs = async (id: string, token = keys.alice) => (await (await world.call('GET', `/reports/schedules/${id}/runs`, { token })).json()) as Run[]

/** the mails that arrived since `before`, parsed */
async function mailsSince(before: number) {
  return Promise.all(
    smtp.mails.slice(before).map(async (mail) => {
      const parsed = await simpleParser(mail.raw)
      return { to: mail.to, subject: parsed.subject ?? '', attachments: parsed.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content })) }
    }),
  )
}

/** CSV rows as arrays of cells (the report's cells hold no quoted commas here) */
const csvRows = (content: Buffer) => content.toString('utf8').trim().split(/\r?\n/).map((line) => line.split(','))

describe('the schedules API', () => {
  test('a member makes and changes their own; an admin sees and manages the account\'s; others see nothing', async () => {
    world.clock.set(utc('2026-11-25T12:00:00Z'))
    const daily = await create(DAILY)
    expect(daily).toEqual({
      id: expect.any(String),
      name: 'Daily events',
      kind: 'events',
      devices: [ids.truck1, ids.van1],
      groups: [],
      period: 'day',
      at: '07:00',
      tz: 'Europe/Dublin',
      format: 'csv',
      to: ['boss@example.com', 'desk@example.com'],
      webhook: null,
      enabled: true,
      owner: ids.alice,
      created_at: unix('2026-11-25T12:00:00Z'),
      updated_at: unix('2026-11-25T12:00:00Z'),
      last_run: null,
    })
    // tz defaults to the creator's own zone, else UTC
    expect((await world.call('PATCH', '/me', { token: keys.bob, body: { timezone: 'America/New_York' } })).status).toBe(200)
    const bobs = await create({ name: 'Vans weekly', kind: 'summary', groups: [ids.vans], period: 'week', at: '06:30', format: 'xlsx', to: ['bob@example.com'] }, keys.bob)
    expect(bobs.tz).toBe('America/New_York')
    expect((await create({ name: 'Monthly', kind: 'trips', period: 'month', at: '00:00', format: 'csv', to: ['dana@example.com'] }, keys.dana)).tz).toBe('UTC')

    expect(await list(keys.alice)).toEqual(['Daily events'])
    expect(await list(keys.bob)).toEqual(['Vans weekly'])
    expect(await list(keys.dana)).toEqual(['Daily events', 'Monthly', 'Vans weekly'])
    expect(await list(keys.erin)).toEqual([])
    expect((await world.call('GET', `/reports/schedules/${daily.id}`, { token: keys.alice })).status).toBe(200)
    for (const token of [keys.bob, keys.carol, keys.erin]) {
      await problem(await world.call('GET', `/reports/schedules/${daily.id}`, { token }), 404)
      await problem(await world.call('PATCH', `/reports/schedules/${daily.id}`, { token, body: { at: '08:00' } }), 404)
      await problem(await world.call('GET', `/reports/schedules/${daily.id}/runs`, { token }), 404)
      await problem(await world.call('POST', `/reports/schedules/${daily.id}/run`, { token }), 404)
      await problem(await world.call('DELETE', `/reports/schedules/${daily.id}`, { token }), 404)
    }

    world.clock.set(utc('2026-11-25T13:00:00Z'))
    const changed = await world.call('PATCH', `/reports/schedules/${daily.id}`, { token: keys.alice, body: { at: '08:30', enabled: false, format: 'XLSX' } })
    expect(changed.status).toBe(200)
    expect(await changed.json()).toMatchObject({ at: '08:30', enabled: false, format: 'xlsx', name: 'Daily events', owner: ids.alice, updated_at: unix('2026-11-25T13:00:00Z') })
    // an admin changes a member's schedule; it stays the member's
    expect(await (await world.call('PATCH', `/reports/schedules/${bobs.id}`, { token: keys.dana, body: { name: 'Vans, weekly' } })).json()).toMatchObject({ name: 'Vans, weekly', owner: ids.bob })

    expect((await world.call('DELETE', `/reports/schedules/${bobs.id}`, { token: keys.dana })).status).toBe(204)
    await problem(await world.call('GET', `/reports/schedules/${bobs.id}`, { token: keys.bob }), 404)
    expect(await list(keys.bob)).toEqual([])
    // a share token is not a user
    await problem(await world.call('GET', '/reports/schedules', {}), 401)
  })

  test('bad fields are 400 naming each path and change nothing; a webhook must be a webhook channel of the account', async () => {
    const bad = await problem(
      await world.call('POST', '/reports/schedules', { token: keys.alice, body: { name: '', kind: 'laps', devices: 'all', period: 'hour', at: '24:00', tz: 'Mars/Olympus', format: 7, to: ['not an address'], enabled: 'yes', colour: 'red' } }),
      400,
    )
    expect(bad.errors!.map((e) => e.path).sort()).toEqual(['/at', '/colour', '/devices', '/enabled', '/format', '/kind', '/name', '/period', '/to', '/tz'])
    expect((await problem(await world.call('POST', '/reports/schedules', { token: keys.alice, body: { name: 'x' } }), 400)).errors!.map((e) => e.path).sort()).toEqual(['/at', '/format', '/kind', '/period'])
    expect((await problem(await world.call('POST', '/reports/schedules', { token: keys.alice, body: { ...DAILY, format: 'gpx' } }), 400)).errors).toEqual([{ path: '/format', message: expect.stringContaining('csv or xlsx') }])
    expect((await problem(await world.call('POST', '/reports/schedules', { token: keys.alice, body: { ...DAILY, to: [] } }), 400)).errors!.map((e) => e.path)).toEqual(['/to'])
    await problem(await world.call('POST', '/reports/schedules', { token: keys.alice, body: '[1]' }), 400)
    // devices and groups the user cannot reach: 404, as the reports answer
    await problem(await world.call('POST', '/reports/schedules', { token: keys.bob, body: { ...DAILY, devices: [ids.truck1] } }), 404)
    await problem(await world.call('POST', '/reports/schedules', { token: keys.alice, body: { ...DAILY, devices: [ids.globexCar] } }), 404)
    await problem(await world.call('POST', '/reports/schedules', { token: keys.bob, body: { ...DAILY, devices: [], groups: [ids.trucks] } }), 404)
    expect(await list(keys.dana)).toEqual([])

    // webhooks: an id that is no channel, another account's, an email channel: 404
    const channel = async (token: string, channel: Record<string, unknown>) => {
      const res = await world.call('POST', '/notifications', { token, body: { name: `c${Math.random()}`, events: ['sos'], channel } })
      expect(res.status).toBe(201)
      return ((await res.json()) as { id: string }).id
    }
    const acmeHook = await channel(keys.dana, { type: 'webhook', url: 'http://127.0.0.1:9/hook' })
    const acmeMail = await channel(keys.dana, { type: 'email', to: ['desk@example.com'] })
    const globexHook = await channel(keys.erin, { type: 'webhook', url: 'http://127.0.0.1:9/hook' })
    for (const webhook of [crypto.randomUUID(), globexHook, acmeMail]) {
      await problem(await world.call('POST', '/reports/schedules', { token: keys.alice, body: { ...DAILY, to: [], webhook } }), 404)
    }
    const hooked = await create({ ...DAILY, to: [], webhook: acmeHook })
    expect(hooked.webhook).toBe(acmeHook)
    // and the whole must still hold after a PATCH: no address and no webhook is 400
    expect((await problem(await world.call('PATCH', `/reports/schedules/${hooked.id}`, { token: keys.alice, body: { webhook: null } }), 400)).errors!.map((e) => e.path)).toEqual(['/to'])
    expect((await (await world.call('GET', `/reports/schedules/${hooked.id}`, { token: keys.alice })).json()) as Schedule).toMatchObject({ webhook: acmeHook })
  })

  test('without SMTP_URL an email schedule is refused naming SMTP_URL; a webhook schedule is not', async () => {
    const app = createApp({ stores: world.stores, clock: world.clock, config: loadConfig({}) })
    const post = (body: unknown) => app.handle(new Request('http://localhost/reports/schedules', { method: 'POST', headers: { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }))
    const refused = await problem(await post(DAILY), 400)
    expect(refused.errors).toEqual([{ path: '/to', message: expect.stringContaining('SMTP_URL') }])
    const hook = await app.handle(new Request('http://localhost/notifications', { method: 'POST', headers: { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Hook', events: ['sos'], channel: { type: 'webhook', url: 'https://example.com/hook' } }) }))
    expect((await post({ ...DAILY, to: [], webhook: ((await hook.json()) as { id: string }).id })).status).toBe(201)
  })
})

describe('the scheduler', () => {
  test('a day schedule mails the previous local day once at its local time, across the end of summer time, and not again after a restart', async () => {
    // made on Saturday at noon: Saturday 07:00 had passed, so Friday is not sent
    world.clock.set(utc('2026-10-24T12:00:00Z'))
    const daily = await create(DAILY)
    await scheduler.tick()
    expect(smtp.mails).toHaveLength(0)

    // Sunday 25 October, 06:30 UTC: 07:30 in summer time, but summer time ended at 01:00 UTC: 06:30 in Dublin
    world.clock.set(utc('2026-10-25T06:30:00Z'))
    await scheduler.tick()
    expect(smtp.mails).toHaveLength(0)
    world.clock.set(utc('2026-10-25T07:00:00Z'))
    await scheduler.tick()
    const [saturday] = await mailsSince(0)
    expect(smtp.mails).toHaveLength(1)
    expect(saturday!.to).toEqual(['boss@example.com', 'desk@example.com'])
    expect(saturday!.subject).toBe('Daily events: events report, 2026-10-24')
    expect(saturday!.attachments.map((a) => [a.filename, a.contentType])).toEqual([['events-2026-10-24-2026-10-24.csv', 'text/csv']])
    const rows = csvRows(saturday!.attachments[0]!.content)
    expect(rows[0]!.slice(0, 4)).toEqual(['device', 'alias', 'timestamp', 'code'])
    // Saturday in Dublin's summer time: both of its events, nothing of Sunday
    expect(rows.slice(1).map((r) => [r[1], r[2], r[3]])).toEqual([
      ['Truck 1', '2026-10-24T10:00:00+01:00', 'sos'],
      ['Van 1', '2026-10-24T23:30:00+01:00', 'power_cut'],
    ])

    // later looks, and a new scheduler over the same database (a restart), send nothing more
    world.clock.set(utc('2026-10-25T12:00:00Z'))
    await scheduler.tick()
    let restarted: ReportScheduler | null = null
    createApp({ stores: await world.otherStores(), clock: world.clock, config: configOf(), reportSchedules: { expose: (s) => (restarted = s) } })
    await restarted!.tick()
    expect(smtp.mails).toHaveLength(1)

    // Monday 07:00 GMT: Sunday, 25 hours long, with its event at 23:30
    world.clock.set(utc('2026-10-26T07:00:00Z'))
    await restarted!.tick()
    await scheduler.tick()
    const [sunday] = await mailsSince(1)
    expect(smtp.mails).toHaveLength(2)
    expect(sunday!.subject).toBe('Daily events: events report, 2026-10-25')
    expect(csvRows(sunday!.attachments[0]!.content).slice(1).map((r) => [r[2], r[3]])).toEqual([['2026-10-25T23:30:00+00:00', 'overspeed']])
    await restarted!.stop()

    const listed = await runs(daily.id)
    expect(listed.map((r) => ({ ...r, id: undefined }))).toEqual([
      { id: undefined, period: { from: unix('2026-10-25T00:00:00Z') - 3600, to: unix('2026-10-26T00:00:00Z') }, status: 'sent', attempts: 1, error: null, created_at: unix('2026-10-26T07:00:00Z'), sent_at: unix('2026-10-26T07:00:00Z'), next_attempt_at: null, manual: false },
      { id: undefined, period: { from: unix('2026-10-23T23:00:00Z'), to: unix('2026-10-24T23:00:00Z') }, status: 'sent', attempts: 1, error: null, created_at: unix('2026-10-25T07:00:00Z'), sent_at: unix('2026-10-25T07:00:00Z'), next_attempt_at: null, manual: false },
    ])
    // disabled, nothing goes
    await world.call('PATCH', `/reports/schedules/${daily.id}`, { token: keys.alice, body: { enabled: false } })
    world.clock.set(utc('2026-10-27T07:00:00Z'))
    await scheduler.tick()
    expect(smtp.mails).toHaveLength(2)
  })

  test('two nodes looking at the same moment send a period once: the look runs under a lease', async () => {
    world.clock.set(utc('2026-10-24T12:00:00Z'))
    await create(DAILY)
    world.clock.set(utc('2026-10-25T07:00:00Z'))
    // PostgreSQL: each node its own pool and advisory lock; SQLite: one process, its own lease
    const pools = testEngine === 'postgres' ? [postgres(world.env.DATABASE_URL!, { max: 2, onnotice: () => {} }), postgres(world.env.DATABASE_URL!, { max: 2, onnotice: () => {} })] : []
    const local = createLocalLeases()
    const leasesOf = (n: number): Leases => (testEngine === 'postgres' ? createPostgresLeases(pools[n]!) : local)
    const nodes: ReportScheduler[] = []
    try {
      for (let n = 0; n < 2; n++) {
        createApp({ stores: await world.otherStores(), clock: world.clock, config: configOf(), reportSchedules: { leases: leasesOf(n), expose: (s) => nodes.push(s) } })
      }
      await Promise.all(nodes.map((node) => node.tick()))
      await Promise.all(nodes.map((node) => node.tick()))
      expect(smtp.mails).toHaveLength(1)
    } finally {
      for (const node of nodes) await node.stop()
      for (const pool of pools) await pool.end({ timeout: 5 })
    }
  })

  test('run now mails last week\'s XLSX, produced as the owner: a device they no longer reach is left out; a removed user\'s schedules go with them', async () => {
    world.clock.set(utc('2026-11-25T12:00:00Z'))
    const weekly = await create({ ...DAILY, name: 'Weekly', period: 'week', format: 'xlsx', to: ['alice@example.com'] })
    const sent = await world.call('POST', `/reports/schedules/${weekly.id}/run`, { token: keys.alice })
    expect(sent.status).toBe(201)
    expect(await sent.json()).toMatchObject({ status: 'sent', attempts: 1, manual: true, period: { from: unix('2026-11-16T00:00:00Z'), to: unix('2026-11-23T00:00:00Z') } })
    const [mail] = await mailsSince(0)
    expect(mail!.to).toEqual(['alice@example.com'])
    expect(mail!.subject).toBe('Weekly: events report, 2026-11-16 to 2026-11-22')
    expect(mail!.attachments[0]!.filename).toBe('events-2026-11-16-2026-11-22.xlsx')
    const codes = async (content: Buffer) => {
      const workbook = new ExcelJS.Workbook()
      await workbook.xlsx.load(content as unknown as ArrayBuffer)
      const sheet = workbook.worksheets[0]!
      const header = (sheet.getRow(1).values as unknown[]).slice(1)
      const alias = header.indexOf('Device') + 1
      const code = header.findIndex((h) => String(h).toLowerCase().includes('code') || h === 'Event') + 1
      const found: string[] = []
      for (let n = 2; n <= sheet.rowCount; n++) found.push(`${sheet.getRow(n).getCell(alias).value} ${sheet.getRow(n).getCell(code).value}`)
      return found
    }
    expect(await codes(mail!.attachments[0]!.content)).toEqual(['Truck 1 sos', 'Van 1 sos'])

    // alice is moved out of Trucks: Truck 1 is no longer hers, and is left out
    expect((await world.call('PATCH', `/users/${ids.alice}`, { token: keys.dana, body: { groups: [ids.vans] } })).status).toBe(200)
    world.clock.advance(60_000)
    expect(await (await world.call('POST', `/reports/schedules/${weekly.id}/run`, { token: keys.alice })).json()).toMatchObject({ status: 'sent' })
    const [again] = await mailsSince(1)
    expect(await codes(again!.attachments[0]!.content)).toEqual(['Van 1 sos'])
    expect((await runs(weekly.id)).map((r) => [r.status, r.manual])).toEqual([['sent', true], ['sent', true]])

    // bob's schedule goes with bob
    const bobs = await create({ ...DAILY, devices: [ids.van1], to: ['bob@example.com'] }, keys.bob)
    expect((await world.call('DELETE', `/users/${ids.bob}`, { token: keys.dana })).status).toBe(204)
    await problem(await world.call('GET', `/reports/schedules/${bobs.id}`, { token: keys.dana }), 404)
    expect(await list(keys.dana)).toEqual(['Weekly'])
  })

  test('a month schedule sends a month in which summer time ends (31 days and an hour of seconds)', async () => {
    world.clock.set(utc('2026-11-02T12:00:00Z'))
    const monthly = await create({ ...DAILY, name: 'Monthly', period: 'month', tz: 'Europe/Paris', to: ['alice@example.com'] })
    const sent = await world.call('POST', `/reports/schedules/${monthly.id}/run`, { token: keys.alice })
    expect(await sent.json()).toMatchObject({ status: 'sent', error: null, period: { from: unix('2026-09-30T22:00:00Z'), to: unix('2026-10-31T23:00:00Z') } })
  })

  test('every schedule carries its last run: null before the first, then the newest, in the list and alone', async () => {
    world.clock.set(utc('2026-11-25T12:00:00Z'))
    const weekly = await create({ ...DAILY, name: 'Weekly', period: 'week', to: ['alice@example.com'] })
    const quiet = await create({ ...DAILY, name: 'Quiet' })
    expect(weekly.last_run).toBeNull()
    const lastRuns = async () =>
      Object.fromEntries(((await (await world.call('GET', '/reports/schedules', { token: keys.alice })).json()) as (Schedule & { last_run: Run | null })[]).map((s) => [s.name, s.last_run?.id ?? null]))
    expect(await lastRuns()).toEqual({ Quiet: null, Weekly: null })
    for (let n = 0; n < 2; n++) {
      expect((await world.call('POST', `/reports/schedules/${weekly.id}/run`, { token: keys.alice })).status).toBe(201)
      world.clock.advance(60_000)
    }
    const [newest, older] = await runs(weekly.id)
    expect(newest!.id).not.toBe(older!.id)
    expect(await lastRuns()).toEqual({ Quiet: null, Weekly: newest!.id })
    const alone = (await (await world.call('GET', `/reports/schedules/${weekly.id}`, { token: keys.alice })).json()) as { last_run: Run }
    expect(alone.last_run).toEqual(newest!)
    const renamed = (await (await world.call('PATCH', `/reports/schedules/${quiet.id}`, { token: keys.alice, body: { name: 'Still quiet' } })).json()) as { last_run: Run | null }
    expect(renamed.last_run).toBeNull()
  })

  test('a refused mail is retried with backoff, and after 24 h of failing the run is failed', async () => {
    world.clock.set(utc('2026-11-24T12:00:00Z'))
    const daily = await create({ ...DAILY, tz: 'UTC' })
    for (let n = 0; n < 100; n++) smtp.refusals.push([451, 'Mailbox busy, try later'])
    world.clock.set(utc('2026-11-25T07:00:00Z'))
    await scheduler.tick()
    let run: Run | undefined = (await runs(daily.id))[0]
    expect(run).toMatchObject({ status: 'queued', attempts: 1, error: expect.stringContaining('451'), sent_at: null })
    // nothing before the backoff's 10 s
    world.clock.advance(5_000)
    await scheduler.tick()
    expect((await runs(daily.id))[0]!.attempts).toBe(1)
    world.clock.advance(5_000)
    await scheduler.tick()
    expect((await runs(daily.id))[0]!.attempts).toBe(2)
    // an hour at a time up to just before 24 h: still queued, tried again and again
    for (let hour = 1; hour < 24; hour++) {
      world.clock.set(utc('2026-11-25T07:00:00Z') + hour * 3_600_000)
      await scheduler.tick()
    }
    ;[run] = await runs(daily.id)
    expect(run!.status).toBe('queued')
    expect(run!.attempts).toBeGreaterThan(10)
    // 24 h after it was written: its last attempt, failed (the next day's run is written at the same look, and fails its first)
    const first = run!.id
    world.clock.set(utc('2026-11-26T07:00:00Z'))
    await scheduler.tick()
    run = (await runs(daily.id)).find((r) => r.id === first)
    expect(run).toMatchObject({ status: 'failed', error: expect.stringContaining('451'), sent_at: null })
    expect(smtp.mails).toHaveLength(0)
    // failed is final: no more attempts; the next day's report is another run
    const attempts = run!.attempts
    world.clock.advance(3_600_000)
    await scheduler.tick()
    const after = await runs(daily.id)
    expect(after.find((r) => r.id === run!.id)!.attempts).toBe(attempts)
    expect(after.map((r) => r.period.from)).toEqual([unix('2026-11-25T00:00:00Z'), unix('2026-11-24T00:00:00Z')])
  })

  test('a schedule with a webhook POSTs the file itself, signed; a failure answer is retried', async () => {
    const received: { headers: Headers; body: string }[] = []
    let answer = 500
    const receiver = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(request) {
        received.push({ headers: request.headers, body: await request.text() })
        return new Response(null, { status: answer })
      },
    })
    try {
      const hook = await world.call('POST', '/notifications', { token: keys.dana, body: { name: 'Reports in', events: ['sos'], channel: { type: 'webhook', url: `http://127.0.0.1:${receiver.port}/reports`, secret: 's3cret-s3cret-s3cret' } } })
      expect(hook.status).toBe(201)
      world.clock.set(utc('2026-11-24T12:00:00Z'))
      const daily = await create({ ...DAILY, to: [], webhook: ((await hook.json()) as { id: string }).id, tz: 'UTC' })
      world.clock.set(utc('2026-11-25T07:00:00Z'))
      await scheduler.tick()
      expect((await runs(daily.id))[0]).toMatchObject({ status: 'queued', attempts: 1, error: 'HTTP 500' })
      answer = 204
      world.clock.advance(10_000)
      await scheduler.tick()
      const [run] = await runs(daily.id)
      expect(run).toMatchObject({ status: 'sent', attempts: 2, error: null })
      expect(received).toHaveLength(2)
      const last = received[1]!
      expect(last.headers.get('content-type')).toBe('text/csv; charset=utf-8')
      expect(last.headers.get('content-disposition')).toBe('attachment; filename="events-2026-11-24-2026-11-24.csv"')
      expect(last.headers.get('x-tracker-delivery')).toBe(run!.id)
      const signature = last.headers.get('x-tracker-signature')!
      const t = /^t=(\d+),v1=[0-9a-f]{64}$/.exec(signature)![1]
      const expected = new Bun.CryptoHasher('sha256', 's3cret-s3cret-s3cret').update(`${t}.${last.body}`).digest('hex')
      expect(signature).toBe(`t=${t},v1=${expected}`)
      expect(last.body.split(/\r?\n/)[0]!.startsWith('device,alias,timestamp,code')).toBe(true)
      expect(smtp.mails).toHaveLength(0)
    } finally {
      receiver.stop(true)
    }
  })
})
