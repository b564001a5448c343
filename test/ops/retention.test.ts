/**
 * RETENTION_DAYS on a manual clock: rows older than the cutoff go, newer rows stay, in several
 * small transactions with the event loop free between them, and the WAL ends truncated.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, type DatabaseHandle } from '../../db/client'
import { manualClock } from '../../src/clock'
import { importNow } from '../support/import'
import { silentLogger } from '../../src/log'
import { startRetention } from '../../src/ops/retention'
import { createMaintenanceStore } from '../../src/store/maintenance'
import { createRetentionStore } from '../../src/store/retention'
import { baseDataset } from '../support/world'

const DAY = 86_400
let dir: string
let database: DatabaseHandle
let clock: ReturnType<typeof manualClock>
let deviceKeys: number[]
const nowSeconds = () => Math.floor(clock.now() / 1000)

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tracker-retention-'))
  database = openDatabase(join(dir, 'tracker.db'))
  importNow(database, baseDataset())
  clock = manualClock()
  deviceKeys = database.sqlite.query<{ key: number }, []>('SELECT key FROM devices ORDER BY key').all().map((r) => r.key)
  // 20 days of one fix an hour for three devices, and an alarm a day
  const position = database.sqlite.query('INSERT INTO positions (device, ts, lat, lon) VALUES (?, ?, 488566000, 23522000)')
  const event = database.sqlite.query("INSERT INTO events (device, ts, alarm_code) VALUES (?, ?, 'sos')")
  database.sqlite.transaction(() => {
    for (const key of deviceKeys.slice(0, 3)) {
      for (let ts = nowSeconds() - 20 * DAY; ts < nowSeconds(); ts += 3600) position.run(key, ts)
      for (let ts = nowSeconds() - 20 * DAY + 60; ts < nowSeconds(); ts += DAY) event.run(key, ts)
    }
  })()
})

afterEach(() => {
  database.close()
  rmSync(dir, { recursive: true, force: true })
})

const count = (sql: string, ...args: number[]) => database.sqlite.query<{ n: number }, number[]>(sql).get(...args)!.n

describe('retention', () => {
  test('deletes positions and events older than RETENTION_DAYS on the injected clock, in several batches; keeps the rest', async () => {
    const cutoff = nowSeconds() - 7 * DAY
    const oldPositions = count('SELECT count(*) AS n FROM positions WHERE ts < ?', cutoff)
    const newPositions = count('SELECT count(*) AS n FROM positions WHERE ts >= ?', cutoff)
    const oldEvents = count('SELECT count(*) AS n FROM events WHERE ts < ?', cutoff)
    const newEvents = count('SELECT count(*) AS n FROM events WHERE ts >= ?', cutoff)
    expect(oldPositions).toBe(3 * 13 * 24)
    expect(oldEvents).toBe(3 * 13)

    const deleted: Record<string, number> = { positions: 0, events: 0 }
    const retention = startRetention({
      store: createRetentionStore(database, clock),
      maintenance: createMaintenanceStore(database),
      clock,
      log: silentLogger,
      days: 7,
      batchRows: 100,
      pauseMs: 1,
      intervalMs: 0,
      onDeleted: (table, rows) => (deleted[table] += rows),
    })
    // Something else wants the event loop (an ingest batch, say) while the pass runs.
    let interleaved = 0
    const other = setInterval(() => {
      interleaved++
      database.sqlite.run('INSERT INTO positions (device, ts, lat, lon) VALUES (?, ?, 1, 1)', [deviceKeys[3], nowSeconds() - interleaved])
    }, 0)
    const pass = await retention.runOnce()
    clearInterval(other)
    await retention.stop()

    expect(pass.cutoff).toBe(cutoff)
    expect(pass.positions).toBe(oldPositions)
    expect(pass.events).toBe(oldEvents)
    expect(deleted).toEqual({ positions: oldPositions, events: oldEvents })
    // 936 positions + 39 events at 100 rows a transaction
    expect(pass.batches).toBeGreaterThanOrEqual(10)
    expect(interleaved).toBeGreaterThan(1)

    expect(count('SELECT count(*) AS n FROM positions WHERE ts < ?', cutoff)).toBe(0)
    expect(count('SELECT count(*) AS n FROM events WHERE ts < ?', cutoff)).toBe(0)
    expect(count('SELECT count(*) AS n FROM positions WHERE ts >= ? AND device <> ?', cutoff, deviceKeys[3])).toBe(newPositions)
    expect(count('SELECT count(*) AS n FROM events WHERE ts >= ?', cutoff)).toBe(newEvents)
    // the fix written during the pass was newer than the cutoff: still there
    expect(count('SELECT count(*) AS n FROM positions WHERE device = ?', deviceKeys[3])).toBe(interleaved)
    expect(database.sqlite.query<{ integrity_check: string }, []>('PRAGMA integrity_check').get()!.integrity_check).toBe('ok')
    // the pass ends with a TRUNCATE checkpoint: the WAL is empty again
    expect(statSync(join(dir, 'tracker.db-wal')).size).toBe(0)
  })

  test('the cutoff follows the clock: a day later, one more day goes', async () => {
    const retention = startRetention({ store: createRetentionStore(database, clock), maintenance: createMaintenanceStore(database), clock, log: silentLogger, days: 7, intervalMs: 0 })
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
    const retention = startRetention({ store: createRetentionStore(database, clock), maintenance: createMaintenanceStore(database), clock, log: silentLogger, days: 7, batchRows: 50, pauseMs: 5, intervalMs: 0 })
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
    const retention = startRetention({ store: createRetentionStore(database, clock), maintenance: createMaintenanceStore(database), clock, log: silentLogger, days: 7, firstDelayMs: 5, intervalMs: 60_000 })
    const deadline = Date.now() + 5000
    while (count('SELECT count(*) AS n FROM events WHERE ts < ?', nowSeconds() - 7 * DAY) > 0 && Date.now() < deadline) await Bun.sleep(10)
    await retention.stop()
    expect(count('SELECT count(*) AS n FROM positions WHERE ts < ?', nowSeconds() - 7 * DAY)).toBe(0)
  })
})
