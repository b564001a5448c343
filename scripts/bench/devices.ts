/**
 * `npm run bench -- devices`: authenticated GET /devices/{id} and GET /devices (99 devices)
 * under load from a second process (autocannon) on loopback, the product against a bare
 * Bun.serve answering the same bytes from the same raw prepared query. Rounds alternate
 * product and floor so that machine noise hits both; the best round of each is reported.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { importNow } from '../../test/support/import'
import { fmt, load, startServerProcess, type LoadResult } from './load'

const DEVICES = 1000
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)

const dir = mkdtempSync(join(tmpdir(), 'bench-devices-'))
const path = join(dir, 'tracker.db')
const uuid = (prefix: string, i: number) => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`
const account = uuid('0a000000', 1)
const groups = Array.from({ length: 10 }, (_, i) => uuid('0b000000', i))
const key = 'bench-key-0123456789abcdef'
const database = openDatabase(path)
importNow(database, {
  accounts: [{ id: account, name: 'Bench' }],
  groups: groups.map((id, i) => ({ id, account, name: `G${i}` })),
  users: [{ id: uuid('0c000000', 1), account, name: 'bench', groups, api_keys: [key] }],
  models: [{ id: uuid('0d000000', 1), name: 'M' }],
  devices: Array.from({ length: DEVICES }, (_, i) => ({
    id: uuid('0f000000', i), account, model: uuid('0d000000', 1), groups: [groups[i % groups.length]], alias: `Truck ${String(i).padStart(4, '0')}`,
    properties: { plate: `AB-${i}` }, serial: `S${i}`, imei: String(359710049000000 + i), iccid: '8934', state: i % 3 ? 'stopped' : 'off',
    location: [48 + i / 1e4, 2 + i / 1e4], connected: i % 2 === 0, connected_at: '2026-11-01T08:00:00Z', created_at: '2026-01-01T00:00:00Z',
  })),
})
database.close()

const script = join(import.meta.dir, 'devices-server.ts')
const headers = { authorization: `Bearer ${key}` }
const target = uuid('0f000000', 421)

async function measure(mode: 'product' | 'floor', route: string): Promise<LoadResult> {
  const server = await startServerProcess(script, [mode, path])
  try {
    await load(`http://127.0.0.1:${server.port}${route}`, { seconds: 1, headers }) // warm-up
    return await load(`http://127.0.0.1:${server.port}${route}`, { seconds: SECONDS, headers })
  } finally {
    await server.stop()
  }
}

function report(name: string, product: LoadResult[], floor: LoadResult[]) {
  const best = (rs: LoadResult[]) => rs.reduce((a, b) => (b.requestsPerSecond > a.requestsPerSecond ? b : a))
  const p = best(product)
  const f = best(floor)
  const failures = [...product, ...floor].reduce((n, r) => n + r.errors + r.non2xx, 0)
  console.log(`\n${name}`)
  console.log(`  product  ${fmt(p.requestsPerSecond)} req/s   p50 ${fmt(p.p50, 2)} ms   p99 ${fmt(p.p99, 2)} ms`)
  console.log(`  floor    ${fmt(f.requestsPerSecond)} req/s   p50 ${fmt(f.p50, 2)} ms   p99 ${fmt(f.p99, 2)} ms`)
  console.log(`  ratio    ${fmt(p.requestsPerSecond / f.requestsPerSecond, 2)}× of the floor's throughput${failures ? `   (${failures} failed requests!)` : ''}`)
  console.log(`  rounds   product ${product.map((r) => fmt(r.requestsPerSecond)).join(', ')}   floor ${floor.map((r) => fmt(r.requestsPerSecond)).join(', ')}`)
}

console.log(`devices benchmark: ${DEVICES} devices, ${ROUNDS} alternating rounds of ${SECONDS} s, 32 connections (autocannon)`)
for (const [name, route] of [[`GET /devices/{id}`, `/devices/${target}`], ['GET /devices (99 devices)', '/devices']] as const) {
  const product: LoadResult[] = []
  const floor: LoadResult[] = []
  for (let round = 0; round < ROUNDS; round++) {
    product.push(await measure('product', route))
    floor.push(await measure('floor', route))
  }
  report(name, product, floor)
}
rmSync(dir, { recursive: true, force: true })
