/**
 * `npm run bench -- reports` (issue 24): a week's trips report for 100 devices at one fix every
 * 10 s (6,048,000 fixes), side by side in one process on one SQLite file:
 *   floor   — the store's raw read of the same rows (a bun:sqlite prepared statement, columns) and
 *             track/'s analyseTrack per device, nothing else;
 *   product — GET /reports/trips through createApp(...).handle(new Request(...)), the body read to
 *             the end: JSON, then CSV, then XLSX.
 * Reported: the median of BENCH_REPEAT rounds (default 3, the sides taking turns) after a warm-up, each ratio beside its
 * absolute figures; then each format's peak RSS above idle in a process of its own (contract: < 64 MB
 * for files), beside a 100,000-row route file's from the same store (the contract's own measure).
 * Bars: trips JSON ≤ 1.5× the floor; XLSX ≤ 2× CSV.
 *
 * The database is built once and kept (BENCH_REPORTS_DB, default in the temp folder).
 */
import { Database } from 'bun:sqlite'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { createApp } from '../../src/app'
import { createGeocoder, type Geocoder } from '../../src/geocode'
import { COORDINATE_SCALE, FLAG_UNLOCATABLE, SPEED_SCALE } from '../../src/store/positions'
import { allocateColumns, analyseTrack, truncateColumns, DEFAULT_GAP_THRESHOLD_SECONDS, DEFAULT_STOP_THRESHOLD_SECONDS } from '../../src/track'
import { importNow } from '../../test/support/import'
import { closeBuiltFixes, fmt } from './load'

const DB = process.env.BENCH_REPORTS_DB ?? join(tmpdir(), 'bench-reports.db')
const DEVICES = 100
const STEP_SECONDS = 10
const DAYS = 7
const FIXES_EACH = (DAYS * 86_400) / STEP_SECONDS
const T0 = 1764028800 // 2025-11-25T00:00:00Z
const FROM = T0
const TO = T0 + DAYS * 86_400 - 1
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3)
const MEMORY_BOUND_MB = 64
const MB = 1024 * 1024
/** a route report's period: 100,000 rows (100 devices, a fix every 10 s) */
const ROUTE_SECONDS = (100_000 / DEVICES) * STEP_SECONDS
const uuid = (prefix: string, i: number) => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`
const KEY = 'bench-key-0123456789abcdef'

function dataset() {
  const account = uuid('0a000000', 1)
  return {
    accounts: [{ id: account, name: 'Bench' }],
    groups: [{ id: uuid('0b000000', 1), account, name: 'All' }],
    users: [{ id: uuid('0c000000', 1), account, name: 'bench', groups: [uuid('0b000000', 1)], api_keys: [KEY] }],
    models: [{ id: uuid('0d000000', 1), name: 'M' }],
    devices: Array.from({ length: DEVICES }, (_, i) => ({
      id: uuid('0f000000', i), account, model: uuid('0d000000', 1), groups: [uuid('0b000000', 1)], alias: `Van ${String(i).padStart(3, '0')}`, state: 'stopped',
    })),
  }
}

function build() {
  console.log(`building ${DB}: ${DEVICES} devices × ${fmt(FIXES_EACH)} fixes (one every ${STEP_SECONDS} s for ${DAYS} days)…`)
  const started = performance.now()
  const database = openDatabase(DB)
  importNow(database, dataset())
  const keys = database.sqlite.query('SELECT key FROM devices ORDER BY key').values().map((row) => Number(row[0]))
  const insert = database.sqlite.query('INSERT INTO positions (device, ts, lat, lon, speed, course, altitude, satellites, flags, attributes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?)')
  const write = database.sqlite.transaction((rows: (number | string)[][]) => {
    for (const r of rows) insert.run(...(r as [number, number, number, number, number, number, number, number, string]))
  })
  let batch: (number | string)[][] = []
  // every vehicle drives 40 min at 30–60 km/h and parks 20 min with GPS jitter, over and over
  // (phase-shifted per device), reporting ignition and odometer as a Teltonika would; fixes are
  // written interleaved in time across the fleet, as real traffic is
  const state = keys.map((_, d) => ({ lat: 53.3 + d * 0.01, lon: -6.3 + d * 0.01, heading: d, odometer: 1_000_000 * d }))
  for (let step = 0; step < FIXES_EACH; step++) {
    const s = step * STEP_SECONDS
    for (let d = 0; d < keys.length; d++) {
      const v = state[d]!
      const driving = (s + d * 137) % 3600 < 2400
      let speed = 0
      if (driving) {
        v.heading += Math.sin(s / 970 + d) * 0.2
        speed = 45 + 15 * Math.sin((s + d * 60) / 300)
        const metres = (speed / 3.6) * STEP_SECONDS
        v.lat += (Math.cos(v.heading) * metres) / 111_320
        v.lon += (Math.sin(v.heading) * metres) / (111_320 * Math.cos((v.lat * Math.PI) / 180))
        v.odometer += metres
      }
      const jitter = driving ? 0 : (((Math.sin((s + d) * 12.9898) * 43758.5453) % 1) * 4e-5)
      batch.push([
        keys[d]!, T0 + s, Math.round((v.lat + jitter) * 1e7), Math.round((v.lon - jitter) * 1e7), Math.round(speed * 10),
        Math.round(((((v.heading * 180) / Math.PI) % 360) + 360) % 360), 35, 9, `{"ignition":${driving},"odometer":${Math.round(v.odometer)}}`,
      ])
    }
    if (batch.length >= 100_000) {
      write(batch)
      batch = []
    }
  }
  write(batch)
  closeBuiltFixes(database, started)
}

if (!existsSync(DB)) build()

/** Peak RSS while `work` runs, sampled every 2 ms and at each chunk the work reports. */
async function measure<T>(work: (sample: () => void) => Promise<T>): Promise<{ ms: number; aboveIdleMb: number; result: T }> {
  Bun.gc(true)
  await Bun.sleep(20)
  const idle = process.memoryUsage.rss()
  let peak = idle
  const sample = () => {
    const rss = process.memoryUsage.rss()
    if (rss > peak) peak = rss
  }
  const timer = setInterval(sample, 2)
  const started = performance.now()
  const result = await work(sample)
  const ms = performance.now() - started
  clearInterval(timer)
  sample()
  return { ms, aboveIdleMb: (peak - idle) / MB, result }
}

const app = createApp({ database: openDatabase(DB) })
type App = ReturnType<typeof createApp>
async function product(format: 'json' | 'csv' | 'xlsx', sample: () => void, to = TO, kind = 'trips', target: App = app): Promise<{ bytes: number; trips: number }> {
  const res = await target.handle(
    new Request(`http://localhost/reports/${kind}?from=${FROM}&to=${to}&tz=Europe/Dublin&format=${format}`, { headers: { authorization: `Bearer ${KEY}` } }),
  )
  if (res.status !== 200) throw new Error(`${format}: ${res.status} ${await res.text()}`)
  if (format === 'json') {
    const text = await res.text()
    sample()
    return { bytes: text.length, trips: (JSON.parse(text) as { rows: unknown[] }).rows.length }
  }
  const reader = res.body!.getReader()
  let bytes = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    bytes += value.byteLength
    sample()
  }
  return { bytes, trips: -1 }
}

// memory, each format in a process of its own (so each peak is its own, as in report-files.ts):
// warmed up on a one-day report, then the week's peak RSS above the idle that follows
if (process.argv[2] === '--memory') {
  const format = process.argv[3] as 'json' | 'csv' | 'xlsx'
  const kind = process.argv[4] ?? 'trips'
  // a route: 100 devices × 1,000 fixes = 100,000 rows (the contract's bound is for those), warmed up on a tenth
  await product(format, () => {}, kind === 'route' ? FROM + ROUTE_SECONDS / 10 - 1 : FROM + 86_399, kind)
  const { aboveIdleMb } = await measure((sample) => product(format, sample, kind === 'route' ? FROM + ROUTE_SECONDS - 1 : TO, kind))
  console.log(JSON.stringify({ format, aboveIdleMb }))
  process.exit(0)
}
async function memoryOf(format: 'json' | 'csv' | 'xlsx', kind = 'trips'): Promise<number> {
  const child = Bun.spawn([process.execPath, import.meta.path, '--memory', format, kind], { stdout: 'pipe', stderr: 'inherit' })
  const out = await new Response(child.stdout).text()
  if ((await child.exited) !== 0) throw new Error(`the ${format} memory run failed`)
  return (JSON.parse(out.trim().split('\n').pop()!) as { aboveIdleMb: number }).aboveIdleMb
}

// the floor: what any trips report must do at the least — the store's rows of each device, as
// columns, and the same track/ analysis with the same thresholds
const raw = new Database(DB, { readonly: true, strict: true })
const deviceKeys = raw.query('SELECT key FROM devices ORDER BY alias').values().map((row) => Number(row[0]))
const fixesOf = raw.query('SELECT ts, lat, lon, speed, flags FROM positions WHERE device = ? AND ts BETWEEN ? AND ? ORDER BY ts')
function floor(): { trips: number; fixes: number } {
  let trips = 0
  let fixes = 0
  for (const key of deviceKeys) {
    const rows = fixesOf.values(key, FROM, TO) as [number, number, number, number | null, number][]
    const columns = allocateColumns(rows.length)
    let n = 0
    for (const [ts, lat, lon, speed, flags] of rows) {
      if (flags & FLAG_UNLOCATABLE) continue
      columns.timestamp[n] = ts
      columns.latitude[n] = lat / COORDINATE_SCALE
      columns.longitude[n] = lon / COORDINATE_SCALE
      columns.speed[n] = speed === null ? Number.NaN : speed / SPEED_SCALE
      n++
    }
    const analysis = analyseTrack(truncateColumns(columns, n), { stopThresholdSeconds: DEFAULT_STOP_THRESHOLD_SECONDS, gapThresholdSeconds: DEFAULT_GAP_THRESHOLD_SECONDS })
    trips += analysis.travels.length
    fixes += rows.length
  }
  return { trips, fixes }
}

async function race(engine: string, floorRun: () => Promise<{ trips: number; fixes: number }>, target: App): Promise<number> {
  type Side = { name: string; run: (sample: () => void) => Promise<{ size: string; trips: number }> }
  const sides: Side[] = [
    { name: 'floor: raw read + analyseTrack', run: async () => { const { trips, fixes } = await floorRun(); return { size: `${fmt(fixes)} fixes`, trips } } },
    ...(['json', 'csv', 'xlsx'] as const).map((format) => ({
      name: `GET /reports/trips ${format}`,
      run: async (sample: () => void) => {
        const { bytes, trips } = await product(format, sample, TO, 'trips', target)
        return { size: `${(bytes / MB).toFixed(2)} MB`, trips }
      },
    })),
  ]

  console.log(`\nreports benchmark: a week's trips for ${DEVICES} devices (${fmt(DEVICES * FIXES_EACH)} fixes), ${engine}, median of ${REPEAT} runs after a warm-up`)
  // the sides take turns within each round (floor, JSON, CSV, XLSX), so a busy machine's noise
  // falls on all of them alike
  for (const side of sides) await side.run(() => {}) // warm-up: code compiled, the store's pages cached, for the floor and the product alike
  const runs = new Map<Side, Awaited<ReturnType<typeof measure<{ size: string; trips: number }>>>[]>(sides.map((side) => [side, []]))
  for (let round = 0; round < REPEAT; round++) for (const side of sides) runs.get(side)!.push(await measure(side.run))
  const medians: Record<string, { ms: number; aboveIdleMb: number }> = {}
  for (const side of sides) {
    const sorted = runs.get(side)!.sort((a, b) => a.ms - b.ms)
    const median = sorted[Math.floor(REPEAT / 2)]!
    const peak = Math.max(...sorted.map((r) => r.aboveIdleMb))
    medians[side.name] = { ms: median.ms, aboveIdleMb: peak }
    const trips = median.result.trips >= 0 ? `${fmt(median.result.trips)} trips` : ''
    console.log(`  ${side.name.padEnd(32)} ${fmt(median.ms).padStart(7)} ms  ${median.result.size.padStart(16)}  ${trips.padStart(12)}  in-run peak RSS above idle ${peak.toFixed(1)} MB`)
  }
  const [f, json, csv, xlsx] = sides.map((side) => medians[side.name]!)
  const ratio = json!.ms / f!.ms
  console.log(`  trips JSON / floor ${ratio.toFixed(2)}× (issue 24: ≤ 1.5×: ${ratio <= 1.5 ? 'within' : 'OVER'}); CSV / floor ${(csv!.ms / f!.ms).toFixed(2)}×`)
  const filesRatio = xlsx!.ms / csv!.ms
  console.log(`  XLSX / CSV ${filesRatio.toFixed(2)}× (issue 24: ≤ 2×: ${filesRatio <= 2 ? 'within' : 'OVER'})`)
  return f!.ms
}

const floorMs = await race('SQLite', async () => floor(), app)
// where the product's time goes beyond the floor: one more JSON run, its geocoder and the history
// report reader's forced full collections (history/service.ts, Bun.gc) timed
{
  const geocoder = createGeocoder({})
  let geocodeMs = 0
  const timedGeocoder: Geocoder = {
    ...geocoder,
    async addresses(places) {
      const started = performance.now()
      try {
        return await geocoder.addresses(places)
      } finally {
        geocodeMs += performance.now() - started
      }
    },
  }
  const collect = Bun.gc
  let collectMs = 0
  let collections = 0
  Object.assign(Bun, {
    gc(full?: boolean) {
      const started = performance.now()
      collect(full)
      collectMs += performance.now() - started
      collections++
    },
  })
  const timedApp = createApp({ database: openDatabase(DB), geocoder: timedGeocoder })
  const started = performance.now()
  const res = await timedApp.handle(new Request(`http://localhost/reports/trips?from=${FROM}&to=${TO}`, { headers: { authorization: `Bearer ${KEY}` } }))
  await res.text()
  const totalMs = performance.now() - started
  Object.assign(Bun, { gc: collect })
  console.log(
    `  where the time goes (one more JSON run, ${fmt(totalMs)} ms): addresses ${fmt(geocodeMs)} ms, ${collections} forced full collections ${fmt(collectMs)} ms; ` +
      `the rest ${fmt(totalMs - geocodeMs - collectMs)} ms against the floor's ${fmt(floorMs)} ms`,
  )
}
const memory = {
  json: await memoryOf('json'),
  csv: await memoryOf('csv'),
  xlsx: await memoryOf('xlsx'),
  reads: await memoryOf('csv', 'summary'),
  routeCsv: await memoryOf('csv', 'route'),
  routeXlsx: await memoryOf('xlsx', 'route'),
}
const memoryOk = [memory.csv, memory.xlsx, memory.routeCsv, memory.routeXlsx].every((mb) => mb < MEMORY_BOUND_MB)
console.log(
  `  peak RSS above idle, each in its own process: trips CSV ${memory.csv.toFixed(1)} MB, trips XLSX ${memory.xlsx.toFixed(1)} MB; ` +
    `a 100,000-row route CSV ${memory.routeCsv.toFixed(1)} MB, XLSX ${memory.routeXlsx.toFixed(1)} MB (files: ${memoryOk ? 'within' : 'OVER'} ${MEMORY_BOUND_MB} MB); ` +
    `trips JSON ${memory.json.toFixed(1)} MB; the same reads and analysis writing 100 rows (summary CSV) ${memory.reads.toFixed(1)} MB`,
)

// PostgreSQL, when TEST_DATABASE_URL or DATABASE_URL names a server (a role that may CREATE
// DATABASE): a scratch database holding the same rows (copied from the SQLite file), the floor
// (postgres.js's prepared select of the same rows + analyseTrack) and the product on its stores
const postgresUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL
if (postgresUrl) {
  process.env.BENCH_DATABASE_URL = postgresUrl
  const { scratchDatabase } = await import('./pg-support')
  const { createPostgresStores } = await import('../../src/store/postgres')
  const { importDataset } = await import('../../src/dataset/service')
  const { ensurePartitions } = await import('../../db/postgres/partitions')
  const scratch = await scratchDatabase('reports', 4)
  try {
    const started = performance.now()
    const { handle } = scratch
    await importDataset(createPostgresStores(handle).dataset, dataset())
    await ensurePartitions(handle.sql, [FROM, TO])
    const pgKeys = new Map((await handle.sql`SELECT id, key FROM devices`).map((row) => [row.id as string, Number(row.key)]))
    const sqliteIds = new Map(raw.query('SELECT key, id FROM devices').values().map((row) => [Number(row[0]), String(row[1])]))
    const all = raw.query('SELECT device, ts, lat, lon, speed, course, altitude, satellites, flags, attributes FROM positions WHERE device = ? ORDER BY ts')
    for (const key of deviceKeys) {
      const lines = (all.values(key) as unknown[][]).map((r) => [pgKeys.get(sqliteIds.get(key)!), ...r.slice(1)].map((v) => (v === null ? '\\N' : String(v))).join('\t')).join('\n')
      const copy = await handle.sql`COPY positions (device, ts, lat, lon, speed, course, altitude, satellites, flags, attributes) FROM STDIN`.writable()
      await new Promise<void>((resolve, reject) => copy.end(`${lines}\n`, (error?: Error | null) => (error ? reject(error) : resolve())))
    }
    await handle.sql`ANALYZE positions`
    const [{ n }] = await handle.sql`SELECT count(*)::int AS n FROM positions`
    console.log(`\nPostgreSQL: ${fmt(Number(n))} fixes copied into ${scratch.name} in ${fmt((performance.now() - started) / 1000, 1)} s`)
    const orderedKeys = (await handle.sql`SELECT key FROM devices ORDER BY alias`).map((row) => Number(row.key))
    const pgFloor = async () => {
      let trips = 0
      let fixes = 0
      for (const key of orderedKeys) {
        const rows = (await handle.sql`SELECT ts, lat, lon, speed, flags FROM positions WHERE device = ${key} AND ts BETWEEN ${FROM} AND ${TO} ORDER BY ts`.values()) as unknown as [string | number, number, number, number | null, number][]
        const columns = allocateColumns(rows.length)
        let k = 0
        for (const [ts, lat, lon, speed, flags] of rows) {
          if (flags & FLAG_UNLOCATABLE) continue
          columns.timestamp[k] = Number(ts)
          columns.latitude[k] = lat / COORDINATE_SCALE
          columns.longitude[k] = lon / COORDINATE_SCALE
          columns.speed[k] = speed === null ? Number.NaN : speed / SPEED_SCALE
          k++
        }
        trips += analyseTrack(truncateColumns(columns, k), { stopThresholdSeconds: DEFAULT_STOP_THRESHOLD_SECONDS, gapThresholdSeconds: DEFAULT_GAP_THRESHOLD_SECONDS }).travels.length
        fixes += rows.length
      }
      return { trips, fixes }
    }
    await race('PostgreSQL', pgFloor, createApp({ stores: createPostgresStores(handle) }))
  } finally {
    await scratch.drop()
  }
}
raw.close()
process.exit(0)
