/**
 * The share link store on both engines: the same answers from the SQLite adapter and the
 * PostgreSQL one, for every function of ShareLinkStore and the two in-transaction writers.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { manualClock } from '../../../src/clock'
import { silentLogger } from '../../../src/log'
import {
  createShareLinkStore,
  endLinksBeyondCreatorsReachInTransaction,
  type EndedLinks,
  type NewLink,
  type PendingViews,
  removeFromOtherAccountsLinksInTransaction,
  type ShareLinkStore,
} from '../../../src/store/shareLinks'
import {
  createPostgresShareLinkStore,
  endLinksBeyondCreatorsReachInTransaction as endOnPostgres,
  removeFromOtherAccountsLinksInTransaction as removeOnPostgres,
} from '../../../src/store/postgres/shareLinks'
import { unitOfWork } from '../../../src/store/postgres/unit'
import { eventually, insertRows, runStatement, selectRows } from './rows'
import { engines, type Opened } from './support'

const NOW = Date.UTC(2026, 10, 25, 12)
const HOUR = 3_600_000

for (const engine of engines('the share link store on PostgreSQL')) {
  describe(`the share link store on ${engine.name}`, () => {
    let opened: Opened | null = null
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    interface World {
      opened: Opened
      store: ShareLinkStore
      endLinks(accountId: string | null, now: number): Promise<EndedLinks>
      moveDevice(deviceKey: number, accountId: string, now: number): Promise<void>
    }

    /**
     * Accounts a (Acme) and b; in a: admin ua, member um of g1, groups g1 (d1, d2) and g2 (d2, d3);
     * in b: admin ub, group gb (d4). Device keys 1–4.
     */
    async function world(): Promise<World> {
      opened = await engine.open()
      const o = opened
      await insertRows(o, 'accounts', [
        { id: 'a', name: 'Acme' },
        { id: 'b', name: 'Beta' },
      ])
      await insertRows(o, 'groups', [
        { id: 'g1', accountId: 'a', name: 'One' },
        { id: 'g2', accountId: 'a', name: 'Two' },
        { id: 'gb', accountId: 'b', name: 'Bee' },
      ])
      await insertRows(o, 'users', [
        { id: 'ua', accountId: 'a', name: 'admin-a', role: 'admin' },
        { id: 'um', accountId: 'a', name: 'member-a', role: 'member' },
        { id: 'ub', accountId: 'b', name: 'admin-b', role: 'admin' },
      ])
      await insertRows(o, 'userGroups', [{ userId: 'um', groupId: 'g1' }])
      await insertRows(
        o,
        'devices',
        [1, 2, 3, 4].map((key) => ({ key, id: `d${key}`, accountId: key === 4 ? 'b' : 'a', alias: `Van ${key}`, serial: `s${key}`, imei: `35000000000000${key}` })),
      )
      await insertRows(o, 'deviceGroups', [
        { groupId: 'g1', deviceKey: 1 },
        { groupId: 'g1', deviceKey: 2 },
        { groupId: 'g2', deviceKey: 2 },
        { groupId: 'g2', deviceKey: 3 },
        { groupId: 'gb', deviceKey: 4 },
      ])
      const clock = manualClock(NOW)
      if (o.engine === 'sqlite') {
        const { db } = o.handle
        return {
          opened: o,
          store: createShareLinkStore(o.handle, { clock }),
          endLinks: async (accountId, now) => db.transaction((tx) => endLinksBeyondCreatorsReachInTransaction(tx, accountId, now)),
          moveDevice: async (deviceKey, accountId, now) => db.transaction((tx) => removeFromOtherAccountsLinksInTransaction(tx, deviceKey, accountId, now)),
        }
      }
      const handle = o.handle
      return {
        opened: o,
        store: createPostgresShareLinkStore(handle, { clock }),
        endLinks: (accountId, now) => unitOfWork(handle, (tx) => endOnPostgres(tx, accountId, now)),
        moveDevice: (deviceKey, accountId, now) => unitOfWork(handle, (tx) => removeOnPostgres(tx, deviceKey, accountId, now)),
      }
    }

    const link = (id: string, over: Partial<NewLink> = {}): NewLink => ({
      id,
      accountId: 'a',
      createdBy: 'ua',
      token: `token-${id}`,
      shortCode: `Code${id}0000`,
      acl: ['location'],
      expiresAt: NOW + HOUR,
      deviceKeys: [1],
      now: NOW,
      ...over,
    })

    const idsOf = (rows: { id: string }[]) => rows.map((r) => r.id)

    test('a link is made with its devices in order and its acl; read by account, token and short code', async () => {
      const { store } = await world()
      expect(await store.create(link('L1', { deviceKeys: [3, 1, 2], acl: ['location', 'history'] }), 10)).toBe('made')
      expect(await store.create(link('L2', { now: NOW + 1000, createdBy: 'um', deviceKeys: [2] }), 10)).toBe('made')

      expect(await store.linkOfAccount('L1', 'a')).toEqual({
        id: 'L1',
        accountId: 'a',
        createdBy: 'ua',
        token: 'token-L1',
        shortCode: 'CodeL10000',
        acl: ['location', 'history'],
        revoked: false,
        expiresAt: NOW + HOUR,
        uniqueViews: 0,
        lastAccessedAt: null,
        createdAt: NOW,
      })
      expect(await store.linkOfAccount('L1', 'b')).toBeNull()
      expect(await store.linkOfAccount('nope', 'a')).toBeNull()

      // newest first
      expect(idsOf(await store.activeLinks('a', NOW))).toEqual(['L2', 'L1'])
      expect(await store.activeLinks('b', NOW)).toEqual([])

      expect(await store.devicesOf(['L2', 'L1'])).toEqual([
        { linkId: 'L1', key: 3, id: 'd3' },
        { linkId: 'L1', key: 1, id: 'd1' },
        { linkId: 'L1', key: 2, id: 'd2' },
        { linkId: 'L2', key: 2, id: 'd2' },
      ])
      expect(await store.devicesOf([])).toEqual([])

      expect(await store.linkByToken('token-L1')).toEqual({
        id: 'L1',
        accountId: 'a',
        createdBy: 'ua',
        acl: ['location', 'history'],
        revoked: false,
        expiresAt: NOW + HOUR,
        deviceKeys: [3, 1, 2],
      })
      expect(await store.linkByToken('token-none')).toBeNull()
      expect(await store.linkByShortCode('CodeL20000')).toEqual({ token: 'token-L2', revoked: false, expiresAt: NOW + HOUR })
      expect(await store.linkByShortCode('Unknown000')).toBeNull()
      expect(await store.accountName('a')).toBe('Acme')
      expect(await store.accountName('z')).toBeNull()
    })

    test('a short code already taken makes nothing', async () => {
      const { store } = await world()
      expect(await store.create(link('L1'), 10)).toBe('made')
      expect(await store.create(link('L2', { shortCode: 'CodeL10000', deviceKeys: [1, 2] }), 10)).toBe('code-taken')
      expect(await store.linkOfAccount('L2', 'a')).toBeNull()
      expect(await store.devicesOf(['L2'])).toEqual([])
      expect(idsOf(await store.activeLinks('a', NOW))).toEqual(['L1'])
    })

    test('a creator’s active links are counted: neither revoked nor expired; four made at once cannot all pass', async () => {
      const { store } = await world()
      expect(await store.create(link('L1'), 2)).toBe('made')
      expect(await store.create(link('L2'), 2)).toBe('made')
      expect(await store.create(link('L3'), 2)).toEqual({ full: 2 })
      expect(await store.linkOfAccount('L3', 'a')).toBeNull()
      // another creator has room of their own
      expect(await store.create(link('M1', { createdBy: 'um' }), 2)).toBe('made')

      await store.revoke('L1', NOW + 1)
      expect(await store.create(link('L3'), 2)).toBe('made')
      // expired links do not count
      expect(await store.create(link('L4', { now: NOW + 2 * HOUR }), 2)).toBe('made')

      // four at once with room for one (the reads first open every connection of the pool, so that they do run at once)
      await Promise.all([1, 2, 3, 4].map(() => store.accountName('b')))
      const all = await Promise.all([1, 2, 3, 4].map((n) => store.create(link(`P${n}`, { createdBy: 'ub', accountId: 'b', deviceKeys: [4] }), 1)))
      expect(all.filter((made) => made === 'made')).toHaveLength(1)
      expect(all.filter((made) => made !== 'made')).toEqual([{ full: 1 }, { full: 1 }, { full: 1 }])
      expect(await store.activeLinks('b', NOW)).toHaveLength(1)
    })

    test('an update changes the fields given; devices replaced in their new order; a revival checks the creator’s room', async () => {
      const { store } = await world()
      await store.create(link('L1', { deviceKeys: [1, 2], acl: ['location', 'events'] }), 10)
      expect(await store.update('L1', { expiresAt: NOW + 2 * HOUR, acl: null, deviceKeys: null, now: NOW + 5, reviveFor: null }, 10)).toBe('updated')
      expect(await store.linkOfAccount('L1', 'a')).toMatchObject({ expiresAt: NOW + 2 * HOUR, acl: ['location', 'events'] })
      expect((await store.linkByToken('token-L1'))?.deviceKeys).toEqual([1, 2])

      const before = await store.linkDevicesVersion()
      expect(await store.update('L1', { expiresAt: null, acl: ['history'], deviceKeys: [3, 1], now: NOW + 6, reviveFor: null }, 10)).toBe('updated')
      expect(await store.linkOfAccount('L1', 'a')).toMatchObject({ expiresAt: NOW + 2 * HOUR, acl: ['history'] })
      expect(await store.devicesOf(['L1'])).toEqual([
        { linkId: 'L1', key: 3, id: 'd3' },
        { linkId: 'L1', key: 1, id: 'd1' },
      ])
      // devices left the link: the token cache starts over, in every process
      expect(await store.linkDevicesVersion()).toBeGreaterThan(before)

      // an expired link brought back counts against its creator
      await store.create(link('L2', { expiresAt: NOW + 10 }), 10)
      await store.create(link('L3'), 10)
      const later = NOW + HOUR / 2
      const revive = { expiresAt: later + HOUR, acl: null, deviceKeys: null, now: later, reviveFor: 'ua' }
      expect(await store.update('L2', revive, 2)).toEqual({ full: 2 })
      expect((await store.linkOfAccount('L2', 'a'))?.expiresAt).toBe(NOW + 10)
      expect(await store.update('L2', revive, 3)).toBe('updated')
      expect(idsOf(await store.activeLinks('a', later))).toEqual(['L1', 'L2', 'L3'].sort())
    })

    test('a revoke ends the link, moves version 3 and shows in its state', async () => {
      const { store } = await world()
      await store.create(link('L1'), 10)
      await store.create(link('L2'), 10)
      expect(await store.linkByToken('token-L1')).toMatchObject({ revoked: false })
      expect(store.linkStateNow('L1')).toEqual({ revoked: false, expiresAt: NOW + HOUR, createdBy: 'ua' })
      const before = await store.linkDevicesVersion()
      await store.revoke('L1', NOW + 7)
      expect(await store.linkDevicesVersion()).toBeGreaterThan(before)
      expect(store.linkStateNow('L1')).toEqual({ revoked: true, expiresAt: NOW + HOUR, createdBy: 'ua' })
      expect(await store.linkOfAccount('L1', 'a')).toMatchObject({ revoked: true })
      expect(await store.linkByShortCode('CodeL10000')).toMatchObject({ revoked: true })
      expect(idsOf(await store.activeLinks('a', NOW))).toEqual(['L2'])
    })

    test('a link’s state follows changes made by another process: made, revoked, its creator deleted, the link gone', async () => {
      const w = await world()
      const { store } = w
      await store.create(link('L1'), 10)
      await store.create(link('L2', { createdBy: 'um' }), 10)
      await store.create(link('L3'), 10)
      for (const id of ['L1', 'L2', 'L3']) await store.linkByToken(`token-${id}`)
      // a link this store has not read yet (made by another process) is known from a call or two on
      await runStatement(w.opened, sql`INSERT INTO share_links (id, account_id, created_by, token, short_code, acl, expires_at) VALUES ('L4', 'a', 'ua', 'token-L4', 'CodeL40000', '[]', ${NOW + 5})`)
      expect(await eventually(() => store.linkStateNow('L4') !== null)).toBe(true)
      expect(store.linkStateNow('L4')).toEqual({ revoked: false, expiresAt: NOW + 5, createdBy: 'ua' })
      expect(store.linkStateNow('L5')).toBeNull()
      await runStatement(w.opened, sql`UPDATE share_links SET revoked = ${true} WHERE id = 'L1'`)
      expect(await eventually(() => store.linkStateNow('L1')?.revoked === true)).toBe(true)
      // deleting the creator revokes their links (a trigger) and forgets who made them
      await runStatement(w.opened, sql`DELETE FROM user_groups WHERE user_id = 'um'`)
      await runStatement(w.opened, sql`DELETE FROM users WHERE id = 'um'`)
      expect(await eventually(() => store.linkStateNow('L2')?.createdBy === null)).toBe(true)
      expect(store.linkStateNow('L2')).toEqual({ revoked: true, expiresAt: NOW + HOUR, createdBy: null })
      // the link itself gone (its devices leaving it announce the change)
      await runStatement(w.opened, sql`DELETE FROM share_links WHERE id = 'L3'`)
      expect(await eventually(() => store.linkStateNow('L3') === null)).toBe(true)
    })

    test('views: each viewer counted once, the newest access kept; views arriving during a write are not lost', async () => {
      const { store } = await world()
      await store.create(link('L1'), 10)
      await store.create(link('L2'), 10)
      const pending = new Map<string, { viewers: Map<string, number>; lastAccessedAt: number }>()
      let arriving: (() => void) | null = null
      const deferred = store.deferViews({
        delayMs: 60_000,
        *pending(): Generator<[string, PendingViews]> {
          yield* pending
          // a view that arrives while the write runs (on SQLite, after it: the write is synchronous)
          const arrive = arriving
          arriving = null
          if (arrive) setTimeout(arrive, 0)
        },
        hasPending: () => pending.size > 0,
        written: () => pending.clear(),
        log: silentLogger,
        failure: 'views not written',
      })
      pending.set('L1', { viewers: new Map([['v1', NOW], ['v2', NOW + 1]]), lastAccessedAt: NOW + 1 })
      pending.set('L2', { viewers: new Map([['v1', NOW]]), lastAccessedAt: NOW })
      // a link gone since its views waited: they go too
      pending.set('gone', { viewers: new Map([['v1', NOW]]), lastAccessedAt: NOW })
      expect(await deferred.flush()).toBe(true)
      expect(pending.size).toBe(0)
      expect(await store.linkOfAccount('L1', 'a')).toMatchObject({ uniqueViews: 2, lastAccessedAt: NOW + 1 })
      expect(await store.linkOfAccount('L2', 'a')).toMatchObject({ uniqueViews: 1, lastAccessedAt: NOW })
      expect(await store.viewerCounted('L1', 'v2')).toBe(true)
      expect(await store.viewerCounted('L2', 'v2')).toBe(false)

      // counted again: nothing added; an older access does not go back
      pending.set('L1', { viewers: new Map([['v1', NOW + 5]]), lastAccessedAt: NOW - 50 })
      // as the token cache notes a view: a new entry when the write has let go of the link's
      arriving = () => {
        const views = pending.get('L1') ?? { viewers: new Map(), lastAccessedAt: NOW + 6 }
        pending.set('L1', views)
        views.viewers.set('v3', NOW + 6)
        views.lastAccessedAt = NOW + 6
      }
      await deferred.flush()
      await Bun.sleep(5)
      // whatever the write left waiting goes with the next one
      await deferred.flush()
      expect(pending.size).toBe(0)
      expect(await store.linkOfAccount('L1', 'a')).toMatchObject({ uniqueViews: 3, lastAccessedAt: NOW + 6 })
      expect(await store.viewerCounted('L1', 'v3')).toBe(true)
    })

    test('views of one viewer written by two processes at once are counted once, whatever order each holds its links in', async () => {
      const w = await world()
      await w.store.create(link('L1'), 10)
      await w.store.create(link('L2'), 10)
      // two processes: two stores on the database, each with its own waiting views
      const second = w.opened.engine === 'sqlite' ? createShareLinkStore(w.opened.handle) : createPostgresShareLinkStore(w.opened.handle)
      const writers = [w.store, second].map((store, n) => {
        const views = (id: string) => [id, { viewers: new Map([['v1', NOW + n], [`only-${n}`, NOW + n]]), lastAccessedAt: NOW + n }] as const
        const pending = new Map(n === 0 ? [views('L1'), views('L2')] : [views('L2'), views('L1')])
        return store.deferViews({ delayMs: 60_000, pending: () => pending, hasPending: () => pending.size > 0, written: () => pending.clear(), log: silentLogger, failure: 'views not written' })
      })
      // the reads first open connections of the pool, so that the two writes do run at once
      await Promise.all([1, 2, 3, 4].map(() => w.store.accountName('a')))
      expect(await Promise.all(writers.map((writer) => writer.flush()))).toEqual([true, true])
      expect(await w.store.linkOfAccount('L1', 'a')).toMatchObject({ uniqueViews: 3, lastAccessedAt: NOW + 1 })
      expect(await w.store.linkOfAccount('L2', 'a')).toMatchObject({ uniqueViews: 3, lastAccessedAt: NOW + 1 })
    })

    test('links keep only what their creator still reaches: a device leaving a group, a member leaving one', async () => {
      const w = await world()
      const { store } = w
      await store.create(link('M1', { createdBy: 'um', deviceKeys: [1, 2] }), 10)
      await store.create(link('M2', { createdBy: 'um', deviceKeys: [2] }), 10)
      await store.create(link('A1', { createdBy: 'ua', deviceKeys: [2, 3] }), 10)
      await store.create(link('B1', { createdBy: 'ub', accountId: 'b', deviceKeys: [4] }), 10)
      expect(await w.endLinks('a', NOW)).toEqual({ revoked: 0, removed: 0 })

      // d2 leaves g1: the member reaches d1 only; the admin still reaches every device
      const before = await store.linkDevicesVersion()
      await runStatement(w.opened, sql`DELETE FROM device_groups WHERE group_id = 'g1' AND device_key = 2`)
      expect(await w.endLinks('a', NOW + 1)).toEqual({ revoked: 1, removed: 1 })
      expect(await store.linkDevicesVersion()).toBeGreaterThan(before)
      expect(await store.devicesOf(['M1', 'M2', 'A1'])).toEqual([
        { linkId: 'A1', key: 2, id: 'd2' },
        { linkId: 'A1', key: 3, id: 'd3' },
        { linkId: 'M1', key: 1, id: 'd1' },
        // revoked, it keeps its device list as it was
        { linkId: 'M2', key: 2, id: 'd2' },
      ])
      expect(await store.linkOfAccount('M2', 'a')).toMatchObject({ revoked: true })
      expect(idsOf(await store.activeLinks('a', NOW))).toEqual(['A1', 'M1'])

      // d2 coming back into reach does not come back into the link
      await insertRows(w.opened, 'deviceGroups', [{ groupId: 'g1', deviceKey: 2 }])
      expect(await w.endLinks('a', NOW + 2)).toEqual({ revoked: 0, removed: 0 })
      expect(await store.devicesOf(['M1'])).toEqual([{ linkId: 'M1', key: 1, id: 'd1' }])

      // the member leaves g1: their last link ends; another account's links are not looked at
      await runStatement(w.opened, sql`DELETE FROM user_groups WHERE user_id = 'um'`)
      await runStatement(w.opened, sql`DELETE FROM device_groups WHERE group_id = 'gb'`)
      expect(await w.endLinks('a', NOW + 3)).toEqual({ revoked: 1, removed: 0 })
      expect(await store.linkOfAccount('M1', 'a')).toMatchObject({ revoked: true })
      expect(await store.linkOfAccount('B1', 'b')).toMatchObject({ revoked: false })
      // an import looks at every account: b's admin still reaches d4 (an admin's reach is the account's)
      expect(await w.endLinks(null, NOW + 4)).toEqual({ revoked: 0, removed: 0 })
      const updated = await selectRows<{ id: string; updated_at: number }>(w.opened, sql`SELECT id, updated_at FROM share_links WHERE revoked = ${true} ORDER BY id`)
      expect(updated.map((r) => [r.id, Number(r.updated_at)])).toEqual([
        ['M1', NOW + 3],
        ['M2', NOW + 1],
      ])
    })

    test('an admin made a member keeps only their groups’ devices', async () => {
      const w = await world()
      const { store } = w
      await store.create(link('A1', { createdBy: 'ua', deviceKeys: [3, 1] }), 10)
      await store.create(link('A2', { createdBy: 'ua', deviceKeys: [3] }), 10)
      await runStatement(w.opened, sql`UPDATE users SET role = 'member' WHERE id = 'ua'`)
      await insertRows(w.opened, 'userGroups', [{ userId: 'ua', groupId: 'g1' }])
      expect(await w.endLinks('a', NOW + 1)).toEqual({ revoked: 1, removed: 1 })
      expect(await store.devicesOf(['A1'])).toEqual([{ linkId: 'A1', key: 1, id: 'd1' }])
      expect(await store.linkOfAccount('A2', 'a')).toMatchObject({ revoked: true })
    })

    test('a device moved to another account leaves the other accounts’ links; a link left empty is revoked', async () => {
      const w = await world()
      const { store } = w
      await store.create(link('A1', { deviceKeys: [1, 2] }), 10)
      await store.create(link('A2', { deviceKeys: [1] }), 10)
      await store.create(link('B1', { createdBy: 'ub', accountId: 'b', deviceKeys: [4] }), 10)
      const before = await store.linkDevicesVersion()
      await runStatement(w.opened, sql`UPDATE devices SET account_id = 'b' WHERE key = 1`)
      await w.moveDevice(1, 'b', NOW + 9)
      expect(await store.linkDevicesVersion()).toBeGreaterThan(before)
      expect(await store.devicesOf(['A1', 'A2', 'B1'])).toEqual([
        { linkId: 'A1', key: 2, id: 'd2' },
        { linkId: 'B1', key: 4, id: 'd4' },
      ])
      expect(await store.linkOfAccount('A1', 'a')).toMatchObject({ revoked: false })
      expect(await store.linkOfAccount('A2', 'a')).toMatchObject({ revoked: true })
      expect(idsOf(await store.activeLinks('a', NOW))).toEqual(['A1'])
      // moving it again within its account changes nothing
      await w.moveDevice(4, 'b', NOW + 10)
      expect(await store.devicesOf(['B1'])).toEqual([{ linkId: 'B1', key: 4, id: 'd4' }])
    })
  })
}
