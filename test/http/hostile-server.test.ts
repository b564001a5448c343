/**
 * The hostile bodies of the audit against the real server over a socket: anonymous nested
 * arrays, huge bodies, oversized headers. Every answer is problem details, none is a 5xx, and the
 * server's memory stays where it was (the audit measured 2.7 GB for one such request, 7 GB for 4).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { BUN_MAX_HEADER_BYTES, MAX_HEADER_BYTES } from '../../src/http/headers'
import { freePort, serverEnv, spawnServer, type ServerProcess } from '../support/process'
import { serverDatabase, type ServerDatabase } from '../support/server-database'
import { baseDataset, keys } from '../support/world'

const ROOT = join(import.meta.dir, '..', '..')
let database: ServerDatabase | undefined
let server: ServerProcess
let base: string

const rssMegabytes = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))![1]) / 1024

beforeAll(async () => {
  database = await serverDatabase('hostile', baseDataset())
  const ports = { http: freePort(), osmand: 0, teltonika: 0 }
  // NODE_ENV unset, as `npm start` and the binary run it (bun test sets it to "test")
  // as `npm start` runs it (package.json)
  server = spawnServer([process.execPath, `--max-http-header-size=${BUN_MAX_HEADER_BYTES}`, 'src/main.ts', 'serve'], { cwd: ROOT, env: { ...serverEnv(database, ports, 'info'), NODE_ENV: undefined } })
  await server.waitFor((line) => line.msg === 'serving')
  base = `http://127.0.0.1:${ports.http}`
})
afterAll(async () => {
  await server?.terminate()
  await database?.close()
}, 20_000)

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)

async function expectProblem(response: Response, status: number): Promise<void> {
  expect({ status: response.status, type: response.headers.get('content-type') }).toEqual({ status, type: 'application/problem+json' })
  expect(((await response.json()) as { status: number }).status).toBe(status)
}

test('nested arrays, anonymous or not, four at once: 401 or 400, and the memory stays put', async () => {
  const before = rssMegabytes()
  const post = (depth: number, token?: string) =>
    fetch(`${base}/devices/share`, { method: 'POST', body: nested(depth), headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } })
  const anonymous = await Promise.all([1, 2, 3, 4].map(() => post(20_000)))
  for (const res of anonymous) await expectProblem(res, 401)
  const signedIn = await Promise.all([20_000, 20_000, 100_000, 100_000].map((depth) => post(depth, keys.alice)))
  for (const res of signedIn) await expectProblem(res, 400)
  expect(rssMegabytes() - before).toBeLessThan(100)
})

test('a 64 MiB anonymous upload is refused with 401 without being read; 2 MiB with a key is a 413 in problem details', async () => {
  const before = rssMegabytes()
  const chunk = new Uint8Array(1 << 20).fill(0x20)
  let sent = 0
  const upload = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent++ < 64) controller.enqueue(chunk)
      else controller.close()
    },
  })
  await expectProblem(await fetch(`${base}/devices/share`, { method: 'POST', body: upload, duplex: 'half' } as RequestInit), 401)
  await expectProblem(
    await fetch(`${base}/devices/share`, { method: 'POST', body: new Uint8Array(2 << 20).fill(0x20), headers: { authorization: `Bearer ${keys.alice}` } }),
    413,
  )
  expect(rssMegabytes() - before).toBeLessThan(100)
})

test('headers past 16 KiB are a 431 in problem details, on the API and the operations routes alike', async () => {
  for (const path of ['/devices', '/health', '/nowhere']) {
    await expectProblem(await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${keys.alice}`, 'x-padding': 'a'.repeat(MAX_HEADER_BYTES) } }), 431)
  }
  // just under the limit is served
  expect((await fetch(`${base}/devices`, { headers: { authorization: `Bearer ${keys.alice}`, 'x-padding': 'a'.repeat(MAX_HEADER_BYTES - 400) } })).status).toBe(200)
  // past what Bun itself takes, Bun answers alone (documented)
  expect((await fetch(`${base}/devices`, { headers: { 'x-padding': 'a'.repeat(BUN_MAX_HEADER_BYTES + 1) } })).status).toBe(431)
})

test('no line of the log is an unhandled error', () => {
  expect(server.lines.filter((line) => line.level === 'error')).toEqual([])
})
