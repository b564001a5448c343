import { afterEach, describe, expect, test } from 'bun:test'
import { asc, eq } from 'drizzle-orm'
import * as pg from '../../../db/postgres/schema'
import * as lite from '../../../db/schema'
import { type AuditStore, createAuditStore } from '../../../src/store/audit'
import { type ChangeBy, createPeopleStore, type PeopleStore } from '../../../src/store/people'
import { createPostgresAuditStore } from '../../../src/store/postgres/audit'
import { createPostgresPeopleStore, writeNotedUses } from '../../../src/store/postgres/people'
import { silentLogger } from '../../../src/log'
import { engines, type Opened } from './support'

const by: ChangeBy = { actor: 'cli', requestId: 'r-1' }
const NOW = 1_700_000_000_000
const DAY_MS = 86_400_000

/** one engine's database with the people store over it, and plain reads and writes of the tables it touches */
interface World {
  store: PeopleStore
  audit: AuditStore
  /** a device of the account: its key */
  device(accountId: string, id: string, alias: string): Promise<number>
  /** a share link made by `createdBy` of the devices */
  link(id: string, accountId: string, createdBy: string, deviceKeys: number[]): Promise<void>
  /** whether the link is revoked, and its devices' keys */
  linkState(id: string): Promise<{ revoked: boolean; devices: number[] }>
  /** PostgreSQL: names compared as a database made in a linguistic locale would (a no-op on SQLite) */
  linguisticNames(): Promise<void>
}

/** the first account ('a', admin 'u-admin' named Admin) and a second ('b') */
async function seed(store: PeopleStore): Promise<void> {
  expect(await store.setupFirstAccount({ accountId: 'a', accountName: 'Acme', userId: 'u-admin', userName: 'Admin', passwordHash: 'h-admin' }, { actor: null, requestId: 'r-0' }, NOW)).toBe(true)
  await store.createAccount({ id: 'b', name: 'Beta' }, by, NOW)
}

for (const engine of engines('the people store on PostgreSQL')) {
  describe(`the people store on ${engine.name}`, () => {
    let opened: Opened | null = null
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    async function world(): Promise<World> {
      opened = await engine.open()
      if (opened.engine === 'sqlite') {
        const { db } = opened.handle
        return {
          store: createPeopleStore(opened.handle),
          audit: createAuditStore(opened.handle),
          async device(accountId, id, alias) {
            return db.insert(lite.devices).values({ id, accountId, alias, serial: id, imei: id }).returning({ key: lite.devices.key }).get().key
          },
          async link(id, accountId, createdBy, deviceKeys) {
            db.insert(lite.shareLinks).values({ id, accountId, createdBy, token: `t-${id}`, shortCode: `s-${id}`, acl: '[]', expiresAt: NOW + DAY_MS }).run()
            db.insert(lite.shareLinkDevices).values(deviceKeys.map((deviceKey) => ({ linkId: id, deviceKey }))).run()
          },
          async linkState(id) {
            const link = db.select({ revoked: lite.shareLinks.revoked }).from(lite.shareLinks).where(eq(lite.shareLinks.id, id)).get()!
            const keys = db.select({ key: lite.shareLinkDevices.deviceKey }).from(lite.shareLinkDevices).where(eq(lite.shareLinkDevices.linkId, id)).orderBy(asc(lite.shareLinkDevices.deviceKey)).all()
            return { revoked: link.revoked, devices: keys.map((k) => k.key) }
          },
          async linguisticNames() {},
        }
      }
      const { db, sql } = opened.handle
      // every connection of the pool open, so that units run at once really overlap
      await Promise.all([1, 2, 3, 4].map(() => sql`SELECT pg_sleep(0.02)`))
      return {
        store: createPostgresPeopleStore(opened.handle),
        audit: createPostgresAuditStore(opened.handle),
        async device(accountId, id, alias) {
          const [row] = await db.insert(pg.devices).values({ id, accountId, alias, serial: id, imei: id }).returning({ key: pg.devices.key })
          return row!.key
        },
        async link(id, accountId, createdBy, deviceKeys) {
          await db.insert(pg.shareLinks).values({ id, accountId, createdBy, token: `t-${id}`, shortCode: `s-${id}`, acl: '[]', expiresAt: NOW + DAY_MS })
          await db.insert(pg.shareLinkDevices).values(deviceKeys.map((deviceKey) => ({ linkId: id, deviceKey })))
        },
        async linkState(id) {
          const [link] = await db.select({ revoked: pg.shareLinks.revoked }).from(pg.shareLinks).where(eq(pg.shareLinks.id, id))
          const keys = await db.select({ key: pg.shareLinkDevices.deviceKey }).from(pg.shareLinkDevices).where(eq(pg.shareLinkDevices.linkId, id)).orderBy(asc(pg.shareLinkDevices.deviceKey))
          return { revoked: link!.revoked, devices: keys.map((k) => k.key) }
        },
        async linguisticNames() {
          for (const [table, column] of [['users', 'name'], ['groups', 'name'], ['devices', 'alias']]) {
            await sql.unsafe(`ALTER TABLE ${table} ALTER COLUMN ${column} TYPE text COLLATE "en-x-icu"`)
          }
        },
      }
    }

    const auditOf = async (audit: AuditStore, accountId: string) =>
      (await audit.list(accountId, { limit: 100, offset: 0 })).map((r) => `${r.actor} ${r.action} ${r.object_type} ${r.object_id}`).sort()

    test('setup makes the first account and its admin once, even when two run at once', async () => {
      const { store, audit } = await world()
      expect(await store.hasUsers()).toBe(false)
      expect(await store.accountsWithUsers()).toEqual([])
      const rows = (n: number) => ({ accountId: `a${n}`, accountName: `Acme ${n}`, userId: `u${n}`, userName: `Admin ${n}`, passwordHash: `h${n}` })
      const results = await Promise.all([1, 2].map((n) => store.setupFirstAccount(rows(n), { actor: null, requestId: `r${n}` }, NOW)))
      expect(results.filter(Boolean)).toHaveLength(1)
      const winner = results[0] ? 1 : 2
      expect(await store.hasUsers()).toBe(true)
      expect(await store.accountsWithUsers()).toEqual([{ id: `a${winner}`, name: `Acme ${winner}` }])
      expect(await store.userWithAccount(`u${winner}`)).toEqual({ id: `u${winner}`, name: `Admin ${winner}`, role: 'admin', account: { id: `a${winner}`, name: `Acme ${winner}` } })
      expect(await store.account(`a${3 - winner}`)).toBeNull()
      expect(await store.setupFirstAccount(rows(3), { actor: 'cli', requestId: null }, NOW)).toBe(false)
      expect(await auditOf(audit, `a${winner}`)).toEqual([`u${winner} setup account a${winner}`, `u${winner} setup user u${winner}`])
    })

    test('accounts: found by id or by name in any case, created with their audit row', async () => {
      const { store, audit } = await world()
      await seed(store)
      expect(await store.account('b')).toEqual({ id: 'b', name: 'Beta' })
      expect(await store.account('c')).toBeNull()
      expect(await store.accountsNamed({ id: 'a' })).toEqual([{ id: 'a', name: 'Acme' }])
      expect(await store.accountsNamed({ name: 'bETA' })).toEqual([{ id: 'b', name: 'Beta' }])
      expect(await store.accountsNamed({ name: 'Gamma' })).toEqual([])
      // b has no user yet
      expect(await store.accountsWithUsers()).toEqual([{ id: 'a', name: 'Acme' }])
      expect(await auditOf(audit, 'b')).toEqual(['cli create account b'])
    })

    test('users: listed by name in code-point order then id, paged, with their groups; found by id or name in any case', async () => {
      const { store, audit } = await world()
      await seed(store)
      await store.createGroup({ id: 'g-z', accountId: 'a', name: 'zulu', deviceKeys: [], users: [] }, by, NOW)
      await store.createGroup({ id: 'g-b', accountId: 'a', name: 'Bravo', deviceKeys: [], users: [] }, by, NOW)
      expect(await store.createUser({ id: 'u-z', accountId: 'a', name: 'Zed', role: 'member', passwordHash: null, groups: ['g-z', 'g-b'] }, by, NOW + 1)).toBe('created')
      expect(await store.createUser({ id: 'u-al', accountId: 'a', name: 'alice', role: 'member', passwordHash: 'h-al', groups: [] }, by, NOW + 2)).toBe('created')
      expect(await store.createUser({ id: 'u-b', accountId: 'b', name: 'bob', role: 'admin', passwordHash: 'h-b', groups: [] }, by, NOW + 3)).toBe('created')
      // upper case before lower case, as SQLite's BINARY collation orders them
      expect((await store.listUsers('a', { limit: 10, offset: 0 })).map((u) => u.name)).toEqual(['Admin', 'Zed', 'alice'])
      expect((await store.listUsers('a', { limit: 1, offset: 1 })).map((u) => u.id)).toEqual(['u-z'])
      expect(await store.findUser('a', 'u-z')).toEqual({ id: 'u-z', accountId: 'a', name: 'Zed', role: 'member', createdAt: NOW + 1, groups: ['g-b', 'g-z'] })
      expect(await store.findUser('b', 'u-z')).toBeNull()
      expect(await store.usersNamed({ name: 'ALICE' })).toEqual([{ id: 'u-al', name: 'alice', accountId: 'a' }])
      expect(await store.usersNamed({ id: 'u-b' })).toEqual([{ id: 'u-b', name: 'bob', accountId: 'b' }])
      expect(await store.userWithAccount('u-b')).toEqual({ id: 'u-b', name: 'bob', role: 'admin', account: { id: 'b', name: 'Beta' } })
      expect(await store.userWithAccount('nobody')).toBeNull()
      expect(await store.credentialsOf('u-z')).toEqual({ name: 'Zed', passwordHash: null })
      expect(await store.credentialsOf('nobody')).toBeNull()
      expect(await store.userByName('ALIce')).toEqual({ id: 'u-al', passwordHash: 'h-al' })
      expect(await store.userByName('nobody')).toBeNull()
      expect(await auditOf(audit, 'a')).toContain('cli create user u-z')
    })

    test('users, groups and a group’s devices are ordered by code point even where the database’s collation is linguistic', async () => {
      const w = await world()
      const { store } = w
      await w.linguisticNames()
      await seed(store)
      for (const [id, name] of [['u-b', 'bob'], ['u-z', 'Zed'], ['u-e', 'Émile']]) {
        await store.createUser({ id, accountId: 'a', name, role: 'member', passwordHash: null, groups: [] }, by, NOW)
      }
      const keys = [await w.device('a', 'd1', 'beta'), await w.device('a', 'd2', 'Zulu'), await w.device('a', 'd3', 'Alpha')]
      for (const [id, name] of [['g1', 'office'], ['g2', 'Yard'], ['g3', 'Depot']]) {
        await store.createGroup({ id, accountId: 'a', name, deviceKeys: keys, users: ['u-b', 'u-z', 'u-e'] }, by, NOW)
      }
      expect((await store.listUsers('a', { limit: 10, offset: 0 })).map((u) => u.name)).toEqual(['Admin', 'Zed', 'bob', 'Émile'])
      const groups = await store.listGroups({ accountId: 'a', userId: 'u-admin', admin: true }, { limit: 10, offset: 0 })
      expect(groups.map((g) => g.name)).toEqual(['Depot', 'Yard', 'office'])
      expect(groups[0]!.devices).toEqual(['d3', 'd2', 'd1'])
      expect(groups[0]!.users).toEqual(['u-z', 'u-b', 'u-e'])
      expect((await store.findUser('a', 'u-b'))!.groups).toEqual(['g3', 'g2', 'g1'])
    })

    test('a user’s name is unique across accounts in any case; unknown groups and accounts are named', async () => {
      const { store } = await world()
      await seed(store)
      await store.createGroup({ id: 'g1', accountId: 'a', name: 'one', deviceKeys: [], users: [] }, by, NOW)
      await store.createGroup({ id: 'g-b', accountId: 'b', name: 'theirs', deviceKeys: [], users: [] }, by, NOW)
      expect(await store.createUser({ id: 'u2', accountId: 'b', name: 'ADMIN', role: 'member', passwordHash: null, groups: [] }, by, NOW)).toEqual({ nameTaken: true })
      expect(await store.createUser({ id: 'u2', accountId: 'a', name: 'Bea', role: 'member', passwordHash: null, groups: ['g1', 'g-b'] }, by, NOW)).toEqual({ unknown: 'groups', known: ['g1'] })
      expect(await store.createUser({ id: 'u2', accountId: 'nope', name: 'Bea', role: 'member', passwordHash: null, groups: [] }, by, NOW)).toEqual({ unknown: 'account', known: [] })
      expect(await store.findUser('a', 'u2')).toBeNull()
      // two at once with the same name in different case: one is made, the other told the name is taken
      const both = await Promise.all(
        ['Carol', 'CAROL'].map((name, i) => store.createUser({ id: `u-c${i}`, accountId: 'a', name, role: 'member', passwordHash: null, groups: ['g1'] }, by, NOW)),
      )
      expect(both.filter((r) => r === 'created')).toHaveLength(1)
      expect(both.filter((r) => typeof r === 'object' && 'nameTaken' in r)).toHaveLength(1)
      expect(await store.usersNamed({ name: 'carol' })).toHaveLength(1)
      expect(await store.createUser({ id: 'u3', accountId: 'a', name: 'Dan', role: 'member', passwordHash: null, groups: [] }, by, NOW)).toBe('created')
      expect(await store.updateUser('a', 'u3', { name: 'carol' }, by, NOW)).toEqual({ nameTaken: true })
      // one's own name in another case is no conflict
      expect(await store.updateUser('a', 'u3', { name: 'DAN' }, by, NOW)).toBe('updated')
      expect((await store.findUser('a', 'u3'))!.name).toBe('DAN')
    })

    test('a user changed: name, role and groups in one audit row, the last admin kept, links beyond the new reach ended', async () => {
      const w = await world()
      const { store, audit } = w
      await seed(store)
      const d1 = await w.device('a', 'd1', 'one')
      const d2 = await w.device('a', 'd2', 'two')
      await store.createGroup({ id: 'g1', accountId: 'a', name: 'one', deviceKeys: [d1], users: [] }, by, NOW)
      await store.createUser({ id: 'u-m', accountId: 'a', name: 'Mia', role: 'admin', passwordHash: 'h', groups: [] }, by, NOW)
      await w.link('l1', 'a', 'u-m', [d1, d2])
      const before = await store.credentialsVersion()
      // an admin made a member keeps only group g1's device in their link
      expect(await store.updateUser('a', 'u-m', { name: 'Mia B', role: 'member', groups: ['g1'] }, by, NOW + 5)).toBe('updated')
      expect(await store.findUser('a', 'u-m')).toMatchObject({ name: 'Mia B', role: 'member', groups: ['g1'] })
      expect(await w.linkState('l1')).toEqual({ revoked: false, devices: [d1] })
      expect(await store.credentialsVersion()).toBeGreaterThan(before)
      // out of every group: the link reaches nothing and is revoked (its devices kept, as a revoked link's are)
      expect(await store.updateUser('a', 'u-m', { groups: [] }, by, NOW + 6)).toBe('updated')
      expect(await w.linkState('l1')).toEqual({ revoked: true, devices: [d1] })
      expect(await store.updateUser('a', 'u-m', { groups: ['g1', 'g-none'] }, by, NOW)).toEqual({ unknown: 'groups', known: ['g1'] })
      expect(await store.updateUser('a', 'u-admin', { role: 'member' }, by, NOW)).toEqual({ lastAdmin: 'Admin' })
      expect(await store.updateUser('b', 'u-admin', { role: 'member' }, by, NOW)).toBe('no-user')
      expect(await store.updateUser('a', 'u-m', {}, by, NOW)).toBe('updated')
      expect((await auditOf(audit, 'a')).filter((r) => r.includes('update user'))).toEqual(['cli update user u-m', 'cli update user u-m'])
    })

    test('two admins demoting each other at once: the account keeps one', async () => {
      const { store } = await world()
      await seed(store)
      await store.createUser({ id: 'u-2', accountId: 'a', name: 'Second', role: 'admin', passwordHash: null, groups: [] }, by, NOW)
      const results = await Promise.all(['u-admin', 'u-2'].map((id) => store.updateUser('a', id, { role: 'member' }, by, NOW)))
      expect(results.filter((r) => r === 'updated')).toHaveLength(1)
      expect(results.filter((r) => typeof r === 'object' && 'lastAdmin' in r)).toHaveLength(1)
      const roles = await Promise.all(['u-admin', 'u-2'].map(async (id) => (await store.findUser('a', id))!.role))
      expect(roles.sort()).toEqual(['admin', 'member'])
    })

    test('a user’s groups and a group’s users changed at once, again and again: both are made, neither waits for the other forever', async () => {
      const { store } = await world()
      await seed(store)
      await store.createUser({ id: 'u-m', accountId: 'a', name: 'Mia', role: 'member', passwordHash: null, groups: [] }, by, NOW)
      await store.createGroup({ id: 'g1', accountId: 'a', name: 'one', deviceKeys: [], users: [] }, by, NOW)
      for (let round = 0; round < 8; round++) {
        const results = await Promise.all([
          store.updateUser('a', 'u-m', { name: `Mia ${round}`, groups: ['g1'] }, by, NOW),
          store.updateGroup('a', 'g1', { name: `one ${round}`, users: ['u-m', 'u-admin'] }, by, NOW),
        ])
        expect(results).toEqual(['updated', 'updated'])
      }
      expect((await store.findGroup({ accountId: 'a', userId: 'u-admin', admin: true }, 'g1'))!.name).toBe('one 7')
      expect((await store.findUser('a', 'u-m'))!.groups).toEqual(['g1'])
    })

    test('a password set ends the user’s sessions and moves the credentials version; a sign-in does not move it', async () => {
      const { store, audit } = await world()
      await seed(store)
      const v0 = await store.credentialsVersion()
      expect(await store.openSession({ idHash: 's1', userId: 'u-admin', createdAt: NOW, expiresAt: NOW + DAY_MS }, 'h-admin', NOW - DAY_MS)).toBe(true)
      expect(await store.openSession({ idHash: 's2', userId: 'u-admin', createdAt: NOW, expiresAt: NOW + DAY_MS }, null, NOW - DAY_MS)).toBe(true)
      expect(await store.credentialsVersion()).toBe(v0)
      expect(await store.sessionByHash('s1')).toEqual({ idHash: 's1', userId: 'u-admin', accountId: 'a', role: 'admin', createdAt: NOW, expiresAt: NOW + DAY_MS, lastUsedAt: NOW })
      expect(await store.setPassword('a', 'u-admin', 'h-new', by, NOW + 1)).toBe('set')
      expect(await store.sessionByHash('s1')).toBeNull()
      expect(await store.sessionByHash('s2')).toBeNull()
      expect(await store.credentialsOf('u-admin')).toEqual({ name: 'Admin', passwordHash: 'h-new' })
      expect(await store.credentialsVersion()).toBeGreaterThan(v0)
      expect(await store.setPassword('b', 'u-admin', 'h-x', by, NOW)).toBe('no-user')
      // the old password no longer opens a session
      expect(await store.openSession({ idHash: 's3', userId: 'u-admin', createdAt: NOW, expiresAt: NOW + DAY_MS }, 'h-admin', NOW - DAY_MS)).toBe(false)
      expect(await store.sessionByHash('s3')).toBeNull()
      // through updateUser too, with its own audit row
      await store.openSession({ idHash: 's4', userId: 'u-admin', createdAt: NOW, expiresAt: NOW + DAY_MS }, null, NOW - DAY_MS)
      expect(await store.updateUser('a', 'u-admin', { passwordHash: 'h-3' }, by, NOW + 2)).toBe('updated')
      expect(await store.sessionByHash('s4')).toBeNull()
      expect((await auditOf(audit, 'a')).filter((r) => r.includes('password'))).toEqual(['cli password user u-admin', 'cli password user u-admin'])
    })

    test('one’s own password change keeps the session it came from and ends the others', async () => {
      const { store, audit } = await world()
      await seed(store)
      for (const idHash of ['keep', 'other']) await store.openSession({ idHash, userId: 'u-admin', createdAt: NOW, expiresAt: NOW + DAY_MS }, null, NOW - DAY_MS)
      const v0 = await store.credentialsVersion()
      expect(await store.changeOwnPassword('u-admin', 'wrong', 'h2', 'keep', 'r-9', NOW)).toBe('changed-meanwhile')
      expect(await store.changeOwnPassword('nobody', 'h-admin', 'h2', 'keep', 'r-9', NOW)).toBe('no-user')
      expect(await store.changeOwnPassword('u-admin', 'h-admin', 'h2', 'keep', 'r-9', NOW)).toBe('changed')
      expect(await store.sessionByHash('keep')).not.toBeNull()
      expect(await store.sessionByHash('other')).toBeNull()
      expect(await store.credentialsVersion()).toBeGreaterThan(v0)
      expect(await store.changeOwnPassword('u-admin', 'h2', 'h3', null, null, NOW)).toBe('changed')
      expect(await store.sessionByHash('keep')).toBeNull()
      // newest first
      expect((await audit.list('a', { limit: 10, offset: 0 })).filter((r) => r.action === 'password').map((r) => [r.actor, r.request_id])).toEqual([
        ['u-admin', null],
        ['u-admin', 'r-9'],
      ])
      // two changes from the same password at once: one wins, the other is told it changed meanwhile
      const both = await Promise.all(['h4', 'h5'].map((next) => store.changeOwnPassword('u-admin', 'h3', next, null, null, NOW)))
      expect(both.sort()).toEqual(['changed', 'changed-meanwhile'])
    })

    test('sessions: swept when expired, renewed, ended; none for a user without a password; the demo’s password replaced', async () => {
      const { store } = await world()
      await seed(store)
      await store.openSession({ idHash: 'old', userId: 'u-admin', createdAt: NOW - 3 * DAY_MS, expiresAt: NOW - 2 * DAY_MS }, null, 0)
      expect(await store.sessionByHash('old')).not.toBeNull()
      await store.openSession({ idHash: 'new', userId: 'u-admin', createdAt: NOW, expiresAt: NOW + DAY_MS }, null, NOW - DAY_MS)
      expect(await store.sessionByHash('old')).toBeNull()
      await store.renewSession('new', NOW + 10, NOW + 70, { idHash: 'newer', userId: 'u-admin', createdAt: NOW + 10, expiresAt: NOW + 10 + DAY_MS })
      expect(await store.sessionByHash('new')).toMatchObject({ lastUsedAt: NOW + 10, expiresAt: NOW + 70 })
      expect(await store.sessionByHash('newer')).toMatchObject({ createdAt: NOW + 10, lastUsedAt: NOW + 10, expiresAt: NOW + 10 + DAY_MS })
      const v0 = await store.credentialsVersion()
      await store.endSession('new')
      expect(await store.sessionByHash('new')).toBeNull()
      expect(await store.credentialsVersion()).toBeGreaterThan(v0)
      await store.replaceDemoPassword('u-admin', 'h-demo')
      expect(await store.sessionByHash('newer')).toBeNull()
      expect(await store.credentialsOf('u-admin')).toEqual({ name: 'Admin', passwordHash: 'h-demo' })
      await store.createUser({ id: 'u-np', accountId: 'a', name: 'Nopass', role: 'member', passwordHash: null, groups: [] }, by, NOW)
      await store.openSession({ idHash: 'np', userId: 'u-np', createdAt: NOW, expiresAt: NOW + DAY_MS }, null, 0)
      expect(await store.sessionByHash('np')).toBeNull()
      // the user's name is never signed in with when empty
      expect(await store.userByName('')).toBeNull()
    })

    test('sessions’ last uses are written in the background, sliding only the sessions that slide', async () => {
      const { store } = await world()
      await seed(store)
      const LIFETIME = DAY_MS
      await store.openSession({ idHash: 'slide', userId: 'u-admin', createdAt: NOW, expiresAt: NOW + LIFETIME }, null, 0)
      await store.renewSession('slide', NOW, NOW + 60_000, { idHash: 'fresh', userId: 'u-admin', createdAt: NOW, expiresAt: NOW + LIFETIME })
      const pending = new Map<string, number>([
        ['slide', NOW + 500],
        ['fresh', NOW + 1000],
        ['gone', NOW + 1000],
      ])
      let written = 0
      const deferred = store.deferSessionUses(LIFETIME, {
        delayMs: 60_000,
        pending: () => [...pending],
        hasPending: () => pending.size > 0,
        written: () => {
          written++
          pending.clear()
        },
        log: silentLogger,
        failure: 'not written',
      })
      expect(await deferred.flush()).toBe(true)
      expect(written).toBe(1)
      expect(pending.size).toBe(0)
      // the renewed one ends at its grace: not slid
      expect(await store.sessionByHash('slide')).toMatchObject({ lastUsedAt: NOW, expiresAt: NOW + 60_000 })
      expect(await store.sessionByHash('fresh')).toMatchObject({ lastUsedAt: NOW + 1000, expiresAt: NOW + 1000 + LIFETIME })
      expect(await store.sessionByHash('gone')).toBeNull()
      expect(await deferred.flush()).toBe(true)
      expect(written).toBe(1)
    })

    test('a user deleted: sessions, memberships and keys go, the links they made are revoked, the last admin stays', async () => {
      const w = await world()
      const { store, audit } = w
      await seed(store)
      const d1 = await w.device('a', 'd1', 'one')
      await store.createUser({ id: 'u-m', accountId: 'a', name: 'Mia', role: 'admin', passwordHash: 'h', groups: [] }, by, NOW)
      await store.createGroup({ id: 'g1', accountId: 'a', name: 'one', deviceKeys: [d1], users: ['u-m', 'u-admin'] }, by, NOW)
      await store.openSession({ idHash: 's-m', userId: 'u-m', createdAt: NOW, expiresAt: NOW + DAY_MS }, null, 0)
      await w.link('l-m', 'a', 'u-m', [d1])
      const v0 = await store.credentialsVersion()
      expect(await store.deleteUser('b', 'u-m', by, NOW)).toBe('no-user')
      expect(await store.deleteUser('a', 'u-m', by, NOW)).toBe('deleted')
      expect(await store.findUser('a', 'u-m')).toBeNull()
      expect(await store.sessionByHash('s-m')).toBeNull()
      expect((await store.findGroup({ accountId: 'a', userId: 'u-admin', admin: true }, 'g1'))!.users).toEqual(['u-admin'])
      expect((await w.linkState('l-m')).revoked).toBe(true)
      expect(await store.credentialsVersion()).toBeGreaterThan(v0)
      expect(await store.deleteUser('a', 'u-admin', by, NOW)).toEqual({ lastAdmin: 'Admin' })
      expect(await auditOf(audit, 'a')).toContain('cli delete user u-m')
    })

    test('groups: seen by admins whole and by members when theirs, by name then id; devices by alias of the account only', async () => {
      const w = await world()
      const { store, audit } = w
      await seed(store)
      const dz = await w.device('a', 'dz', 'Zulu')
      const da = await w.device('a', 'da', 'alpha')
      const other = await w.device('b', 'dx', 'Other')
      await store.createUser({ id: 'u-m', accountId: 'a', name: 'Mia', role: 'member', passwordHash: null, groups: [] }, by, NOW)
      expect(await store.createGroup({ id: 'g1', accountId: 'a', name: 'field', deviceKeys: [da, dz, other], users: ['u-m', 'u-admin'] }, by, NOW)).toBe('created')
      expect(await store.createGroup({ id: 'g2', accountId: 'a', name: 'Office', deviceKeys: [], users: [] }, by, NOW)).toBe('created')
      expect(await store.createGroup({ id: 'g3', accountId: 'a', name: 'x', deviceKeys: [], users: ['u-m', 'u-elsewhere'] }, by, NOW)).toEqual({ unknown: 'users', known: ['u-m'] })
      const admin = { accountId: 'a', userId: 'u-admin', admin: true }
      const member = { accountId: 'a', userId: 'u-m', admin: false }
      expect(await store.listGroups(admin, { limit: 10, offset: 0 })).toEqual([
        { id: 'g2', name: 'Office', devices: [], users: [] },
        { id: 'g1', name: 'field', devices: ['dz', 'da'], users: ['u-admin', 'u-m'] },
      ])
      expect((await store.listGroups(admin, { limit: 1, offset: 1 })).map((g) => g.id)).toEqual(['g1'])
      expect((await store.listGroups(member, { limit: 10, offset: 0 })).map((g) => g.id)).toEqual(['g1'])
      expect(await store.findGroup(member, 'g2')).toBeNull()
      expect(await store.findGroup({ accountId: 'b', userId: 'x', admin: true }, 'g1')).toBeNull()
      expect(await store.groupsNamed('a', { name: 'OFFICE' })).toEqual([{ id: 'g2', name: 'Office' }])
      expect(await store.groupsNamed('a', { id: 'g1' })).toEqual([{ id: 'g1', name: 'field' }])
      expect(await store.groupsNamed('b', { id: 'g1' })).toEqual([])
      expect(await auditOf(audit, 'a')).toContain('cli create group g2')
    })

    test('a group changed or deleted: members replaced, links beyond their creators’ reach ended, memberships cascade', async () => {
      const w = await world()
      const { store, audit } = w
      await seed(store)
      const d1 = await w.device('a', 'd1', 'one')
      const d2 = await w.device('a', 'd2', 'two')
      await store.createUser({ id: 'u-m', accountId: 'a', name: 'Mia', role: 'member', passwordHash: null, groups: [] }, by, NOW)
      await store.createGroup({ id: 'g1', accountId: 'a', name: 'field', deviceKeys: [d1, d2], users: ['u-m'] }, by, NOW)
      await w.link('l1', 'a', 'u-m', [d1, d2])
      const member = { accountId: 'a', userId: 'u-m', admin: false }
      expect(await store.updateGroup('a', 'g1', { name: 'Field', deviceKeys: [d2] }, by, NOW)).toBe('updated')
      expect(await store.findGroup(member, 'g1')).toEqual({ id: 'g1', name: 'Field', devices: ['d2'], users: ['u-m'] })
      expect(await w.linkState('l1')).toEqual({ revoked: false, devices: [d2] })
      expect(await store.updateGroup('a', 'g1', { users: ['u-m', 'u-zz'] }, by, NOW)).toEqual({ unknown: 'users', known: ['u-m'] })
      expect(await store.updateGroup('b', 'g1', { name: 'x' }, by, NOW)).toBe('no-group')
      // the member removed from the group: their link reaches nothing and is revoked
      expect(await store.updateGroup('a', 'g1', { users: [] }, by, NOW)).toBe('updated')
      expect(await w.linkState('l1')).toEqual({ revoked: true, devices: [d2] })
      expect((await store.findUser('a', 'u-m'))!.groups).toEqual([])
      expect(await store.updateGroup('a', 'g1', { users: ['u-m'] }, by, NOW)).toBe('updated')
      expect(await store.deleteGroup('b', 'g1', by, NOW)).toBe('no-group')
      expect(await store.deleteGroup('a', 'g1', by, NOW)).toBe('deleted')
      expect(await store.findGroup({ accountId: 'a', userId: 'u-admin', admin: true }, 'g1')).toBeNull()
      expect((await store.findUser('a', 'u-m'))!.groups).toEqual([])
      expect((await auditOf(audit, 'a')).filter((r) => r.includes('group g1'))).toEqual([
        'cli create group g1',
        'cli delete group g1',
        'cli update group g1',
        'cli update group g1',
        'cli update group g1',
      ])
    })
  })
}

describe('uses noted while the background write runs (PostgreSQL’s writer awaits its write)', () => {
  test('are written too before everything waiting is forgotten', async () => {
    const pending = new Map<string, number>([['a', 1]])
    const writes: [string, number][][] = []
    let forgotten = 0
    await writeNotedUses(
      () => pending,
      () => {
        forgotten++
        pending.clear()
      },
      async (uses) => {
        writes.push(uses)
        // a request notes a use while the first write is on its way
        if (writes.length === 1) pending.set('b', 2).set('a', 3)
      },
    )
    expect(writes).toEqual([[['a', 1]], [['a', 3], ['b', 2]]])
    expect(forgotten).toBe(1)
  })

  test('a node that keeps noting uses leaves them waiting instead of forgetting them', async () => {
    const pending = new Map<string, number>([['a', 1]])
    let forgotten = 0
    let n = 1
    await writeNotedUses(
      () => pending,
      () => forgotten++,
      async () => void pending.set('a', ++n),
    )
    expect(forgotten).toBe(0)
    expect(pending.get('a')).toBe(4)
  })
})
