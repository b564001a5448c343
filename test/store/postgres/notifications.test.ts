import { afterEach, describe, expect, test } from 'bun:test'
import { createDeliveryWorker, DELIVERY_HEADER } from '../../../src/alerts/delivery'
import { manualClock } from '../../../src/clock'
import { silentLogger } from '../../../src/log'
import { startReceiver } from '../../alerts/delivery-receiver'
import { eq } from 'drizzle-orm'
import { openPostgres, type PostgresHandle } from '../../../db/postgres/client'
import * as pg from '../../../db/postgres/schema'
import * as lite from '../../../db/schema'
import { type AuditStore, createAuditStore } from '../../../src/store/audit'
import {
  createDeliveryStore,
  createNotificationStore,
  type DeliveryRow,
  type DeliveryStore,
  type NotificationRow,
  type NotificationStore,
  type PersonalAlerts,
} from '../../../src/store/notifications'
import { createPostgresAuditStore } from '../../../src/store/postgres/audit'
import { createPostgresDeliveryStore, createPostgresNotificationStore, DELIVERY_LOCKS } from '../../../src/store/postgres/notifications'
import { engines, type Opened } from './support'

const audit = { actor: 'u-admin', requestId: 'r-1' }
const channel = (id: string, name: string, fields: Partial<NotificationRow> = {}): NotificationRow => ({
  id,
  accountId: 'a',
  name,
  events: '["*"]',
  groups: '[]',
  positions: false,
  channelType: 'webhook',
  url: 'https://hooks.example.com/fleet',
  secret: 's3cret',
  enabled: true,
  createdAt: 1000,
  updatedAt: 1000,
  userId: null,
  ...fields,
})
type NewDelivery = typeof lite.notificationDeliveries.$inferInsert
const delivery = (key: number, notificationId: string, fields: Partial<NewDelivery> = {}): NewDelivery => ({
  key,
  id: `d-${key}`,
  notificationId,
  kind: 'event',
  deviceKey: null,
  payload: `{"n":${key}}`,
  fixes: null,
  status: 'pending',
  attempts: 0,
  lastStatusCode: null,
  lastError: null,
  nextAttemptAt: 1000,
  createdAt: 1000,
  deliveredAt: null,
  ...fields,
})
const alerts = (address: string | undefined, events = ['sos'], enabled = true): PersonalAlerts => ({
  events,
  enabled,
  address,
  firstAddress: (url) => url.replace(/^mailto:/, '').split(',')[0],
})

interface World {
  opened: Opened
  notifications: NotificationStore
  deliveries: DeliveryStore
  audits: AuditStore
  addDeliveries(rows: NewDelivery[]): Promise<void>
  allDeliveries(): Promise<DeliveryRow[]>
  deleteUser(id: string): Promise<void>
  moveUser(id: string, accountId: string): Promise<void>
}

for (const engine of engines('the notification stores on PostgreSQL')) {
  describe(`the notification stores on ${engine.name}`, () => {
    let opened: Opened | null = null
    const others: PostgresHandle[] = []
    afterEach(async () => {
      for (const handle of others.splice(0)) await handle.close().catch(() => {})
      await opened?.close()
      opened = null
    })

    /** two accounts with a group and users each */
    async function world(): Promise<World> {
      opened = await engine.open()
      const accounts = [
        { id: 'a', name: 'Acme' },
        { id: 'b', name: 'Beta' },
      ]
      const groups = [
        { id: 'g-a', accountId: 'a', name: 'Yard' },
        { id: 'g-b', accountId: 'b', name: 'Other' },
      ]
      const users = [
        { id: 'u1', accountId: 'a', name: 'ann', role: 'admin' },
        { id: 'u2', accountId: 'a', name: 'bob', role: 'member' },
        { id: 'u3', accountId: 'b', name: 'cy', role: 'admin' },
      ]
      if (opened.engine === 'sqlite') {
        const { db } = opened.handle
        db.insert(lite.accounts).values(accounts).run()
        db.insert(lite.groups).values(groups).run()
        db.insert(lite.users).values(users).run()
        return {
          opened,
          notifications: createNotificationStore(opened.handle),
          deliveries: createDeliveryStore(opened.handle),
          audits: createAuditStore(opened.handle),
          addDeliveries: async (rows) => void db.insert(lite.notificationDeliveries).values(rows).run(),
          allDeliveries: async () => db.select().from(lite.notificationDeliveries).orderBy(lite.notificationDeliveries.key).all(),
          deleteUser: async (id) => void db.delete(lite.users).where(eq(lite.users.id, id)).run(),
          moveUser: async (id, accountId) => void db.update(lite.users).set({ accountId }).where(eq(lite.users.id, id)).run(),
        }
      }
      const { db } = opened.handle
      await db.insert(pg.accounts).values(accounts)
      await db.insert(pg.groups).values(groups)
      await db.insert(pg.users).values(users)
      return {
        opened,
        notifications: createPostgresNotificationStore(opened.handle),
        deliveries: createPostgresDeliveryStore(opened.handle),
        audits: createPostgresAuditStore(opened.handle),
        addDeliveries: async (rows) => void (await db.insert(pg.notificationDeliveries).values(rows)),
        allDeliveries: () => db.select().from(pg.notificationDeliveries).orderBy(pg.notificationDeliveries.key),
        deleteUser: async (id) => void (await db.delete(pg.users).where(eq(pg.users.id, id))),
        moveUser: async (id, accountId) => void (await db.update(pg.users).set({ accountId }).where(eq(pg.users.id, id))),
      }
    }

    /** another node on the same PostgreSQL database: a pool of its own */
    async function anotherNode(handle: PostgresHandle): Promise<PostgresHandle> {
      const [row] = await handle.sql<{ name: string }[]>`SELECT current_database() AS name`
      const url = new URL(process.env.TEST_DATABASE_URL!)
      url.pathname = `/${row!.name}`
      const other = await openPostgres(url.toString(), { poolSize: 3, migrate: false })
      others.push(other)
      return other
    }

    describe('channels', () => {
      test('listed by name (bytes, as SQLite sorts, even where the database’s collation is linguistic) then id, paged, never a user’s own alerts; found by id in any case within the account', async () => {
        const { opened, notifications } = await world()
        if (opened.engine === 'postgres') await opened.handle.sql.unsafe(`ALTER TABLE notifications ALTER COLUMN name TYPE text COLLATE "en-x-icu"`)
        for (const [id, name] of [['n4', 'b'], ['n3', 'a'], ['n2', 'B'], ['n1', 'a'], ['n5', 'Été']] as const) {
          expect(await notifications.create(channel(id, name), [], audit)).toEqual(channel(id, name))
        }
        await notifications.create(channel('nb', 'a', { accountId: 'b' }), [], audit)
        await notifications.savePersonal('u1', alerts('ann@example.com'), 2000, 'r-2')
        const names = (rows: NotificationRow[]) => rows.map((r) => `${r.name}/${r.id}`)
        expect(names(await notifications.list('a', { limit: 10, offset: 0 }))).toEqual(['B/n2', 'a/n1', 'a/n3', 'b/n4', 'Été/n5'])
        expect(names(await notifications.list('a', { limit: 2, offset: 3 }))).toEqual(['b/n4', 'Été/n5'])
        expect(await notifications.find('a', 'N3')).toEqual(channel('n3', 'a'))
        expect(await notifications.find('b', 'n3')).toBeNull()
        const own = await notifications.personal('u1')
        expect(await notifications.find('a', own!.id)).toBeNull()
      })

      test('made, changed and deleted with their audit rows; groups not the account’s are refused, writing nothing; deliveries go with their channel', async () => {
        const w = await world()
        const { notifications, audits } = w
        const grouped = channel('n1', 'Night', { groups: '["g-a"]' })
        expect(await notifications.create(grouped, ['g-a'], audit)).toEqual(grouped)
        expect(await notifications.create(channel('n2', 'x'), ['g-a', 'g-b'], audit)).toEqual({ groupsFound: new Set(['g-a']) })
        expect(await notifications.find('a', 'n2')).toBeNull()
        const changed = await notifications.update('a', 'N1', { name: 'Day', enabled: false, secret: null }, [], 5000, audit)
        expect(changed).toEqual({ ...grouped, name: 'Day', enabled: false, secret: null, groups: '[]', updatedAt: 5000 })
        expect(await notifications.update('a', 'n1', { url: 'https://x.example' }, undefined, 6000, audit)).toEqual({ ...(changed as NotificationRow), url: 'https://x.example', updatedAt: 6000 })
        expect(await notifications.update('a', 'n1', {}, ['g-b'], 7000, audit)).toEqual({ groupsFound: new Set() })
        expect(await notifications.update('b', 'n1', { name: 'no' }, undefined, 7000, audit)).toBeNull()
        await w.addDeliveries([delivery(1, 'n1'), delivery(2, 'n1')])
        expect(await notifications.remove('b', 'n1', 8000, audit)).toBe(false)
        expect(await notifications.remove('a', 'N1', 8000, audit)).toBe(true)
        expect(await notifications.remove('a', 'n1', 9000, audit)).toBe(false)
        expect(await w.allDeliveries()).toEqual([])
        const trail = await audits.list('a', { limit: 10, offset: 0 })
        expect(trail.map((r) => [r.action, r.object_type, r.object_id, r.actor, r.request_id, r.at])).toEqual([
          ['delete', 'notification', 'n1', 'u-admin', 'r-1', new Date(8000).toISOString()],
          ['update', 'notification', 'n1', 'u-admin', 'r-1', new Date(6000).toISOString()],
          ['update', 'notification', 'n1', 'u-admin', 'r-1', new Date(5000).toISOString()],
          ['create', 'notification', 'n1', 'u-admin', 'r-1', new Date(1000).toISOString()],
        ])
      })

      test('a channel’s deliveries newest first, paged; the account’s name; a test delivery kept only while its channel is', async () => {
        const w = await world()
        const { notifications } = w
        await notifications.create(channel('n1', 'one'), [], audit)
        await notifications.create(channel('n2', 'two'), [], audit)
        const test = (id: string, notificationId: string) => ({ id, notificationId, kind: 'test', payload: null, status: 'delivered', attempts: 1, lastStatusCode: 204, createdAt: 3000, deliveredAt: 3000 })
        await notifications.recordTest(test('t1', 'n1'))
        await notifications.recordTest(test('t2', 'n2'))
        await notifications.recordTest(test('t3', 'n1'))
        await notifications.remove('a', 'n2', 4000, audit)
        await notifications.recordTest(test('t4', 'n2'))
        const ids = (rows: DeliveryRow[]) => rows.map((r) => r.id)
        expect(ids(await notifications.deliveries('n1', { limit: 10, offset: 0 }))).toEqual(['t3', 't1'])
        expect(ids(await notifications.deliveries('n1', { limit: 1, offset: 1 }))).toEqual(['t1'])
        expect(await notifications.deliveries('n2', { limit: 10, offset: 0 })).toEqual([])
        expect((await notifications.deliveries('n1', { limit: 1, offset: 0 }))[0]).toMatchObject({ kind: 'test', status: 'delivered', attempts: 1, lastStatusCode: 204, deliveredAt: 3000, nextAttemptAt: null })
        expect((await w.allDeliveries()).map((r) => r.id)).toEqual(['t1', 't3'])
        expect(await notifications.accountName('a')).toBe('Acme')
        expect(await notifications.accountName('zz')).toBe('')
      })
    })

    describe('a user’s own email alerts', () => {
      test('saved under the account the user is in now, the address kept when none is sent, each save with its audit row; one a user, gone with the user', async () => {
        const w = await world()
        const { notifications, audits } = w
        expect(await notifications.personal('u2')).toBeNull()
        expect(await notifications.savePersonal('nobody', alerts('x@example.com'), 1000, null)).toBe('no-user')
        expect(await notifications.savePersonal('u2', alerts(undefined), 1000, null)).toBe('no-address')
        const first = await notifications.savePersonal('u2', alerts('bob@example.com', ['sos', 'overspeed']), 2000, 'r-2')
        expect(first).toMatchObject({ accountId: 'a', userId: 'u2', name: 'Email alerts', channelType: 'email', url: 'mailto:bob@example.com', events: '["sos","overspeed"]', groups: '[]', positions: false, secret: null, enabled: true, createdAt: 2000, updatedAt: 2000 })
        expect(await notifications.personal('u2')).toEqual(first as NotificationRow)
        await w.moveUser('u2', 'b')
        const second = await notifications.savePersonal('u2', alerts(undefined, ['*'], false), 3000, 'r-3')
        expect(second).toEqual({ ...(first as NotificationRow), accountId: 'b', events: '["*"]', enabled: false, updatedAt: 3000 })
        expect((await audits.list('a', { limit: 10, offset: 0 })).map((r) => [r.action, r.object_type, r.object_id, r.actor, r.request_id])).toEqual([['create', 'email_alerts', 'u2', 'u2', 'r-2']])
        expect((await audits.list('b', { limit: 10, offset: 0 })).map((r) => [r.action, r.object_type, r.object_id, r.actor, r.request_id])).toEqual([['update', 'email_alerts', 'u2', 'u2', 'r-3']])
        await w.addDeliveries([delivery(1, (first as NotificationRow).id)])
        await w.deleteUser('u2')
        expect(await notifications.personal('u2')).toBeNull()
        expect(await w.allDeliveries()).toEqual([])
      })

      test('two saves at once for a user write one row', async () => {
        const { notifications, deliveries } = await world()
        const saved = await Promise.all([1, 2, 3].map((i) => notifications.savePersonal('u1', alerts(`ann${i}@example.com`), 1000 + i, null)))
        const ids = new Set(saved.map((row) => (row as NotificationRow).id))
        expect(ids.size).toBe(1)
        expect((await deliveries.enabledChannels()).map((c) => c.id)).toEqual([...ids])
      })
    })

    describe('the outbox', () => {
      test('what a look reads: stats, the newest key, channels written to since a key, enabled channels by id with their account, the version', async () => {
        const w = await world()
        const { notifications, deliveries } = w
        expect(await deliveries.pendingStats()).toEqual({ pending: 0, oldestCreatedAt: null })
        expect(await deliveries.newestKey()).toBe(0)
        const before = await deliveries.channelsVersion()
        await notifications.create(channel('n2', 'two'), [], audit)
        await notifications.create(channel('n1', 'one', { channelType: 'telegram', url: '12345', secret: 'bot-token' }), [], audit)
        await notifications.create(channel('n3', 'three', { enabled: false }), [], audit)
        await notifications.create(channel('n4', 'four', { accountId: 'b', positions: true, events: '[]', secret: null }), [], audit)
        expect(await deliveries.channelsVersion()).toBeGreaterThan(before)
        expect(await deliveries.enabledChannels()).toEqual([
          { id: 'n1', accountId: 'a', account: 'Acme', type: 'telegram', url: '12345', secret: 'bot-token', positions: false },
          { id: 'n2', accountId: 'a', account: 'Acme', type: 'webhook', url: 'https://hooks.example.com/fleet', secret: 's3cret', positions: false },
          { id: 'n4', accountId: 'b', account: 'Beta', type: 'webhook', url: 'https://hooks.example.com/fleet', secret: null, positions: true },
        ])
        await w.addDeliveries([
          delivery(1, 'n1', { createdAt: 5000 }),
          delivery(2, 'n2', { createdAt: 4000 }),
          delivery(3, 'n2', { status: 'delivered', createdAt: 1000 }),
          delivery(4, 'n4', { createdAt: 6000 }),
        ])
        expect(await deliveries.pendingStats()).toEqual({ pending: 3, oldestCreatedAt: 4000 })
        // the gauges' synchronous read: as of the last read at least (PostgreSQL), or now (SQLite)
        expect(deliveries.pendingStatsNow()).toEqual({ pending: 3, oldestCreatedAt: 4000 })
        expect(await deliveries.newestKey()).toBe(4)
        expect((await deliveries.channelsWrittenAfter(1)).sort()).toEqual(['n2', 'n4'])
        expect(await deliveries.channelsWrittenAfter(4)).toEqual([])
        // a look (which reads the newest key) leaves the gauges as of it
        await w.addDeliveries([delivery(5, 'n1', { createdAt: 3000 })])
        expect(await deliveries.newestKey()).toBe(5)
        expect(deliveries.pendingStatsNow()).toEqual({ pending: 4, oldestCreatedAt: 3000 })
      })

      test('a channel’s pending events by next attempt then writing; its batches oldest first; those due before a time, and a pause written to them', async () => {
        const w = await world()
        const { notifications, deliveries } = w
        await notifications.create(channel('n1', 'one', { positions: true }), [], audit)
        await notifications.create(channel('n2', 'two'), [], audit)
        await w.addDeliveries([
          delivery(1, 'n1', { nextAttemptAt: 5000 }),
          delivery(2, 'n1', { nextAttemptAt: 2000 }),
          delivery(3, 'n1', { nextAttemptAt: 2000 }),
          delivery(4, 'n1', { nextAttemptAt: 1000, status: 'dead' }),
          delivery(5, 'n2', { nextAttemptAt: 1000 }),
          delivery(6, 'n1', { kind: 'positions', payload: '[1]', fixes: 1, nextAttemptAt: 9000 }),
          delivery(7, 'n1', { kind: 'positions', payload: '[2]', fixes: 1, nextAttemptAt: 1000 }),
          delivery(8, 'n1', { kind: 'test', nextAttemptAt: 1000 }),
        ])
        const keys = (rows: { key: number }[]) => rows.map((r) => r.key)
        expect(keys(await deliveries.pendingEvents('n1', 10))).toEqual([2, 3, 1])
        expect(keys(await deliveries.pendingEvents('n1', 2))).toEqual([2, 3])
        expect(await deliveries.pendingEvents('n1', 1)).toEqual([{ key: 2, id: 'd-2', notificationId: 'n1', kind: 'event', payload: '{"n":2}', attempts: 0, createdAt: 1000, nextAttemptAt: 2000, fixes: null }])
        expect(keys(await deliveries.pendingBatches('n1', 10))).toEqual([6, 7])
        expect((await deliveries.dueBefore('n1', 5000, 10)).sort()).toEqual([2, 3, 7])
        expect(await deliveries.dueBefore('n1', 5000, 1)).toHaveLength(1)
        await deliveries.holdUntil('n1', 5000)
        const next = Object.fromEntries((await w.allDeliveries()).map((r) => [r.key, r.nextAttemptAt]))
        expect(next).toEqual({ 1: 5000, 2: 5000, 3: 5000, 4: 1000, 5: 1000, 6: 9000, 7: 5000, 8: 1000 })
      })

      test('before a first attempt the oldest batch takes in those after it that fit; a head no longer the one named, or one already tried, is left as it is', async () => {
        const w = await world()
        const { notifications, deliveries } = w
        await notifications.create(channel('n1', 'one', { positions: true, events: '[]' }), [], audit)
        const batch = (key: number, fixes: number[], fields: Partial<NewDelivery> = {}) => delivery(key, 'n1', { kind: 'positions', payload: JSON.stringify(fixes), fixes: fixes.length, ...fields })
        await w.addDeliveries([batch(1, [1, 2]), batch(2, [3]), batch(3, [4, 5]), batch(4, [6, 7, 8])])
        expect(await deliveries.mergeBatches('n1', 2, 5)).toMatchObject({ key: 1, payload: '[1,2]', fixes: 2 })
        expect(await deliveries.mergeBatches('n1', 1, 5)).toEqual({ key: 1, id: 'd-1', notificationId: 'n1', kind: 'positions', payload: '[1,2,3,4,5]', attempts: 0, createdAt: 1000, nextAttemptAt: 1000, fixes: 5 })
        expect((await w.allDeliveries()).map((r) => [r.key, r.payload, r.fixes])).toEqual([
          [1, '[1,2,3,4,5]', 5],
          [4, '[6,7,8]', 3],
        ])
        expect(await deliveries.mergeBatches('n1', 1, 5)).toMatchObject({ key: 1, payload: '[1,2,3,4,5]', fixes: 5 })
      })

      test('an outcome is written while the delivery is pending: a retry, delivered, dead (a batch’s payload cleared); old finished ones are pruned in bounded steps', async () => {
        const w = await world()
        const { notifications, deliveries } = w
        await notifications.create(channel('n1', 'one', { positions: true }), [], audit)
        await w.addDeliveries([delivery(1, 'n1'), delivery(2, 'n1'), delivery(3, 'n1', { kind: 'positions', payload: '[1]', fixes: 1 }), delivery(4, 'n1', { createdAt: 5000 })])
        const outcome = { lastStatusCode: 500, lastError: 'HTTP 500', deliveredAt: null, clearPayload: false }
        await deliveries.settle(1, { ...outcome, status: 'pending', attempts: 1, nextAttemptAt: 11_000 })
        await deliveries.settle(2, { ...outcome, status: 'delivered', attempts: 1, lastStatusCode: 204, lastError: null, nextAttemptAt: null, deliveredAt: 2000 })
        await deliveries.settle(3, { ...outcome, status: 'dead', attempts: 1, nextAttemptAt: null, clearPayload: true })
        await deliveries.settle(2, { ...outcome, status: 'pending', attempts: 2, nextAttemptAt: 99_000 })
        // an attempt's outcome is written once: a second outcome of the first attempt writes nothing
        await deliveries.settle(1, { ...outcome, status: 'delivered', attempts: 1, lastStatusCode: 204, lastError: null, nextAttemptAt: null, deliveredAt: 3000 })
        const rows = await w.allDeliveries()
        expect(rows.map((r) => [r.key, r.status, r.attempts, r.lastStatusCode, r.lastError, r.nextAttemptAt, r.deliveredAt, r.payload, r.fixes])).toEqual([
          [1, 'pending', 1, 500, 'HTTP 500', 11_000, null, '{"n":1}', null],
          [2, 'delivered', 1, 204, null, null, 2000, '{"n":2}', null],
          [3, 'dead', 1, 500, 'HTTP 500', null, null, null, 1],
          [4, 'pending', 0, null, null, 1000, null, '{"n":4}', null],
        ])
        await w.addDeliveries([delivery(5, 'n1', { status: 'delivered', createdAt: 900 }), delivery(6, 'n1', { status: 'dead', createdAt: 6000 })])
        expect(await deliveries.prune(2000, 2)).toBe(2)
        expect(await deliveries.prune(2000, 2)).toBe(1)
        expect(await deliveries.prune(2000, 2)).toBe(0)
        expect((await w.allDeliveries()).map((r) => r.key)).toEqual([1, 4, 6])
      })

      test('a claim: the row as it is now, while still pending with the attempts read; none after it is settled or tried again', async () => {
        const w = await world()
        const { notifications, deliveries } = w
        await notifications.create(channel('n1', 'one'), [], audit)
        await w.addDeliveries([delivery(1, 'n1'), delivery(2, 'n1', { attempts: 2 })])
        const claimed = await deliveries.claim(1, 0)
        expect(claimed).toEqual({ key: 1, id: 'd-1', notificationId: 'n1', kind: 'event', payload: '{"n":1}', attempts: 0, createdAt: 1000, nextAttemptAt: 1000, fixes: null })
        await deliveries.settle(1, { status: 'pending', attempts: 1, lastStatusCode: 500, lastError: 'HTTP 500', nextAttemptAt: 11_000, deliveredAt: null, clearPayload: false })
        await deliveries.release(1)
        expect(await deliveries.claim(1, 0)).toBeNull()
        expect(await deliveries.claim(1, 1)).toMatchObject({ key: 1, attempts: 1, nextAttemptAt: 11_000 })
        await deliveries.release(1)
        expect(await deliveries.claim(2, 0)).toBeNull()
        expect(await deliveries.claim(99, 0)).toBeNull()
        await deliveries.release(99)
      })

      test('the delivery worker over the store: events retried then delivered with one id; batches of fixes joined before their first attempt, in order', async () => {
        const w = await world()
        const receiver = startReceiver(() => new Response(null, { status: 500 }))
        try {
          await w.notifications.create(channel('n1', 'events', { url: receiver.url, secret: null }), [], audit)
          await w.notifications.create(channel('n2', 'fixes', { url: receiver.url, secret: null, positions: true, events: '[]' }), [], audit)
          const batch = (key: number, fixes: number[]) => delivery(key, 'n2', { kind: 'positions', payload: JSON.stringify(fixes), fixes: fixes.length })
          await w.addDeliveries([delivery(1, 'n1'), batch(2, [1, 2]), batch(3, [3])])
          const clock = manualClock(5000)
          const worker = createDeliveryWorker({ store: w.deliveries, clock, log: silentLogger, allowPrivate: true })
          expect(await worker.deliverDue()).toBe(2)
          await w.addDeliveries([batch(4, [4])])
          receiver.answer(() => new Response(null, { status: 204 }))
          clock.advance(10_000)
          expect(await worker.deliverDue()).toBe(3)
          // the two channels' attempts run at once: each channel's in its order
          const sent = (type: string) => receiver.received.filter((r) => r.json.type === type).map((r) => [r.headers.get(DELIVERY_HEADER), r.json.positions ?? r.json.event])
          expect(sent('event')).toEqual([
            ['d-1', { n: 1 }],
            ['d-1', { n: 1 }],
          ])
          expect(sent('positions')).toEqual([
            ['d-2', [1, 2, 3]],
            ['d-2', [1, 2, 3]],
            ['d-4', [4]],
          ])
          expect((await w.allDeliveries()).map((r) => [r.key, r.status, r.attempts, r.payload, r.fixes])).toEqual([
            [1, 'delivered', 2, '{"n":1}', null],
            [2, 'delivered', 2, null, 3],
            [4, 'delivered', 1, null, 1],
          ])
          await worker.stop()
        } finally {
          receiver.stop()
        }
      })

      if (engine.name !== 'postgres') return

      describe('two nodes on one PostgreSQL', () => {
        test('taking due deliveries at once, they never take the same one, and together take each', async () => {
          const w = await world()
          await w.notifications.create(channel('n1', 'one'), [], audit)
          const keys = Array.from({ length: 40 }, (_, i) => i + 1)
          await w.addDeliveries(keys.map((key) => delivery(key, 'n1')))
          const handle = (w.opened as Extract<Opened, { engine: 'postgres' }>).handle
          const nodes = [w.deliveries, createPostgresDeliveryStore(await anotherNode(handle))]
          const taken = await Promise.all(
            nodes.map(async (node) => {
              const rows = await node.pendingEvents('n1', 100)
              const claims = await Promise.all(rows.map((row) => node.claim(row.key, row.attempts)))
              return claims.filter((c) => c !== null).map((c) => c!.key)
            }),
          )
          expect(taken[0]!.filter((key) => taken[1]!.includes(key))).toEqual([])
          expect([...taken[0]!, ...taken[1]!].sort((x, y) => x - y)).toEqual(keys)
          // until given back, the other node cannot take one; after, it can
          const holder = taken[0]!.length > 0 ? 0 : 1
          const [held, other] = [nodes[holder]!, nodes[1 - holder]!]
          const key = taken[holder]![0]!
          expect(await other.claim(key, 0)).toBeNull()
          await held.release(key)
          expect(await other.claim(key, 0)).toMatchObject({ key })
          await other.release(key)
          for (const [i, keys] of taken.entries()) for (const key of keys) await nodes[i]!.release(key)
        })

        test('a node whose connection closes mid-attempt leaves the delivery to another; its late outcome does not write over the other’s', async () => {
          const w = await world()
          await w.notifications.create(channel('n1', 'one'), [], audit)
          await w.addDeliveries([delivery(1, 'n1')])
          const handle = (w.opened as Extract<Opened, { engine: 'postgres' }>).handle
          const dying = await anotherNode(handle)
          const nodeA = createPostgresDeliveryStore(dying)
          const nodeB = w.deliveries
          expect(await nodeA.claim(1, 0)).toMatchObject({ key: 1 })
          expect(await nodeB.claim(1, 0)).toBeNull()
          const [holder] = await handle.sql<{ pid: number }[]>`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = ${DELIVERY_LOCKS} AND objid = 1`
          // closing waits for the attempt's claim (5 s at most), then cuts the connection, as a node's death does;
          // the server ends that session a moment later
          await dying.close()
          for (let i = 0; i < 200; i++) {
            const [left] = await handle.sql`SELECT 1 FROM pg_stat_activity WHERE pid = ${holder!.pid}`
            if (!left) break
            await Bun.sleep(10)
          }
          expect(await nodeB.claim(1, 0)).toMatchObject({ key: 1, attempts: 0 })
          await nodeB.settle(1, { status: 'delivered', attempts: 1, lastStatusCode: 204, lastError: null, nextAttemptAt: null, deliveredAt: 3000, clearPayload: false })
          await nodeB.release(1)
          // node A's attempt, made with the same delivery id, ends late through a new connection
          const back = createPostgresDeliveryStore(await anotherNode(handle))
          await back.settle(1, { status: 'pending', attempts: 1, lastStatusCode: null, lastError: 'timeout', nextAttemptAt: 20_000, deliveredAt: null, clearPayload: false })
          expect((await w.allDeliveries()).map((r) => [r.id, r.status, r.attempts, r.lastStatusCode])).toEqual([['d-1', 'delivered', 1, 204]])
        }, 20_000)

        test('a row committed after a higher key was seen still tells its channel to be read', async () => {
          const w = await world()
          await w.notifications.create(channel('n1', 'one'), [], audit)
          await w.notifications.create(channel('n2', 'two'), [], audit)
          const handle = (w.opened as Extract<Opened, { engine: 'postgres' }>).handle
          const other = await anotherNode(handle)
          let commit = () => {}
          const committed = new Promise<void>((resolve) => (commit = resolve))
          let written = () => {}
          const inserted = new Promise<void>((resolve) => (written = resolve))
          // node B's transaction draws key 1 and commits after node A's key 2
          const slow = other.db.transaction(async (tx) => {
            await tx.insert(pg.notificationDeliveries).values(delivery(1, 'n1'))
            written()
            await committed
          })
          await inserted
          await w.addDeliveries([delivery(2, 'n2')])
          const seen = await w.deliveries.newestKey()
          expect(seen).toBe(2)
          expect(await w.deliveries.channelsWrittenAfter(seen)).toEqual([])
          commit()
          await slow
          expect(await w.deliveries.channelsWrittenAfter(seen)).toEqual(['n1'])
          // the next look sees it: nothing new after that
          expect(await w.deliveries.newestKey()).toBe(2)
          expect(await w.deliveries.channelsWrittenAfter(2)).toEqual([])
        })

        test('two nodes’ delivery workers at once send each delivery once, with its one id', async () => {
          const w = await world()
          const receiver = startReceiver()
          try {
            await w.notifications.create(channel('n1', 'one', { url: receiver.url, secret: null }), [], audit)
            await w.notifications.create(channel('n2', 'two', { url: receiver.url, secret: null }), [], audit)
            const keys = Array.from({ length: 24 }, (_, i) => i + 1)
            await w.addDeliveries(keys.map((key) => delivery(key, key % 2 ? 'n1' : 'n2')))
            const handle = (w.opened as Extract<Opened, { engine: 'postgres' }>).handle
            const clock = manualClock(5000)
            const workers = [w.deliveries, createPostgresDeliveryStore(await anotherNode(handle))].map((store) => createDeliveryWorker({ store, clock, log: silentLogger, allowPrivate: true }))
            const attempts = await Promise.all(workers.map((worker) => worker.deliverDue()))
            const ids = receiver.received.map((r) => r.headers.get(DELIVERY_HEADER))
            expect(ids.sort()).toEqual(keys.map((key) => `d-${key}`).sort())
            expect(attempts[0]! + attempts[1]!).toBeGreaterThanOrEqual(keys.length)
            expect(new Set((await w.allDeliveries()).map((r) => `${r.status}/${r.attempts}`))).toEqual(new Set(['delivered/1']))
            await Promise.all(workers.map((worker) => worker.stop()))
          } finally {
            receiver.stop()
          }
        })

        test('a worker leaves a delivery another node has under way for an attempt’s length, then takes it', async () => {
          const w = await world()
          const receiver = startReceiver()
          try {
            await w.notifications.create(channel('n1', 'one', { url: receiver.url, secret: null }), [], audit)
            await w.addDeliveries([delivery(1, 'n1'), delivery(2, 'n1')])
            const handle = (w.opened as Extract<Opened, { engine: 'postgres' }>).handle
            const elsewhere = createPostgresDeliveryStore(await anotherNode(handle))
            expect(await elsewhere.claim(1, 0)).toMatchObject({ key: 1 })
            const clock = manualClock(5000)
            const worker = createDeliveryWorker({ store: w.deliveries, clock, log: silentLogger, allowPrivate: true, timeoutMs: 2000 })
            await worker.deliverDue()
            expect(receiver.received.map((r) => r.headers.get(DELIVERY_HEADER))).toEqual(['d-2'])
            await elsewhere.release(1)
            await worker.deliverDue()
            expect(receiver.received).toHaveLength(1)
            clock.advance(2000)
            await worker.deliverDue()
            expect(receiver.received.map((r) => r.headers.get(DELIVERY_HEADER))).toEqual(['d-2', 'd-1'])
            await worker.stop()
          } finally {
            receiver.stop()
          }
        })

        test('a node with a pool of one connection claims, settles and gives back', async () => {
          const w = await world()
          await w.notifications.create(channel('n1', 'one'), [], audit)
          await w.addDeliveries([delivery(1, 'n1')])
          const url = new URL(process.env.TEST_DATABASE_URL!)
          const [row] = await (w.opened as Extract<Opened, { engine: 'postgres' }>).handle.sql<{ name: string }[]>`SELECT current_database() AS name`
          url.pathname = `/${row!.name}`
          const small = await openPostgres(url.toString(), { poolSize: 1, migrate: false })
          others.push(small)
          const node = createPostgresDeliveryStore(small)
          expect(await node.claim(1, 0)).toMatchObject({ key: 1 })
          await node.settle(1, { status: 'delivered', attempts: 1, lastStatusCode: 204, lastError: null, nextAttemptAt: null, deliveredAt: 3000, clearPayload: false })
          await node.release(1)
          expect((await w.allDeliveries()).map((r) => [r.status, r.attempts])).toEqual([['delivered', 1]])
          expect(await node.pendingStats()).toEqual({ pending: 0, oldestCreatedAt: null })
        })

        test('a batch another node is sending is not merged into', async () => {
          const w = await world()
          await w.notifications.create(channel('n1', 'one', { positions: true, events: '[]' }), [], audit)
          const batch = (key: number, fixes: number[]) => delivery(key, 'n1', { kind: 'positions', payload: JSON.stringify(fixes), fixes: fixes.length })
          await w.addDeliveries([batch(1, [1]), batch(2, [2])])
          const handle = (w.opened as Extract<Opened, { engine: 'postgres' }>).handle
          const other = createPostgresDeliveryStore(await anotherNode(handle))
          expect(await other.claim(1, 0)).toMatchObject({ key: 1, payload: '[1]' })
          expect(await w.deliveries.mergeBatches('n1', 1, 500)).toMatchObject({ key: 1, payload: '[1]', fixes: 1 })
          await other.release(1)
          expect(await w.deliveries.mergeBatches('n1', 1, 500)).toMatchObject({ key: 1, payload: '[1,2]', fixes: 2 })
          expect((await w.allDeliveries()).map((r) => r.key)).toEqual([1])
        })
      })
    })
  })
}
