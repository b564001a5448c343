/**
 * `npm run bench -- pg [ingest|devices|nodes …]`: the product on PostgreSQL against its floors,
 * side by side in one run (the performance block of the scale-out contract). The server is
 * BENCH_DATABASE_URL (default postgres://tracker:tracker@127.0.0.1:5432/tracker, a role that may
 * create databases); each part creates its own database and drops it.
 *
 * ingest  (a) fixes/s through the pipeline (src/ingest/pipeline.ts over createPostgresStores'
 *             ingest: identification, validation, group commit under the devices' locks, device
 *             updates, the batch announced to other nodes) vs a plain batched multi-row INSERT
 *             and a COPY of the same fixes into the same database from the same process, one
 *             commit a batch of 500. Goal: ≥ 0.5× the floor. The pipeline also without a node
 *             name (nothing announced): what the announcement costs.
 *         (d) bytes on disk per stored fix: pg_total_relation_size of positions' partitions
 *             (table, TOAST, primary key) / rows, beside the floor's; then two checks: a report
 *             sent twice is stored once, and a fix is readable from another connection as soon as
 *             its ingest settles (acknowledged after commit).
 * devices GET /devices/{id} through createApp over createPostgresStores vs a bare Bun.serve running
 *         the same query on the same pool (autocannon in a third process). Goal: ≥ 0.5×.
 * nodes   two real server processes (`bun src/main.ts serve`, DATABASE_URL) vs one, Teltonika over
 *         TCP from load generators in their own processes, 10-record packets ACKed after commit.
 *         Goal ≥ 1.6×, or the bottleneck named: the CPU seconds of every process (nodes,
 *         generators, PostgreSQL's processes) and of the whole machine over each round.
 *
 * BENCH_FIXES (200,000), BENCH_ROUNDS (2), BENCH_SECONDS (5 for devices, 10 for nodes),
 * BENCH_CONNECTIONS (100) change the sizes.
 */
import { Writable } from 'node:stream'
import { join } from 'node:path'
import postgres from 'postgres'
import { ensurePartitions } from '../../db/postgres/partitions'
import { systemClock } from '../../src/clock'
import { importDataset } from '../../src/dataset/service'
import { LivePositions } from '../../src/ingest/live'
import { createIngestPipeline } from '../../src/ingest/pipeline'
import type { DecodedFix } from '../../src/ingest/types'
import { silentLogger } from '../../src/log'
import { createPostgresStores } from '../../src/store/postgres'
import { fmt, load, startServerProcess, type LoadResult } from './load'
import { cpuSecondsOf, machineCpu, postgresCpu, postgresCpuBetween, scratchDatabase, SERVER_URL } from './pg-support'
import { fleet, ingestWorkload } from './workload'

const FIXES = Number(process.env.BENCH_FIXES ?? 200_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100)
const DEVICES = 100
const REPORT_SIZE = 10
const BATCH = 500
const IMEI_BASE = 359710049000000
const TCP_IMEI_BASE = 860000000000000
const ROOT = join(import.meta.dir, '..', '..')

const uuid = (prefix: string, i: number) => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`
const line = (label: string, value: string) => console.log(`  ${label.padEnd(52)} ${value}`)
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function fleetDocument(devices: { imei: string; serial: string }[], extra: Record<string, unknown> = {}) {
  const account = uuid('0a000000', 1)
  const model = uuid('0d000000', 1)
  return {
    accounts: [{ id: account, name: 'Bench' }],
    models: [{ id: model, name: 'Tracker' }],
    devices: devices.map((d, i) => ({ id: uuid('0f000000', i), account, model, alias: `Bus ${i}`, imei: d.imei, serial: d.serial })),
    ...extra,
  }
}

// ---------------------------------------------------------------------------------------------
// ingest: the same workload as scripts/bench/ingest.ts (100 vehicles, reports of 10 fixes 10 s apart, a week ago)

const { reports: REPORTS, reportAt, startSeconds } = ingestWorkload({ fixes: FIXES, devices: DEVICES, reportSize: REPORT_SIZE })

type Row = [number, number, number, number, number, number, number, number, number, string | null]
/** the rows of reports [from, to) as the floors store them (device key = index + 1, as imported) */
function rowsOf(from: number, to: number): Row[] {
  const rows: Row[] = []
  for (let r = from; r < to; r++) {
    const { device, fixes } = reportAt(r)
    for (const fix of fixes) {
      rows.push([device + 1, fix.timestamp, Math.round(fix.latitude * 1e7), Math.round(fix.longitude * 1e7), Math.round(fix.speed! * 10), Math.round(fix.course!), Math.round(fix.altitude!), fix.satellites!, 0, null])
    }
  }
  return rows
}

const COLUMNS = ['device', 'ts', 'lat', 'lon', 'speed', 'course', 'altitude', 'satellites', 'flags', 'attributes'] as const

async function floorInsert(sql: postgres.Sql): Promise<number> {
  const reportsPerBatch = BATCH / REPORT_SIZE
  const started = performance.now()
  for (let from = 0; from < REPORTS; from += reportsPerBatch) {
    const rows = rowsOf(from, Math.min(REPORTS, from + reportsPerBatch)).map((row) => Object.fromEntries(COLUMNS.map((c, i) => [c, row[i]])))
    await sql`INSERT INTO positions ${sql(rows, ...COLUMNS)} ON CONFLICT (device, ts) DO NOTHING`
  }
  return (REPORTS * REPORT_SIZE) / ((performance.now() - started) / 1000)
}

async function floorCopy(sql: postgres.Sql): Promise<number> {
  const reportsPerBatch = BATCH / REPORT_SIZE
  const started = performance.now()
  for (let from = 0; from < REPORTS; from += reportsPerBatch) {
    const text = rowsOf(from, Math.min(REPORTS, from + reportsPerBatch)).map((row) => row.map((v) => (v === null ? '\\N' : String(v))).join('\t')).join('\n') + '\n'
    const writable: Writable = await sql`COPY positions (device, ts, lat, lon, speed, course, altitude, satellites, flags, attributes) FROM STDIN`.writable()
    await new Promise<void>((resolve, reject) => {
      writable.on('finish', resolve)
      writable.on('error', reject)
      writable.end(text)
    })
  }
  return (REPORTS * REPORT_SIZE) / ((performance.now() - started) / 1000)
}

async function pipelineInsert(handle: Parameters<typeof createPostgresStores>[0], node: string | undefined): Promise<number> {
  // as the server builds it, the node's name given: each batch is announced to the other nodes
  const stores = createPostgresStores(handle, { node })
  const pipeline = createIngestPipeline({ stores, clock: systemClock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600, maxBatchFixes: BATCH })
  const devices = fleet(DEVICES, IMEI_BASE)
  const started = performance.now()
  // A window of reports in flight at a time, as many connections would have.
  const WINDOW = 10_000
  for (let from = 0; from < REPORTS; from += WINDOW) {
    const pending: Promise<unknown>[] = []
    for (let r = from; r < Math.min(REPORTS, from + WINDOW); r++) {
      const { device, fixes } = reportAt(r)
      pending.push(pipeline.ingest({ uniqueId: devices[device]!.imei, fixes, events: [] }))
    }
    await Promise.all(pending)
  }
  const rate = (REPORTS * REPORT_SIZE) / ((performance.now() - started) / 1000)
  await pipeline.stop()
  return rate
}

async function positionsSize(sql: postgres.Sql): Promise<{ bytes: number; rows: number; perFix: number }> {
  await sql`VACUUM ANALYZE positions`
  const [size] = await sql<{ bytes: number }[]>`
    SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::bigint AS bytes FROM pg_inherits WHERE inhparent = 'positions'::regclass`
  const [count] = await sql<{ n: number }[]>`SELECT count(*)::bigint AS n FROM positions`
  return { bytes: size!.bytes, rows: count!.n, perFix: size!.bytes / count!.n }
}

async function ingestBench() {
  console.log(`\ningest on PostgreSQL: ${fmt(FIXES)} fixes across ${DEVICES} devices, reports of ${REPORT_SIZE}, batches of ${BATCH}`)
  const scratch = await scratchDatabase('ingest')
  const { handle } = scratch
  try {
    await importDataset(createPostgresStores(handle).dataset, fleetDocument(fleet(DEVICES, IMEI_BASE)))
    // the floors write into the months' partitions as they are; the pipeline makes its own
    await ensurePartitions(handle.sql, [startSeconds, startSeconds + (REPORTS / DEVICES + 1) * REPORT_SIZE * 10])
    const floorSql = postgres(scratch.url, { max: 1, onnotice: () => {} })
    const reset = () => handle.sql`TRUNCATE positions`.then(() => handle.sql`CHECKPOINT`)
    let insertRate = 0
    let copyRate = 0
    let pipelineRate = 0
    let aloneRate = 0
    let floorSize = { bytes: 0, rows: 0, perFix: 0 }
    let productSize = floorSize
    console.log(`\n(a) pipeline vs plain batched INSERT and COPY (same database, same process), ${ROUNDS} rounds alternating, best round`)
    for (let round = 0; round < ROUNDS; round++) {
      await reset()
      insertRate = Math.max(insertRate, await floorInsert(floorSql))
      floorSize = await positionsSize(handle.sql)
      await reset()
      copyRate = Math.max(copyRate, await floorCopy(floorSql))
      await reset()
      pipelineRate = Math.max(pipelineRate, await pipelineInsert(handle, 'bench'))
      productSize = await positionsSize(handle.sql)
      await reset()
      aloneRate = Math.max(aloneRate, await pipelineInsert(handle, undefined))
    }
    line('floor: plain batched multi-row INSERT', `${fmt(insertRate)} fixes/s`)
    line('floor: COPY … FROM STDIN', `${fmt(copyRate)} fixes/s`)
    line('pipeline (as the server runs it: batches announced)', `${fmt(pipelineRate)} fixes/s`)
    line('pipeline / INSERT (goal ≥ 0.5×)', ratio(pipelineRate, insertRate))
    line('pipeline / COPY (goal ≥ 0.5×)', ratio(pipelineRate, copyRate))
    line('pipeline alone (no NOTIFY to other nodes)', `${fmt(aloneRate)} fixes/s`)
    line('pipeline alone / INSERT', ratio(aloneRate, insertRate))

    console.log('\n(d) positions on disk per stored fix (partitions: table, TOAST and primary key)')
    line('pipeline', `${fmt(productSize.bytes)} bytes / ${fmt(productSize.rows)} fixes = ${fmt(productSize.perFix, 1)} bytes/fix`)
    line('floor (plain INSERT)', `${fmt(floorSize.perFix, 1)} bytes/fix`)

    console.log('\n(e) checks on PostgreSQL')
    const stores = createPostgresStores(handle, { node: 'bench' })
    const pipeline = createIngestPipeline({ stores, clock: systemClock, log: silentLogger, live: new LivePositions(), offlineAfterSeconds: 600 })
    const other = postgres(scratch.url, { max: 1, onnotice: () => {} })
    const countOf = async (device: number) => (await other<{ n: number }[]>`SELECT count(*)::int AS n FROM positions WHERE device = ${device}`)[0]!.n
    const fresh = Math.floor(Date.now() / 1000) - 60
    const fix = (ts: number): DecodedFix => ({ timestamp: ts, latitude: 50.1, longitude: 8.6, speed: 10, course: 90, altitude: 100, satellites: 9, valid: true, attributes: {} })
    const key = 1
    await handle.sql`DELETE FROM positions WHERE device = ${key}`
    await pipeline.ingest({ uniqueId: String(IMEI_BASE), fixes: [fix(fresh)], events: [] })
    const afterAck = await countOf(key)
    line('one fix, read from another connection on its ack', `${afterAck} row (${afterAck === 1 ? 'committed before the ack' : 'NOT committed before the ack!'})`)
    await pipeline.ingest({ uniqueId: String(IMEI_BASE), fixes: [fix(fresh), { ...fix(fresh), latitude: 50.2 }, fix(fresh + 1)], events: [] })
    await Promise.all([pipeline.ingest({ uniqueId: String(IMEI_BASE), fixes: [fix(fresh + 1)], events: [] }), pipeline.ingest({ uniqueId: String(IMEI_BASE), fixes: [fix(fresh + 1)], events: [] })])
    const afterDuplicates = await countOf(key)
    line('same (device, second) sent 5 more times, 1 new second', `${afterDuplicates} rows (${afterDuplicates === 2 ? 'one fix per (device, second)' : 'DUPLICATES STORED!'})`)
    await pipeline.stop()
    await other.end()
    await floorSql.end()
  } finally {
    await scratch.drop()
  }
}

// ---------------------------------------------------------------------------------------------
// devices: GET /devices/{id}, product vs bare Bun.serve on the same pool

async function devicesBench() {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5)
  const count = 1000
  console.log(`\nGET /devices/{id} on PostgreSQL: ${count} devices, ${ROUNDS} alternating rounds of ${seconds} s, 32 connections (autocannon)`)
  const scratch = await scratchDatabase('devices')
  try {
    const account = uuid('0a000000', 1)
    const groups = Array.from({ length: 10 }, (_, i) => uuid('0b000000', i))
    const apiKey = 'bench-key-0123456789abcdef'
    await importDataset(createPostgresStores(scratch.handle).dataset, {
      accounts: [{ id: account, name: 'Bench' }],
      groups: groups.map((id, i) => ({ id, account, name: `G${i}` })),
      users: [{ id: uuid('0c000000', 1), account, name: 'bench', groups, api_keys: [apiKey] }],
      models: [{ id: uuid('0d000000', 1), name: 'M' }],
      devices: Array.from({ length: count }, (_, i) => ({
        id: uuid('0f000000', i), account, model: uuid('0d000000', 1), groups: [groups[i % groups.length]], alias: `Truck ${String(i).padStart(4, '0')}`,
        properties: { plate: `AB-${i}` }, serial: `S${i}`, imei: String(359710049000000 + i), iccid: '8934', state: i % 3 ? 'stopped' : 'off',
        location: [48 + i / 1e4, 2 + i / 1e4], connected: i % 2 === 0, connected_at: '2026-11-01T08:00:00Z', created_at: '2026-01-01T00:00:00Z',
      })),
    })
    await scratch.handle.close()
    const script = join(import.meta.dir, 'pg-devices-server.ts')
    const headers = { authorization: `Bearer ${apiKey}` }
    const route = `/devices/${uuid('0f000000', 421)}`
    const measure = async (mode: 'product' | 'floor') => {
      const server = await startServerProcess(script, [mode, scratch.url])
      try {
        await load(`http://127.0.0.1:${server.port}${route}`, { seconds: 1, headers }) // warm-up
        return await load(`http://127.0.0.1:${server.port}${route}`, { seconds, headers })
      } finally {
        await server.stop()
      }
    }
    const product: LoadResult[] = []
    const floor: LoadResult[] = []
    for (let round = 0; round < ROUNDS; round++) {
      product.push(await measure('product'))
      floor.push(await measure('floor'))
    }
    const best = (rs: LoadResult[]) => rs.reduce((a, b) => (b.requestsPerSecond > a.requestsPerSecond ? b : a))
    const p = best(product)
    const f = best(floor)
    const failures = [...product, ...floor].reduce((n, r) => n + r.errors + r.non2xx, 0)
    line('product (createApp over createPostgresStores)', `${fmt(p.requestsPerSecond)} req/s   p50 ${fmt(p.p50, 2)} ms   p99 ${fmt(p.p99, 2)} ms`)
    line('floor (bare Bun.serve, same query, same pool)', `${fmt(f.requestsPerSecond)} req/s   p50 ${fmt(f.p50, 2)} ms   p99 ${fmt(f.p99, 2)} ms`)
    line('product / floor (goal ≥ 0.5×)', `${ratio(p.requestsPerSecond, f.requestsPerSecond)}${failures ? `   (${failures} failed requests!)` : ''}`)
    line('rounds', `product ${product.map((r) => fmt(r.requestsPerSecond)).join(', ')}   floor ${floor.map((r) => fmt(r.requestsPerSecond)).join(', ')}`)
  } finally {
    await scratch.drop()
  }
}

// ---------------------------------------------------------------------------------------------
// nodes: one vs two server processes on one PostgreSQL, Teltonika over TCP

async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

async function startNode(url: string, name: string) {
  const http = await freePort()
  const teltonika = await freePort()
  const ports = Object.fromEntries(['GT06_PORT', 'H02_PORT', 'GL200_PORT', 'OSMAND_PORT', 'TELTONIKA_PORT'].map((v) => [v, '0']))
  const child = Bun.spawn([process.execPath, join(ROOT, 'src/main.ts'), 'serve'], {
    cwd: ROOT,
    env: { ...process.env, ...ports, DATABASE_URL: url, NODE_NAME: name, HOST: '127.0.0.1', PORT: String(http), TELTONIKA_PORT: String(teltonika), LOG_LEVEL: 'error', TCP_MAX_CONNECTIONS_PER_ADDRESS: String(CONNECTIONS) },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    const ready = await fetch(`http://127.0.0.1:${http}/ready`).then((r) => r.ok, () => false)
    if (ready) return { pid: child.pid, teltonika, stop: async () => { child.kill(); await child.exited } }
    await sleep(200)
  }
  child.kill()
  throw new Error(`node ${name} did not become ready`)
}

interface NodesRound {
  fixesPerSecond: number
  /** fixes acknowledged */
  fixes: number
  stored: number
  failures: number
  /** seconds from the generators' start to the last one's exit: CPU figures are per second of it */
  window: number
  cpu: { nodes: number[]; generators: number[]; postgres: number; machineBusy: number; machineTotal: number }
}

async function nodesRound(url: string, sql: postgres.Sql, count: 1 | 2, seconds: number): Promise<NodesRound> {
  await sql`TRUNCATE positions`
  await sql`CHECKPOINT`
  const nodes = []
  for (let i = 0; i < count; i++) nodes.push(await startNode(url, `bench-node-${i + 1}`))
  try {
    const per = CONNECTIONS / count
    const nodeCpuBefore = nodes.map((n) => cpuSecondsOf(n.pid))
    const pgBefore = postgresCpu()
    const machineBefore = machineCpu()
    const windowStarted = performance.now()
    const generators = nodes.map((node, i) =>
      Bun.spawn([process.execPath, join(import.meta.dir, 'ingest-load.ts'), 'teltonika', String(node.teltonika), String(per), String(seconds), String(TCP_IMEI_BASE + i * per)], {
        stdout: 'pipe',
        stderr: 'inherit',
      }),
    )
    // generators' CPU is read just before they exit: sampled while they run
    const generatorCpu = generators.map(() => 0)
    const sampler = setInterval(() => generators.forEach((g, i) => (generatorCpu[i] = Math.max(generatorCpu[i]!, cpuSecondsOf(g.pid)))), 250)
    const outputs = await Promise.all(generators.map((g) => new Response(g.stdout).text()))
    clearInterval(sampler)
    const nodeCpu = nodes.map((n, i) => cpuSecondsOf(n.pid) - nodeCpuBefore[i]!)
    const pgCpu = postgresCpuBetween(pgBefore, postgresCpu())
    const machineAfter = machineCpu()
    const window = (performance.now() - windowStarted) / 1000
    const results = outputs.map((out) => JSON.parse(out.trim().split('\n').pop()!) as { fixesPerSecond: number; fixes: number; failures: number })
    const [stored] = await sql<{ n: number }[]>`SELECT count(*)::bigint AS n FROM positions`
    return {
      fixesPerSecond: results.reduce((n, r) => n + r.fixesPerSecond, 0),
      fixes: results.reduce((n, r) => n + r.fixes, 0),
      failures: results.reduce((n, r) => n + r.failures, 0),
      window,
      stored: stored!.n,
      cpu: { nodes: nodeCpu, generators: generatorCpu, postgres: pgCpu, machineBusy: machineAfter.busy - machineBefore.busy, machineTotal: machineAfter.total - machineBefore.total },
    }
  } finally {
    for (const node of nodes) await node.stop()
  }
}

async function nodesBench() {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10)
  console.log(`\ntwo nodes vs one on one PostgreSQL: Teltonika over TCP, ${CONNECTIONS} devices split over the nodes, 10-record packets, ${ROUNDS} alternating rounds of ${seconds} s, best round`)
  const scratch = await scratchDatabase('nodes')
  try {
    await importDataset(createPostgresStores(scratch.handle).dataset, fleetDocument(fleet(CONNECTIONS, TCP_IMEI_BASE, 'T')))
    const one: NodesRound[] = []
    const two: NodesRound[] = []
    for (let round = 0; round < ROUNDS; round++) {
      one.push(await nodesRound(scratch.url, scratch.handle.sql, 1, seconds))
      two.push(await nodesRound(scratch.url, scratch.handle.sql, 2, seconds))
    }
    const best = (rs: NodesRound[]) => rs.reduce((a, b) => (b.fixesPerSecond > a.fixesPerSecond ? b : a))
    const b1 = best(one)
    const b2 = best(two)
    line('one node', `${fmt(b1.fixesPerSecond)} fixes/s (ACK after commit), ${fmt(b1.stored)} stored, ${b1.failures} client failures`)
    line('two nodes', `${fmt(b2.fixesPerSecond)} fixes/s (ACK after commit), ${fmt(b2.stored)} stored, ${b2.failures} client failures`)
    line('two / one (goal ≥ 1.6×)', ratio(b2.fixesPerSecond, b1.fixesPerSecond))
    line('rounds', `one ${one.map((r) => fmt(r.fixesPerSecond)).join(', ')}   two ${two.map((r) => fmt(r.fixesPerSecond)).join(', ')}`)
    console.log('\n  CPU over the best rounds (seconds of CPU per second of load; this machine has 2 cores = 2.00)')
    for (const [label, r] of [['one node', b1], ['two nodes', b2]] as const) {
      const per = (s: number) => (s / r.window).toFixed(2)
      const ours = r.cpu.nodes.reduce((a, b) => a + b, 0) + r.cpu.generators.reduce((a, b) => a + b, 0) + r.cpu.postgres
      line(`  ${label}`, `nodes ${r.cpu.nodes.map(per).join(' + ')}, generators ${r.cpu.generators.map(per).join(' + ')}, PostgreSQL ${per(r.cpu.postgres)}; ` +
        `machine busy ${per(r.cpu.machineBusy)} of ${per(r.cpu.machineTotal)} (others ${per(Math.max(0, r.cpu.machineBusy - ours))})`)
    }
    console.log('\n  CPU per acknowledged fix (µs): what the 2 cores allow at most when nothing else runs')
    for (const [label, r] of [['one node', b1], ['two nodes', b2]] as const) {
      const micros = (s: number) => (s / r.fixes) * 1e6
      const nodes = micros(r.cpu.nodes.reduce((a, b) => a + b, 0))
      const pg = micros(r.cpu.postgres)
      const generators = micros(r.cpu.generators.reduce((a, b) => a + b, 0))
      const total = nodes + pg + generators
      line(`  ${label}`, `nodes ${nodes.toFixed(1)}, PostgreSQL ${pg.toFixed(1)}, generators ${generators.toFixed(1)} = ${total.toFixed(1)} µs → at most ${fmt(2e6 / total)} fixes/s on 2 idle cores`)
    }
  } finally {
    await scratch.drop()
  }
}

// ---------------------------------------------------------------------------------------------

const parts: Record<string, () => Promise<void>> = { ingest: ingestBench, devices: devicesBench, nodes: nodesBench }
const asked = process.argv.slice(2)
const unknown = asked.filter((name) => !(name in parts))
if (unknown.length > 0) {
  console.error(`usage: npm run bench -- pg [${Object.keys(parts).join('|')} …] (unknown: ${unknown.join(', ')})`)
  process.exit(2)
}
console.log(`pg benchmark against ${new URL(SERVER_URL).host} (BENCH_DATABASE_URL)`)
for (const name of asked.length ? asked : Object.keys(parts)) await parts[name]!()
