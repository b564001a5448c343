/**
 * `npm run bench -- budgets`: share links must not multiply the budgets of the user who made
 * them, and the process as a whole stays small and responsive (issue 19, item 6; P6: 8
 * concurrent 31-day routes through any mix of keys and links peak under 300 MB RSS, `/health`
 * under 50 ms meanwhile).
 *
 * The real server (`src/main.ts serve`, a fresh process per scenario, so each peak is its own)
 * over a database of 8 devices reporting every 5–10 s for 31 days (about 350,000 fixes each,
 * 2.8 million in all), 4 users of one account with a key each. After a one-day route (the code
 * loaded and compiled, as in a server up for a while), each scenario sends 8 concurrent
 * 31-day routes, every client retrying a 429 or 503 after its Retry-After (as the share page
 * does) until it is served, while another process asks `/health` every 10 ms. Reported: the answers, the
 * time until the last route was read, the server's baseline and peak resident memory
 * (VmRSS, VmHWM), and `/health`'s latency (p50, p99, max). Last, one user opens 16 live
 * streams through each of 8 links: how many are served.
 *
 * The database is built once and kept (BENCH_BUDGETS_DB, default in the temp folder).
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { importNow } from '../../test/support/import'
import { PROTOCOLS } from '../../src/ingest/protocols'
import { closeBuiltFixes, fmt } from './load'

const DB = process.env.BENCH_BUDGETS_DB ?? join(tmpdir(), 'bench-budgets.db')
const ROOT = join(import.meta.dir, '..', '..')
const DEVICES = 8
const USERS = 4
const DAYS = 31
const T0 = 1764028800 // 2025-11-25T00:00:00Z
const uuid = (prefix: string, i: number) => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`
const ACCOUNT = uuid('0a000000', 1)
const GROUP = uuid('0b000000', 1)
const deviceId = (i: number) => uuid('0f000000', i)
const keyOf = (u: number) => `bench-budget-key-${u}-0123456789abcdef`
const P6_RSS_MB = 300
const P6_HEALTH_MS = 50

function build() {
  console.log(`building ${DB}: ${DEVICES} devices, one fix every 5–10 s for ${DAYS} days…`)
  const started = performance.now()
  const database = openDatabase(DB)
  importNow(database, {
    accounts: [{ id: ACCOUNT, name: 'Bench' }],
    groups: [{ id: GROUP, account: ACCOUNT, name: 'All' }],
    users: Array.from({ length: USERS }, (_, u) => ({ id: uuid('0c000000', u), account: ACCOUNT, name: `user${u}`, groups: [GROUP], api_keys: [keyOf(u)] })),
    models: [{ id: uuid('0d000000', 1), name: 'M' }],
    devices: Array.from({ length: DEVICES }, (_, i) => ({ id: deviceId(i), account: ACCOUNT, model: uuid('0d000000', 1), groups: [GROUP], alias: `D${i}`, state: 'stopped' })),
  })
  const keys = database.sqlite.query<{ key: number }, []>('SELECT key FROM devices ORDER BY alias').all()
  const insert = database.sqlite.query('INSERT INTO positions (device, ts, lat, lon, speed, course, altitude, satellites, flags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)')
  const write = database.sqlite.transaction((rows: number[][]) => {
    for (const r of rows) insert.run(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7])
  })
  let batch: number[][] = []
  keys.forEach(({ key }, d) => {
    // drives 40 min at 30–60 km/h, parks 20 min with GPS jitter, over and over; a fix every 5–10 s
    let lat = 48.85 + d * 0.1
    let lon = 2.35
    let heading = d
    let previous = 0
    for (let s = 0; s < DAYS * 86_400; s += 5 + ((s * 7 + d) % 6)) {
      const driving = s % 3600 < 2400
      const dt = s - previous
      previous = s
      let speed = 0
      if (driving) {
        heading += (Math.sin(s / 97) + Math.cos(s / 13)) * 0.05
        speed = 45 + 15 * Math.sin(s / 300)
        lat += (Math.cos(heading) * speed * dt) / 3.6 / 111_320
        lon += (Math.sin(heading) * speed * dt) / 3.6 / (111_320 * Math.cos((lat * Math.PI) / 180))
      }
      const jitter = driving ? 0 : ((Math.sin(s * 12.9898) * 43758.5453) % 1) * 4e-5
      batch.push([key, T0 + s, Math.round((lat + jitter) * 1e7), Math.round((lon - jitter) * 1e7), Math.round(speed * 10), Math.round((((heading * 180) / Math.PI) % 360) + 360) % 360, 35, 9])
      if (batch.length === 100_000) {
        write(batch)
        batch = []
      }
    }
  })
  write(batch)
  closeBuiltFixes(database, started)
}

function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

const kib = (pid: number, name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)

async function startServer() {
  const port = freePort()
  const child = Bun.spawn([process.execPath, 'src/main.ts', 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_PATH: DB,
      HOST: '127.0.0.1',
      PORT: String(port),
      ...Object.fromEntries(PROTOCOLS.map((protocol) => [protocol.portVariable, '0'])),
      LOG_LEVEL: 'error',
    },
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const base = `http://127.0.0.1:${port}`
  for (let waited = 0; waited < 30_000; waited += 50) {
    if (await fetch(`${base}/ready`).then((r) => r.status === 200, () => false)) break
    await Bun.sleep(50)
  }
  return {
    base,
    pid: child.pid,
    fds: () => readdirSync(`/proc/${child.pid}/fd`).length,
    stop: async () => {
      child.kill()
      await child.exited
    },
  }
}

type Server = Awaited<ReturnType<typeof startServer>>

async function shareLink(server: Server, user: number, device: number): Promise<string> {
  const res = await fetch(`${server.base}/devices/share`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keyOf(user)}`, 'content-type': 'application/json' },
    body: JSON.stringify({ devices: [deviceId(device)], ttl: 3600 }),
  })
  if (res.status !== 200) throw new Error(`POST /devices/share: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { token: string }).token
}

/** One client: its route, retried after each 429 or 503 as Retry-After says, read to the end. */
async function routeClient(server: Server, token: string, device: number, statuses: number[], days = DAYS): Promise<number> {
  const url = `${server.base}/devices/${deviceId(device)}/history/route?from=${T0}&to=${T0 + days * 86_400 - 1}`
  for (let attempt = 0; attempt < 600; attempt++) {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
    statuses.push(res.status)
    if (res.status === 200) return (await res.arrayBuffer()).byteLength
    await res.arrayBuffer()
    if (res.status !== 429 && res.status !== 503) throw new Error(`route: ${res.status}`)
    await Bun.sleep(Number(res.headers.get('retry-after') ?? 1) * 1000)
  }
  throw new Error('route: never served')
}

/** /health every 10 ms until stopped, from a process of its own (health-poller.ts): its latencies. */
function pollHealth(server: Server) {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, 'health-poller.ts'), `${server.base}/health`], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  return {
    async stop(): Promise<{ count: number; p50: number; p99: number; max: number }> {
      child.stdin.end()
      const out = await new Response(child.stdout).text()
      await child.exited
      return JSON.parse(out)
    },
  }
}

/** Who sends the 8 routes: a token and a device each. */
type Plan = (server: Server) => Promise<{ token: string; device: number }[]>

const scenarios: [string, Plan][] = [
  ['8 links of one user', async (server) => Promise.all(Array.from({ length: 8 }, async (_, i) => ({ token: await shareLink(server, 0, i), device: i })))],
  ['4 users × 2 keys', async () => Array.from({ length: 8 }, (_, i) => ({ token: keyOf(i % USERS), device: i }))],
  ['4 users × (key + link)', async (server) =>
    Promise.all(Array.from({ length: 8 }, async (_, i) => ({ token: i < USERS ? keyOf(i) : await shareLink(server, i - USERS, i), device: i })))],
]

if (!existsSync(DB)) build()
{
  // the links of earlier runs are still active (an hour): start without them, as the per-user cap would refuse more
  const database = openDatabase(DB)
  database.sqlite.run('DELETE FROM share_links')
  database.close()
}

console.log(`\n8 concurrent ${DAYS}-day routes (every client retries 429/503 after Retry-After), a fresh server each; P6: peak < ${P6_RSS_MB} MB, /health < ${P6_HEALTH_MS} ms`)
console.log('scenario                  answers                     last route s   route MiB   RSS before MiB   peak MiB   /health p50 / p99 / max ms')
let worstPeakMiB = 0
let worstHealthMs = 0
for (const [name, plan] of scenarios) {
  const server = await startServer()
  try {
    const clients = await plan(server)
    // a day first, so the route code is loaded and compiled, as in a server that has been up a while
    await routeClient(server, keyOf(0), 0, [], 1)
    const before = kib(server.pid, 'VmRSS') / 1024
    const statuses: number[] = []
    const health = pollHealth(server)
    await Bun.sleep(200) // the poller up and asking
    const started = performance.now()
    const sizes = await Promise.all(clients.map(({ token, device }) => routeClient(server, token, device, statuses)))
    const seconds = (performance.now() - started) / 1000
    const h = await health.stop()
    const peak = kib(server.pid, 'VmHWM') / 1024
    worstPeakMiB = Math.max(worstPeakMiB, peak)
    worstHealthMs = Math.max(worstHealthMs, h.max)
    const counts = new Map<number, number>()
    for (const status of statuses) counts.set(status, (counts.get(status) ?? 0) + 1)
    const answers = [...counts].sort(([a], [b]) => a - b).map(([status, n]) => `${n}×${status}`).join(' ')
    console.log(
      `${name.padEnd(25)} ${answers.padEnd(27)} ${fmt(seconds, 1).padStart(12)}   ${fmt(sizes[0] / 1048576, 1).padStart(9)}   ${fmt(before).padStart(14)}   ${fmt(peak).padStart(8)}   ` +
        `${fmt(h.p50, 1)} / ${fmt(h.p99, 1)} / ${fmt(h.max, 1)} (${h.count} asked)`,
    )
  } finally {
    await server.stop()
  }
}
const peakMB = (worstPeakMiB * 1048576) / 1e6
console.log(
  `P6: worst peak ${fmt(peakMB)} MB (floor ${P6_RSS_MB} MB) ${peakMB < P6_RSS_MB ? 'holds' : 'FAILS'}; ` +
    `worst /health ${fmt(worstHealthMs, 1)} ms (floor ${P6_HEALTH_MS} ms) ${worstHealthMs < P6_HEALTH_MS ? 'holds' : 'FAILS'}`,
)

// Live streams: one user opens 16 through each of 8 links (128 asked); the creator's budget is 16.
{
  const server = await startServer()
  const controller = new AbortController()
  try {
    const tokens = await Promise.all(Array.from({ length: 8 }, (_, i) => shareLink(server, 0, i)))
    const fdsBefore = server.fds()
    const answers = await Promise.all(
      tokens.flatMap((token) => Array.from({ length: 16 }, () => fetch(`${server.base}/devices/stream`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal }))),
    )
    const served = answers.filter((res) => res.status === 200).length
    const refused = answers.filter((res) => res.status === 429).length
    const fds = server.fds()
    console.log(`\nlive streams, one user through 8 links × 16: ${served} served, ${refused} × 429; server file descriptors ${fdsBefore} → ${fds}`)
  } finally {
    controller.abort()
    await server.stop()
  }
}
