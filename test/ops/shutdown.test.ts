/**
 * Graceful shutdown of the real server process, on the run's engine: devices stream fixes over
 * Teltonika and OsmAnd and a live stream is open when SIGTERM arrives. The process must exit 0,
 * promptly; every fix it acknowledged must be in the database; the TCP devices must be marked
 * disconnected; on SQLite the WAL must be folded back (checkpoint) and the file must pass
 * `PRAGMA integrity_check`. A server stopped the moment it has started stops as cleanly.
 */
import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { ACCOUNT, DEVICES, fleetDataset } from '../ingest/fleet'
import { streamTeltonika } from '../ingest/frames'
import { freePort, serverEnv, spawnServer } from '../support/process'
import { serverDatabase, type ServerDatabase, storedFixes } from '../support/server-database'
import { baseDataset, testEngine } from '../support/world'

const ROOT = join(import.meta.dir, '..', '..')
const databases: ServerDatabase[] = []
afterAll(async () => {
  await Promise.all(databases.map((database) => database.close()))
}, 20_000)

const TELTONIKA_DEVICES = Array.from({ length: 6 }, (_, i) => String(871000000000000 + i))
/** a whole hour a day ago: real-clock fixes must be within MAX_FIX_AGE_DAYS and at most a day ahead */
const BASE_MS = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 86_400_000
const KEY = 'shutdown-test-key-0001'
const GROUP = '00000000-0000-4000-8000-0000000000b1'

let database: ServerDatabase

test('SIGTERM: exit 0, every acknowledged fix stored, sessions closed', async () => {
  const dataset = fleetDataset(TELTONIKA_DEVICES.map((imei) => ({ imei })))
  database = await serverDatabase('shutdown', {
    ...dataset,
    groups: [{ id: GROUP, account: ACCOUNT, name: 'All' }],
    users: [{ id: '00000000-0000-4000-8000-0000000000c1', account: ACCOUNT, name: 'ops', groups: [GROUP], api_keys: [KEY] }],
  })
  databases.push(database)

  const ports = { http: freePort(), osmand: freePort(), teltonika: freePort() }
  const server = spawnServer([process.execPath, 'src/main.ts', 'serve'], {
    cwd: ROOT,
    env: serverEnv(database, ports, 'info'),
  })
  await server.waitFor((l) => l.msg === 'teltonika listening')
  await server.waitFor((l) => l.msg === 'osmand listening')
  expect((await fetch(`http://127.0.0.1:${ports.http}/ready`)).status).toBe(200)

  // a live stream that would never end by itself
  const stream = await fetch(`http://127.0.0.1:${ports.http}/devices/stream`, { headers: { authorization: `Bearer ${KEY}` } })
  expect(stream.status).toBe(200)
  const streamReader = stream.body!.getReader()
  const streamEnded = (async () => {
    try {
      while (!(await streamReader.read()).done) {}
    } catch {}
  })()

  /** device → acknowledged timestamps (seconds) */
  const acked = new Map<string, number[]>()
  const outcomes = { ok: 0, refused: 0, unreachable: 0 }
  let stop = false

  const teltonikaDevice = (imei: string) => {
    const acknowledged: number[] = []
    acked.set(imei, acknowledged)
    return streamTeltonika(ports.teltonika, imei, { recordsPerPacket: 5, baseMs: BASE_MS, acknowledged, stopped: () => stop })
  }

  const osmandDevice = async (offset: number) => {
    const list = acked.get(DEVICES.phone.serial) ?? []
    acked.set(DEVICES.phone.serial, list)
    for (let i = 0; !stop; i++) {
      const ts = BASE_MS / 1000 + offset + i * 2
      try {
        const response = await fetch(`http://127.0.0.1:${ports.osmand}/?id=${DEVICES.phone.serial}&lat=52.6&lon=-8.6&timestamp=${ts}`)
        await response.arrayBuffer()
        if (response.status === 200) {
          list.push(ts)
          outcomes.ok++
        } else outcomes.refused++
      } catch {
        outcomes.unreachable++
        return
      }
    }
  }

  const clients = [...TELTONIKA_DEVICES.map(teltonikaDevice), osmandDevice(0), osmandDevice(1)]
  const deadline = Date.now() + 5000
  while ([...acked.values()].reduce((n, l) => n + l.length, 0) < 400 && Date.now() < deadline) await Bun.sleep(10)

  const signalled = performance.now()
  const code = await server.terminate('SIGTERM')
  const shutdownMs = performance.now() - signalled
  stop = true
  await Promise.allSettled(clients)
  await streamEnded

  if (code !== 0) console.error(server.text())
  expect(code).toBe(0)
  expect(shutdownMs).toBeLessThan(8000)
  const messages = server.lines.map((l) => l.msg)
  expect(messages).toContain('shutting down')
  expect(messages).toContain('stopped')
  expect(server.lines.filter((l) => l.level === 'error')).toEqual([])

  const total = [...acked.values()].reduce((n, l) => n + l.length, 0)
  expect(total).toBeGreaterThan(100)

  const stored = await storedFixes(database)
  const missing: string[] = []
  for (const [id, list] of acked) for (const ts of list) if (!stored.has(`${id}@${ts}`)) missing.push(`${id}@${ts}`)
  expect(missing).toEqual([])
  // the sessions were closed and the disconnections committed before the database closed
  expect(await database.count('devices', sql`connected = true AND imei IN (${sql.join(TELTONIKA_DEVICES.map((imei) => sql`${imei}`), sql`, `)})`)).toBe(0)
}, 30_000)

// the WAL and the file's integrity are SQLite's own
test.skipIf(testEngine !== 'sqlite')('after that SIGTERM: the WAL checkpointed, the file passes integrity_check', () => {
  const databasePath = database.sqlitePath!
  // checkpointed on the way out: nothing left in the WAL
  const wal = `${databasePath}-wal`
  expect(existsSync(wal) ? statSync(wal).size : 0).toBe(0)

  const reader = new Database(databasePath, { readonly: true })
  try {
    expect(reader.query<{ integrity_check: string }, []>('PRAGMA integrity_check').get()!.integrity_check).toBe('ok')
  } finally {
    reader.close()
  }
})

test('SIGTERM the moment the server has started (its background jobs under way): exit 0, stopped, nothing logged as an error', async () => {
  const fresh = await serverDatabase('shutdown-early', baseDataset())
  databases.push(fresh)
  const ports = { http: freePort(), osmand: freePort(), teltonika: freePort() }
  const server = spawnServer([process.execPath, 'src/main.ts', 'serve'], { cwd: ROOT, env: serverEnv(fresh, ports, 'info') })
  await server.waitFor((l) => l.msg === 'serving')
  const code = await server.terminate('SIGTERM')
  if (code !== 0) console.error(server.text())
  expect(code).toBe(0)
  expect(server.lines.map((l) => l.msg)).toContain('stopped')
  expect(server.lines.filter((l) => l.level === 'error')).toEqual([])
}, 20_000)
