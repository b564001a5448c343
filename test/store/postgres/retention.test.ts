/**
 * The retention store on both engines, driven by RETENTION_DAYS' passes (src/ops/retention.ts):
 * the same rows go and stay. On PostgreSQL a month partition entirely older than the cutoff is
 * dropped whole, and only the partition straddling the cutoff loses rows one batch at a time.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { asc, sql } from 'drizzle-orm'
import { ensurePartitions, existingPartitions } from '../../../db/postgres/partitions'
import * as pg from '../../../db/postgres/schema'
import * as lite from '../../../db/schema'
import { manualClock } from '../../../src/clock'
import { silentLogger } from '../../../src/log'
import { startRetention } from '../../../src/ops/retention'
import { createMaintenanceStore, type MaintenanceStore } from '../../../src/store/maintenance'
import { createPostgresMaintenanceStore } from '../../../src/store/postgres/maintenance'
import { createPostgresRetentionStore } from '../../../src/store/postgres/retention'
import { createRetentionStore, type RetentionStore } from '../../../src/store/retention'
import { engines, type Opened } from './support'
import { testDatabaseUrl } from '../../support/postgres'

const DAY = 86_400
const NOW = Date.UTC(2026, 2, 20, 12) // 20 March 2026
const KEEP_DAYS = 30 // cutoff 18 February, 12:00
const CUTOFF = NOW / 1000 - KEEP_DAYS * DAY
/** one fix a day at noon from 10 January to 19 March: January, February (straddling the cutoff) and March */
const DAYS = Array.from({ length: 69 }, (_, i) => Date.UTC(2026, 0, 10 + i, 12) / 1000)

interface Kit {
  store: RetentionStore
  maintenance: MaintenanceStore
  keys: number[]
  /** ts of what is left, per table */
  left(): Promise<{ positions: number[]; events: number[] }>
}

const answers: Record<string, unknown[]> = {}

for (const engine of engines('the retention store on PostgreSQL')) {
  describe(`the retention store on ${engine.name}`, () => {
    let opened: Opened | null = null
    const seen = (answers[engine.name] = [] as unknown[])
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    /** three devices: the first two with a fix a day, the first with an event a day, the third with nothing */
    async function kit(days = DAYS): Promise<Kit> {
      opened = await engine.open()
      const device = (n: number) => ({ id: `dd000000-0000-4000-8000-00000000000${n}`, accountId: 'a', alias: `d${n}`, serial: `s${n}`, imei: '', createdAt: 0, updatedAt: 0 })
      if (opened.engine === 'sqlite') {
        const { db } = opened.handle
        db.insert(lite.accounts).values({ id: 'a', name: 'A' }).run()
        const keys = db.insert(lite.devices).values([device(1), device(2), device(3)]).returning({ key: lite.devices.key }).all().map((d) => d.key)
        db.insert(lite.positions).values(keys.slice(0, 2).flatMap((key) => days.map((ts) => ({ device: key, ts, lat: 1, lon: 1 })))).run()
        db.insert(lite.events).values(days.map((ts) => ({ device: keys[0]!, ts, alarmCode: 'sos' }))).run()
        return {
          store: createRetentionStore(opened.handle, manualClock(NOW)),
          maintenance: createMaintenanceStore(opened.handle),
          keys,
          left: async () => ({
            positions: db.select({ ts: lite.positions.ts }).from(lite.positions).orderBy(asc(lite.positions.ts)).all().map((p) => p.ts),
            events: db.select({ ts: lite.events.ts }).from(lite.events).orderBy(asc(lite.events.ts)).all().map((e) => e.ts),
          }),
        }
      }
      const { db } = opened.handle
      await db.insert(pg.accounts).values({ id: 'a', name: 'A' })
      const keys = (await db.insert(pg.devices).values([device(1), device(2), device(3)]).returning({ key: pg.devices.key })).map((d) => d.key)
      await ensurePartitions(opened.handle.sql, days)
      await db.insert(pg.positions).values(keys.slice(0, 2).flatMap((key) => days.map((ts) => ({ device: key, ts, lat: 1, lon: 1 }))))
      await db.insert(pg.events).values(days.map((ts) => ({ device: keys[0]!, ts, alarmCode: 'sos' })))
      return {
        store: createPostgresRetentionStore(opened.handle),
        maintenance: createPostgresMaintenanceStore(opened.handle),
        keys,
        left: async () => ({
          positions: (await db.select({ ts: pg.positions.ts }).from(pg.positions).orderBy(asc(pg.positions.ts))).map((p) => p.ts),
          events: (await db.select({ ts: pg.events.ts }).from(pg.events).orderBy(asc(pg.events.ts))).map((e) => e.ts),
        }),
      }
    }

    test('a pass deletes every position and event older than RETENTION_DAYS in small batches, keeping the rest', async () => {
      const { store, maintenance, left } = await kit()
      const older = DAYS.filter((ts) => ts < CUTOFF).length
      const partitionsBefore = opened!.engine === 'postgres' ? (await existingPartitions(opened!.handle.sql)).map((p) => p.name) : []
      const retention = startRetention({ store, maintenance, clock: manualClock(NOW), log: silentLogger, days: KEEP_DAYS, batchRows: 10, pauseMs: 0, intervalMs: 0 })
      const pass = await retention.runOnce()
      await retention.stop()
      expect(pass).toMatchObject({ cutoff: CUTOFF, positions: 2 * older, events: older })
      const kept = DAYS.filter((ts) => ts >= CUTOFF)
      expect(await left()).toEqual({ positions: kept.flatMap((ts) => [ts, ts]), events: kept })
      if (opened!.engine === 'postgres') {
        // January was wholly older: dropped; February straddles the cutoff: trimmed; March kept
        expect(partitionsBefore).toEqual(['positions_y2026m01', 'positions_y2026m02', 'positions_y2026m03'])
        expect((await existingPartitions(opened!.handle.sql)).map((p) => p.name)).toEqual(['positions_y2026m02', 'positions_y2026m03'])
        const [february] = await opened!.handle.db.execute<{ n: number }>(sql`SELECT count(*)::int AS n FROM positions_y2026m02`)
        expect(february!.n).toBe(2 * DAYS.filter((ts) => ts >= CUTOFF && ts < Date.UTC(2026, 2, 1) / 1000).length)
      }
      const again = await startRetention({ store, maintenance, clock: manualClock(NOW), log: silentLogger, days: KEEP_DAYS, intervalMs: 0 }).runOnce()
      expect(again).toMatchObject({ positions: 0, events: 0 })
      seen.push({ pass: { positions: pass.positions, events: pass.events }, left: await left() })
    })

    test('a batch stops at its row budget, or after visiting its number of devices, and says where the next starts', async () => {
      // February and March only: nothing to drop whole, so each batch's answer is its deletes alone
      const { store, keys } = await kit(DAYS.filter((ts) => ts >= Date.UTC(2026, 1, 1) / 1000))
      expect(await store.deviceKeys()).toEqual(keys)
      const tasks = [...keys.map((key) => ({ table: 'positions' as const, key })), ...keys.map((key) => ({ table: 'events' as const, key }))]
      const byRows = await store.deleteBatch(tasks, 0, CUTOFF, { rows: 5, devices: 100 })
      expect(byRows).toEqual({ deleted: { positions: 5, events: 0 }, next: 0 })
      const byDevices = await store.deleteBatch(tasks, 0, CUTOFF, { rows: 1000, devices: 2 })
      // the first device's 17 older fixes (5 already gone), then the second's 17
      expect(byDevices).toEqual({ deleted: { positions: 12 + 17, events: 0 }, next: 2 })
      const rest = await store.deleteBatch(tasks, 2, CUTOFF, { rows: 1000, devices: 100 })
      expect(rest).toEqual({ deleted: { positions: 0, events: 17 }, next: tasks.length })
      seen.push(byRows, byDevices, rest)
    })
  })
}

describe('both engines', () => {
  test.if(testDatabaseUrl !== null)('answer the same', () => {
    expect(answers.postgres).toEqual(answers.sqlite!)
  })
})

