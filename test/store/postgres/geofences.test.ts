import { afterEach, describe, expect, test } from 'bun:test'
import * as pg from '../../../db/postgres/schema'
import * as lite from '../../../db/schema'
import { createAuditStore } from '../../../src/store/audit'
import { createGeofenceCache } from '../../../src/alerts/cache'
import { manualClock } from '../../../src/clock'
import { createGeofenceCacheReads, createGeofenceStore, type GeofenceCacheReads, type GeofenceRow, type GeofenceStore } from '../../../src/store/geofences'
import { createPostgresAuditStore } from '../../../src/store/postgres/audit'
import { createPostgresGeofenceCacheReads, createPostgresGeofenceStore } from '../../../src/store/postgres/geofences'
import { engines, type Opened } from './support'

const audit = { actor: 'u-admin', requestId: 'r-1' }
const circle = (radius: number) => JSON.stringify({ type: 'Circle', center: [48.85, 2.35], radius })
const rowOf = (id: string, name: string, accountId = 'a', createdAt = 1000): GeofenceRow => ({
  id,
  accountId,
  name,
  area: circle(100),
  groups: '[]',
  speedLimit: null,
  createdAt,
  updatedAt: createdAt,
})

for (const engine of engines('the geofence store on PostgreSQL')) {
  describe(`the geofence store on ${engine.name}`, () => {
    let opened: Opened | null = null
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    /** two accounts, a group in each; the store, the cache reads (as promises) and the audit list */
    async function world() {
      opened = await engine.open()
      const accounts = [
        { id: 'a', name: 'A' },
        { id: 'b', name: 'B' },
      ]
      const groups = [
        { id: 'g-a', accountId: 'a', name: 'Yard' },
        { id: 'g-b', accountId: 'b', name: 'Other' },
      ]
      if (opened.engine === 'sqlite') {
        const { db } = opened.handle
        db.insert(lite.accounts).values(accounts).run()
        db.insert(lite.groups).values(groups).run()
        // SQLite reads on the connection: nothing to read ahead
        const reads: GeofenceCacheReads & { load?(accountIds: string[]): Promise<void> } = createGeofenceCacheReads(opened.handle)
        return { store: createGeofenceStore(opened.handle) as GeofenceStore, reads, audits: createAuditStore(opened.handle) }
      }
      const { db } = opened.handle
      await db.insert(pg.accounts).values(accounts)
      await db.insert(pg.groups).values(groups)
      return { store: createPostgresGeofenceStore(opened.handle), reads: createPostgresGeofenceCacheReads(opened.handle), audits: createPostgresAuditStore(opened.handle) }
    }

    test('lists an account’s geofences by name (bytes, as SQLite sorts, even where the database’s collation is linguistic) then id, paged; finds one by id in any case; counts', async () => {
      const { store } = await world()
      if (opened!.engine === 'postgres') await opened!.handle.sql.unsafe(`ALTER TABLE geofences ALTER COLUMN name TYPE text COLLATE "en-x-icu"`)
      for (const [id, name] of [['g4', 'b'], ['g3', 'a'], ['g2', 'B'], ['g1', 'a'], ['g5', 'Été']] as const) {
        expect(await store.create({ row: rowOf(id, name), groupIds: [], maxPerAccount: 10 }, audit)).toEqual({ created: rowOf(id, name) })
      }
      await store.create({ row: rowOf('gb', 'a', 'b'), groupIds: [], maxPerAccount: 10 }, audit)
      const names = (rows: GeofenceRow[]) => rows.map((r) => `${r.name}/${r.id}`)
      expect(names(await store.list('a', { limit: 10, offset: 0 }))).toEqual(['B/g2', 'a/g1', 'a/g3', 'b/g4', 'Été/g5'])
      expect(names(await store.list('a', { limit: 2, offset: 1 }))).toEqual(['a/g1', 'a/g3'])
      expect(await store.list('c', { limit: 10, offset: 0 })).toEqual([])
      expect(await store.find('a', 'G3')).toEqual(rowOf('g3', 'a'))
      expect(await store.find('b', 'g3')).toBeNull()
      expect(await store.count('a')).toBe(5)
      expect(await store.count('b')).toBe(1)
      expect(await store.count('c')).toBe(0)
    })

    test('a creation is refused when the account is full or names a group not its own, writing nothing', async () => {
      const { store, audits } = await world()
      await store.create({ row: rowOf('g1', 'one'), groupIds: [], maxPerAccount: 2 }, audit)
      const grouped = { ...rowOf('g2', 'two'), groups: '["g-a"]' }
      expect(await store.create({ row: grouped, groupIds: ['g-a'], maxPerAccount: 2 }, audit)).toEqual({ created: grouped })
      expect(await store.create({ row: rowOf('g3', 'three'), groupIds: [], maxPerAccount: 2 }, audit)).toEqual({ held: 2 })
      const refused = await store.create({ row: rowOf('g4', 'four'), groupIds: ['g-a', 'g-b', 'g-x'], maxPerAccount: 10 }, audit)
      expect(refused).toEqual({ groupsFound: new Set(['g-a']) })
      expect(await store.count('a')).toBe(2)
      const trail = await audits.list('a', { limit: 10, offset: 0 })
      expect(trail.map((r) => [r.action, r.object_type, r.object_id, r.actor, r.request_id])).toEqual([
        ['create', 'geofence', 'g2', 'u-admin', 'r-1'],
        ['create', 'geofence', 'g1', 'u-admin', 'r-1'],
      ])
    })

    test('two creations at once cannot both take the last place', async () => {
      const { store } = await world()
      const outcomes = await Promise.all(['g1', 'g2', 'g3'].map((id) => store.create({ row: rowOf(id, id), groupIds: [], maxPerAccount: 1 }, audit)))
      expect(outcomes.filter((o) => 'created' in o)).toHaveLength(1)
      expect(outcomes.filter((o) => 'held' in o)).toEqual([{ held: 1 }, { held: 1 }])
      expect(await store.count('a')).toBe(1)
    })

    test('a change sets what it names, moves updated_at on by a millisecond at least, and writes its audit row', async () => {
      const { store, audits } = await world()
      await store.create({ row: rowOf('g1', 'one', 'a', 5000), groupIds: [], maxPerAccount: 10 }, audit)
      const renamed = await store.update('a', 'G1', { name: 'uno', speedLimit: 50 }, 4000, audit)
      expect(renamed).toEqual({ row: { ...rowOf('g1', 'uno', 'a', 5000), speedLimit: 50, updatedAt: 5001 }, changed: true })
      const moved = await store.update('a', 'g1', { area: circle(200), groupIds: ['g-a'], speedLimit: null }, 9000, audit)
      expect(moved).toEqual({ row: { ...rowOf('g1', 'uno', 'a', 5000), area: circle(200), groups: '["g-a"]', updatedAt: 9000 }, changed: true })
      expect(await store.update('a', 'g1', {}, 10_000, audit)).toEqual({ row: (moved as { row: GeofenceRow }).row, changed: false })
      expect(await store.update('a', 'g1', { groupIds: ['g-b'] }, 10_000, audit)).toEqual({ groupsFound: new Set() })
      expect(await store.update('b', 'g1', { name: 'x' }, 10_000, audit)).toBeNull()
      expect(await store.find('a', 'g1')).toEqual((moved as { row: GeofenceRow }).row)
      const trail = await audits.list('a', { limit: 10, offset: 0 })
      expect(trail.map((r) => [r.action, r.object_id, r.at])).toEqual([
        ['update', 'g1', new Date(9000).toISOString()],
        ['create', 'g1', new Date(5000).toISOString()],
        ['update', 'g1', new Date(4000).toISOString()],
      ])
    })

    test('a deletion removes the account’s geofence with its audit row; false when there is none', async () => {
      const { store, audits } = await world()
      await store.create({ row: rowOf('g1', 'one'), groupIds: [], maxPerAccount: 10 }, audit)
      expect(await store.remove('b', 'g1', 2000, audit)).toBe(false)
      expect(await store.remove('a', 'G1', 2000, audit)).toBe(true)
      expect(await store.remove('a', 'g1', 3000, audit)).toBe(false)
      expect(await store.find('a', 'g1')).toBeNull()
      expect((await audits.list('a', { limit: 10, offset: 0 })).map((r) => [r.action, r.object_id])).toEqual([
        ['delete', 'g1'],
        ['create', 'g1'],
      ])
    })

    test('the rules’ cache reads (read ahead on PostgreSQL): the version moves with every change; the account’s geofences without areas, by name; an area', async () => {
      const { store, reads } = await world()
      if (opened!.engine === 'postgres') await opened!.handle.sql.unsafe(`ALTER TABLE geofences ALTER COLUMN name TYPE text COLLATE "en-x-icu"`)
      const ahead = async () => reads.load?.(['a', 'b'])
      await ahead()
      const before = reads.version()
      const wide = { ...rowOf('g2', 'Bravo'), area: JSON.stringify({ type: 'Circle', center: [48.85, 2.35], radius: 100, note: 'Été' }), groups: '["g-a"]', speedLimit: 90 }
      await store.create({ row: wide, groupIds: ['g-a'], maxPerAccount: 10 }, audit)
      await ahead()
      const afterCreate = reads.version()
      expect(afterCreate).toBeGreaterThan(before)
      await store.create({ row: rowOf('g1', 'alpha'), groupIds: [], maxPerAccount: 10 }, audit)
      await ahead()
      expect(reads.ofAccount('a')).toEqual([
        { id: 'g2', name: 'Bravo', groups: '["g-a"]', speedLimit: 90, updatedAt: 1000, areaLength: Buffer.byteLength(wide.area) },
        { id: 'g1', name: 'alpha', groups: '[]', speedLimit: null, updatedAt: 1000, areaLength: circle(100).length },
      ])
      expect(Buffer.byteLength(wide.area)).toBe(wide.area.length + 2)
      expect(reads.ofAccount('b')).toEqual([])
      expect(reads.areaOf('g2')).toBe(wide.area)
      await store.remove('a', 'g2', 2000, audit)
      await ahead()
      expect(reads.version()).toBeGreaterThan(afterCreate)
      expect(reads.areaOf('g2')).toBeUndefined()
      expect(reads.ofAccount('a').map((row) => row.id)).toEqual(['g1'])
    })

    test('the rules’ geofence cache over these reads: built, then rebuilt after a change with only the changed area prepared again', async () => {
      const { store, reads } = await world()
      await store.create({ row: rowOf('g1', 'one'), groupIds: [], maxPerAccount: 10 }, audit)
      await store.create({ row: { ...rowOf('g2', 'two'), area: circle(5000) }, groupIds: [], maxPerAccount: 10 }, audit)
      const clock = manualClock(10_000)
      const cache = createGeofenceCache({ reads, clock, versionCheckMs: 0 })
      await reads.load?.(['a'])
      const first = cache.forAccount('a')
      expect(first.all.map((g) => g.name)).toEqual(['one', 'two'])
      expect(first.containing(48.85, 2.35).map((g) => g.id)).toEqual(['g1', 'g2'])
      await store.update('a', 'g1', { name: 'uno', area: JSON.stringify({ type: 'Circle', center: [10, 10], radius: 100 }) }, 20_000, audit)
      await reads.load?.(['a'])
      const second = cache.forAccount('a')
      expect(second.all.map((g) => g.name)).toEqual(['two', 'uno'])
      expect(second.containing(48.85, 2.35).map((g) => g.id)).toEqual(['g2'])
      expect(second.byId.get('g2')!.area).toBe(first.byId.get('g2')!.area)
      expect(second.containing(10, 10).map((g) => g.id)).toEqual(['g1'])
    })

    if (engine.name === 'postgres') {
      test('on PostgreSQL an account not read ahead is refused rather than answered empty; an area is read again only when its row changed', async () => {
        const { store, reads } = await world()
        await store.create({ row: rowOf('g1', 'one'), groupIds: [], maxPerAccount: 10 }, audit)
        expect(() => reads.ofAccount('a')).toThrow('not read ahead')
        await reads.load!(['a'])
        expect(reads.areaOf('g1')).toBe(circle(100))
        await store.update('a', 'g1', { name: 'uno' }, 2000, audit)
        await reads.load!(['a'])
        expect(reads.ofAccount('a').map((row) => row.name)).toEqual(['uno'])
        // a change moves updated_at: that row's area is read again (the others' are not)
        expect(reads.areaOf('g1')).toBe(circle(100))
        await reads.load!(['a'])
        expect(reads.areaOf('g1')).toBeUndefined()
        expect(() => reads.ofAccount('b')).toThrow('not read ahead')
      })
    }
  })
}
