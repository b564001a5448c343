/**
 * PostgreSQL for the pg benchmark: the server named by BENCH_DATABASE_URL (a role that may
 * CREATE/DROP DATABASE), one scratch database per sub-benchmark, migrated as the product does,
 * dropped at the end; and CPU time of processes read from /proc (clock ticks → seconds).
 */
import { readdirSync, readFileSync } from 'node:fs'
import postgres from 'postgres'
import { openPostgres, type PostgresHandle } from '../../db/postgres/client'
import { ensureBuiltinModelsOnPostgres } from '../../src/commands/catalogue'

export const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://tracker:tracker@127.0.0.1:5432/tracker'

export function urlOf(database: string): string {
  const url = new URL(SERVER_URL)
  url.pathname = `/${database}`
  return url.toString()
}

/** A fresh database `bench_<name>_<pid>`: its URL, a migrated handle, and a drop. */
export async function scratchDatabase(name: string, poolSize = 10): Promise<{ name: string; url: string; handle: PostgresHandle; drop(): Promise<void> }> {
  const database = `bench_${name}_${process.pid}`
  const admin = postgres(SERVER_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  await admin.unsafe(`CREATE DATABASE ${database}`)
  const url = urlOf(database)
  const handle = await openPostgres(url, { poolSize, afterMigrate: async (db) => void (await ensureBuiltinModelsOnPostgres(db, Date.now())) })
  return {
    name: database,
    url,
    handle,
    async drop() {
      await handle.close().catch(() => {})
      await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      await admin.end()
    },
  }
}

const TICKS_PER_SECOND = 100

/** user + system CPU seconds of one process (0 once it is gone) */
export function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // fields after the name: state is [0], utime [11], stime [12]
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    return 0
  }
}

/** every process named `postgres` (server, backends, walwriter, checkpointer, …): pid → CPU seconds */
export function postgresCpu(): Map<number, number> {
  const found = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue
    } catch {
      continue
    }
    found.set(Number(entry), cpuSecondsOf(Number(entry)))
  }
  return found
}

/** busy and total CPU seconds of the whole machine, all cores (from /proc/stat) */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!
  const values = line.trim().split(/\s+/).slice(1).map(Number)
  const total = values.reduce((a, b) => a + b, 0)
  const idle = values[3]! + (values[4] ?? 0)
  return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND }
}

/** CPU seconds a set of postgres processes spent between two snapshots (processes born in between count from 0) */
export function postgresCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let seconds = 0
  for (const [pid, cpu] of after) seconds += cpu - (before.get(pid) ?? 0)
  return seconds
}
