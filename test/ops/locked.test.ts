/**
 * A locked database never stalls the process. While another process holds the write lock (an
 * import, an `sqlite3` shell), reads answer at once (WAL readers do not wait for a writer) and
 * writes wait for the lock without blocking the event loop; a write still locked after 5 s is
 * 504. Nothing is acknowledged to a device before it is committed.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, SERVER_BUSY_TIMEOUT_MS } from '../../db/client'
import { manualClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { importNow } from '../support/import'
import { silentLogger } from '../../src/log'
import { startRetention } from '../../src/ops/retention'
import { createMaintenanceStore } from '../../src/store/maintenance'
import { createRetentionStore } from '../../src/store/retention'
import { startServer } from '../../src/server'
import { freePort, serverEnv, spawnServer } from '../support/process'
import { baseDataset, ids, keys, makeWorld, problem } from '../support/world'

const ROOT = join(import.meta.dir, '..', '..')
const dir = mkdtempSync(join(tmpdir(), 'tracker-locked-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const TRUCK1_IMEI = '359710049095001'

/** Another process holding the write lock until told to let go (test/support/hold-write-lock.ts). */
async function holdWriteLock(databasePath: string) {
  const child = Bun.spawn([process.execPath, join(ROOT, 'test/support/hold-write-lock.ts'), databasePath], {
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader()
  let seen = ''
  const nextLine = async (expected: string) => {
    while (!seen.includes(`${expected}\n`)) {
      const { done, value } = await lines.read()
      if (done) throw new Error(`the lock holder exited before saying "${expected}"`)
      seen += value
    }
  }
  await nextLine('locked')
  return {
    async release() {
      child.stdin.write('release\n')
      await child.stdin.end()
      await nextLine('released')
      await child.exited
    },
  }
}

/** a request, and how long it took to answer (ms) */
async function timed(request: Promise<Response>): Promise<{ response: Response; ms: number }> {
  const started = performance.now()
  const response = await request
  await response.arrayBuffer().catch(() => undefined)
  return { response, ms: performance.now() - started }
}

/** tracks whether a request has been answered yet */
function watched(request: Promise<Response>): { answered: boolean; response: Promise<Response> } {
  const state = { answered: false, response: request }
  state.response = request.then((response) => {
    state.answered = true
    return response
  })
  return state
}

test('the real server, while another process holds the write lock: /health and reads answer at once, writes wait and then succeed', async () => {
  const databasePath = join(dir, 'real.db')
  const setup = openDatabase(databasePath)
  importNow(setup, baseDataset())
  setup.close()
  const ports = { http: freePort(), osmand: freePort(), teltonika: freePort() }
  const server = spawnServer([process.execPath, 'src/main.ts', 'serve'], { cwd: ROOT, env: serverEnv(databasePath, ports, 'info') })
  const api = `http://127.0.0.1:${ports.http}`
  const fixAt = Math.floor(Date.now() / 1000)
  try {
    await server.waitFor((l) => l.msg === 'serving')
    const lock = await holdWriteLock(databasePath)
    const lockedAt = performance.now()
    let released = false
    try {
      // two writes that must wait for the lock: a fix from a phone, a new share link
      const fix = watched(fetch(`http://127.0.0.1:${ports.osmand}/?id=${TRUCK1_IMEI}&lat=48.85&lon=2.35&timestamp=${fixAt}&speed=10`))
      const share = watched(
        fetch(`${api}/devices/share`, {
          method: 'POST',
          headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
          body: JSON.stringify({ devices: [ids.truck1], ttl: 3600 }),
        }),
      )
      // the server has both writes in hand and is waiting for the lock
      await Bun.sleep(200)

      // The harm is a multi-second stall of the whole process (it was 2–5 s: each waiting write
      // blocked the event loop for the busy timeout), so a generous bound is safe on a busy machine.
      const health = await timed(fetch(`${api}/health`))
      expect(health.response.status).toBe(200)
      expect(health.ms).toBeLessThan(1000)
      const devices = await timed(fetch(`${api}/devices`, { headers: { authorization: `Bearer ${keys.alice}` } }))
      expect(devices.response.status).toBe(200)
      expect(devices.ms).toBeLessThan(1000)

      // hold the lock about 2 s in all: nothing is answered before it goes
      await Bun.sleep(Math.max(0, 2000 - (performance.now() - lockedAt)))
      expect(fix.answered).toBe(false)
      expect(share.answered).toBe(false)
      await lock.release()
      released = true

      const fixResponse = await fix.response
      expect(fixResponse.status).toBe(200)
      expect(await fixResponse.text()).toBe('OK')
      const shareResponse = await share.response
      expect(shareResponse.status).toBe(200)
      expect(((await shareResponse.json()) as { devices: string[] }).devices).toEqual([ids.truck1])
    } finally {
      if (!released) await lock.release()
    }
  } finally {
    expect(await server.terminate('SIGTERM')).toBe(0)
  }
  // the acknowledged fix is stored
  const db = new Database(databasePath, { readonly: true })
  try {
    const stored = db
      .query<{ n: number }, [string, number]>('SELECT count(*) AS n FROM positions p JOIN devices d ON d.key = p.device WHERE d.imei = ? AND p.ts = ?')
      .get(TRUCK1_IMEI, fixAt)
    expect(stored?.n).toBe(1)
  } finally {
    db.close()
  }
}, 20_000)

describe('through the app, another connection holding the lock', () => {
  function lockedWorld() {
    const world = makeWorld()
    // the server's own busy timeout (startServer opens the database with it)
    world.database.sqlite.run(`PRAGMA busy_timeout = ${SERVER_BUSY_TIMEOUT_MS}`)
    const other = new Database(join(world.dir, 'tracker.db'))
    return {
      world,
      other,
      close() {
        if (other.inTransaction) other.run('ROLLBACK')
        other.close()
        world.close()
      },
    }
  }

  test('share links are created, changed and revoked once the lock goes', async () => {
    const { world, other, close } = lockedWorld()
    try {
      const existing = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 60 } })).json()) as {
        id: string
      }
      other.run('BEGIN IMMEDIATE')
      const created = watched(world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck2], ttl: 3600 } }))
      const changed = watched(world.call('PATCH', `/devices/share/${existing.id}`, { token: keys.alice, body: { ttl: 7200 } }))
      const revoked = watched(world.call('DELETE', `/devices/share/${existing.id}`, { token: keys.alice }))
      // reads go on meanwhile
      expect((await world.call('GET', `/devices/share/${existing.id}`, { token: keys.alice })).status).toBe(200)
      await Bun.sleep(50)
      expect([created.answered, changed.answered, revoked.answered]).toEqual([false, false, false])
      other.run('COMMIT')

      expect((await created.response).status).toBe(200)
      const patched = await changed.response
      expect(patched.status).toBe(200)
      expect(((await patched.json()) as { expires_at: string }).expires_at).toBe(new Date(world.clock.now() + 7_200_000).toISOString())
      expect((await revoked.response).status).toBe(204)
      const links = (await (await world.call('GET', '/devices/share', { token: keys.alice })).json()) as { devices: string[] }[]
      expect(links.map((l) => l.devices)).toEqual([[ids.truck2]])
    } finally {
      close()
    }
  })

  test('a share-link write still locked after 5 s is a 504 problem, and writes nothing', async () => {
    const { world, other, close } = lockedWorld()
    try {
      other.run('BEGIN IMMEDIATE')
      const created = watched(world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } }))
      await Bun.sleep(30)
      world.clock.advance(4_900)
      await Bun.sleep(30)
      expect(created.answered).toBe(false)
      world.clock.advance(200)
      const body = await problem(await created.response, 504)
      expect(body.title).toBe('Gateway Timeout')
      other.run('COMMIT')
      expect(other.query<{ n: number }, []>('SELECT count(*) AS n FROM share_links').get()?.n).toBe(0)
    } finally {
      close()
    }
  })
})

test('a fix locked out past 5 s is refused (504), never acknowledged, and the next one is stored', async () => {
  const databasePath = join(dir, 'in-process.db')
  const setup = openDatabase(databasePath)
  importNow(setup, baseDataset())
  setup.close()
  const clock = manualClock(Date.now())
  const config = loadConfig({ DATABASE_PATH: databasePath, HOST: '127.0.0.1', PORT: '0', OSMAND_PORT: String(freePort()), GT06_PORT: '0', TELTONIKA_PORT: '0', H02_PORT: '0', MEITRACK_PORT: '0' })
  const server = await startServer(config, { clock, log: silentLogger })
  const other = new Database(databasePath)
  const report = (ts: number) => fetch(`http://127.0.0.1:${server.ports.osmand}/?id=${TRUCK1_IMEI}&lat=48.85&lon=2.35&timestamp=${ts}`)
  const fixAt = Math.floor(clock.now() / 1000)
  try {
    other.run('BEGIN IMMEDIATE')
    const locked = watched(report(fixAt))
    await Bun.sleep(50)
    clock.advance(5_100)
    const refused = await locked.response
    expect(refused.status).toBe(504)
    expect(refused.headers.get('content-type')).toBe('application/problem+json')
    other.run('COMMIT')
    expect((await report(fixAt + 1)).status).toBe(200)
    const stored = other.query<{ ts: number }, []>('SELECT ts FROM positions ORDER BY ts').all()
    expect(stored.map((r) => r.ts)).toEqual([fixAt + 1])
  } finally {
    if (other.inTransaction) other.run('ROLLBACK')
    other.close()
    await server.stop()
  }
})

test('a retention pass waits for the lock instead of failing, then deletes', async () => {
  const world = makeWorld()
  try {
    world.database.sqlite.run(`PRAGMA busy_timeout = ${SERVER_BUSY_TIMEOUT_MS}`)
    const old = Math.floor(world.clock.now() / 1000) - 10 * 86_400
    world.database.sqlite.run('INSERT INTO positions (device, ts, lat, lon, flags) SELECT key, ?, 0, 0, 0 FROM devices', [old])
    const retention = startRetention({ store: createRetentionStore(world.database, world.clock), maintenance: createMaintenanceStore(world.database), clock: world.clock, log: silentLogger, days: 1, intervalMs: 0 })
    const other = new Database(join(world.dir, 'tracker.db'))
    other.run('BEGIN IMMEDIATE')
    const pass = retention.runOnce()
    let settled = false
    void pass.finally(() => (settled = true)).catch(() => undefined)
    await Bun.sleep(50)
    expect(settled).toBe(false)
    other.run('COMMIT')
    other.close()
    const devices = world.database.sqlite.query<{ n: number }, []>('SELECT count(*) AS n FROM devices').get()!.n
    expect((await pass).positions).toBe(devices)
    await retention.stop()
  } finally {
    world.close()
  }
})
