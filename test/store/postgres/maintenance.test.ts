/**
 * The maintenance store on both engines: what /ready and /metrics ask (answers, migrated, sizes)
 * and what each engine does of the file-level operations (a copy: VACUUM INTO on SQLite, refused
 * naming pg_dump on PostgreSQL).
 */
import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Socket } from 'bun'
import { sql } from 'drizzle-orm'
import { openPostgres } from '../../../db/postgres/client'
import { createMaintenanceStore, integrityOfFile, type MaintenanceStore } from '../../../src/store/maintenance'
import { BackupNotOnPostgres, createPostgresMaintenanceStore, postgresTableBytes } from '../../../src/store/postgres/maintenance'
import { engines, type Opened } from './support'

for (const engine of engines('the maintenance store on PostgreSQL')) {
  describe(`the maintenance store on ${engine.name}`, () => {
    let opened: Opened | null = null
    const dir = mkdtempSync(join(tmpdir(), 'tracker-maintenance-'))
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    async function open(): Promise<MaintenanceStore> {
      opened = await engine.open()
      return opened.engine === 'sqlite' ? createMaintenanceStore(opened.handle) : createPostgresMaintenanceStore(opened.handle)
    }

    /** forgets the newest applied migration, as a database an older version migrated */
    async function forgetNewestMigration(): Promise<void> {
      if (opened!.engine === 'sqlite') opened!.handle.sqlite.run('DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)')
      else await opened!.handle.db.execute(sql`DELETE FROM drizzle.__drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM drizzle.__drizzle_migrations)`)
    }

    test('answers and is migrated; a migration missing says so; closed, it no longer answers', async () => {
      const store = await open()
      expect(await store.answers()).toBe(true)
      expect(await store.migrationsApplied()).toBe(true)
      await forgetNewestMigration()
      expect(await store.migrationsApplied()).toBe(false)
      if (opened!.engine === 'sqlite') opened!.handle.close()
      else await opened!.handle.close()
      expect(await store.answers()).toBe(false)
      expect(await store.migrationsApplied()).toBe(false)
    })

    test('sizes: the database in bytes, and a write-ahead log only where it is the server’s own file', async () => {
      const store = await open()
      const sizes = await store.fileSizes()
      expect(sizes.database).toBeGreaterThan(0)
      expect(Number.isInteger(sizes.database)).toBe(true)
      if (opened!.engine === 'postgres') {
        expect(sizes.wal).toBe(0)
        expect(store.file).toBeNull()
        const before = await postgresTableBytes(opened!.handle, 'positions')
        await opened!.handle.db.execute(sql`CREATE TABLE positions_y2026m01 PARTITION OF positions FOR VALUES FROM (1767225600) TO (1769904000)`)
        await opened!.handle.db.execute(sql`INSERT INTO positions (device, ts, lat, lon) SELECT 1, 1767225600 + g, 0, 0 FROM generate_series(0, 999) g`)
        expect(await postgresTableBytes(opened!.handle, 'positions')).toBeGreaterThan(before)
        expect((await store.fileSizes()).database).toBeGreaterThan(sizes.database)
      } else {
        expect(store.file).toEndWith('tracker.db')
        expect(sizes.wal).toBeGreaterThanOrEqual(0)
      }
    })

    test('a copy: VACUUM INTO a file on SQLite; on PostgreSQL refused, naming pg_dump, nothing written', async () => {
      const store = await open()
      const path = join(dir, `${engine.name}-copy.db`)
      if (opened!.engine === 'sqlite') {
        await store.copyTo(path)
        expect(await integrityOfFile(path)).toBe('ok')
      } else {
        const refused = store.copyTo(path)
        await expect(refused).rejects.toBeInstanceOf(BackupNotOnPostgres)
        await expect(refused).rejects.toThrow(/pg_dump/)
        expect(existsSync(path)).toBe(false)
      }
      // the log's upkeep: PostgreSQL's is the server's (nothing to do); both settle
      await store.checkpoint()
      await store.truncateLog()
      expect(await store.answers()).toBe(true)
    })

    // SQLite answers from this process's own file: only a server can go silent
    test.if(engine.name === 'postgres')('a database that stops answering does not answer, within the bound, rather than holding /ready', async () => {
      opened = await engine.open()
      if (opened.engine !== 'postgres') return
      const target = new URL(opened.handle.where.replace(/^/, 'postgres://x@'))
      // a relay that forwards to the server until it is told to swallow everything
      let swallowing = false
      type Pair = { client: Socket<unknown>; server: Socket<unknown> | null; pending: Uint8Array[] }
      const pairs = new Set<Pair>()
      const relay = Bun.listen<Pair>({
        hostname: '127.0.0.1',
        port: 0,
        socket: {
          async open(client) {
            const pair: Pair = { client, server: null, pending: [] }
            client.data = pair
            pairs.add(pair)
            if (swallowing) return
            pair.server = await Bun.connect({
              hostname: target.hostname,
              port: Number(target.port),
              socket: { data: (_s, chunk) => void (swallowing || client.write(chunk)), close: () => void client.end() },
            })
            for (const chunk of pair.pending) pair.server.write(chunk)
          },
          data(client, chunk) {
            if (swallowing) return
            if (client.data.server) client.data.server.write(chunk)
            else client.data.pending.push(new Uint8Array(chunk))
          },
          close(client) {
            client.data.server?.end()
            pairs.delete(client.data)
          },
        },
      })
      const url = new URL(process.env.TEST_DATABASE_URL!)
      url.host = `127.0.0.1:${relay.port}`
      url.pathname = `/${target.pathname.slice(1)}`
      const relayed = await openPostgres(url.toString(), { poolSize: 1, migrate: false })
      try {
        const store = createPostgresMaintenanceStore(relayed, { answerTimeoutMs: 300 })
        expect(await store.answers()).toBe(true)
        expect(await store.migrationsApplied()).toBe(true)
        // the server side goes silent: connections held open, nothing comes back
        swallowing = true
        const started = performance.now()
        expect(await store.answers()).toBe(false)
        expect(await store.migrationsApplied()).toBe(false)
        expect(performance.now() - started).toBeLessThan(5000)
      } finally {
        for (const pair of pairs) {
          pair.server?.end()
          pair.client.end()
        }
        relay.stop(true)
        // the queries the silent server holds are abandoned at once
        await relayed.sql.end({ timeout: 0 }).catch(() => {})
        await relayed.close().catch(() => {})
      }
    }, 15_000)

    afterAll(() => rmSync(dir, { recursive: true, force: true }))
  })
}
