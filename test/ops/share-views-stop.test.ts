/**
 * Share-link views wait in memory for a background write (src/share/tokens.ts); a clean stop of
 * the real server writes what still waits before it closes the database.
 */
import { afterAll, expect, test } from 'bun:test'
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

test('SIGTERM writes the share-link views still waiting in memory', async () => {
  database = await serverDatabase('tracker-views', baseDataset())

  const ports = { http: freePort(), osmand: freePort(), teltonika: freePort() }
  const server = spawnServer([process.execPath, 'src/main.ts', 'serve'], { cwd: ROOT, env: serverEnv(database, ports, 'info') })
  const base = `http://127.0.0.1:${ports.http}`
  try {
    await server.waitFor((l) => l.msg === 'serving')
    const created = await fetch(`${base}/devices/share`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ devices: [ids.truck1], ttl: 3600 }),
    })
    expect(created.status).toBe(200)
    const link = (await created.json()) as { id: string; token: string }
    expect((await fetch(`${base}/devices`, { headers: { authorization: `Bearer ${link.token}` } })).status).toBe(200)
  } finally {
    expect(await server.terminate('SIGTERM')).toBe(0)
  }
  const [row] = await database.execute<{ unique_views: number; last_accessed_at: number | string | null }>(sql`SELECT unique_views, last_accessed_at FROM share_links`)
  expect(row?.unique_views).toBe(1)
  expect(Number(row?.last_accessed_at)).toBeGreaterThan(0)
})
