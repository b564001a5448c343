/**
 * RETENTION_DAYS on a manual clock: rows older than the cutoff go, newer rows stay, in several
 * small transactions with the event loop free between them, and the WAL ends truncated.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { silentLogger } from '../../src/log'
import { type RetentionOptions, startRetention } from '../../src/ops/retention'
import { baseDataset, type EngineWorld, openWorld, testEngine } from '../support/world'

const DAY = 86_400
let world: EngineWorld
let clock: EngineWorld['clock']
let deviceKeys: number[]
const nowSeconds = () => Math.floor(clock.now() / 1000)

beforeEach(async () => {
  world = await openWorld(baseDataset())
  clock = world.clock
  deviceKeys = (await world.execute<{ key: number }>(sql`SELECT key FROM devices ORDER BY key`)).map((r) => Number(r.key))
  const [a, b, c] = (await world.execute<{ id: string }>(sql`SELECT id FROM devices ORDER BY key`)).map((r) => r.id)
  // 20 days of one fix an hour for three devices, and an alarm a day, through the import (which makes PostgreSQL's month partitions)
  const positions: object[] = []
  const events: object[] = []
  for (const device of [a, b, c]) {
    for (let ts = nowSeconds() - 20 * DAY; ts < nowSeconds(); ts += 3600) positions.push({ device, timestamp: ts, latitude: 48.8566, longitude: 2.3522 })
    for (let ts = nowSeconds() - 20 * DAY + 60; ts < nowSeconds(); ts += DAY) events.push({ device, timestamp: ts, alarm_code: 'sos' })
  }
  await world.importMore({ positions, events })
})

afterEach(() => world.close())

/** retention over the world's stores */
const retentionOf = (options: Omit<RetentionOptions, 'store' | 'maintenance' | 'clock' | 'log'>) =>
  startRetention({ store: world.stores.retention, maintenance: world.stores.maintenance, clock, log: silentLogger, ...options })
const count = async (table: 'positions' | 'events', where: ReturnType<typeof sql>) => world.count(table, where)

describe('retention', () => {
  test('deletes positions and events older than RETENTION_DAYS on the injected clock, in several batches; keeps the rest', async () => {
    const cutoff = nowSeconds() - 7 * DAY
    const oldPositions = await count('positions', sql`ts < ${cutoff}`)
    const newPositions = await count('positions', sql`ts >= ${cutoff}`)
    const oldEvents = await count('events', sql`ts < ${cutoff}`)
    const newEvents = await count('events', sql`ts >= ${cutoff}`)
    expect(oldPositions).toBe(3 * 13 * 24)
    expect(oldEvents).toBe(3 * 13)

    const deleted: Record<string, number> = { positions: 0, events: 0 }
    const retention = retentionOf({
      days: 7,
      batchRows: 100,
      pauseMs: 1,
      intervalMs: 0,
      onDeleted: (table, rows) => (deleted[table] += rows),
    })
    // Something else wants the event loop (an ingest batch, say) while the pass runs.
    let interleaved = 0
    const written: Promise<unknown>[] = []
    const other = setInterval(() => {
      interleaved++
      written.push(world.execute(sql`INSERT INTO positions (device, ts, lat, lon) VALUES (${deviceKeys[3]}, ${nowSeconds() - interleaved}, 1, 1)`))
    }, 0)
    const pass = await retention.runOnce()
    clearInterval(other)
    await Promise.all(written)
    await retention.stop()

    expect(pass.cutoff).toBe(cutoff)
    expect(pass.positions).toBe(oldPositions)
    expect(pass.events).toBe(oldEvents)
    expect(deleted).toEqual({ positions: oldPositions, events: oldEvents })
    // 936 positions + 39 events at 100 rows a transaction
    expect(pass.batches).toBeGreaterThanOrEqual(10)
    expect(interleaved).toBeGreaterThan(1)

    expect(await count('positions', sql`ts < ${cutoff}`)).toBe(0)
    expect(await count('events', sql`ts < ${cutoff}`)).toBe(0)
    expect(await count('positions', sql`ts >= ${cutoff} AND device <> ${deviceKeys[3]}`)).toBe(newPositions)
    expect(await count('events', sql`ts >= ${cutoff}`)).toBe(newEvents)
    // the fix written during the pass was newer than the cutoff: still there
    expect(await count('positions', sql`device = ${deviceKeys[3]}`)).toBe(interleaved)
  })

  // SQLite's own file: its integrity and its write-ahead log
  test.skipIf(testEngine !== 'sqlite')('the pass leaves the file whole, and ends with a TRUNCATE checkpoint: the WAL is empty again', async () => {
    const retention = retentionOf({ days: 7, batchRows: 100, pauseMs: 1, intervalMs: 0 })
    expect((await retention.runOnce()).positions).toBe(3 * 13 * 24)
    await retention.stop()
    const { database, dir } = world.sqlite!
    expect(database.sqlite.query<{ integrity_check: string }, []>('PRAGMA integrity_check').get()!.integrity_check).toBe('ok')
    expect(statSync(join(dir, 'tracker.db-wal')).size).toBe(0)
  })

  test('the cutoff follows the clock: a day later, one more day goes', async () => {
    const retention = retentionOf({ days: 7, intervalMs: 0 })
    const first = await retention.runOnce()
    expect(first.positions).toBe(3 * 13 * 24)
    const again = await retention.runOnce()
    expect(again.positions + again.events).toBe(0)
    clock.advance(DAY * 1000)
    const later = await retention.runOnce()
    expect(later.positions).toBe(3 * 24)
    expect(later.events).toBe(3)
    await retention.stop()
  })

  test('a pass already running is joined, not doubled; stop ends it between batches', async () => {
    const retention = retentionOf({ days: 7, batchRows: 50, pauseMs: 5, intervalMs: 0 })
    const a = retention.runOnce()
    const b = retention.runOnce()
    expect(a).toBe(b)
    await Bun.sleep(12)
    await retention.stop()
    const pass = await a
    expect(pass.positions).toBeGreaterThan(0)
    expect(pass.positions).toBeLessThan(3 * 13 * 24)
  })

  test('runs by itself on its schedule', async () => {
    const retention = retentionOf({ days: 7, firstDelayMs: 5, intervalMs: 60_000 })
    const deadline = Date.now() + 5000
    while ((await count('events', sql`ts < ${nowSeconds() - 7 * DAY}`)) > 0 && Date.now() < deadline) await Bun.sleep(10)
    await retention.stop()
    expect(await count('positions', sql`ts < ${nowSeconds() - 7 * DAY}`)).toBe(0)
  })
})
