import { afterEach, describe, expect, test } from 'bun:test'
import { accounts as pgAccounts } from '../../../db/postgres/schema'
import { accounts } from '../../../db/schema'
import { type AuditStore, createAuditStore, recordAuditInTransaction } from '../../../src/store/audit'
import { createPostgresAuditStore, recordAuditInTransaction as recordOnPostgres } from '../../../src/store/postgres/audit'
import { engines, type Opened } from './support'

const entry = (objectId: string) => ({ accountId: 'a', actor: 'cli', action: 'create' as const, objectType: 'device' as const, objectId, requestId: 'r-1' })

for (const engine of engines('the audit store on PostgreSQL')) {
  describe(`the audit store on ${engine.name}`, () => {
    let opened: Opened | null = null
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    /** writes entries at the given times as a unit of work would, and answers the store */
    async function withEntries(times: number[]): Promise<AuditStore> {
      opened = await engine.open()
      if (opened.engine === 'sqlite') {
        const { db } = opened.handle
        db.insert(accounts).values({ id: 'a', name: 'A' }).run()
        db.transaction((tx) => times.forEach((at, i) => recordAuditInTransaction(tx, entry(`d${i}`), at)))
        return createAuditStore(opened.handle)
      }
      const { db } = opened.handle
      await db.insert(pgAccounts).values({ id: 'a', name: 'A' })
      await db.transaction(async (tx) => {
        for (const [i, at] of times.entries()) await recordOnPostgres(tx, entry(`d${i}`), at)
      })
      return createPostgresAuditStore(opened.handle)
    }

    test('lists an account’s entries newest first within the window, paged', async () => {
      const store = await withEntries([1000, 3000, 2000, 4000])
      const all = await store.list('a', { limit: 10, offset: 0 })
      expect(all.map((r) => r.object_id)).toEqual(['d3', 'd1', 'd2', 'd0'])
      expect(all[0]).toMatchObject({ actor: 'cli', action: 'create', object_type: 'device', at: new Date(4000).toISOString(), request_id: 'r-1' })
      expect((await store.list('a', { fromMs: 2000, toMs: 3000, limit: 10, offset: 0 })).map((r) => r.object_id)).toEqual(['d1', 'd2'])
      expect((await store.list('a', { limit: 2, offset: 1 })).map((r) => r.object_id)).toEqual(['d1', 'd2'])
      expect(await store.list('b', { limit: 10, offset: 0 })).toEqual([])
    })
  })
}
