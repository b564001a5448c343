/**
 * `npm run bench -- alerts`: what the alert rules cost ingest, side by side in one run (issue 14:
 * with 1,000 geofences and one notification, ingest keeps ≥ 0.7× of its throughput without).
 *
 * Each round ingests the same BENCH_FIXES (300,000) fixes, 10-fix reports of 100 devices driving
 * small loops over a 1°×1° area, through the pipeline twice into fresh databases: without alerts,
 * then with the rules, 1,000 circular geofences (50 m – 2 km, one in ten with a speed limit, so
 * devices cross some) and one enabled `*` webhook notification (every derived event queued in the
 * outbox). Prints fixes/s of both, their ratio, the rules' onFixes µs per report, and the events
 * derived (the same every round: a check that the rules did their work). BENCH_ROUNDS (3),
 * BENCH_GEOFENCES (1,000) change the sizes. The goal is read on the median ratio.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { createGeofenceCache } from '../../src/alerts/cache'
import { createAlertRules, type RuleFix } from '../../src/alerts/rules'
import { systemClock } from '../../src/clock'
import { importDataset } from '../../src/dataset/service'
import { LivePositions } from '../../src/ingest/live'
import { createIngestPipeline } from '../../src/ingest/pipeline'
import { silentLogger } from '../../src/log'

const FIXES = Number(process.env.BENCH_FIXES ?? 300_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const GEOFENCES = Number(process.env.BENCH_GEOFENCES ?? 1000)
const DEVICES = 100
const FIXES_PER_REPORT = 10
const IMEI_BASE = 359710049000000

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

async function run(name: string, alerts: boolean) {
  const database = openDatabase(join(dir, `${name}.db`))
  const account = uuid('0a000000', 1)
  importDataset(database.sqlite, {
    accounts: [{ id: account, name: 'Bench' }],
    models: [{ id: uuid('0d000000', 1), name: 'Tracker' }],
    devices: Array.from({ length: DEVICES }, (_, i) => ({ id: uuid('0f000000', i), account, model: uuid('0d000000', 1), alias: `Bus ${i}`, imei: String(IMEI_BASE + i), serial: `S${i}` })),
  })
  let rulesMs = 0
  let rulesCalls = 0
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
    const rules = createAlertRules({ database, clock: systemClock, geofences: createGeofenceCache({ db: database.db, clock: systemClock }) })
    const timed = {
      ...rules,
      onFixes(deviceKey: number, fixes: readonly RuleFix[]) {
        const t0 = performance.now()
        const events = rules.onFixes(deviceKey, fixes)
        rulesMs += performance.now() - t0
        rulesCalls++
        return events
      },
    }
    alertOptions = { alerts: { rules: timed, wake: () => {} } }
  }
  const pipeline = createIngestPipeline({ sqlite: database.sqlite, clock: systemClock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, maxBatchFixes: 500, ...alertOptions })
  const reports = FIXES / FIXES_PER_REPORT
  const t0 = performance.now()
  for (let from = 0; from < reports; from += 10_000) {
    const pending = []
    for (let r = from; r < Math.min(reports, from + 10_000); r++) pending.push(pipeline.ingest(report(r)))
    await Promise.all(pending)
  }
  const fixesPerSecond = FIXES / ((performance.now() - t0) / 1000)
  await pipeline.stop()
  const { n: events } = database.sqlite.query('SELECT count(*) AS n FROM events').get() as { n: number }
  const { n: queued } = database.sqlite.query('SELECT count(*) AS n FROM notification_deliveries').get() as { n: number }
  database.close()
  return { fixesPerSecond, events, queued, rulesMicrosPerReport: rulesCalls === 0 ? 0 : (rulesMs * 1000) / rulesCalls }
}

const ratios: number[] = []
try {
  for (let round = 0; round < ROUNDS; round++) {
    const without = await run(`without-${round}`, false)
    const withAlerts = await run(`with-${round}`, true)
    const ratio = withAlerts.fixesPerSecond / without.fixesPerSecond
    ratios.push(ratio)
    console.log(
      `round ${round + 1}: without alerts ${Math.round(without.fixesPerSecond)} fixes/s | with ${GEOFENCES} geofences + 1 notification ${Math.round(withAlerts.fixesPerSecond)} fixes/s` +
        ` (onFixes ${withAlerts.rulesMicrosPerReport.toFixed(1)} µs/report, ${withAlerts.events} events, ${withAlerts.queued} queued) | ratio ${ratio.toFixed(2)}`,
    )
  }
  const median = [...ratios].sort((a, b) => a - b)[Math.floor(ratios.length / 2)]!
  console.log(`median ratio ${median.toFixed(2)} (goal ≥ 0.70)`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
