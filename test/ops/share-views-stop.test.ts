/**
 * Share-link views wait in memory for a background write (src/share/tokens.ts); a clean stop of
 * the real server writes what still waits before it closes the database.
 */
import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { importNow } from '../support/import'
import { freePort, serverEnv, spawnServer } from '../support/process'
import { baseDataset, ids, keys } from '../support/world'

const ROOT = join(import.meta.dir, '..', '..')
const dir = mkdtempSync(join(tmpdir(), 'tracker-views-'))
const databasePath = join(dir, 'tracker.db')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('SIGTERM writes the share-link views still waiting in memory', async () => {
  const setup = openDatabase(databasePath)
  importNow(setup, baseDataset())
  setup.close()

  const ports = { http: freePort(), osmand: freePort(), teltonika: freePort() }
  const server = spawnServer([process.execPath, 'src/main.ts', 'serve'], { cwd: ROOT, env: serverEnv(databasePath, ports, 'info') })
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
  const db = new Database(databasePath, { readonly: true })
  try {
    const row = db.query<{ unique_views: number; last_accessed_at: number | null }, []>('SELECT unique_views, last_accessed_at FROM share_links').get()
    expect(row?.unique_views).toBe(1)
    expect(row?.last_accessed_at).toBeGreaterThan(0)
  } finally {
    db.close()
  }
})
