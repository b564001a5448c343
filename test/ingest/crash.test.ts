/**
 * Durability, on the run's engine: the real server process takes fixes over Teltonika and
 * OsmAnd, is killed with SIGKILL mid-stream, and restarted. Every fix that was acknowledged must
 * be in the database, and on SQLite the file must pass `PRAGMA integrity_check`.
 */
import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { DEVICES, fleetDataset } from './fleet'
import { connectClient, streamTeltonika, teltonikaImei } from './frames'
import { freePort, serverEnv } from '../support/process'
import { serverDatabase, type ServerDatabase, storedFixes } from '../support/server-database'
import { testEngine } from '../support/world'

const ROOT = join(import.meta.dir, '..', '..')
const BUN = process.execPath
let database: ServerDatabase | undefined
afterAll(async () => {
  await database?.close()
}, 20_000)

function startServer(ports: { http: number; osmand: number; teltonika: number }) {
  return Bun.spawn([BUN, 'src/main.ts', 'serve'], {
    cwd: ROOT,
    env: serverEnv(database!, ports, 'error'),
    stdout: 'ignore',
    stderr: 'inherit',
  })
}

async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
      socket.end()
      return
    } catch {
      if (Date.now() > deadline) throw new Error(`port ${port} did not open`)
      await Bun.sleep(25)
    }
  }
}

const TELTONIKA_DEVICES = Array.from({ length: 8 }, (_, i) => String(870000000000000 + i))
/** a whole hour a day ago: real-clock fixes must be within MAX_FIX_AGE_DAYS and at most a day ahead */
const BASE_MS = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 86_400_000

test('every acknowledged fix survives SIGKILL', async () => {
  database = await serverDatabase('crash', fleetDataset(TELTONIKA_DEVICES.map((imei) => ({ imei }))))

  const ports = { http: freePort(), osmand: freePort(), teltonika: freePort() }
  const server = startServer(ports)
  await waitForPort(ports.teltonika)

  /** imei → acknowledged timestamps (seconds) */
  const acked = new Map<string, number[]>()
  let stop = false

  const teltonikaDevice = (imei: string) => {
    const acknowledged: number[] = []
    acked.set(imei, acknowledged)
    return streamTeltonika(ports.teltonika, imei, { recordsPerPacket: 10, baseMs: BASE_MS, acknowledged, stopped: () => stop })
  }

  const osmandDevice = async () => {
    const list: number[] = []
    acked.set(DEVICES.phone.serial, list)
    for (let i = 0; !stop; i++) {
      const ts = BASE_MS / 1000 + i
      try {
        const response = await fetch(`http://127.0.0.1:${ports.osmand}/?id=${DEVICES.phone.serial}&lat=52.6&lon=-8.6&timestamp=${ts}`)
        if (response.status === 200) list.push(ts)
      } catch {
        return
      }
    }
  }

  const clients = [...TELTONIKA_DEVICES.map(teltonikaDevice), osmandDevice(), osmandDevice()]
  // Let a few hundred fixes through, then pull the plug.
  const deadline = Date.now() + 5000
  while ([...acked.values()].reduce((n, l) => n + l.length, 0) < 800 && Date.now() < deadline) await Bun.sleep(10)
  server.kill('SIGKILL')
  await server.exited
  stop = true
  await Promise.allSettled(clients)

  const total = [...acked.values()].reduce((n, l) => n + l.length, 0)
  expect(total).toBeGreaterThan(100)

  // Restart on the crashed file: WAL recovery, migrations, listeners come back.
  const restarted = startServer(ports)
  await waitForPort(ports.teltonika)
  const again = await connectClient(ports.teltonika)
  again.send(teltonikaImei(TELTONIKA_DEVICES[0]))
  expect((await again.read(1))[0]).toBe(1)
  again.end()

  try {
    const stored = await storedFixes(database)
    const missing: string[] = []
    for (const [id, list] of acked) for (const ts of list) if (!stored.has(`${id}@${ts}`)) missing.push(`${id}@${ts}`)
    expect(missing).toEqual([])
  } finally {
    restarted.kill('SIGTERM')
    await restarted.exited
  }
}, 30_000)

// the file's integrity after the crash and the restart's recovery is SQLite's own
test.skipIf(testEngine !== 'sqlite')('after that SIGKILL and restart the SQLite file passes integrity_check', () => {
  const reader = new Database(database!.sqlitePath!, { readonly: true })
  try {
    expect(reader.query<{ integrity_check: string }, []>('PRAGMA integrity_check').get()!.integrity_check).toBe('ok')
  } finally {
    reader.close()
  }
})
