/**
 * Load from a second process: autocannon (from node_modules) against a URL on loopback, for a
 * fixed duration. Returns requests/s and latency percentiles in milliseconds.
 */
import { join } from 'node:path'
import type { DatabaseHandle } from '../../db/client'

export interface LoadResult {
  requestsPerSecond: number
  p50: number
  p99: number
  errors: number
  non2xx: number
}

const AUTOCANNON = join(import.meta.dir, '../../node_modules/.bin/autocannon')

export async function load(url: string, options: { connections?: number; seconds?: number; headers?: Record<string, string> } = {}): Promise<LoadResult> {
  const args = [AUTOCANNON, '-j', '-c', String(options.connections ?? 32), '-d', String(options.seconds ?? 5)]
  for (const [k, v] of Object.entries(options.headers ?? {})) args.push('-H', `${k}=${v}`)
  args.push(url)
  const child = Bun.spawn(args, { stdout: 'pipe', stderr: 'ignore' })
  const out = await new Response(child.stdout).text()
  await child.exited
  const r = JSON.parse(out) as { requests: { average: number }; latency: { p50: number; p99: number }; errors: number; non2xx: number }
  return { requestsPerSecond: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx }
}

/** Starts `bun script args…`, waits for a line "ready <port>", returns the port and a stopper. */
export async function startServerProcess(script: string, args: string[], env: Record<string, string> = {}) {
  const child = Bun.spawn([process.execPath, script, ...args], { stdout: 'pipe', stderr: 'inherit', env: { ...process.env, ...env } })
  const reader = child.stdout.getReader()
  let buffered = ''
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    const { value, done } = await reader.read()
    if (done) break
    buffered += new TextDecoder().decode(value)
    const match = /ready (\d+)/.exec(buffered)
    if (match) {
      reader.releaseLock()
      return { port: Number(match[1]), stop: async () => { child.kill(); await child.exited } }
    }
  }
  child.kill()
  throw new Error(`${script} did not become ready: ${buffered}`)
}

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })

/**
 * The end of building a bench database of fixes: counted, its WAL folded into the file (so the
 * timed reads find one file, as a server that has run a while does), closed, and said.
 */
export function closeBuiltFixes(database: Pick<DatabaseHandle, 'sqlite' | 'close'>, startedMs: number): void {
  const count = (database.sqlite.query('SELECT count(*) AS n FROM positions').get() as { n: number }).n
  database.sqlite.run('PRAGMA wal_checkpoint(TRUNCATE)')
  database.close()
  console.log(`built: ${fmt(count)} fixes in ${fmt((performance.now() - startedMs) / 1000, 1)} s`)
}
