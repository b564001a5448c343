/**
 * `npm run bench -- geofences`: what one OsmAnd report costs the real server when its device's
 * account has drawn the worst the limits allow, against the floor (the same report from a device
 * of an account without geofences), side by side in one server.
 *
 * The server (geofences-server.ts: startServer, as `serve` runs it) gets a database with two
 * accounts: one with BENCH_GEOFENCES (1,000) polygons of BENCH_VERTICES (1,000) points each, all
 * overlapping where its device drives, and one with none. Each device sends the largest report
 * the OsmAnd listener takes: 1,000 Traccar Client locations in one JSON body (105 KB), a
 * drive across every polygon's boundary, new timestamps each time (a re-sent fix derives
 * nothing). While a report is handled, a second connection asks /health in a loop: its slowest
 * answer is how long the event loop was blocked. Each side sends BENCH_ROUNDS (7) reports, in
 * turn; the medians and the worst are printed. Then, with the server stopped, the rules alone
 * (in this process, as ingest calls them, each report in a transaction rolled back after): what
 * of a report's time is the geofence work, and what is storing the events it derives.
 *
 * BENCH_SHAPE picks the polygons: `stars` (default: jagged stars, every point at its own radius,
 * so the device crosses dense boundaries), `combs` (a comb's teeth run across the whole polygon:
 * every part of it is near many edges), `circles` (smooth, the common case).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { createGeofenceCache } from '../../src/alerts/cache'
import { createGeofenceCacheReads, createRuleStateStore } from '../../src/store/geofences'
import { createAlertRules } from '../../src/alerts/rules'
import { systemClock } from '../../src/clock'
import { importNow } from '../../test/support/import'
import { type Area, checkArea } from '../../src/track/geofence'
import { seededRandom } from '../../test/support/random'
import { fmt } from './load'

const GEOFENCES = Number(process.env.BENCH_GEOFENCES ?? 1000)
const VERTICES = Number(process.env.BENCH_VERTICES ?? 1000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const SHAPE = process.env.BENCH_SHAPE ?? 'stars'
const FIXES = 1000
const random = seededRandom(19)
const centre = { lat: 48.85, lon: 2.35 }
const uuid = (prefix: string, i: number) => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`
const DRAWN = { account: uuid('0a000000', 1), device: uuid('0f000000', 1), imei: '359710049000001' }
const FLOOR = { account: uuid('0a000000', 2), device: uuid('0f000000', 2), imei: '359710049000002' }

/** a star: corners at rising angles (never self-intersecting), each at its own radius */
function star(): Area {
  const lat = centre.lat + (random() - 0.5) * 0.01
  const lon = centre.lon + (random() - 0.5) * 0.015
  const radius = 0.03 + random() * 0.02
  const ring: number[][] = []
  for (let k = 0; k < VERTICES - 1; k++) {
    const angle = (k / (VERTICES - 1)) * 2 * Math.PI
    const r = radius * (0.75 + random() * 0.25)
    ring.push([lon + r * Math.cos(angle) * 1.5, lat + r * Math.sin(angle)])
  }
  ring.push(ring[0]!)
  return { type: 'Polygon', coordinates: [ring] }
}

/** a comb: teeth from a spine, each as long as the comb is tall, across the whole drive */
function comb(): Area {
  const teeth = Math.floor((VERTICES - 3) / 4)
  const west = centre.lon - 0.12 + random() * 0.01
  const east = centre.lon + 0.12 - random() * 0.01
  const south = centre.lat - 0.06 + random() * 0.01
  const north = centre.lat + 0.06 - random() * 0.01
  const spine = south + 0.005
  const step = (east - west) / teeth
  const ring: number[][] = [[west, south], [east, south]]
  for (let t = teeth - 1; t >= 0; t--) {
    const x = west + t * step
    ring.push([x + step * 0.6, spine], [x + step * 0.6, north], [x + step * 0.1, north], [x + step * 0.1, spine])
  }
  ring.push([west, spine], [west, south])
  return { type: 'Polygon', coordinates: [ring] }
}

function circle(): Area {
  const lat = centre.lat + (random() - 0.5) * 0.01
  const lon = centre.lon + (random() - 0.5) * 0.015
  const radius = 0.03 + random() * 0.02
  const ring: number[][] = []
  for (let k = 0; k < VERTICES - 1; k++) {
    const angle = (k / (VERTICES - 1)) * 2 * Math.PI
    ring.push([lon + radius * Math.cos(angle) * 1.5, lat + radius * Math.sin(angle)])
  }
  ring.push(ring[0]!)
  return { type: 'Polygon', coordinates: [ring] }
}

const shapes: Record<string, () => Area> = { stars: star, combs: comb, circles: circle }
if (!(SHAPE in shapes)) throw new Error(`BENCH_SHAPE: one of ${Object.keys(shapes).join(', ')}`)

/** the device's drive: west to east through the middle, weaving north and south, a fix a second */
function drive(firstSecond: number) {
  const locations = []
  for (let i = 0; i < FIXES; i++) {
    const f = i / (FIXES - 1)
    const lon = centre.lon - 0.1 + 0.2 * f
    const lat = centre.lat + 0.04 * Math.sin(f * 6 * Math.PI)
    locations.push({
      timestamp: new Date((firstSecond + i) * 1000).toISOString().replace('.000Z', 'Z'),
      coords: { latitude: Number(lat.toFixed(7)), longitude: Number(lon.toFixed(7)), speed: 16.5 },
    })
  }
  return locations
}

const dir = mkdtempSync(join(tmpdir(), 'bench-geofences-'))
const path = join(dir, 'bench.db')

function build() {
  const started = performance.now()
  const database = openDatabase(path)
  importNow(database, {
    accounts: [
      { id: DRAWN.account, name: 'Drawn' },
      { id: FLOOR.account, name: 'Floor' },
    ],
    models: [{ id: uuid('0d000000', 1), name: 'Phone', protocol: 'osmand' }],
    devices: [
      { id: DRAWN.device, account: DRAWN.account, model: uuid('0d000000', 1), alias: 'Drawn', imei: DRAWN.imei },
      { id: FLOOR.device, account: FLOOR.account, model: uuid('0d000000', 1), alias: 'Floor', imei: FLOOR.imei },
    ],
  })
  const insert = database.sqlite.query('INSERT INTO geofences (id, account_id, name, area, groups, speed_limit, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
  const now = Date.now()
  let checkMs = 0
  database.sqlite.transaction(() => {
    for (let g = 0; g < GEOFENCES; g++) {
      const area = shapes[SHAPE]!()
      const t0 = performance.now()
      const problems = checkArea(area)
      checkMs += performance.now() - t0
      if (problems.length > 0) throw new Error(`geofence ${g} would be refused: ${JSON.stringify(problems[0])}`)
      insert.run(uuid('0e000000', g), DRAWN.account, `G${String(g).padStart(4, '0')}`, JSON.stringify(area), '[]', null, now, now)
    }
  })()
  database.sqlite.run('PRAGMA wal_checkpoint(TRUNCATE)')
  database.close()
  console.log(`${fmt(GEOFENCES)} ${SHAPE} of ${fmt(VERTICES)} points built in ${fmt((performance.now() - started) / 1000, 1)} s (checked as the API does: ${fmt(checkMs / Math.max(1, GEOFENCES), 2)} ms each)`)
}

async function startServer() {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, 'geofences-server.ts')], {
    stdout: 'pipe',
    stderr: 'inherit',
    env: { ...process.env, DATABASE_PATH: path, LOG_LEVEL: 'error' },
  })
  const reader = child.stdout.getReader()
  let text = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the server did not start: ${text}`)
    text += new TextDecoder().decode(value)
    const match = /ready (\d+) (\d+)/.exec(text)
    if (match) {
      reader.releaseLock()
      return { api: Number(match[1]), osmand: Number(match[2]), stop: async () => { child.kill(); await child.exited } }
    }
  }
}

let nextSecond = Math.floor(Date.now() / 1000) - 20 * 86_400

interface Sample {
  /** the report, sent to answered */
  reportMs: number
  /** the slowest /health answer while it was handled */
  healthMs: number
  bytes: number
}

/** One report of `imei`, with /health asked in a loop from another connection meanwhile. */
async function send(server: { api: number; osmand: number }, imei: string): Promise<Sample> {
  const body = JSON.stringify({ device_id: imei, location: drive(nextSecond) })
  nextSecond += FIXES
  let sending = true
  let healthMs = 0
  const health = (async () => {
    while (sending) {
      const t0 = performance.now()
      const res = await fetch(`http://127.0.0.1:${server.api}/health`)
      await res.arrayBuffer()
      healthMs = Math.max(healthMs, performance.now() - t0)
    }
  })()
  // let the first /health go out before the report does
  await Bun.sleep(2)
  const t0 = performance.now()
  const res = await fetch(`http://127.0.0.1:${server.osmand}/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  await res.text()
  const reportMs = performance.now() - t0
  sending = false
  await health
  if (res.status !== 200) throw new Error(`the report got ${res.status}`)
  return { reportMs, healthMs, bytes: body.length }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const max = (values: number[]) => Math.max(...values)

build()
const server = await startServer()
try {
  // warm-up: the code JIT-compiled and each account's geofences loaded, as in a running server
  const first = await send(server, DRAWN.imei)
  console.log(`first report of the drawn account (loads its geofences): ${fmt(first.reportMs, 1)} ms, /health at worst ${fmt(first.healthMs, 1)} ms`)
  // a polygon's grid is built within a report's budget: the first reports after a start build them
  for (let i = 0; i < 20; i++) {
    await send(server, FLOOR.imei)
    await send(server, DRAWN.imei)
  }
  const floor: Sample[] = []
  const drawn: Sample[] = []
  for (let r = 0; r < ROUNDS; r++) {
    // who goes first alternates, so that a busy moment of a shared machine slows both
    if (r % 2 === 0) {
      floor.push(await send(server, FLOOR.imei))
      drawn.push(await send(server, DRAWN.imei))
    } else {
      drawn.push(await send(server, DRAWN.imei))
      floor.push(await send(server, FLOOR.imei))
    }
  }
  const line = (name: string, samples: Sample[]) =>
    `${name.padEnd(34)} ${fmt(median(samples.map((s) => s.reportMs)), 1).padStart(9)} ${fmt(max(samples.map((s) => s.reportMs)), 1).padStart(9)}   ${fmt(median(samples.map((s) => s.healthMs)), 1).padStart(9)} ${fmt(max(samples.map((s) => s.healthMs)), 1).padStart(9)}`
  console.log(`\none OsmAnd report of ${FIXES} fixes (${fmt(drawn[0]!.bytes / 1000)} KB), ${ROUNDS} rounds; ms, median and worst`)
  console.log(`${''.padEnd(34)} ${'report'.padStart(9)} ${'worst'.padStart(9)}   ${'/health'.padStart(9)} ${'worst'.padStart(9)}`)
  console.log(line('floor (no geofences)', floor))
  console.log(line(`${fmt(GEOFENCES)} ${SHAPE} of ${fmt(VERTICES)} points`, drawn))
  const extra = median(drawn.map((s) => s.reportMs)) - median(floor.map((s) => s.reportMs))
  console.log(`the geofences add ${fmt(extra, 1)} ms to a report (goal: the report < 50 ms whatever an account has drawn)`)
} finally {
  await server.stop()
}

try {
  const database = openDatabase(path)
  const rules = createAlertRules({ states: createRuleStateStore(database), clock: systemClock, geofences: createGeofenceCache({ reads: createGeofenceCacheReads(database), clock: systemClock }) })
  const key = (database.sqlite.query('SELECT key FROM devices WHERE id = ?').get(DRAWN.device) as { key: number }).key
  const samples: { ms: number; events: number }[] = []
  // as in the server: the first reports load the geofences and build their grids (within each report's budget)
  const WARM = 20
  for (let r = 0; r < ROUNDS + WARM; r++) {
    const fixes = drive(nextSecond).map((l) => ({ timestamp: Date.parse(l.timestamp) / 1000, latitude: l.coords.latitude, longitude: l.coords.longitude, speed: l.coords.speed * 3.6, valid: true }))
    database.sqlite.run('BEGIN IMMEDIATE')
    const t0 = performance.now()
    const events = rules.onFixes(key, fixes)
    const ms = performance.now() - t0
    database.sqlite.run('ROLLBACK')
    if (r >= WARM) samples.push({ ms, events: events.filter((e) => e.alarmCode.startsWith('geofence_')).length })
  }
  database.close()
  console.log(
    `the rules alone (in-process, as ingest calls them): ${fmt(median(samples.map((s) => s.ms)), 1)} ms a report (worst ${fmt(max(samples.map((s) => s.ms)), 1)}), ` +
      `${fmt(median(samples.map((s) => s.events)))} geofence events derived; the rest of the report is storing them and the fixes`,
  )
} finally {
  rmSync(dir, { recursive: true, force: true })
}
