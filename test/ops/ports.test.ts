/**
 * One server per port: a second `serve` on a port already taken (the API's or a device
 * listener's) exits 1 at once naming the port and its variable, instead of sharing the port
 * (SO_REUSEPORT) and splitting the requests between two processes and two databases. The first
 * server keeps serving.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { freePort, serverEnv, spawnServer, type ServerProcess } from '../support/process'
import { serverDatabase, type ServerDatabase } from '../support/server-database'

const ROOT = join(import.meta.dir, '..', '..')
const ports = { http: freePort(), osmand: freePort(), teltonika: freePort() }
let first: ServerProcess
const databases: ServerDatabase[] = []

/** a fresh database on the run's engine, closed after the file */
async function database(name: string): Promise<ServerDatabase> {
  const made = await serverDatabase(`tracker-ports-${name}`)
  databases.push(made)
  return made
}

beforeAll(async () => {
  first = spawnServer([process.execPath, 'src/main.ts', 'serve'], { cwd: ROOT, env: serverEnv(await database('first'), ports, 'error') })
  await waitForHealth(ports.http)
})

// dropping six PostgreSQL databases takes seconds on a busy machine
afterAll(async () => {
  await first?.terminate()
  await Promise.all(databases.map((made) => made.close()))
}, 30_000)

async function waitForHealth(port: number): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) return
    } catch {
      // not listening yet
    }
    await Bun.sleep(25)
  }
  throw new Error(`no server on ${port}: ${first.text()}`)
}

/** `serve` with these ports and its own database; its exit code and what it printed. */
async function secondServer(taken: { http: number; osmand: number; teltonika: number }) {
  const env = serverEnv(await database('second'), taken, 'error')
  const child = Bun.spawn([process.execPath, 'src/main.ts', 'serve'], { cwd: ROOT, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  // a second server that did start would never exit: end it, and the test fails on its code
  const guard = setTimeout(() => child.kill('SIGKILL'), 10_000)
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()])
  clearTimeout(guard)
  return { code, stderr }
}

/** the first server still answers every request, over several connections */
async function firstStillServes(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    const response = await fetch(`http://127.0.0.1:${ports.http}/health`, { headers: { connection: 'close' } })
    expect(response.status).toBe(200)
  }
  expect(first.child.exitCode).toBeNull()
}

test('a second server on the API port exits 1 naming the port and PORT', async () => {
  const { code, stderr } = await secondServer({ http: ports.http, osmand: freePort(), teltonika: freePort() })
  expect(code).toBe(1)
  expect(stderr).toContain(`port ${ports.http} is already in use (PORT)`)
  await firstStillServes()
}, 20_000)

test('a second server on a device port exits 1 naming the port and its variable', async () => {
  const osmand = await secondServer({ http: freePort(), osmand: ports.osmand, teltonika: freePort() })
  expect(osmand.code).toBe(1)
  expect(osmand.stderr).toContain(`port ${ports.osmand} is already in use (OSMAND_PORT)`)

  const teltonika = await secondServer({ http: freePort(), osmand: freePort(), teltonika: ports.teltonika })
  expect(teltonika.code).toBe(1)
  expect(teltonika.stderr).toContain(`port ${ports.teltonika} is already in use (TELTONIKA_PORT)`)
  await firstStillServes()
}, 20_000)

test('a device port taken by some other program is named too', async () => {
  const tcp = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const http = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('not the tracker') })
  try {
    const teltonika = await secondServer({ http: freePort(), osmand: freePort(), teltonika: tcp.port })
    expect(teltonika.code).toBe(1)
    expect(teltonika.stderr).toContain(`port ${tcp.port} is already in use (TELTONIKA_PORT)`)
    const osmand = await secondServer({ http: freePort(), osmand: http.port!, teltonika: freePort() })
    expect(osmand.code).toBe(1)
    expect(osmand.stderr).toContain(`port ${http.port} is already in use (OSMAND_PORT)`)
  } finally {
    tcp.stop(true)
    await http.stop(true)
  }
}, 20_000)
