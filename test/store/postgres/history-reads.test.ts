/**
 * The history and events API's reads on both engines: windows of fixes (a route, the newest
 * valid fix, ranges across a month, which on PostgreSQL is across partitions) and events (a
 * device's, and many devices' newest first, paged and filtered), the same answers from the
 * SQLite adapters and the PostgreSQL ones. The events writers run here too: a re-sent alarm is
 * stored once, a derived event takes the next seq of its second.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ensurePartitions } from '../../../db/postgres/partitions'
import { createEventReads, createEventStore, type EncodedEvent, encodeEvent, type EventReads, type EventToStore } from '../../../src/store/events'
import { appendEventInTransaction, createPostgresEventReads, insertEventInTransaction } from '../../../src/store/postgres/events'
import { createPostgresPositionReads } from '../../../src/store/postgres/positions'
import { createPositionReads, encodePosition, type FixToStore, type PositionReads } from '../../../src/store/positions'
import { insertRows, selectRows } from './rows'
import { engines, type Opened } from './support'

/** the last minute of October 2026 and the first of November (UTC, Unix s): two partitions on PostgreSQL */
const MONTH_END = Date.UTC(2026, 10, 1) / 1000

interface World {
  opened: Opened
  positions: PositionReads
  events: EventReads
  /** writes the fixes as ingest would (encoded; partitions made first on PostgreSQL) */
  fixes(deviceKey: number, fixes: (FixToStore & { locatable?: boolean })[]): Promise<void>
  /** a device's alarm (seq 0): stored once however often it is re-sent; whether it was written */
  alarm(deviceKey: number, event: EncodedEvent): Promise<boolean>
  /** an event the server derived: the next seq of its second */
  derived(deviceKey: number, event: EncodedEvent): Promise<void>
}

const event = (timestamp: number, alarmCode: string, over: Partial<EventToStore> = {}): EncodedEvent =>
  encodeEvent({ timestamp, alarmCode, latitude: 48.5, longitude: 2.25, speed: 31.4, satellites: 7, mcc: 208, mnc: 1, dbm: -70, context: { n: timestamp - MONTH_END }, ...over }, true)

for (const engine of engines('the history reads on PostgreSQL')) {
  describe(`the history reads on ${engine.name}`, () => {
    let opened: Opened | null = null
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    async function world(): Promise<World> {
      opened = await engine.open()
      const o = opened
      await insertRows(o, 'accounts', [{ id: 'a', name: 'Acme' }])
      await insertRows(
        o,
        'devices',
        [1, 2, 3].map((key) => ({ key, id: `d${key}`, accountId: 'a', alias: `Van ${key}`, serial: `s${key}`, imei: `35000000000000${key}` })),
      )
      const rowsOf = (deviceKey: number, fixes: (FixToStore & { locatable?: boolean })[]) =>
        fixes.map(({ locatable = true, ...fix }) => ({ device: deviceKey, ...encodePosition(fix, locatable) }))
      if (o.engine === 'sqlite') {
        const store = createEventStore(o.handle.db)
        return {
          opened: o,
          positions: createPositionReads(o.handle),
          events: createEventReads(o.handle),
          fixes: (deviceKey, fixes) => insertRows(o, 'positions', rowsOf(deviceKey, fixes)),
          alarm: async (deviceKey, row) => store.insert(deviceKey, row),
          derived: async (deviceKey, row) => store.append(deviceKey, row),
        }
      }
      const handle = o.handle
      return {
        opened: o,
        positions: createPostgresPositionReads(handle),
        events: createPostgresEventReads(handle),
        fixes: async (deviceKey, fixes) => {
          await ensurePartitions(handle.sql, fixes.map((f) => f.timestamp))
          await insertRows(o, 'positions', rowsOf(deviceKey, fixes))
        },
        alarm: (deviceKey, row) => insertEventInTransaction(handle.db, deviceKey, row),
        derived: (deviceKey, row) => handle.db.transaction((tx) => appendEventInTransaction(tx, deviceKey, row)),
      }
    }

    test('a window of fixes across a month’s end: oldest first, both ends inclusive, bounded, counted', async () => {
      const w = await world()
      await w.fixes(1, [
        { timestamp: MONTH_END - 60, latitude: 48.1, longitude: 2.1, speed: 10.04, course: 90, altitude: 35, satellites: 9 },
        { timestamp: MONTH_END - 1, latitude: 48.2, longitude: 2.2, speed: null },
        { timestamp: MONTH_END, latitude: 48.3, longitude: 2.3, speed: 0 },
        { timestamp: MONTH_END + 30, latitude: 0, longitude: 0, locatable: false },
        { timestamp: MONTH_END + 59, latitude: -33.8688197, longitude: 151.2092955, speed: 120.5 },
      ])
      await w.fixes(2, [{ timestamp: MONTH_END - 30, latitude: 50, longitude: 3 }])

      expect(await w.positions.fixesIn(1, MONTH_END - 60, MONTH_END + 59, 100)).toEqual([
        [MONTH_END - 60, 481000000, 21000000, 100, 0],
        [MONTH_END - 1, 482000000, 22000000, null, 0],
        [MONTH_END, 483000000, 23000000, 0, 0],
        [MONTH_END + 30, 0, 0, null, 1],
        [MONTH_END + 59, -338688197, 1512092955, 1205, 0],
      ])
      expect((await w.positions.fixesIn(1, MONTH_END - 1, MONTH_END + 30, 100)).map((f) => f[0])).toEqual([MONTH_END - 1, MONTH_END, MONTH_END + 30])
      expect((await w.positions.fixesIn(1, MONTH_END - 60, MONTH_END + 59, 2)).map((f) => f[0])).toEqual([MONTH_END - 60, MONTH_END - 1])
      expect(await w.positions.fixesIn(1, MONTH_END + 60, MONTH_END + 3600, 100)).toEqual([])
      expect(await w.positions.fixesIn(3, MONTH_END - 60, MONTH_END + 59, 100)).toEqual([])

      expect(await w.positions.countIn(1, MONTH_END - 60, MONTH_END + 59)).toBe(5)
      expect(await w.positions.countIn(1, MONTH_END - 59, MONTH_END)).toBe(2)
      expect(await w.positions.countIn(2, MONTH_END - 60, MONTH_END + 59)).toBe(1)
      expect(await w.positions.countIn(3, 0, MONTH_END * 2)).toBe(0)
    })

    test('the newest valid fix: never a flagged one, found in an earlier month when the newest has none', async () => {
      const w = await world()
      await w.fixes(1, [
        { timestamp: MONTH_END - 10, latitude: 48.1, longitude: 2.1, speed: 10.04, course: 271 },
        { timestamp: MONTH_END + 10, latitude: 48.2, longitude: 2.2, speed: 55.55, course: 12.4 },
        { timestamp: MONTH_END + 20, latitude: 0, longitude: 0, locatable: false },
      ])
      await w.fixes(2, [
        { timestamp: MONTH_END - 10, latitude: 50.5, longitude: -1.25 },
        { timestamp: MONTH_END + 5, latitude: 0, longitude: 0, locatable: false },
      ])
      expect(await w.positions.newestValid(1)).toEqual({ timestamp: MONTH_END + 10, latitude: 48.2, longitude: 2.2, speed: 55.6, course: 12 })
      expect(await w.positions.newestValid(2)).toEqual({ timestamp: MONTH_END - 10, latitude: 50.5, longitude: -1.25, speed: null, course: null })
      expect(await w.positions.newestValid(3)).toBeNull()
    })

    test('a device’s events in a window, oldest first; a re-sent alarm stored once, derived events numbered in their second', async () => {
      const w = await world()
      expect(await w.alarm(1, event(MONTH_END - 5, 'sos'))).toBe(true)
      expect(await w.alarm(1, event(MONTH_END - 5, 'sos', { speed: 99 }))).toBe(false)
      await w.derived(1, event(MONTH_END, 'geofence_enter', { context: { geofence: 'g1' } }))
      await w.derived(1, event(MONTH_END, 'geofence_enter', { context: { geofence: 'g2' } }))
      await w.derived(1, event(MONTH_END, 'geofence_enter', { context: { geofence: 'g3' } }))
      expect(await w.alarm(1, event(MONTH_END, 'geofence_enter'))).toBe(true)
      await w.alarm(1, event(MONTH_END - 10, 'power_cut', { latitude: 0, longitude: 0 }))
      await w.alarm(2, event(MONTH_END, 'sos'))

      const stored = await w.events.ofDevice(1, MONTH_END - 10, MONTH_END)
      expect(stored.map((e) => [e.ts, e.alarm_code, JSON.parse(e.context)])).toEqual([
        [MONTH_END - 10, 'power_cut', { n: -10 }],
        [MONTH_END - 5, 'sos', { n: -5 }],
        [MONTH_END, 'geofence_enter', { geofence: 'g1' }],
        [MONTH_END, 'geofence_enter', { geofence: 'g2' }],
        [MONTH_END, 'geofence_enter', { geofence: 'g3' }],
        [MONTH_END, 'geofence_enter', { n: 0 }],
      ])
      // the first as it was sent, not its re-sending
      expect(stored[1]).toEqual({
        id: stored[1]!.id,
        device: 1,
        ts: MONTH_END - 5,
        alarm_code: 'sos',
        context: '{"n":-5}',
        speed: 31,
        satellite: 7,
        latitude: 48.5,
        longitude: 2.25,
        mcc: 208,
        mnc: 1,
        dbm: -70,
      })
      expect((await w.events.ofDevice(1, MONTH_END - 9, MONTH_END - 1)).map((e) => e.alarm_code)).toEqual(['sos'])
      expect(await w.events.ofDevice(3, 0, MONTH_END * 2)).toEqual([])
      const seqs = await selectRows<{ seq: number }>(w.opened, sql`SELECT seq FROM events WHERE device = 1 AND alarm_code = 'geofence_enter' ORDER BY id`)
      expect(seqs.map((r) => r.seq)).toEqual([1, 2, 3, 0])
    })

    test('derived events of one code and second written at once (several nodes) are all kept, each its own seq', async () => {
      const w = await world()
      // the reads first open every connection of the pool, so that the writes do run at once
      await Promise.all([1, 2, 3, 4].map(() => w.positions.countIn(1, 0, 1)))
      await Promise.all([1, 2, 3, 4].map((n) => w.derived(1, event(MONTH_END, 'offline', { context: { n } }))))
      const rows = await selectRows<{ seq: number; context: string }>(w.opened, sql`SELECT seq, context FROM events WHERE device = 1 ORDER BY seq`)
      expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4])
      expect(rows.map((r) => JSON.parse(r.context).n).sort()).toEqual([1, 2, 3, 4])
    })

    test('many devices’ events newest first: a stable order from page to page, a window, one code', async () => {
      const w = await world()
      // interleaved devices, two events in one second
      await w.alarm(1, event(MONTH_END - 20, 'sos'))
      await w.alarm(2, event(MONTH_END - 10, 'overspeed'))
      await w.alarm(3, event(MONTH_END - 5, 'sos'))
      await w.alarm(1, event(MONTH_END, 'overspeed'))
      await w.alarm(2, event(MONTH_END, 'sos'))
      await w.alarm(1, event(MONTH_END + 7, 'sos'))
      const window = { from: MONTH_END - 20, to: MONTH_END + 7, limit: 10, offset: 0 }
      const label = (rows: { device: number; ts: number; alarm_code: string }[]) => rows.map((e) => `${e.device}:${e.ts - MONTH_END}:${e.alarm_code}`)

      const all = await w.events.newestFirst([1, 2], window)
      expect(label(all)).toEqual(['1:7:sos', '2:0:sos', '1:0:overspeed', '2:-10:overspeed', '1:-20:sos'])
      const pages = [...(await w.events.newestFirst([1, 2], { ...window, limit: 2 })), ...(await w.events.newestFirst([1, 2], { ...window, limit: 2, offset: 2 })), ...(await w.events.newestFirst([1, 2], { ...window, limit: 2, offset: 4 }))]
      expect(pages).toEqual(all)
      expect(label(await w.events.newestFirst([1, 2, 3], { ...window, from: MONTH_END - 10, to: MONTH_END }))).toEqual(['2:0:sos', '1:0:overspeed', '3:-5:sos', '2:-10:overspeed'])
      expect(label(await w.events.newestFirst([1, 2, 3], { ...window, alarmCode: 'sos' }))).toEqual(['1:7:sos', '2:0:sos', '3:-5:sos', '1:-20:sos'])
      expect(label(await w.events.newestFirst([3], { ...window, alarmCode: null }))).toEqual(['3:-5:sos'])
      expect(await w.events.newestFirst([1, 2, 3], { ...window, alarmCode: 'unknown' })).toEqual([])
      expect(await w.events.newestFirst([], window)).toEqual([])
      // a fleet larger than one statement binds parameters
      const many = Array.from({ length: 70_000 }, (_, i) => i + 1)
      expect(await w.events.newestFirst(many, { ...window, limit: 1 })).toEqual([all[0]!])
    })
  })
}
