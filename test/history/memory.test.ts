/**
 * Memory of the real server under long routes: a week at 1 Hz (604,800 fixes, 46 MB of JSON a
 * route) requested four times at once, by two users (two each, within the in-flight cap). Building
 * each answer as one value (objects, then the whole string, then its bytes) grew the server's peak
 * resident memory by 430–460 MiB here; read into columns and streamed, by 180–210 MiB; within the
 * process' history memory budget (one such route at a time, its garbage collected once it is sent), by about 80 MiB.
 */
import { afterAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { freePort, serverEnv, spawnServer } from '../support/process'
import { serverDatabase, type ServerDatabase } from '../support/server-database'
import { baseDataset, ids, keys } from '../support/world'

const ROOT = join(import.meta.dir, '..', '..')
let database: ServerDatabase | undefined
afterAll(async () => {
  await database?.close()
}, 20_000)

const DAYS = 7
const T0 = 1764028800
/** between the two, with room for the garbage collector's timing either way */
const GROWTH_LIMIT_MIB = 300

/** Truck 2 drives 40 minutes and parks 20, round the clock, one fix a second: the world with that week, through the dataset import. */
async function storeWeekAtOneHertz(): Promise<ServerDatabase> {
  const positions = []
  let lat = 45.75
  let lon = 4.85
  for (let s = 0; s < DAYS * 86_400; s++) {
    const driving = s % 3600 < 2400
    const kmh = driving ? 45 + 15 * Math.sin(s / 300) : 0
    const heading = s / 500
    lat += (Math.cos(heading) * kmh) / 3.6 / 111_320
    lon += (Math.sin(heading) * kmh) / 3.6 / 78_000
    positions.push({ device: ids.truck2, timestamp: T0 + s, latitude: lat, longitude: lon, speed: kmh, course: 0, altitude: 0, satellites: 9 })
  }
  const database = await serverDatabase('history-memory', { ...baseDataset(), positions })
  // PostgreSQL: what autovacuum would do before anyone reads a week imported a moment ago. The first
  // read of freshly written rows also writes their hint bits, about 3× slower than any read after.
  if (database.engine === 'postgres') await database.execute(sql`VACUUM (ANALYZE) positions`)
  return database
}

const kibOf = (status: string, name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1])

test(`four concurrent ${DAYS}-day routes at 1 Hz raise the server's resident memory by less than ${GROWTH_LIMIT_MIB} MiB`, async () => {
  database = await storeWeekAtOneHertz()
  const ports = { http: freePort(), osmand: freePort(), teltonika: freePort() }
  const server = spawnServer([process.execPath, 'src/main.ts', 'serve'], { cwd: ROOT, env: serverEnv(database, ports, 'error') })
  try {
    const base = `http://127.0.0.1:${ports.http}`
    const routeOf = (key: string, seconds: number) =>
      fetch(`${base}/devices/${ids.truck2}/history/route?from=${T0}&to=${T0 + seconds - 1}`, { headers: { authorization: `Bearer ${key}` } })
    for (let waited = 0; waited < 10_000; waited += 20) {
      const ready = await fetch(`${base}/ready`).then((r) => r.status === 200, () => false)
      if (ready) break
      await Bun.sleep(20)
    }
    // a day first, so the route code is loaded and compiled before the baseline
    const warmUp = await routeOf(keys.alice, 86_400)
    expect(warmUp.status).toBe(200)
    await warmUp.arrayBuffer()
    const status = () => readFileSync(`/proc/${server.child.pid}/status`, 'utf8')
    const before = kibOf(status(), 'VmRSS')

    // each body read as soon as it comes: the process' history memory budget (HISTORY_MEMORY_MB) lets one
    // 7-day route at 1 Hz in at a time, the others wait their turn
    const sizes = await Promise.all(
      [keys.alice, keys.alice, keys.bob, keys.bob].map(async (key) => {
        const response = await routeOf(key, DAYS * 86_400)
        expect(response.status).toBe(200)
        // counted as it arrives: the test process need not hold 4 × 46 MB either
        const reader = response.body!.getReader()
        let bytes = 0
        for (let read = await reader.read(); !read.done; read = await reader.read()) bytes += read.value.byteLength
        return bytes
      }),
    )
    const after = status()
    const peakGrowthMiB = (kibOf(after, 'VmHWM') - before) / 1024
    const jsonMiB = sizes[0] / 1048576
    console.log(`4 routes of ${jsonMiB.toFixed(1)} MiB each: server peak RSS grew ${peakGrowthMiB.toFixed(0)} MiB (VmRSS before ${(before / 1024).toFixed(0)} MiB)`)
    expect(new Set(sizes).size).toBe(1)
    expect(jsonMiB).toBeGreaterThan(40)
    expect(peakGrowthMiB).toBeLessThan(GROWTH_LIMIT_MIB)
  } finally {
    await server.terminate()
  }
}, 60_000)
