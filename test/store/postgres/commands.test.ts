/**
 * The command store on both engines: the same queue, statuses, expiry sweep, answers and
 * re-sends from the SQLite adapter and the PostgreSQL one, each final step with its event.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { manualClock } from '../../../src/clock'
import { type CommandStore, createCommandStore, type NewStoredCommand, type StoredCommand } from '../../../src/store/commands'
import { createEventReads, type EventReads } from '../../../src/store/events'
import { createPostgresCommandStore } from '../../../src/store/postgres/commands'
import { createPostgresEventReads } from '../../../src/store/postgres/events'
import { insertRows, selectRows } from './rows'
import { engines, type Opened } from './support'

const NOW = Date.UTC(2026, 10, 25, 12)
const DAY = 86_400_000

for (const engine of engines('the command store on PostgreSQL')) {
  describe(`the command store on ${engine.name}`, () => {
    let opened: Opened | null = null
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    /** account a with devices 1 and 2 */
    async function world(): Promise<{ opened: Opened; store: CommandStore; events: EventReads }> {
      opened = await engine.open()
      await insertRows(opened, 'accounts', [{ id: 'a', name: 'Acme' }])
      await insertRows(
        opened,
        'devices',
        [1, 2].map((key) => ({ key, id: `d${key}`, accountId: 'a', alias: `Van ${key}`, serial: `s${key}`, imei: `35000000000000${key}` })),
      )
      if (opened.engine === 'sqlite') return { opened, store: createCommandStore(opened.handle, { clock: manualClock(NOW) }), events: createEventReads(opened.handle) }
      return { opened, store: createPostgresCommandStore(opened.handle), events: createPostgresEventReads(opened.handle) }
    }

    const command = (id: string, over: Partial<NewStoredCommand> = {}): NewStoredCommand => ({
      id,
      deviceKey: 1,
      commandId: 'c-reboot',
      name: 'Reboot',
      text: `reboot ${id}`,
      payload: JSON.stringify({ text: `reboot ${id}`, secrets: [] }),
      userId: 'u1',
      createdAt: NOW,
      expiresAt: NOW + DAY,
      ...over,
    })

    const idsOf = (rows: StoredCommand[]) => rows.map((r) => r.id)

    /** the device's events of the day, as stored: code, second, context and seq */
    async function eventsOf(o: Opened, deviceKey: number) {
      return selectRows<{ alarm_code: string; ts: number; context: string; seq: number; latitude: number | null }>(
        o,
        sql`SELECT alarm_code, ts, context, seq, latitude FROM events WHERE device = ${deviceKey} ORDER BY id`,
      ).then((rows) => rows.map((r) => ({ ...r, ts: Number(r.ts), context: JSON.parse(r.context) })))
    }

    test('commands are stored queued; a device’s page newest first, its open ones oldest first', async () => {
      const { store } = await world()
      const first = await store.insert(command('c1'))
      expect(first).toEqual({
        ...command('c1'),
        key: first.key,
        status: 'queued',
        sentAt: null,
        answeredAt: null,
        response: null,
        attempts: 0,
        resendDue: false,
      })
      await store.insert(command('c2'))
      await store.insert(command('c3'))
      await store.insert(command('c4', { deviceKey: 2 }))
      expect(idsOf(await store.page(1, { limit: 10, offset: 0 }))).toEqual(['c3', 'c2', 'c1'])
      expect(idsOf(await store.page(1, { limit: 2, offset: 1 }))).toEqual(['c2', 'c1'])
      expect(await store.page(3, { limit: 10, offset: 0 })).toEqual([])
      expect(await store.byId('c1')).toEqual(first)
      expect(await store.byId('nope')).toBeNull()

      await store.markSent('c1', NOW + 1)
      expect(await store.cancel(1, 'c2')).toEqual({ cancelled: true, status: 'cancelled' })
      expect(idsOf(await store.open(1))).toEqual(['c1', 'c3'])
      expect(idsOf(await store.open(2))).toEqual(['c4'])
    })

    test('sending: once while queued (however many send it at once), again only when a reconnection made it due; never past its expiry', async () => {
      const { store } = await world()
      await store.insert(command('c1'))
      await store.insert(command('c2', { expiresAt: NOW + 10 }))
      await store.insert(command('c3', { deviceKey: 2 }))
      expect(await store.markSent('c1', NOW + 5)).toEqual({ deviceKey: 1, attempts: 1 })
      expect(await store.byId('c1')).toMatchObject({ status: 'sent', sentAt: NOW + 5, attempts: 1, resendDue: false })
      expect(await store.markSent('c1', NOW + 6)).toBeNull()
      expect(await store.markSent('c2', NOW + 10)).toBeNull()
      expect(await store.byId('c2')).toMatchObject({ status: 'queued', attempts: 0 })
      expect(await store.markSent('nope', NOW)).toBeNull()
      await store.markSent('c3', NOW + 7)

      // sent in (after, upTo], not due to be re-sent
      expect((await store.sentBetween(NOW, NOW + 7)).sort()).toEqual([1, 2])
      expect(await store.sentBetween(NOW + 5, NOW + 7)).toEqual([2])
      expect(await store.sentBetween(NOW + 7, NOW + 100)).toEqual([])

      const c1 = (await store.byId('c1'))!
      expect(await store.reconnect([c1.key], [], NOW + 20)).toEqual([])
      expect(await store.byId('c1')).toMatchObject({ status: 'sent', resendDue: true })
      expect(await store.sentBetween(NOW, NOW + 7)).toEqual([2])
      expect(await store.markSent('c1', NOW + 21)).toEqual({ deviceKey: 1, attempts: 2 })
      expect(await store.byId('c1')).toMatchObject({ status: 'sent', sentAt: NOW + 21, attempts: 2, resendDue: false })

      // two nodes sending one command at once: it goes out once
      const sends = await Promise.all([store.markSent('c2', NOW + 1), store.markSent('c2', NOW + 1), store.markSent('c2', NOW + 1)])
      expect(sends.filter((sent) => sent !== null)).toEqual([{ deviceKey: 1, attempts: 1 }])
    })

    test('a cancel takes a queued command only, of its own device', async () => {
      const { opened: o, store } = await world()
      await store.insert(command('c1'))
      await store.insert(command('c2'))
      await store.markSent('c2', NOW)
      expect(await store.cancel(2, 'c1')).toBeNull()
      expect(await store.cancel(1, 'nope')).toBeNull()
      expect(await store.cancel(1, 'c2')).toEqual({ cancelled: false, status: 'sent' })
      expect(await store.cancel(1, 'c1')).toEqual({ cancelled: true, status: 'cancelled' })
      expect(await store.byId('c1')).toMatchObject({ status: 'cancelled', payload: null })
      expect(await store.cancel(1, 'c1')).toEqual({ cancelled: false, status: 'cancelled' })
      // cancelling writes no event
      expect(await eventsOf(o, 1)).toEqual([])
    })

    test('the expiry sweep: open commands past expiry, oldest first; each lapses with its event, two in one second both kept', async () => {
      const { opened: o, store, events } = await world()
      await store.insert(command('c1', { expiresAt: NOW + 1000 }))
      await store.insert(command('c2', { expiresAt: NOW + 500 }))
      await store.insert(command('c3', { expiresAt: NOW + 2000 }))
      await store.insert(command('c4', { expiresAt: NOW + 900 }))
      await store.markSent('c2', NOW)
      await store.cancel(1, 'c4')
      expect(idsOf(await store.pastExpiry(NOW + 1000))).toEqual(['c1', 'c2'])
      expect(await store.pastExpiry(NOW + 499)).toEqual([])

      const [c1, c2] = await store.pastExpiry(NOW + 1000)
      // both lapse in one second (the sweep's time): each its own code
      const changes = await store.lapse([
        { row: c1!, status: 'expired', atMs: NOW + 1000 },
        { row: c2!, status: 'failed', atMs: NOW + 1400 },
      ])
      expect(changes).toEqual([
        { deviceKey: 1, id: 'c1', code: 'command_expired', second: (NOW + 1000) / 1000, context: { id: 'c1', command: 'c-reboot', name: 'Reboot' } },
        { deviceKey: 1, id: 'c2', code: 'command_failed', second: (NOW + 1000) / 1000, context: { id: 'c2', command: 'c-reboot', name: 'Reboot' } },
      ])
      expect(await store.byId('c1')).toMatchObject({ status: 'expired', payload: null })
      expect(await store.byId('c2')).toMatchObject({ status: 'failed', payload: null })
      expect(idsOf(await store.pastExpiry(NOW + DAY))).toEqual(['c3'])

      // a row the sweep saw that changed meanwhile (answered, cancelled): nothing written
      const c3 = (await store.byId('c3'))!
      await store.cancel(1, 'c3')
      expect(await store.lapse([{ row: c3, status: 'expired', atMs: NOW + 2000 }])).toEqual([])
      expect(await store.byId('c3')).toMatchObject({ status: 'cancelled' })
      expect(await store.lapse([])).toEqual([])

      // a third of one code in one second takes the next seq
      await store.insert(command('c5', { expiresAt: NOW + 100 }))
      await store.insert(command('c6', { expiresAt: NOW + 100 }))
      const due = await store.pastExpiry(NOW + 1000)
      await store.lapse(due.map((row) => ({ row, status: 'expired' as const, atMs: NOW + 1000 })))
      expect(await eventsOf(o, 1)).toEqual([
        { alarm_code: 'command_expired', ts: (NOW + 1000) / 1000, context: { id: 'c1', command: 'c-reboot', name: 'Reboot' }, seq: 1, latitude: null },
        { alarm_code: 'command_failed', ts: (NOW + 1000) / 1000, context: { id: 'c2', command: 'c-reboot', name: 'Reboot' }, seq: 1, latitude: null },
        { alarm_code: 'command_expired', ts: (NOW + 1000) / 1000, context: { id: 'c5', command: 'c-reboot', name: 'Reboot' }, seq: 2, latitude: null },
        { alarm_code: 'command_expired', ts: (NOW + 1000) / 1000, context: { id: 'c6', command: 'c-reboot', name: 'Reboot' }, seq: 3, latitude: null },
      ])
      // the history reads show them, oldest first
      const second = (NOW + 1000) / 1000
      expect((await events.ofDevice(1, second, second)).map((e) => e.alarm_code)).toEqual(['command_expired', 'command_failed', 'command_expired', 'command_expired'])
    })

    test('an answer completes the named command, or the oldest sent one, once; a failure only an open one', async () => {
      const { opened: o, store } = await world()
      await store.insert(command('c1'))
      await store.insert(command('c2'))
      await store.insert(command('c3'))
      await store.insert(command('c9', { deviceKey: 2 }))
      // not sent yet: nothing to answer
      expect(await store.answer(1, undefined, NOW + 1, () => 'ok')).toBeNull()
      await store.markSent('c1', NOW)
      await store.markSent('c2', NOW)
      await store.markSent('c9', NOW)

      const seen: string[] = []
      const answered = await store.answer(1, undefined, NOW + 2500, (row) => {
        seen.push(row.id)
        return `answer to ${row.text}`
      })
      expect(seen).toEqual(['c1'])
      const c1 = (await store.byId('c1'))!
      expect(answered).toEqual({
        change: { deviceKey: 1, id: 'c1', code: 'command_answered', second: Math.floor((NOW + 2500) / 1000), context: { id: 'c1', command: 'c-reboot', name: 'Reboot' } },
        row: c1,
      })
      expect(c1).toMatchObject({ status: 'answered', answeredAt: NOW + 2500, response: 'answer to reboot c1', payload: null, resendDue: false })

      // by id: another device's is not this device's; a queued one is not answered
      expect(await store.answer(1, 'c9', NOW + 3000, () => 'x')).toBeNull()
      expect(await store.answer(1, 'c3', NOW + 3000, () => 'x')).toBeNull()
      expect(await store.answer(1, 'nope', NOW + 3000, () => 'x')).toBeNull()
      // two answers at once (two nodes): recorded once
      const both = await Promise.all([store.answer(1, 'c2', NOW + 4000, () => 'first'), store.answer(1, 'c2', NOW + 4000, () => 'second')])
      expect(both.filter((a) => a !== null)).toHaveLength(1)
      expect(await store.answer(1, 'c2', NOW + 5000, () => 'late')).toBeNull()

      expect(await store.fail('c2', NOW + 6000)).toBeNull()
      expect(await store.fail('nope', NOW + 6000)).toBeNull()
      expect(await store.fail('c3', NOW + 6000)).toEqual({ deviceKey: 1, id: 'c3', code: 'command_failed', second: (NOW + 6000) / 1000, context: { id: 'c3', command: 'c-reboot', name: 'Reboot' } })
      expect(await store.byId('c3')).toMatchObject({ status: 'failed', payload: null })
      expect((await eventsOf(o, 1)).map((e) => [e.alarm_code, e.context.id])).toEqual([
        ['command_answered', 'c1'],
        ['command_answered', 'c2'],
        ['command_failed', 'c3'],
      ])
    })

    test('a reconnection re-sends the sent and fails the twice-missed, in one unit of work', async () => {
      const { opened: o, store } = await world()
      await store.insert(command('c1'))
      await store.insert(command('c2'))
      await store.markSent('c1', NOW)
      await store.markSent('c2', NOW)
      const [c1, c2] = await store.open(1)
      const changes = await store.reconnect([c1!.key], [c2!], NOW + 9000)
      expect(changes).toEqual([{ deviceKey: 1, id: 'c2', code: 'command_failed', second: (NOW + 9000) / 1000, context: { id: 'c2', command: 'c-reboot', name: 'Reboot' } }])
      expect(await store.byId('c1')).toMatchObject({ status: 'sent', resendDue: true })
      expect(await store.byId('c2')).toMatchObject({ status: 'failed', payload: null })
      // the same again: c2 has left `sent`, nothing more is written
      expect(await store.reconnect([], [c2!], NOW + 9500)).toEqual([])
      expect(await store.reconnect([], [], NOW + 9500)).toEqual([])
      expect((await eventsOf(o, 1)).map((e) => e.alarm_code)).toEqual(['command_failed'])
    })
  })
}
