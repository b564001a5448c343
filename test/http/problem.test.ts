import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { Elysia } from 'elysia'
import { openDatabase } from '../../db/client'
import { problemDetails } from '../../src/http/problem'
import { silentLogger } from '../../src/log'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeAll(async () => {
  world = await openWorld()
})
afterAll(() => world.close())

describe('problem details everywhere', () => {
  test('an unknown path is a 404 problem', async () => {
    const body = await problem(await world.call('GET', '/nowhere', { token: keys.alice }), 404)
    expect(body.detail).toContain('/nowhere')
  })

  test('a wrong method is a 404 problem, not a crash', async () => {
    // DELETE /devices/{id} is an admin route now; nothing answers PUT
    await problem(await world.call('PUT', `/devices/${ids.truck1}`, { token: keys.alice }), 404)
  })

  test('an unexpected failure is a 500 that leaks neither stack nor SQL', async () => {
    await world.execute(sql`ALTER TABLE commands RENAME TO commands_gone`)
    try {
      const res = await world.call('GET', `/devices/${ids.truck1}/commands`, { token: keys.alice })
      const text = await res.text()
      expect(res.status).toBe(500)
      expect(res.headers.get('content-type')).toBe('application/problem+json')
      expect(JSON.parse(text)).toEqual({ type: 'about:blank', title: 'Internal Server Error', status: 500, detail: expect.any(String) })
      expect(text).not.toMatch(/SELECT|commands|at \/|\.ts/)
    } finally {
      await world.execute(sql`ALTER TABLE commands_gone RENAME TO commands`)
    }
  })

  test('a database locked past its busy timeout is 504', async () => {
    // A route of our own that writes, behind the same problem-details plugin, while a second
    // connection holds the write lock: the write waits its busy timeout, then SQLite says BUSY.
    // (SQLite's own: a file of its own on either run)
    const dir = mkdtempSync(join(tmpdir(), 'tracker-test-'))
    const path = join(dir, 'busy.db')
    const ours = openDatabase(path, { busyTimeoutMs: 50 })
    const other = new Database(path)
    other.run('BEGIN IMMEDIATE')
    try {
      const app = new Elysia().use(problemDetails(silentLogger)).post('/write', () => {
        ours.sqlite.run("INSERT INTO accounts (id, name) VALUES ('x', 'y')")
        return 'written'
      })
      const body = await problem(await app.handle(new Request('http://localhost/write', { method: 'POST' })), 504)
      expect(body.title).toBe('Gateway Timeout')
    } finally {
      other.run('ROLLBACK')
      other.close()
      ours.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
