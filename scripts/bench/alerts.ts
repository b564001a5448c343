/**
 * `npm run bench -- alerts`: what the alert rules cost ingest, side by side in one run (issue 14:
 * with 1,000 geofences and one notification, ingest keeps ≥ 0.7× of its throughput without).
 *
 * Each round ingests the same BENCH_FIXES (300,000) fixes, 10-fix reports of 100 devices driving
 * small loops over a 1°×1° area, through two pipelines into fresh databases, open side by side and
 * fed the same 2,000 reports in turn (so that a busy moment of a shared machine slows both): one
 * without alerts, one with the rules, 1,000 circular geofences (50 m – 2 km, one in ten with a speed limit, so
 * devices cross some) and one enabled `*` webhook notification (every derived event queued in the
 * outbox). Prints fixes/s of both (wall clock, and per CPU second of the process), their ratio, the rules' onFixes µs per report, and the events
 * derived (the same every round: a check that the rules did their work). BENCH_ROUNDS (3),
 * BENCH_GEOFENCES (1,000) change the sizes. The goal is read on the median ratio.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { createGeofenceCache } from '../../src/alerts/cache'
import { createGeofenceCacheReads, createRuleStateStore } from '../../src/store/geofences'
import { createAlertRules, type RuleFix } from '../../src/alerts/rules'
import { systemClock } from '../../src/clock'
import { importNow } from '../../test/support/import'
import { LivePositions } from '../../src/ingest/live'
import { createIngestPipeline } from '../../src/ingest/pipeline'
import { silentLogger } from '../../src/log'

const FIXES = Number(process.env.BENCH_FIXES ?? 300_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const GEOFENCES = Number(process.env.BENCH_GEOFENCES ?? 1000)
const DEVICES = 100
const FIXES_PER_REPORT = 10
const IMEI_BASE = 359710049000000
/** reports fed to one side before the other takes its turn */
const CHUNK_REPORTS = 2000

const dir = mkdtempSync(join(tmpdir(), 'bench-alerts-'))
const uuid = (prefix: string, i: number) => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`
const startSeconds = Math.floor(Date.now() / 1000) - 7 * 86400

function report(r: number) {
  const device = r % DEVICES
  const first = Math.floor(r / DEVICES) * FIXES_PER_REPORT
  const fixes = []
  for (let s = first; s < first + FIXES_PER_REPORT; s++) {
    fixes.push({
      timestamp: startSeconds + s * 10,
      latitude: 53.4 + device * 0.01 + Math.sin(s / 50) * 0.01,
      longitude: -2.9 + device * 0.01 + Math.cos(s / 50) * 0.01,
      speed: (s % 90) + 0.4,
      course: 0,
      altitude: 20,
      satellites: 9,
      valid: true,
      attributes: {},
    })
  }
  return { uniqueId: String(IMEI_BASE + device), fixes, events: [] }
}

interface Side {
  name: string
  database: ReturnType<typeof openDatabase>
  pipeline: ReturnType<typeof createIngestPipeline>
  /** time spent ingesting, ms: wall clock and this process's CPU */
  wallMs: number
  cpuMs: number
  rulesMs: number
  rulesCalls: number
}

function open(name: string, alerts: boolean): Side {
  const database = openDatabase(join(dir, `${name}.db`))
  const account = uuid('0a000000', 1)
  importNow(database, {
    accounts: [{ id: account, name: 'Bench' }],
    models: [{ id: uuid('0d000000', 1), name: 'Tracker' }],
    devices: Array.from({ length: DEVICES }, (_, i) => ({ id: uuid('0f000000', i), account, model: uuid('0d000000', 1), alias: `Bus ${i}`, imei: String(IMEI_BASE + i), serial: `S${i}` })),
  })
  const side = { name, database, wallMs: 0, cpuMs: 0, rulesMs: 0, rulesCalls: 0 } as Side
  let alertOptions = {}
  if (alerts) {
    const now = Date.now()
    const insertGeofence = database.sqlite.query(
      'INSERT INTO geofences (id, account_id, name, area, groups, speed_limit, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    )
    for (let g = 0; g < GEOFENCES; g++) {
      const area = { type: 'Circle', center: [53.4 + ((g * 37) % 1000) / 1000, -2.9 + ((g * 91) % 1000) / 1000], radius: 50 + (g % 40) * 50 }
      insertGeofence.run(uuid('0e000000', g), account, `G${g}`, JSON.stringify(area), '[]', g % 10 === 0 ? 60 : null, now, now)
    }
    database.sqlite
      .query(
        'INSERT INTO notifications (id, account_id, name, events, groups, positions, channel_type, url, secret, enabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, 1, ?, ?)',
      )
      .run(uuid('0b000000', 1), account, 'All', '["*"]', '[]', 'webhook', 'https://hooks.example.com/bench', 'secret', now, now)
    const rules = createAlertRules({ states: createRuleStateStore(database), clock: systemClock, geofences: createGeofenceCache({ reads: createGeofenceCacheReads(database), clock: systemClock }) })
    const timed = {
      ...rules,
      beginBatch() {
        const batch = rules.beginBatch()
        return {
          ...batch,
          onFixes(deviceKey: number, fixes: readonly RuleFix[]) {
            const t0 = performance.now()
            const events = batch.onFixes(deviceKey, fixes)
            side.rulesMs += performance.now() - t0
            side.rulesCalls++
            return events
          },
        }
      },
    }
    alertOptions = { alerts: { rules: timed, wake: () => {} } }
  }
  side.pipeline = createIngestPipeline({ database: database, clock: systemClock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, maxBatchFixes: 500, ...alertOptions })
  return side
}

/** Ingests reports [from, to) through one side, timing it. */
async function ingest(side: Side, from: number, to: number) {
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  const pending = []
  for (let r = from; r < to; r++) pending.push(side.pipeline.ingest(report(r)))
  await Promise.all(pending)
  const cpu = process.cpuUsage(cpu0)
  side.wallMs += performance.now() - t0
  side.cpuMs += (cpu.user + cpu.system) / 1000
}

async function close(side: Side) {
  await side.pipeline.stop()
  const { n: events } = side.database.sqlite.query('SELECT count(*) AS n FROM events').get() as { n: number }
  const { n: queued } = side.database.sqlite.query('SELECT count(*) AS n FROM notification_deliveries').get() as { n: number }
  side.database.close()
  return {
    fixesPerSecond: FIXES / (side.wallMs / 1000),
    fixesPerCpuSecond: FIXES / (side.cpuMs / 1000),
    events,
    queued,
    rulesMicrosPerReport: side.rulesCalls === 0 ? 0 : (side.rulesMs * 1000) / side.rulesCalls,
  }
}

/**
 * One round: both pipelines open at once, fed the same reports a chunk at a time, taking turns
 * (which side goes first alternates), so that a slower minute of this shared machine slows both.
 */
async function round(index: number) {
  const without = open(`without-${index}`, false)
  const withAlerts = open(`with-${index}`, true)
  const reports = FIXES / FIXES_PER_REPORT
  for (let from = 0, turn = 0; from < reports; from += CHUNK_REPORTS, turn++) {
    const to = Math.min(reports, from + CHUNK_REPORTS)
    const [first, second] = turn % 2 === 0 ? [without, withAlerts] : [withAlerts, without]
    await ingest(first, from, to)
    await ingest(second, from, to)
  }
  return { without: await close(without), withAlerts: await close(withAlerts) }
}

const ratios: number[] = []
const cpuRatios: number[] = []
try {
  for (let r = 0; r < ROUNDS; r++) {
    const { without, withAlerts } = await round(r)
    const ratio = withAlerts.fixesPerSecond / without.fixesPerSecond
    const cpuRatio = withAlerts.fixesPerCpuSecond / without.fixesPerCpuSecond
    ratios.push(ratio)
    cpuRatios.push(cpuRatio)
    console.log(
      `round ${r + 1}: without alerts ${Math.round(without.fixesPerSecond)} fixes/s | with ${GEOFENCES} geofences + 1 notification ${Math.round(withAlerts.fixesPerSecond)} fixes/s` +
        ` (onFixes ${withAlerts.rulesMicrosPerReport.toFixed(1)} µs/report, ${withAlerts.events} events, ${withAlerts.queued} queued) | ratio ${ratio.toFixed(2)}` +
        ` | per CPU second ${Math.round(without.fixesPerCpuSecond)} vs ${Math.round(withAlerts.fixesPerCpuSecond)}: ${cpuRatio.toFixed(2)}`,
    )
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  console.log(`median ratio ${median(ratios).toFixed(2)} (goal ≥ 0.70); per CPU second ${median(cpuRatios).toFixed(2)}`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
