/**
 * `npm run bench -- ingest`: the ingest path against its floors, side by side in one run.
 *
 * (a) fixes/s through the pipeline (validation, device lookup, group commit, device updates,
 *     live positions) vs a plain batched INSERT of the same fixes into the same schema, same
 *     pragmas (the floor). Goal: ≥ 0.5× the floor.
 * (b) OsmAnd requests/s from autocannon in a second process, vs a bare Bun.serve answering 200.
 * (c) Teltonika: 10-record Codec 8 packets over many TCP connections from a second process,
 *     each ACKed after its commit; fixes/s vs a bare TCP server that ACKs without storing.
 *     Goal: ≥ 20,000 fixes/s.
 * (d) bytes of database per stored fix after (a): page_count × page_size / rows, the primary
 *     key included. Goal: ≤ 40.
 *
 * Loopback only; every part is bounded in time. BENCH_FIXES (1,000,000), BENCH_SECONDS (5),
 * BENCH_ROUNDS (2), BENCH_CONNECTIONS (100) change the sizes; BENCH_BATCH_DELAY_MS sets the
 * pipeline's maxBatchDelayMs for (b) and (c).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, type DatabaseHandle } from '../../db/client'
import { systemClock } from '../../src/clock'
import { importNow } from '../../test/support/import'
import { LivePositions } from '../../src/ingest/live'
import { startOsmandListener } from '../../src/ingest/protocols/osmand/listener'
import { createIngestPipeline } from '../../src/ingest/pipeline'
import { teltonika } from '../../src/ingest/protocols/teltonika/descriptor'
import { createConnectionGate, startTcpListener } from '../../src/ingest/tcp'
import { silentLogger } from '../../src/log'
import { fmt } from './load'
import { fleet, ingestWorkload } from './workload'

const FIXES = Number(process.env.BENCH_FIXES ?? 1_000_000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
/** the pipeline's maxBatchDelayMs for (b) and (c); unset: its default (flush on the next tick) */
const DELAY = process.env.BENCH_BATCH_DELAY_MS ? Number(process.env.BENCH_BATCH_DELAY_MS) : undefined
const DEVICES = 100
const REPORT_SIZE = 10
const BATCH = 500
const IMEI_BASE = 359710049000000
const TCP_IMEI_BASE = 860000000000000

const dir = mkdtempSync(join(tmpdir(), 'bench-ingest-'))
const loadScript = join(import.meta.dir, 'ingest-load.ts')
const uuid = (prefix: string, i: number) => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`

function fleetDatabase(name: string, devices: { imei: string; serial: string }[]): DatabaseHandle {
  const database = openDatabase(join(dir, `${name}.db`))
  const account = uuid('0a000000', 1)
  const model = uuid('0d000000', 1)
  importNow(database, {
    accounts: [{ id: account, name: 'Bench' }],
    models: [{ id: model, name: 'Tracker' }],
    devices: devices.map((d, i) => ({ id: uuid('0f000000', i), account, model, alias: `Bus ${i}`, imei: d.imei, serial: d.serial })),
  })
  return database
}


const { reports: REPORTS, reportAt } = ingestWorkload({ fixes: FIXES, devices: DEVICES, reportSize: REPORT_SIZE })

function floorInsert(database: DatabaseHandle): number {
  const insert = database.sqlite.query(
    `INSERT OR IGNORE INTO positions (device, ts, lat, lon, speed, course, altitude, satellites, flags, attributes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const reportsPerBatch = BATCH / REPORT_SIZE
  const write = database.sqlite.transaction((from: number, to: number) => {
    for (let r = from; r < to; r++) {
      const { device, fixes } = reportAt(r)
      for (const fix of fixes) {
        insert.run(device + 1, fix.timestamp, Math.round(fix.latitude * 1e7), Math.round(fix.longitude * 1e7), Math.round(fix.speed! * 10), Math.round(fix.course!), Math.round(fix.altitude!), fix.satellites, 0, null)
      }
    }
  })
  const started = performance.now()
  for (let from = 0; from < REPORTS; from += reportsPerBatch) write.immediate(from, Math.min(REPORTS, from + reportsPerBatch))
  return (REPORTS * REPORT_SIZE) / ((performance.now() - started) / 1000)
}

async function pipelineInsert(database: DatabaseHandle): Promise<number> {
  const pipeline = createIngestPipeline({ database: database, clock: systemClock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, maxBatchFixes: BATCH })
  const devices = fleet(DEVICES, IMEI_BASE)
  const started = performance.now()
  // A window of reports in flight at a time, as many connections would have.
  const WINDOW = 10_000
  for (let from = 0; from < REPORTS; from += WINDOW) {
    const pending: Promise<unknown>[] = []
    for (let r = from; r < Math.min(REPORTS, from + WINDOW); r++) {
      const { device, fixes } = reportAt(r)
      pending.push(pipeline.ingest({ uniqueId: devices[device].imei, fixes, events: [] }))
    }
    await Promise.all(pending)
  }
  const rate = (REPORTS * REPORT_SIZE) / ((performance.now() - started) / 1000)
  await pipeline.stop()
  return rate
}

function bytesPerFix(database: DatabaseHandle): { bytes: number; rows: number; perFix: number } {
  database.sqlite.run('PRAGMA wal_checkpoint(TRUNCATE)')
  const pages = database.sqlite.query<{ page_count: number }, []>('PRAGMA page_count').get()!.page_count
  const pageSize = database.sqlite.query<{ page_size: number }, []>('PRAGMA page_size').get()!.page_size
  const rows = database.sqlite.query<{ n: number }, []>('SELECT count(*) AS n FROM positions').get()!.n
  return { bytes: pages * pageSize, rows, perFix: (pages * pageSize) / rows }
}

async function child(args: string[]): Promise<Record<string, number>> {
  const process_ = Bun.spawn([process.execPath, loadScript, ...args], { stdout: 'pipe', stderr: 'inherit' })
  const timeout = setTimeout(() => process_.kill(), (SECONDS + 30) * 1000)
  const out = await new Response(process_.stdout).text()
  await process_.exited
  clearTimeout(timeout)
  return JSON.parse(out.trim().split('\n').pop()!)
}

const line = (label: string, value: string) => console.log(`  ${label.padEnd(48)} ${value}`)
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`

try {
  console.log(`ingest benchmark: ${fmt(FIXES)} fixes across ${DEVICES} devices, reports of ${REPORT_SIZE}, batches of ${BATCH}`)

  // (a) + (d): rounds alternate floor and pipeline, each on a fresh database; best round of each.
  console.log(`\n(a) pipeline vs plain batched insert (same schema, same pragmas), ${ROUNDS} rounds, best round`)
  let floorRate = 0
  let productRate = 0
  let floorSize = { bytes: 0, rows: 0, perFix: 0 }
  let productSize = floorSize
  for (let round = 0; round < ROUNDS; round++) {
    const floorDb = fleetDatabase(`floor-${round}`, fleet(DEVICES, IMEI_BASE))
    floorRate = Math.max(floorRate, floorInsert(floorDb))
    floorSize = bytesPerFix(floorDb)
    floorDb.close()
    const productDb = fleetDatabase(`pipeline-${round}`, fleet(DEVICES, IMEI_BASE))
    productRate = Math.max(productRate, await pipelineInsert(productDb))
    productSize = bytesPerFix(productDb)
    productDb.close()
    rmSync(join(dir, `floor-${round}.db`), { force: true })
    rmSync(join(dir, `pipeline-${round}.db`), { force: true })
  }
  line('floor: plain batched INSERT', `${fmt(floorRate)} fixes/s`)
  line('pipeline', `${fmt(productRate)} fixes/s`)
  line('pipeline / floor (goal ≥ 0.5×)', ratio(productRate, floorRate))

  console.log('\n(d) database size per stored fix (goal ≤ 40 bytes)')
  line('pipeline database', `${fmt(productSize.bytes)} bytes / ${fmt(productSize.rows)} fixes = ${fmt(productSize.perFix, 1)} bytes/fix`)
  line('floor database', `${fmt(floorSize.perFix, 1)} bytes/fix`)

  // (b) and (c): rounds alternate floor and product, so that machine noise hits both; the best
  // round of each is reported.
  async function osmandFloor() {
    const bare = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('OK', { headers: { 'content-type': 'text/plain' } }) })
    try {
      return await child(['osmand', `http://127.0.0.1:${bare.port}`, '50', String(SECONDS), 'S', String(DEVICES)])
    } finally {
      await bare.stop(true)
    }
  }
  async function osmandProduct(round: number) {
    const database = fleetDatabase(`osmand-${round}`, fleet(DEVICES, IMEI_BASE))
    const pipeline = createIngestPipeline({ database: database, clock: systemClock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, maxBatchDelayMs: DELAY })
    const listener = startOsmandListener({ pipeline, clock: systemClock, log: silentLogger, port: 0, hostname: '127.0.0.1' })
    try {
      const result = await child(['osmand', `http://127.0.0.1:${listener.port}`, '50', String(SECONDS), 'S', String(DEVICES)])
      await listener.stop()
      await pipeline.stop()
      return { ...result, stored: database.sqlite.query<{ n: number }, []>('SELECT count(*) AS n FROM positions').get()!.n }
    } finally {
      database.close()
    }
  }
  async function teltonikaFloor() {
    const bare = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        binaryType: 'uint8array',
        // Answers the handshake with 01 and each packet with its record count: no decoding, no storage.
        data(socket, chunk) {
          const bytes = chunk as Uint8Array
          if (bytes[0] === 0 && bytes[1] !== 0) socket.write(Uint8Array.of(1))
          else if (bytes.length > 9) socket.write(Uint8Array.of(0, 0, 0, bytes[9]))
        },
      },
    })
    try {
      return await child(['teltonika', String(bare.port), String(CONNECTIONS), String(SECONDS), String(TCP_IMEI_BASE)])
    } finally {
      bare.stop(true)
    }
  }
  async function teltonikaProduct(round: number) {
    const database = fleetDatabase(`teltonika-${round}`, fleet(CONNECTIONS, TCP_IMEI_BASE, 'T'))
    const pipeline = createIngestPipeline({ database: database, clock: systemClock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, maxBatchDelayMs: DELAY })
    // every load connection comes from 127.0.0.1: lift the per-address cap
    const gate = createConnectionGate({ maxConnectionsPerAddress: CONNECTIONS })
    const listener = startTcpListener(teltonika, { pipeline, clock: systemClock, log: silentLogger, port: 0, hostname: '127.0.0.1', gate })
    try {
      const result = await child(['teltonika', String(listener.port), String(CONNECTIONS), String(SECONDS), String(TCP_IMEI_BASE)])
      await listener.stop()
      await pipeline.stop()
      return { ...result, stored: database.sqlite.query<{ n: number }, []>('SELECT count(*) AS n FROM positions').get()!.n, batches: pipeline.stats.batches }
    } finally {
      database.close()
    }
  }
  const best = <T extends Record<string, number>>(results: T[], key: keyof T) => results.reduce((a, b) => (b[key] > a[key] ? b : a))

  console.log(`\n(b) OsmAnd over HTTP, autocannon in a second process, 50 connections, ${ROUNDS} × ${SECONDS} s each, best round`)
  const osmandFloors: Record<string, number>[] = []
  const osmandProducts: Record<string, number>[] = []
  for (let round = 0; round < ROUNDS; round++) {
    osmandFloors.push(await osmandFloor())
    osmandProducts.push(await osmandProduct(round))
  }
  const bareHttp = best(osmandFloors, 'requestsPerSecond')
  const osmand = best(osmandProducts, 'requestsPerSecond')
  line('floor: bare Bun.serve', `${fmt(bareHttp.requestsPerSecond)} req/s`)
  line('OsmAnd listener (200 after commit)', `${fmt(osmand.requestsPerSecond)} req/s, p50 ${osmand.p50} ms, p99 ${osmand.p99} ms`)
  line('listener / floor', ratio(osmand.requestsPerSecond, bareHttp.requestsPerSecond))
  line('answers 200 / not 200 / errors / fixes stored', `${fmt(osmand.total - osmand.non2xx)} / ${osmand.non2xx} / ${osmand.errors} / ${fmt(osmand.stored)}`)

  console.log(`\n(c) Teltonika over TCP, ${CONNECTIONS} devices in a second process, 10-record packets, ${ROUNDS} × ${SECONDS} s each, best round`)
  const tcpFloors: Record<string, number>[] = []
  const tcpProducts: Record<string, number>[] = []
  for (let round = 0; round < ROUNDS; round++) {
    tcpFloors.push(await teltonikaFloor())
    tcpProducts.push(await teltonikaProduct(round))
  }
  const bareTcp = best(tcpFloors, 'fixesPerSecond')
  const tcp = best(tcpProducts, 'fixesPerSecond')
  line('floor: bare TCP server, ACK without storing', `${fmt(bareTcp.fixesPerSecond)} fixes/s`)
  line('Teltonika listener (ACK after commit)', `${fmt(tcp.fixesPerSecond)} fixes/s (goal ≥ 20,000), ${fmt(tcp.fixes / tcp.batches)} fixes/commit`)
  line('listener / floor', ratio(tcp.fixesPerSecond, bareTcp.fixesPerSecond))
  line('acknowledged / stored / client failures', `${fmt(tcp.fixes)} / ${fmt(tcp.stored)} / ${tcp.failures}`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
