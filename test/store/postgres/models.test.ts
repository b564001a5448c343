/**
 * The models store on both engines: the same answers (order, paging, scoping, conflicts, audit
 * rows) from src/store/models.ts over SQLite and src/store/postgres/models.ts over PostgreSQL,
 * and the built-in catalogue brought up to date at opening.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import * as pg from '../../../db/postgres/schema'
import * as lite from '../../../db/schema'
import { BUILTIN_MODELS, ensureBuiltinModels, ensureBuiltinModelsOnPostgres } from '../../../src/commands/catalogue'
import { createAuditStore } from '../../../src/store/audit'
import { createModelStore, type ModelAudit, type ModelStore } from '../../../src/store/models'
import { createPostgresAuditStore } from '../../../src/store/postgres/audit'
import { createPostgresModelStore } from '../../../src/store/postgres/models'
import { Forbidden } from '../../../src/errors'
import { engines, type Opened } from './support'
import { openPostgres } from '../../../db/postgres/client'
import { freshPostgres, testDatabaseUrl } from '../../support/postgres'

const A = 'aa000000-0000-4000-8000-000000000001'
const B = 'aa000000-0000-4000-8000-000000000002'
const model = (n: number) => `bb000000-0000-4000-8000-00000000000${n}`
const command = (n: number) => `cc000000-0000-4000-8000-00000000000${n}`
const device = (n: number) => `dd000000-0000-4000-8000-00000000000${n}`
const audit: ModelAudit = { actor: 'admin-1', requestId: 'req-1', accounts: [A] }
const widget = { type: 'button', label: 'Go' }

interface Kit {
  store: ModelStore
  /** the built-in catalogue brought up to date as the opening does */
  ensure(nowMs: number): Promise<{ created: string[]; updated: string[] }>
  auditOf(account: string): Promise<{ action: string; object_id: string; actor: string; request_id: string | null }[]>
  seedDevice(id: string, account: string, modelId: string): Promise<void>
  /** a command's name changed by hand (as an operator's SQL would) */
  renameCommand(id: string, name: string): Promise<void>
  commandCount(): Promise<number>
}

for (const engine of engines('the models store on PostgreSQL')) {
  describe(`the models store on ${engine.name}`, () => {
    let opened: Opened | null = null
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    async function kit(): Promise<Kit> {
      opened = await engine.open()
      const nowMs = 1_700_000_000_000
      if (opened.engine === 'sqlite') {
        const { db } = opened.handle
        db.insert(lite.accounts).values([{ id: A, name: 'A' }, { id: B, name: 'B' }]).run()
        const auditStore = createAuditStore(opened.handle)
        return {
          store: createModelStore(opened.handle),
          ensure: async (now) => ensureBuiltinModels(db, now),
          auditOf: (account) => auditStore.list(account, { limit: 100, offset: 0 }),
          seedDevice: async (id, account, modelId) =>
            void db.insert(lite.devices).values({ id, accountId: account, modelId, alias: id, serial: id, imei: '', createdAt: nowMs, updatedAt: nowMs }).run(),
          renameCommand: async (id, name) => void db.update(lite.commands).set({ name }).where(eq(lite.commands.id, id)).run(),
          commandCount: async () => db.select({ n: sql<number>`count(*)` }).from(lite.commands).get()!.n,
        }
      }
      const { db } = opened.handle
      await db.insert(pg.accounts).values([{ id: A, name: 'A' }, { id: B, name: 'B' }])
      // a column sorted by a natural-language collation, as a database created with en_US would: the store must still sort by bytes
      await db.execute(sql`ALTER TABLE models ALTER COLUMN name TYPE text COLLATE "en-US-x-icu"`)
      const auditStore = createPostgresAuditStore(opened.handle)
      return {
        store: createPostgresModelStore(opened.handle),
        ensure: (now) => ensureBuiltinModelsOnPostgres(db, now),
        auditOf: (account) => auditStore.list(account, { limit: 100, offset: 0 }),
        seedDevice: async (id, account, modelId) =>
          void (await db.insert(pg.devices).values({ id, accountId: account, modelId, alias: id, serial: id, imei: '', createdAt: nowMs, updatedAt: nowMs })),
        renameCommand: async (id, name) => void (await db.update(pg.commands).set({ name }).where(eq(pg.commands.id, id))),
        commandCount: async () => Number((await db.select({ n: sql<number>`count(*)` }).from(pg.commands))[0]!.n),
      }
    }

    test('creates models with their commands, reads them back, lists them by name in byte order, scoped and paged', async () => {
      const { store, auditOf } = await kit()
      const made = await store.create({ id: model(1), name: 'beta', protocol: 'gt06', accountId: A }, [
        { id: command(1).toUpperCase(), name: 'Stop', widget, send: { text: 'STOP#' } },
        { name: 'Free', widget: { type: 'form', fields: [] } as unknown as typeof widget },
      ], audit, 1000)
      expect(made).toMatchObject({ id: model(1), name: 'beta', protocol: 'gt06', account: A })
      if (!('commands' in made)) throw new Error('taken')
      expect(made.commands.map((c) => c.name)).toEqual(['Stop', 'Free'])
      expect(made.commands[0]).toEqual({ id: command(1), name: 'Stop', widget, send: { text: 'STOP#' } })
      await store.create({ id: model(2), name: 'Alpha', protocol: null, accountId: null }, [], audit, 1000)
      await store.create({ id: model(3), name: 'alpha', protocol: 'osmand', accountId: B }, [], audit, 1000)
      await store.create({ id: model(4), name: 'Zulu', protocol: 'osmand', accountId: A }, [], audit, 1000)

      expect((await store.list(null, { limit: 10, offset: 0 })).map((m) => m.name)).toEqual(['Alpha', 'Zulu', 'alpha', 'beta'])
      expect((await store.list(A, { limit: 10, offset: 0 })).map((m) => m.id)).toEqual([model(2), model(4), model(1)])
      expect((await store.list(A, { limit: 2, offset: 1 })).map((m) => m.id)).toEqual([model(4), model(1)])
      expect((await store.list(B, { limit: 10, offset: 0 })).map((m) => m.id)).toEqual([model(2), model(3)])
      expect((await store.list(null, { limit: 10, offset: 0 }))[3]).toEqual(made)

      expect(await store.find(model(1))).toEqual({ id: model(1), name: 'beta', protocol: 'gt06', accountId: A })
      expect(await store.find(model(9))).toBeNull()
      expect(await store.body(model(1))).toEqual(made)
      expect(await store.body(model(9))).toBeNull()
      const listed = await store.commandsOf(model(1))
      expect(listed).toEqual([
        { id: command(1), name: 'Stop', widget: JSON.stringify(widget) },
        { id: made.commands[1]!.id, name: 'Free', widget: '{"type":"form","fields":[]}' },
      ])
      expect(await store.sendable(model(1), command(1))).toEqual({ id: command(1), name: 'Stop', widget: JSON.stringify(widget), send: '{"text":"STOP#"}', protocol: 'gt06' })
      expect(await store.sendable(model(2), command(1))).toBeNull()
      // the audit rows: the model's own account and the admin's (A), once each; a server-wide model in the admin's only
      // newest first (one time: the latest written first)
      expect((await auditOf(A)).map((r) => [r.action, r.object_id, r.actor, r.request_id])).toEqual([
        ['create', model(4), 'admin-1', 'req-1'],
        ['create', model(3), 'admin-1', 'req-1'],
        ['create', model(2), 'admin-1', 'req-1'],
        ['create', model(1), 'admin-1', 'req-1'],
      ])
      expect((await auditOf(B)).map((r) => r.object_id)).toEqual([model(3)])
    })

    test('a command id of another model writes nothing and says which', async () => {
      const { store, commandCount } = await kit()
      await store.create({ id: model(1), name: 'One', protocol: null, accountId: A }, [{ id: command(1), name: 'Stop', widget }], audit, 1000)
      const taken = await store.create({ id: model(2), name: 'Two', protocol: null, accountId: A }, [{ id: command(2), name: 'x', widget }, { id: command(1), name: 'y', widget }], audit, 1000)
      expect(taken).toEqual({ taken: command(1), index: 1 })
      expect(await store.find(model(2))).toBeNull()
      expect(await commandCount()).toBe(1)
      const onUpdate = await store.update(model(1), { name: 'Renamed', commands: [{ id: command(3), name: 'z', widget }] }, audit, 2000)
      expect(onUpdate).toMatchObject({ name: 'Renamed', commands: [{ id: command(3), name: 'z', widget }] })
      await store.create({ id: model(2), name: 'Two', protocol: null, accountId: A }, [{ id: command(4), name: 'x', widget }], audit, 1000)
      expect(await store.update(model(2), { name: 'Gone', commands: [{ id: command(3), name: 'stolen', widget }] }, audit, 3000)).toEqual({ taken: command(3), index: 0 })
      expect(await store.body(model(2))).toMatchObject({ name: 'Two', commands: [{ id: command(4) }] })
    })

    test('updates a model: name and protocol given, commands replaced keeping ids, audit rows in every account using it', async () => {
      const { store, auditOf, seedDevice } = await kit()
      await store.create({ id: model(1), name: 'One', protocol: 'gt06', accountId: null }, [
        { id: command(1), name: 'Keep', widget },
        { id: command(2), name: 'Drop', widget },
      ], { ...audit, accounts: [] }, 1000)
      await seedDevice(device(1), B, model(1))
      const updated = await store.update(model(1), { protocol: null, commands: [{ id: command(3), name: 'New', widget }, { id: command(1), name: 'Kept', widget }] }, audit, 2000)
      expect(updated).toEqual({ id: model(1), name: 'One', protocol: null, account: null, commands: [
        { id: command(3), name: 'New', widget },
        { id: command(1), name: 'Kept', widget },
      ] })
      expect(await store.update(model(1), { name: 'Two' }, audit, 3000)).toMatchObject({ name: 'Two', protocol: null, commands: [{ id: command(3) }, { id: command(1) }] })
      expect(await store.update(model(9), { name: 'x' }, audit, 3000)).toBeNull()
      // the service's rule refuses: nothing written
      const refuse = () => {
        throw new Forbidden('server-wide')
      }
      await expect(store.update(model(1), { name: 'Three' }, audit, 4000, refuse)).rejects.toBeInstanceOf(Forbidden)
      expect((await store.find(model(1)))!.name).toBe('Two')
      expect((await auditOf(B)).map((r) => [r.action, r.object_id])).toEqual([['update', model(1)], ['update', model(1)]])
      expect((await auditOf(A)).map((r) => r.action)).toEqual(['update', 'update'])
    })

    test('deletes a model no device uses, with its commands and audit rows; a used one stays', async () => {
      const { store, auditOf, seedDevice, commandCount } = await kit()
      await store.create({ id: model(1), name: 'One', protocol: null, accountId: B }, [{ id: command(1), name: 'Stop', widget }], audit, 1000)
      await store.create({ id: model(2), name: 'Two', protocol: null, accountId: B }, [{ id: command(2), name: 'Stop', widget }], audit, 1000)
      await seedDevice(device(1), B, model(2))
      expect(await store.delete(model(2), audit, 2000)).toBe('used')
      expect(await store.delete(model(9), audit, 2000)).toBe('missing')
      await expect(store.delete(model(1), audit, 2000, () => { throw new Forbidden('no') })).rejects.toBeInstanceOf(Forbidden)
      expect(await store.delete(model(1), audit, 3000)).toBe('deleted')
      expect(await store.find(model(1))).toBeNull()
      expect(await commandCount()).toBe(1)
      expect((await auditOf(B)).map((r) => [r.action, r.object_id])).toEqual([['delete', model(1)], ['create', model(2)], ['create', model(1)]])
    })

    test('the built-in catalogue: created once, restored when changed by hand, audited where devices use it', async () => {
      const { store, ensure, auditOf, seedDevice, renameCommand } = await kit()
      const first = await ensure(1000)
      expect(first.created).toEqual(BUILTIN_MODELS.map((m) => m.id))
      expect(first.updated).toEqual([])
      expect(await ensure(2000)).toEqual({ created: [], updated: [] })
      const listed = await store.list(null, { limit: 1000, offset: 0 })
      expect(listed).toEqual([...BUILTIN_MODELS].sort((x, y) => (x.name === y.name ? (x.id < y.id ? -1 : 1) : x.name < y.name ? -1 : 1)))
      const withCommands = BUILTIN_MODELS.find((m) => m.commands.length > 0)!
      await seedDevice(device(1), A, withCommands.id)
      await renameCommand(withCommands.commands[0]!.id, 'changed by hand')
      expect(await ensure(3000)).toEqual({ created: [], updated: [withCommands.id] })
      expect(await store.body(withCommands.id)).toEqual(withCommands)
      expect((await auditOf(A)).map((r) => [r.action, r.object_id, r.actor])).toEqual([['update', withCommands.id, 'cli']])
    })

    test('the built-in catalogue brought up to date by two openings at once: created once', async () => {
      const { ensure, store } = await kit()
      const [one, other] = await Promise.all([ensure(1000), ensure(1000)])
      expect([...one.created, ...other.created].sort()).toEqual(BUILTIN_MODELS.map((m) => m.id).sort())
      expect([...one.updated, ...other.updated]).toEqual([])
      expect((await store.list(null, { limit: 1000, offset: 0 })).length).toBe(BUILTIN_MODELS.length)
    })
  })
}

describe('the built-in catalogue at PostgreSQL’s opening', () => {
  test.if(testDatabaseUrl !== null)('openPostgres’s afterMigrate brings it up to date, each opening after the first finding nothing to do', async () => {
    const fresh = await freshPostgres()
    const outcomes: { created: string[]; updated: string[] }[] = []
    const open = () => openPostgres(fresh.url, { poolSize: 2, afterMigrate: async (db) => void outcomes.push(await ensureBuiltinModelsOnPostgres(db, 1000)) })
    try {
      for (let i = 0; i < 2; i++) {
        const handle = await open()
        const listed = await createPostgresModelStore(handle).list(null, { limit: 1000, offset: 0 })
        expect(listed.map((m) => m.id).sort()).toEqual(BUILTIN_MODELS.map((m) => m.id).sort())
        await handle.close()
      }
      expect(outcomes).toEqual([{ created: BUILTIN_MODELS.map((m) => m.id), updated: [] }, { created: [], updated: [] }])
    } finally {
      await fresh.drop()
    }
  })
})

