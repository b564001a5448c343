/**
 * Graceful shutdown of the real server process: devices stream fixes over Teltonika and OsmAnd
 * and a live stream is open when SIGTERM arrives. The process must exit 0, promptly; every fix
 * it acknowledged must be in the database; the TCP devices must be marked disconnected; the WAL
 * must be folded back (checkpoint) and the file must pass `PRAGMA integrity_check`.
 */
import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { existsSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { importNow } from '../support/import'
import { ACCOUNT, DEVICES, fleetDataset, tempDir } from '../ingest/fleet'
import { streamTeltonika } from '../ingest/frames'
import { freePort, serverEnv, spawnServer } from '../support/process'

const ROOT = join(import.meta.dir, '..', '..')
const dir = tempDir('shutdown-')
const databasePath = join(dir, 'tracker.db')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const TELTONIKA_DEVICES = Array.from({ length: 6 }, (_, i) => String(871000000000000 + i))
/** a whole hour a day ago: real-clock fixes must be within MAX_FIX_AGE_DAYS and at most a day ahead */
const BASE_MS = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 86_400_000
const KEY = 'shutdown-test-key-0001'
const GROUP = '00000000-0000-4000-8000-0000000000b1'

test('SIGTERM: exit 0, every acknowledged fix stored, sessions closed, WAL checkpointed, integrity ok', async () => {
  const setup = openDatabase(databasePath)
  const dataset = fleetDataset(TELTONIKA_DEVICES.map((imei) => ({ imei })))
  importNow(setup, {
    ...dataset,
    groups: [{ id: GROUP, account: ACCOUNT, name: 'All' }],
    users: [{ id: '00000000-0000-4000-8000-0000000000c1', account: ACCOUNT, name: 'ops', groups: [GROUP], api_keys: [KEY] }],
  })
  setup.close()

  const ports = { http: freePort(), osmand: freePort(), teltonika: freePort() }
  const server = spawnServer([process.execPath, 'src/main.ts', 'serve'], {
    cwd: ROOT,
    env: serverEnv(databasePath, ports, 'info'),
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

  // checkpointed on the way out: nothing left in the WAL
  const wal = `${databasePath}-wal`
  expect(existsSync(wal) ? statSync(wal).size : 0).toBe(0)

  const reader = new Database(databasePath, { readonly: true })
  try {
    expect(reader.query<{ integrity_check: string }, []>('PRAGMA integrity_check').get()!.integrity_check).toBe('ok')
    const has = reader.query<{ one: number }, [string, number]>(
      'SELECT 1 AS one FROM positions WHERE device = (SELECT key FROM devices WHERE imei = ?1 OR serial = ?1 LIMIT 1) AND ts = ?2',
    )
    const missing: string[] = []
    for (const [id, list] of acked) for (const ts of list) if (!has.get(id, ts)) missing.push(`${id}@${ts}`)
    expect(missing).toEqual([])
    // the sessions were closed and the disconnections committed before the database closed
    const connected = reader
      .query<{ n: number }, []>(`SELECT count(*) AS n FROM devices WHERE connected = 1 AND imei IN (${TELTONIKA_DEVICES.map((i) => `'${i}'`).join(',')})`)
      .get()!.n
    expect(connected).toBe(0)
  } finally {
    reader.close()
  }
}, 30_000)
