import { afterEach, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import * as pg from '../../../db/postgres/schema'
import * as lite from '../../../db/schema'
import { type AuditStore, createAuditStore } from '../../../src/store/audit'
import { createKeyStore, insertKeyInTransaction, type KeyStore } from '../../../src/store/keys'
import { createPeopleStore, type PeopleStore } from '../../../src/store/people'
import { createPostgresAuditStore } from '../../../src/store/postgres/audit'
import { createPostgresKeyStore, insertKeyInTransaction as insertKeyOnPostgres } from '../../../src/store/postgres/keys'
import { createPostgresPeopleStore } from '../../../src/store/postgres/people'
import { silentLogger } from '../../../src/log'
import { engines, type Opened } from './support'

const by = { actor: 'u-admin', requestId: 'r-1' }
const NOW = 1_700_000_000_000

interface World {
  keys: KeyStore
  people: PeopleStore
  audit: AuditStore
  /** the demo's key writer, in a unit of work of the engine */
  insertKey(userId: string, hash: string, now: number): Promise<boolean>
  /** a key row without a public id (as keys made before public ids were) */
  legacyKey(userId: string, hash: string): Promise<void>
  /** PostgreSQL: key names compared as a database made in a linguistic locale would (a no-op on SQLite) */
  linguisticNames(): Promise<void>
}

for (const engine of engines('the key store on PostgreSQL')) {
  describe(`the key store on ${engine.name}`, () => {
    let opened: Opened | null = null
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    /** accounts a and b; a's admin u-admin and member u-m, b's admin u-b */
    async function world(): Promise<World> {
      opened = await engine.open()
      let w: World
      if (opened.engine === 'sqlite') {
        const { db } = opened.handle
        w = {
          keys: createKeyStore(opened.handle),
          people: createPeopleStore(opened.handle),
          audit: createAuditStore(opened.handle),
          async insertKey(userId, hash, now) {
            return db.transaction((tx) => insertKeyInTransaction(tx, userId, hash, now))
          },
          async legacyKey(userId, hash) {
            db.insert(lite.apiKeys).values({ userId, hash, createdAt: NOW }).run()
          },
          async linguisticNames() {},
        }
      } else {
        const { db, sql } = opened.handle
        w = {
          keys: createPostgresKeyStore(opened.handle),
          people: createPostgresPeopleStore(opened.handle),
          audit: createPostgresAuditStore(opened.handle),
          insertKey: (userId, hash, now) => db.transaction((tx) => insertKeyOnPostgres(tx, userId, hash, now)),
          async legacyKey(userId, hash) {
            await db.insert(pg.apiKeys).values({ userId, hash, createdAt: NOW })
          },
          async linguisticNames() {
            await sql`ALTER TABLE api_keys ALTER COLUMN name TYPE text COLLATE "en-x-icu"`
          },
        }
      }
      await w.people.setupFirstAccount({ accountId: 'a', accountName: 'Acme', userId: 'u-admin', userName: 'Admin', passwordHash: 'h' }, { actor: null, requestId: null }, NOW)
      await w.people.createUser({ id: 'u-m', accountId: 'a', name: 'Mia', role: 'member', passwordHash: null, groups: [] }, by, NOW)
      await w.people.createAccount({ id: 'b', name: 'Beta' }, by, NOW)
      await w.people.createUser({ id: 'u-b', accountId: 'b', name: 'Bob', role: 'admin', passwordHash: null, groups: [] }, by, NOW)
      return w
    }

    const newKey = (name: string, publicId: string, extra: Partial<{ userId: string; accountId: string; expiresAt: number | null; now: number }> = {}) => ({
      userId: 'u-m',
      accountId: 'a',
      hash: `hash-${publicId}`,
      publicId,
      name,
      expiresAt: null,
      now: NOW,
      ...extra,
    })

    test('a key made is found by its hash with whose it is, listed by name (by code point, whatever the collation) then public id, paged; never for a user of another account', async () => {
      const { keys, audit, linguisticNames } = await world()
      await linguisticNames()
      expect(await keys.create(newKey('laptop', 'p2', { expiresAt: NOW + 1000, now: NOW + 5 }), by)).toEqual({
        id: expect.any(Number),
        publicId: 'p2',
        name: 'laptop',
        lastUsedAt: null,
        expiresAt: NOW + 1000,
        createdAt: NOW + 5,
      })
      await keys.create(newKey('Zed', 'p3'), by)
      await keys.create(newKey('laptop', 'p1'), by)
      expect(await keys.create(newKey('x', 'p9', { accountId: 'b' }), by)).toBeNull()
      expect(await keys.create(newKey('x', 'p9', { userId: 'nobody' }), by)).toBeNull()
      const found = await keys.keyByHash('hash-p2')
      expect(found).toEqual({ id: expect.any(Number), hash: 'hash-p2', userId: 'u-m', accountId: 'a', role: 'member', expiresAt: NOW + 1000 })
      expect(await keys.keyByHash('hash-p9')).toBeNull()
      // upper case first, as SQLite's BINARY collation orders them
      expect((await keys.keysOf('u-m', { limit: 10, offset: 0 })).map((k) => k.publicId)).toEqual(['p3', 'p1', 'p2'])
      expect((await keys.keysOf('u-m', { limit: 1, offset: 1 })).map((k) => k.publicId)).toEqual(['p1'])
      expect(await keys.keysOf('u-admin', { limit: 10, offset: 0 })).toEqual([])
      expect(await keys.ownerOf('p1')).toEqual({ userId: 'u-m', accountId: 'a' })
      expect(await keys.ownerOf('p9')).toBeNull()
      expect(await keys.keyHolder('u-m', 'a')).toEqual({ id: 'u-m', accountId: 'a' })
      expect(await keys.keyHolder('u-m', 'b')).toBeNull()
      expect((await audit.list('a', { limit: 10, offset: 0 })).filter((r) => r.object_type === 'key').map((r) => `${r.actor} ${r.action} ${r.object_id}`)).toEqual([
        'u-admin create p2',
        'u-admin create p1',
        'u-admin create p3',
      ])
    })

    test('a key removed goes with its audit row and moves the credentials version; another’s or a missing one does not', async () => {
      const { keys, audit } = await world()
      await keys.create(newKey('laptop', 'p1'), by)
      await keys.create(newKey('other', 'p-b', { userId: 'u-b', accountId: 'b' }), by)
      const v0 = await keys.credentialsVersion()
      expect(await keys.remove('u-m', 'a', 'p-b', NOW, by)).toBe('no-key')
      expect(await keys.remove('u-m', 'a', 'p-none', NOW, by)).toBe('no-key')
      expect(await keys.remove('u-m', 'b', 'p1', NOW, by)).toBe('no-user')
      expect(await keys.credentialsVersion()).toBe(v0)
      expect(await keys.remove('u-m', 'a', 'p1', NOW + 7, by)).toBe('removed')
      expect(await keys.credentialsVersion()).toBeGreaterThan(v0)
      expect(await keys.keyByHash('hash-p1')).toBeNull()
      expect(await keys.keyByHash('hash-p-b')).not.toBeNull()
      const [last] = await audit.list('a', { limit: 1, offset: 0 })
      expect(last).toMatchObject({ actor: 'u-admin', action: 'delete', object_type: 'key', object_id: 'p1', at: new Date(NOW + 7).toISOString(), request_id: 'r-1' })
    })

    test('a user deleted takes their keys; a role change shows in the key’s lookup', async () => {
      const { keys, people } = await world()
      await keys.create(newKey('laptop', 'p1'), by)
      await people.updateUser('a', 'u-m', { role: 'admin' }, by, NOW)
      expect((await keys.keyByHash('hash-p1'))!.role).toBe('admin')
      const v0 = await keys.credentialsVersion()
      expect(await people.deleteUser('a', 'u-m', by, NOW)).toBe('deleted')
      expect(await keys.keyByHash('hash-p1')).toBeNull()
      expect(await keys.ownerOf('p1')).toBeNull()
      expect(await keys.credentialsVersion()).toBeGreaterThan(v0)
    })

    test('keys without a public id are found by hash but not listed; the demo’s writer makes a key for a user that exists', async () => {
      const w = await world()
      await w.legacyKey('u-m', 'old-hash')
      expect((await w.keys.keyByHash('old-hash'))!.userId).toBe('u-m')
      expect(await w.keys.keysOf('u-m', { limit: 10, offset: 0 })).toEqual([])
      expect(await w.insertKey('u-admin', 'demo-hash', NOW)).toBe(true)
      expect(await w.insertKey('nobody', 'nobody-hash', NOW)).toBe(false)
      expect(await w.keys.keyByHash('demo-hash')).toMatchObject({ userId: 'u-admin', accountId: 'a', role: 'admin', expiresAt: null })
      expect(await w.keys.keyByHash('nobody-hash')).toBeNull()
      const [listed] = await w.keys.keysOf('u-admin', { limit: 10, offset: 0 })
      expect(listed).toMatchObject({ name: '', createdAt: NOW, lastUsedAt: null })
    })

    test('last uses are written in the background, never moving a use back; a removed key’s use is harmless', async () => {
      const { keys } = await world()
      const p1 = (await keys.create(newKey('one', 'p1'), by))!.id
      const p2 = (await keys.create(newKey('two', 'p2'), by))!.id
      const pending = new Map<number, number>([
        [p1, NOW + 100],
        [p2, NOW + 200],
      ])
      let written = 0
      const deferred = keys.deferUses({
        delayMs: 60_000,
        pending: () => pending,
        hasPending: () => pending.size > 0,
        written: () => {
          written++
          pending.clear()
        },
        log: silentLogger,
        failure: 'not written',
      })
      const lastUses = async () => Object.fromEntries((await keys.keysOf('u-m', { limit: 10, offset: 0 })).map((k) => [k.publicId, k.lastUsedAt]))
      const v0 = await keys.credentialsVersion()
      expect(await deferred.flush()).toBe(true)
      expect(written).toBe(1)
      expect(await lastUses()).toEqual({ p1: NOW + 100, p2: NOW + 200 })
      // a use noted out of order (an older one) never moves the last use back
      pending.set(p1, NOW + 50).set(p2, NOW + 300)
      expect(await keys.remove('u-m', 'a', 'p2', NOW, by)).toBe('removed')
      expect(await deferred.flush()).toBe(true)
      expect(await lastUses()).toEqual({ p1: NOW + 100 })
      expect(written).toBe(2)
      // last uses are not credentials: only the removal moved the version
      expect(await keys.credentialsVersion()).toBe(v0 + 1)
    })
  })
}
