/**
 * `npm run bench -- signin`: what a throttled sign-in costs (issue 19, item 2). The server
 * listens on loopback behind a "trusted proxy" (TRUSTED_PROXIES=127.0.0.1), so each request
 * names its client in X-Forwarded-For; the user's password is hashed with the server's own
 * argon2id parameters (64 MiB, 2 passes), as in production.
 *
 * 1. one wrong password from a fresh client: the cost of a password check;
 * 2. 60 concurrent wrong passwords from one client: how many were checked, how fast the rest
 *    were refused, against the floor of 60 concurrent sign-ins refused for a bad body (400: no
 *    throttle, no check), as the client saw them and as the server's access log timed them;
 * 3. 1,000 sign-ins, one after another, from that refused client, against 1,000 GET /health
 *    (the floor: the cheapest request through the same stack), with the password checks the
 *    server counted meanwhile (tracker_password_checks_total: must not move).
 *
 * `npm run bench -- signin 1` runs it with one password check at a time instead of the default.
 */
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/log'
import { baseDataset, ids, makeWorld } from '../../test/support/world'

const PASSWORD = 'correct horse battery'
const SEQUENTIAL = 1000

// the access log's `ms`: the time the server spent on a request, from its arrival to its answer
const served: { status: number; ms: number }[] = []
const log = createLogger('info', (line) => {
  const entry = JSON.parse(line) as { msg: string; route?: string; status: number; ms: number }
  if (entry.msg === 'request' && entry.route === '/session') served.push({ status: entry.status, ms: entry.ms })
})
const inFlight = Number(process.argv[2] ?? 0) || undefined
const world = makeWorld(baseDataset(), { config: loadConfig({ TRUSTED_PROXIES: '127.0.0.1' }), log, passwordChecks: inFlight ? { inFlight } : {} })
const hash = await Bun.password.hash(PASSWORD, { algorithm: 'argon2id' })
world.database.sqlite.query('UPDATE users SET password_hash = ? WHERE id = ?').run(hash, ids.alice)
const server = world.app.listen({ port: 0, hostname: '127.0.0.1' })
const base = `http://127.0.0.1:${server.server!.port}`

const signIn = (client: string, password: string) =>
  fetch(`${base}/session`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': client }, body: JSON.stringify({ name: 'alice', password }) })

async function timed(work: () => Promise<Response>): Promise<{ ms: number; status: number }> {
  const started = performance.now()
  const res = await work()
  await res.arrayBuffer()
  return { ms: performance.now() - started, status: res.status }
}

async function passwordChecks(): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text()
  return text
    .split('\n')
    .filter((line) => line.startsWith('tracker_password_checks_total'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0)
}

const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!
const fmt = (ms: number) => `${ms.toFixed(2)} ms`
const summary = (values: number[]) => `p50 ${fmt(quantile(values, 0.5))}, p99 ${fmt(quantile(values, 0.99))}, max ${fmt(Math.max(...values))}`

// warm up: the first check of a process makes its dummy hash
await (await signIn('192.0.2.200', 'warming up the server')).arrayBuffer()

// 1. a password check
const checks: number[] = []
for (let i = 0; i < 5; i++) checks.push((await timed(() => signIn(`192.0.2.${i + 1}`, `wrong password ${i}`))).ms)
console.log(`one wrong password (a check):            ${summary(checks)}`)

// 2. 60 at once from one client
const attacker = '203.0.113.66'
served.length = 0
const burstStarted = performance.now()
const burst = await Promise.all(Array.from({ length: 60 }, (_, i) => timed(() => signIn(attacker, `guess number ${i}`))))
const burstMs = performance.now() - burstStarted
const byStatus = Object.fromEntries([...new Set(burst.map((r) => r.status))].map((status) => [status, burst.filter((r) => r.status === status).length]))
// the access log is written after the answer has gone: let the last lines come
await Bun.sleep(100)
console.log(`60 concurrent guesses from one client:   ${JSON.stringify(byStatus)} in ${fmt(burstMs)}`)
console.log(`  the 429s as the client saw them (60 connections opened at once): ${summary(burst.filter((r) => r.status === 429).map((r) => r.ms))}`)
console.log(`  the 429s in the server (access log):                           ${summary(served.filter((r) => r.status === 429).map((r) => r.ms))}`)

// the floor of a burst: 60 sign-ins at once that the server refuses without a check for another reason (a body without a password: 400)
served.length = 0
const floorBurst = await Promise.all(Array.from({ length: 60 }, () => timed(() => fetch(`${base}/session`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.77' }, body: JSON.stringify({ name: 'alice' }) }))))
if (floorBurst.some((r) => r.status !== 400)) throw new Error('the floor burst expected 400s')
await Bun.sleep(100)
console.log(`60 concurrent 400s (floor), as the client saw them:              ${summary(floorBurst.map((r) => r.ms))}`)
console.log(`  in the server (access log):                                     ${summary(served.filter((r) => r.status === 400).map((r) => r.ms))}`)

// top the client up to its limit, so that everything after is refused by count, not by the in-flight cap
for (let i = 0; i < 20; i++) await (await signIn(attacker, `more guesses ${i}`)).arrayBuffer()

// 3. refused, one after another, against the floor
const before = await passwordChecks()
const cpuBefore = process.cpuUsage()
const refused: number[] = []
let notRefused = 0
for (let i = 0; i < SEQUENTIAL; i++) {
  const r = await timed(() => signIn(attacker, i % 2 ? PASSWORD : `guess ${i}`))
  if (r.status !== 429) notRefused++
  refused.push(r.ms)
}
const cpu = process.cpuUsage(cpuBefore)
const checked = (await passwordChecks()) - before
const health: number[] = []
for (let i = 0; i < SEQUENTIAL; i++) health.push((await timed(() => fetch(`${base}/health`, { headers: { 'x-forwarded-for': attacker } }))).ms)

console.log(`${SEQUENTIAL} throttled sign-ins (half the right password): ${summary(refused)}; not 429: ${notRefused}; password checks: ${checked}`)
console.log(`  CPU of server and client together: ${((cpu.user + cpu.system) / 1000 / SEQUENTIAL).toFixed(3)} ms a request`)
console.log(`${SEQUENTIAL} GET /health (floor):            ${summary(health)}`)
console.log(`ratio throttled / floor (p50): ${(quantile(refused, 0.5) / quantile(health, 0.5)).toFixed(2)}; a check / a throttled answer (p50): ${(quantile(checks, 0.5) / quantile(refused, 0.5)).toFixed(0)}×`)

await world.app.stop()
world.close()
