/**
 * `npm run bench -- history`: one device with a week at 1 Hz in a database holding at least
 * 10 million other fixes. Route and travels end to end over HTTP, against the floor (a raw
 * bun:sqlite select of the same rows plus JSON.stringify of the same points), for 1 hour,
 * 1 day and 7 days, and the server's memory along the way, and under the in-flight cap.
 *
 * The database is built once and kept (BENCH_HISTORY_DB, default in the temp folder).
 */
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { importNow } from '../../test/support/import'
import { closeBuiltFixes, fmt, startServerProcess } from './load'

const DB = process.env.BENCH_HISTORY_DB ?? join(tmpdir(), 'bench-history.db')
const OTHER_DEVICES = 1000
const OTHER_FIXES_EACH = 10_000
const DAYS = 7
const T0 = 1764028800 // 2025-11-25T00:00:00Z
const uuid = (prefix: string, i: number) => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`
const TARGET = uuid('0f000000', 0)
const KEY = 'bench-key-0123456789abcdef'

function build() {
  console.log(`building ${DB}: ${OTHER_DEVICES} devices × ${fmt(OTHER_FIXES_EACH)} fixes, plus ${DAYS} days at 1 Hz for the target…`)
  const started = performance.now()
  const database = openDatabase(DB)
  const account = uuid('0a000000', 1)
  importNow(database, {
    accounts: [{ id: account, name: 'Bench' }],
    groups: [{ id: uuid('0b000000', 1), account, name: 'All' }],
    users: [{ id: uuid('0c000000', 1), account, name: 'bench', groups: [uuid('0b000000', 1)], api_keys: [KEY] }],
    models: [{ id: uuid('0d000000', 1), name: 'M' }],
    devices: Array.from({ length: OTHER_DEVICES + 1 }, (_, i) => ({
      id: uuid('0f000000', i), account, model: uuid('0d000000', 1), groups: [uuid('0b000000', 1)], alias: `D${i}`, state: 'stopped',
    })),
  })
  const insert = database.sqlite.query('INSERT INTO positions (device, ts, lat, lon, speed, course, altitude, satellites, flags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)')
  const write = database.sqlite.transaction((rows: number[][]) => {
    for (const r of rows) insert.run(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7])
  })
  // The target: drives 40 min at 30–60 km/h, parks 20 min with GPS jitter, over and over.
  let lat = 48.85
  let lon = 2.35
  let heading = 0
  let batch: number[][] = []
  for (let s = 0; s < DAYS * 86_400; s++) {
    const driving = s % 3600 < 2400
    let speed = 0
    if (driving) {
      heading += (Math.sin(s / 97) + Math.cos(s / 13)) * 0.05
      speed = 45 + 15 * Math.sin(s / 300)
      lat += (Math.cos(heading) * speed) / 3.6 / 111_320
      lon += (Math.sin(heading) * speed) / 3.6 / (111_320 * Math.cos((lat * Math.PI) / 180))
    }
    const jitter = driving ? 0 : (Math.sin(s * 12.9898) * 43758.5453) % 1 * 4e-5
    batch.push([1, T0 + s, Math.round((lat + jitter) * 1e7), Math.round((lon - jitter) * 1e7), Math.round(speed * 10), Math.round(((heading * 180) / Math.PI) % 360 + 360) % 360, 35, 9])
    if (batch.length === 100_000) {
      write(batch)
      batch = []
    }
  }
  // Everyone else: one fix a minute, interleaved in time with the target, as real traffic is.
  for (let d = 2; d <= OTHER_DEVICES + 1; d++) {
    for (let i = 0; i < OTHER_FIXES_EACH; i++) batch.push([d, T0 + i * 60, 480_000_000 + d * 1000 + i, 20_000_000 + d * 1000 - i, 300, 90, 35, 9])
    if (batch.length >= 100_000) {
      write(batch)
      batch = []
    }
  }
  write(batch)
  closeBuiltFixes(database, started)
}

if (!existsSync(DB)) build()

const script = join(import.meta.dir, 'history-server.ts')
const headers = { authorization: `Bearer ${KEY}` }
const windows = [
  ['1 hour', 3600],
  ['1 day', 86_400],
  ['7 days', 7 * 86_400],
] as const
const REPEAT = Number(process.env.BENCH_REPEAT ?? 7)

async function timeRequests(port: number, path: string, times: number): Promise<{ median: number; bytes: number }> {
  const samples: number[] = []
  let bytes = 0
  // warm-up: the analysis is JIT-compiled after a few calls, as it is in a running server
  for (let i = 0; i < 5; i++) await (await fetch(`http://127.0.0.1:${port}${path}`, { headers })).arrayBuffer()
  for (let i = 0; i < times; i++) {
    const started = performance.now()
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers })
    bytes = (await res.arrayBuffer()).byteLength
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`)
    samples.push(performance.now() - started)
  }
  samples.sort((a, b) => a - b)
  return { median: samples[Math.floor(samples.length / 2)], bytes }
}

const memoryOf = async (port: number) => (await (await fetch(`http://127.0.0.1:${port}/memory`)).json()) as { rssMiB: number; peakMiB: number }

const product = await startServerProcess(script, ['product', DB], { LOG_LEVEL: 'silent' })
const floor = await startServerProcess(script, ['floor', DB])
try {
  console.log(`\nhistory benchmark: median of ${REPEAT} sequential requests each, over HTTP on loopback`)
  console.log('window   fixes      floor ms   route ms  ratio   travels ms  ratio   route MiB   server RSS MiB')
  for (const [name, seconds] of windows) {
    const query = `from=${T0}&to=${T0 + seconds - 1}`
    const f = await timeRequests(floor.port, `/devices/${TARGET}/floor?${query}`, REPEAT)
    const r = await timeRequests(product.port, `/devices/${TARGET}/history/route?${query}`, REPEAT)
    const t = await timeRequests(product.port, `/devices/${TARGET}/history/travels?${query}`, REPEAT)
    const mem = await memoryOf(product.port)
    console.log(
      `${name.padEnd(8)} ${fmt(seconds).padStart(7)}   ${fmt(f.median, 1).padStart(8)}   ${fmt(r.median, 1).padStart(8)}  ${fmt(r.median / f.median, 2).padStart(5)}×  ${fmt(t.median, 1).padStart(10)}  ${fmt(t.median / f.median, 2).padStart(5)}×   ${fmt(r.bytes / 1048576, 1).padStart(8)}   ${fmt(mem.rssMiB).padStart(6)} (peak ${fmt(mem.peakMiB)})`,
    )
  }
  // Memory stays bounded: many more one-day routes do not raise the peak further.
  const before = await memoryOf(product.port)
  for (let i = 0; i < 30; i++) await timeRequests(product.port, `/devices/${TARGET}/history/route?from=${T0 + i * 3600}&to=${T0 + i * 3600 + 86_399}`, 1)
  const after = await memoryOf(product.port)
  console.log(`\nmemory after 30 more one-day routes: RSS ${fmt(after.rssMiB)} MiB (was ${fmt(before.rssMiB)}), peak ${fmt(after.peakMiB)} MiB (was ${fmt(before.peakMiB)})`)
  // One key asks for three weeks at once, reading each as it comes: the per-user cap takes two, the
  // third is told to wait (429); the server's history memory budget (HISTORY_MEMORY_MB) lets one
  // week at 1 Hz in at a time, so the second waits for the first to be read.
  const week = `http://127.0.0.1:${product.port}/devices/${TARGET}/history/route?from=${T0}&to=${T0 + 7 * 86_400 - 1}`
  const started = performance.now()
  const answers = await Promise.all(
    [0, 1, 2].map(async () => {
      const res = await fetch(week, { headers })
      await res.arrayBuffer()
      return res
    }),
  )
  const atOnce = await memoryOf(product.port)
  console.log(
    `three 7-day routes at once, one key: ${answers.map((res) => res.status).join(', ')} in ${fmt((performance.now() - started) / 1000, 2)} s; ` +
      `RSS ${fmt(atOnce.rssMiB)} MiB, peak ${fmt(atOnce.peakMiB)} MiB`,
  )
} finally {
  await product.stop()
  await floor.stop()
}
