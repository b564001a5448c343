/**
 * `cli backup FILE` as its own process while this one keeps ingesting into the same database
 * through the real pipeline: the copy is complete as of one moment, passes integrity_check,
 * and the writer never waited for it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase, type DatabaseHandle } from '../../db/client'
import { manualClock } from '../../src/clock'
import { importNow } from '../support/import'
import { LivePositions } from '../../src/ingest/live'
import { createIngestPipeline } from '../../src/ingest/pipeline'
import { silentLogger } from '../../src/log'
import { DEVICES, fix, fleetDataset, tempDir } from '../ingest/fleet'

const ROOT = join(import.meta.dir, '..', '..')
const dir = tempDir('backup-')
const databasePath = join(dir, 'tracker.db')
let database: DatabaseHandle

beforeAll(() => {
  database = openDatabase(databasePath)
  importNow(database, fleetDataset())
  // enough history that the copy takes a while: 300,000 fixes
  const insert = database.sqlite.query('INSERT INTO positions (device, ts, lat, lon, speed) VALUES (?, ?, ?, ?, 400)')
  const key = database.sqlite.query<{ key: number }, [string]>('SELECT key FROM devices WHERE id = ?').get(DEVICES.parked.id)!.key
  database.sqlite.transaction(() => {
    for (let i = 0; i < 300_000; i++) insert.run(key, 1_700_000_000 + i, 546800000 + (i % 1000), 252700000)
  })()
})
afterAll(() => {
  database.close()
  rmSync(dir, { recursive: true, force: true })
})

function cli(args: string[], env: Record<string, string> = {}) {
  return Bun.spawn([process.execPath, join(ROOT, 'src/main.ts'), ...args], {
    cwd: dir,
    env: { ...process.env, DATABASE_PATH: databasePath, LOG_LEVEL: 'silent', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
}

const count = (sqlite: Database, sql: string) => sqlite.query<{ n: number }, []>(sql).get()!.n

describe('backup', () => {
  test('a consistent, checked copy while the server keeps ingesting', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 2))
    const pipeline = createIngestPipeline({ database: database, clock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600 })
    const before = count(database.sqlite, 'SELECT count(*) AS n FROM positions')

    let written = 0
    let writing = true
    let failures = 0
    const writer = (async () => {
      for (let ts = 1_767_225_600; writing; ts++) {
        try {
          const result = await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(ts)], events: [] })
          written += result.stored
        } catch {
          failures++
        }
        await Bun.sleep(0)
      }
    })()

    await Bun.sleep(20)
    const writtenAtStart = written
    const target = join(dir, 'copies', 'tracker-backup.db')
    const backup = cli(['backup', target])
    const [code, stdout, stderr] = await Promise.all([backup.exited, new Response(backup.stdout).text(), new Response(backup.stderr).text()])
    const writtenDuringBackup = written - writtenAtStart
    writing = false
    await writer
    await pipeline.stop()

    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain('integrity ok')
    expect(failures).toBe(0)
    expect(writtenDuringBackup).toBeGreaterThan(0)

    const copy = new Database(target, { readonly: true })
    try {
      expect(copy.query<{ integrity_check: string }, []>('PRAGMA integrity_check').get()!.integrity_check).toBe('ok')
      const copied = count(copy, 'SELECT count(*) AS n FROM positions')
      // everything committed before the backup began, and no more than what exists now
      expect(copied).toBeGreaterThanOrEqual(before + writtenAtStart)
      expect(copied).toBeLessThanOrEqual(count(database.sqlite, 'SELECT count(*) AS n FROM positions'))
      expect(count(copy, 'SELECT count(*) AS n FROM devices')).toBe(count(database.sqlite, 'SELECT count(*) AS n FROM devices'))
      // the copy is one self-contained file: no WAL of its own to carry along
      expect(copy.query<{ journal_mode: string }, []>('PRAGMA journal_mode').get()!.journal_mode).not.toBe('wal')
    } finally {
      copy.close()
    }
    // no partial file left behind
    expect(readdirSync(join(dir, 'copies'))).toEqual(['tracker-backup.db'])
  }, 30_000)

  test('never overwrites an existing file (exit 2), and needs an existing database (exit 1)', async () => {
    const existing = join(dir, 'existing.db')
    writeFileSync(existing, 'keep me')
    const refused = cli(['backup', existing])
    expect(await refused.exited).toBe(2)
    expect(await new Response(refused.stderr).text()).toContain('already exists')
    expect(await Bun.file(existing).text()).toBe('keep me')

    const missing = cli(['backup', join(dir, 'x.db')], { DATABASE_PATH: join(dir, 'nope', 'none.db') })
    expect(await missing.exited).toBe(1)
    expect(await new Response(missing.stderr).text()).toContain('No database at')
    expect(existsSync(join(dir, 'nope'))).toBe(false)

    const usage = cli(['backup'])
    expect(await usage.exited).toBe(2)
  })
})
