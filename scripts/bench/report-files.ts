/**
 * `npm run bench -- report-files`: a 100,000-row route document (4 devices, every column of the
 * contract's route kind, rows produced lazily by an async generator as the service gives them)
 * written as CSV and as XLSX by src/reports/formats, the body read to the end as a download would.
 * Each format runs in its own process (so each peak is its own), three times after a warm-up;
 * reported: the median time, the bytes, and the peak resident memory above the process's idle
 * (contract: < 64 MB while producing a 100,000-row route), against the floor (the same rows
 * pulled and dropped), and the XLSX/CSV time ratio of the writers alone (issue 24 bounds the trips report's, measured by the reports bench).
 */
import { renderReport } from '../../src/reports/formats'
import type { ReportColumn, ReportDocument, ReportRow } from '../../src/reports/types'
import { fmt } from './load'

const ROWS = 100_000
const RUNS = 3
const MEMORY_BOUND_MB = 64
const T0 = 1793577600 // 2026-11-02T00:00:00Z
const MB = 1024 * 1024

const columns: ReportColumn[] = [
  { key: 'device', type: 'text', title: 'Device' },
  { key: 'alias', type: 'text', title: 'Vehicle' },
  { key: 'timestamp', type: 'time', title: 'Time' },
  { key: 'latitude', type: 'number', title: 'Latitude' },
  { key: 'longitude', type: 'number', title: 'Longitude' },
  { key: 'speed_kmh', type: 'number', title: 'Speed (km/h)' },
  { key: 'course', type: 'number', title: 'Course' },
  { key: 'altitude_m', type: 'number', title: 'Altitude (m)' },
  { key: 'satellites', type: 'integer', title: 'Satellites' },
  { key: 'attributes', type: 'json', title: 'Attributes' },
]

async function* rows(count: number): AsyncGenerator<ReportRow> {
  for (let i = 0; i < count; i++) {
    const device = Math.floor((i * 4) / count)
    yield {
      device: `0f000000-0000-4000-8000-00000000000${device}`,
      alias: `Van ${device}`,
      timestamp: T0 + (i % (count / 4)) * 6,
      latitude: 53.3498 + Math.sin(i / 500) / 100,
      longitude: -6.2603 + Math.cos(i / 700) / 100,
      speed_kmh: Math.round(40 + 20 * Math.sin(i / 50)),
      course: (i * 7) % 360,
      altitude_m: 20 + (i % 15),
      satellites: 8 + (i % 5),
      attributes: { ignition: i % 100 !== 0, odometer: 1_000_000 + i * 8 },
    }
  }
}

const route = (count: number): ReportDocument => ({
  kind: 'route',
  columns,
  rows: rows(count),
  totals: null,
  period: { from: T0, to: T0 + 7 * 86_400 },
  tz: 'Europe/Dublin',
  generatedAt: T0 + 7 * 86_400,
})

type Mode = 'csv' | 'xlsx' | 'floor'

/** One run: the time to read the whole body, its bytes, the peak RSS seen meanwhile. */
async function once(mode: Mode, count: number, peak: { rss: number }) {
  const sample = () => {
    const rss = process.memoryUsage.rss()
    if (rss > peak.rss) peak.rss = rss
  }
  const timer = setInterval(sample, 2)
  const started = performance.now()
  let bytes = 0
  if (mode === 'floor') {
    for await (const _ of route(count).rows) bytes++
  } else {
    const reader = renderReport(route(count), mode).body.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      bytes += value.byteLength
      sample()
    }
  }
  const ms = performance.now() - started
  clearInterval(timer)
  return { ms, bytes }
}

async function child(mode: Mode) {
  await once(mode, 2_000, { rss: 0 }) // warm-up: code loaded and compiled, as in a server up for a while
  Bun.gc(true)
  await Bun.sleep(50)
  const idle = process.memoryUsage.rss()
  const peak = { rss: idle }
  const times: number[] = []
  let bytes = 0
  for (let run = 0; run < RUNS; run++) {
    const result = await once(mode, ROWS, peak)
    times.push(result.ms)
    bytes = result.bytes
  }
  times.sort((a, b) => a - b)
  console.log(JSON.stringify({ mode, ms: times[Math.floor(RUNS / 2)], bytes, idleMb: idle / MB, aboveIdleMb: (peak.rss - idle) / MB }))
}

async function measure(mode: Mode) {
  const process_ = Bun.spawn([process.execPath, import.meta.path, '--child', mode], { stdout: 'pipe', stderr: 'inherit' })
  const out = await new Response(process_.stdout).text()
  if ((await process_.exited) !== 0) throw new Error(`${mode} run failed`)
  return JSON.parse(out.trim().split('\n').pop()!) as { mode: Mode; ms: number; bytes: number; idleMb: number; aboveIdleMb: number }
}

if (process.argv[2] === '--child') {
  await child(process.argv[3] as Mode)
} else {
  console.log(`report files: a ${fmt(ROWS)}-row route (10 columns, async rows), median of ${RUNS} runs, each format in its own process`)
  const results = []
  for (const mode of ['floor', 'csv', 'xlsx'] as const) results.push(await measure(mode))
  const [floor, csv, xlsx] = results
  for (const r of results) {
    const what = r.mode === 'floor' ? 'floor (rows pulled, dropped)' : r.mode
    const size = r.mode === 'floor' ? `${fmt(r.bytes)} rows` : `${(r.bytes / MB).toFixed(1)} MB`
    console.log(
      `  ${what.padEnd(30)} ${r.ms.toFixed(0).padStart(6)} ms  ${size.padStart(12)}  peak RSS above idle ${r.aboveIdleMb.toFixed(1)} MB (idle ${r.idleMb.toFixed(0)} MB; bound < ${MEMORY_BOUND_MB} MB)`,
    )
  }
  const ratio = xlsx.ms / csv.ms
  // issue 24's XLSX ≤ 2× CSV is for a week's trips report, the analysis and the reads included
  // (`npm run bench -- reports`); here the writers alone, where CSV is only text
  console.log(`  csv / floor ${(csv.ms / floor.ms).toFixed(1)}×; xlsx / csv ${ratio.toFixed(2)}× (the writers alone; issue 24's ≤ 2× is the trips report's, in the reports bench)`)
  const memoryOk = csv.aboveIdleMb < MEMORY_BOUND_MB && xlsx.aboveIdleMb < MEMORY_BOUND_MB
  console.log(`  memory ${memoryOk ? 'within' : 'OVER'} the bound`)
}
