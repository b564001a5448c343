/**
 * The import on both engines: the same document (the test world's fleet, the demo's buses with
 * their recorded tracks as positions across month boundaries, events) imported through the
 * dataset service into SQLite (src/store/dataset.ts) and PostgreSQL (src/store/postgres/dataset.ts)
 * leaves every table holding the same rows (surrogate keys aside), answers the same summary, is
 * idempotent under --upsert, and a document refused or failing half-way changes nothing.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { asc, eq } from 'drizzle-orm'
import * as pg from '../../../db/postgres/schema'
import * as lite from '../../../db/schema'
import { DatasetError, importDataset } from '../../../src/dataset/service'
import { demoDataset, loadTracks } from '../../../src/demo'
import { createDatasetStore, type DatasetStore } from '../../../src/store/dataset'
import { createPostgresDatasetStore } from '../../../src/store/postgres/dataset'
import { existingPartitions } from '../../../db/postgres/partitions'
import { Invalid } from '../../../src/errors'
import { baseDataset, ids } from '../../support/world'
import { engines, type Opened } from './support'
import { testDatabaseUrl } from '../../support/postgres'

const NOW = Date.UTC(2026, 10, 25, 12, 0, 0)

/** The world's fleet and the demo's nine buses, their tracks as positions (each ending in a new month), and events. */
function fleetDocument() {
  const base = baseDataset()
  const tracks = loadTracks()
  const demo = demoDataset(tracks)
  const positions: { device: string; timestamp: number; latitude: number; longitude: number; speed?: number; course?: number; altitude?: number; satellites?: number }[] = []
  demo.devices.forEach((device, i) => {
    const track = tracks[i]!
    const last = track.points.at(-1)!.offset
    // the track ends an hour into the first day of a month: its partitions straddle two months
    const start = Date.UTC(2026, (i % 4) + 1, 1, 1) / 1000 - last
    for (const point of track.points) {
      positions.push({
        device: device.id,
        timestamp: start + point.offset,
        latitude: point.latitude,
        longitude: point.longitude,
        ...(point.altitude === null ? {} : { altitude: point.altitude }),
        ...(point.bearing === null ? {} : { course: point.bearing, speed: 31.4 }),
        satellites: 7 + (i % 3),
      })
    }
  })
  // van1 has no location: its newest valid fix gives it one (the newer 0/0 placeholder never does)
  positions.push({ device: ids.van1.toUpperCase(), timestamp: 1764000000, latitude: 48.85, longitude: 2.35, speed: 12.5 })
  positions.push({ device: ids.van1, timestamp: 1764000060, latitude: 0, longitude: 0 })
  const events = [
    { device: ids.truck1, alarm_code: 'sos', context: { a: 1 }, speed: 0, satellite: 7, coordinates: [48.85, 2.35] as [number, number], mcc: 208, mnc: 1, dbm: -71, timestamp: 1764000100 },
    // twice in one second: two rows (seq 0 and 1)
    { device: ids.truck1, alarm_code: 'sos', timestamp: 1764000100 },
    { device: ids.van1, alarm_code: 'power_cut', coordinates: [0, 0] as [number, number], timestamp: 1764000200 },
    ...demo.devices.map((d, i) => ({ device: d.id, alarm_code: 'ignition_on', context: { bus: i }, timestamp: 1764000300 + i })),
  ]
  return {
    accounts: [...base.accounts, ...demo.accounts],
    groups: [...base.groups, ...demo.groups],
    users: [...base.users, ...demo.users],
    models: [...base.models, ...demo.models],
    devices: [...base.devices, ...demo.devices],
    positions,
    events,
  }
}

/** Every table the import writes, as rows without surrogate keys (a device key read as its id), in a stable order. */
type Dump = Record<string, unknown[]>

const byJson = (rows: unknown[]) => rows.map((row) => JSON.stringify(row)).sort().map((row) => JSON.parse(row) as unknown)

function normalise(
  tables: { devices: { key: number; id: string }[] } & Record<string, Record<string, unknown>[]>,
): Dump {
  const idOf = new Map(tables.devices.map((d) => [d.key, d.id]))
  const device = (key: unknown) => idOf.get(key as number) ?? `missing ${String(key)}`
  const without = (row: Record<string, unknown>, ...keys: string[]) => Object.fromEntries(Object.entries(row).filter(([k]) => !keys.includes(k)))
  return {
    accounts: byJson(tables.accounts!),
    groups: byJson(tables.groups!),
    users: byJson(tables.users!),
    userGroups: byJson(tables.userGroups!),
    apiKeys: byJson(tables.apiKeys!.map((k) => without(k, 'id', 'publicId'))),
    models: byJson(tables.models!),
    commands: byJson(tables.commands!),
    // in key order: the order they were written in
    devices: tables.devices.map((d) => without(d as unknown as Record<string, unknown>, 'key')),
    deviceGroups: byJson(tables.deviceGroups!.map((g) => ({ ...g, deviceKey: device(g.deviceKey) }))),
    positions: byJson(tables.positions!.map((p) => ({ ...p, device: device(p.device) }))),
    // in id order (ties within a second are read by id)
    events: tables.events!.map((e) => ({ ...without(e, 'id'), device: device(e.device) })),
    auditLog: tables.auditLog!.map((a) => without(a, 'id')),
    shareLinks: byJson(tables.shareLinks!),
    shareLinkDevices: byJson(tables.shareLinkDevices!.map((l) => ({ ...l, deviceKey: device(l.deviceKey) }))),
  }
}

async function dump(opened: Opened): Promise<Dump> {
  if (opened.engine === 'sqlite') {
    const { db } = opened.handle
    return normalise({
      accounts: db.select().from(lite.accounts).all(),
      groups: db.select().from(lite.groups).all(),
      users: db.select().from(lite.users).all(),
      userGroups: db.select().from(lite.userGroups).all(),
      apiKeys: db.select().from(lite.apiKeys).all(),
      models: db.select().from(lite.models).all(),
      commands: db.select().from(lite.commands).all(),
      devices: db.select().from(lite.devices).orderBy(asc(lite.devices.key)).all(),
      deviceGroups: db.select().from(lite.deviceGroups).all(),
      positions: db.select().from(lite.positions).all(),
      events: db.select().from(lite.events).orderBy(asc(lite.events.id)).all(),
      auditLog: db.select().from(lite.auditLog).orderBy(asc(lite.auditLog.id)).all(),
      shareLinks: db.select().from(lite.shareLinks).all(),
      shareLinkDevices: db.select().from(lite.shareLinkDevices).all(),
    })
  }
  const { db } = opened.handle
  return normalise({
    accounts: await db.select().from(pg.accounts),
    groups: await db.select().from(pg.groups),
    users: await db.select().from(pg.users),
    userGroups: await db.select().from(pg.userGroups),
    apiKeys: await db.select().from(pg.apiKeys),
    models: await db.select().from(pg.models),
    commands: await db.select().from(pg.commands),
    devices: await db.select().from(pg.devices).orderBy(asc(pg.devices.key)),
    deviceGroups: await db.select().from(pg.deviceGroups),
    positions: await db.select().from(pg.positions),
    events: await db.select().from(pg.events).orderBy(asc(pg.events.id)),
    auditLog: await db.select().from(pg.auditLog).orderBy(asc(pg.auditLog.id)),
    shareLinks: await db.select().from(pg.shareLinks),
    shareLinkDevices: await db.select().from(pg.shareLinkDevices),
  })
}

/** What each engine answered, scenario by scenario: compared at the end. */
const answers: Record<string, Record<string, unknown>> = {}

const engineList = engines('the import on PostgreSQL')
for (const engine of engineList) {
  describe(`the import on ${engine.name}`, () => {
    let opened: Opened | null = null
    const seen = (answers[engine.name] = {} as Record<string, unknown>)
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    async function open(): Promise<DatasetStore> {
      opened = await engine.open()
      return opened.engine === 'sqlite' ? createDatasetStore(opened.handle) : createPostgresDatasetStore(opened.handle)
    }

    /** share links as the share store writes them: `devices` by id, in order */
    async function seedLink(id: string, accountId: string, createdBy: string, deviceIds: string[]): Promise<void> {
      const link = { id, accountId, createdBy, token: `token-${id}`, shortCode: `code-${id}`, acl: '{}', expiresAt: NOW + 86_400_000, createdAt: NOW, updatedAt: NOW }
      if (opened!.engine === 'sqlite') {
        const { db } = opened!.handle
        db.insert(lite.shareLinks).values(link).run()
        deviceIds.forEach((deviceId, ordinal) => {
          const { key } = db.select({ key: lite.devices.key }).from(lite.devices).where(eq(lite.devices.id, deviceId)).get()!
          db.insert(lite.shareLinkDevices).values({ linkId: id, deviceKey: key, ordinal }).run()
        })
        return
      }
      const { db } = opened!.handle
      await db.insert(pg.shareLinks).values(link)
      for (const [ordinal, deviceId] of deviceIds.entries()) {
        const [{ key }] = (await db.select({ key: pg.devices.key }).from(pg.devices).where(eq(pg.devices.id, deviceId))) as [{ key: number }]
        await db.insert(pg.shareLinkDevices).values({ linkId: id, deviceKey: key, ordinal })
      }
    }

    async function refused(store: DatasetStore, document: unknown, options: { upsert?: boolean; onProgress?: () => void } = {}): Promise<unknown> {
      try {
        await importDataset(store, document, { now: NOW + 1, ...options })
      } catch (error) {
        return error
      }
      throw new Error('the import was not refused')
    }

    test('imports the fleet: every table as the other engine has it; again refused, again with upsert the same', async () => {
      const store = await open()
      const document = fleetDocument()
      const summary = await importDataset(store, document, { now: NOW })
      const uniqueFixes = new Set(document.positions.map((p) => `${p.device.toLowerCase()} ${p.timestamp}`)).size
      expect(summary).toEqual({ accounts: 3, groups: 4, users: 6, apiKeys: 5, models: 3, commands: 2, devices: 14, positions: uniqueFixes, events: document.events.length })
      const first = await dump(opened!)
      expect(first.positions.length).toBe(uniqueFixes)
      expect(first.devices.find((d) => (d as { id: string }).id === ids.van1)).toMatchObject({ latitude: 48.85, longitude: 2.35 })
      expect(first.events.filter((e) => (e as { alarmCode: string }).alarmCode === 'sos').map((e) => (e as { seq: number }).seq)).toEqual([0, 1])
      if (opened!.engine === 'postgres') {
        // the months the tracks cover, each in its partition
        const months = new Set(document.positions.map((p) => new Date(p.timestamp * 1000).toISOString().slice(0, 7)))
        expect((await existingPartitions(opened!.handle.sql)).length).toBe(months.size)
      }
      seen.summary = summary
      seen.first = first

      const again = await refused(store, document)
      expect(again).toBeInstanceOf(DatasetError)
      expect((again as DatasetError).path).toBe('/accounts/0/id')
      expect(await dump(opened!)).toEqual(first)

      const upserted = await importDataset(store, document, { now: NOW, upsert: true })
      expect(upserted).toEqual({ ...summary, apiKeys: 0, positions: document.positions.length, events: document.events.length })
      expect(await dump(opened!)).toEqual(first)
      seen.upserted = upserted
    })

    test('a document refused by its check, or failing half-way through its positions, changes nothing', async () => {
      const store = await open()
      await importDataset(store, baseDataset(), { now: NOW })
      const before = await dump(opened!)
      const unknownDevice = { positions: [{ device: '0f000000-0000-4000-8000-0000000000ff', timestamp: 1764000000, latitude: 1, longitude: 1 }] }
      const error = await refused(store, unknownDevice)
      expect(error).toBeInstanceOf(DatasetError)
      expect((error as DatasetError).path).toBe('/positions/0/device')
      const otherAccountsGroup = { devices: [{ id: '0f000000-0000-4000-8000-0000000000fe', account: ids.acme, groups: [ids.globexGroup], serial: 'X', imei: '359710049095099' }] }
      expect(((await refused(store, otherAccountsGroup)) as DatasetError).path).toBe('/devices/0/groups/0')
      // accounts, users, devices written, then the positions fail: the whole unit rolls back
      const document = fleetDocument()
      let calls = 0
      const failing = await refused(store, { ...document, accounts: document.accounts.slice(2), groups: document.groups.slice(3), users: document.users.slice(5), models: document.models.slice(2), devices: document.devices.slice(5) }, {
        onProgress: () => {
          if (++calls === 2) throw new Error('disk full')
        },
      })
      expect((failing as Error).message).toBe('disk full')
      expect(await dump(opened!)).toEqual(before)
      if (opened!.engine === 'postgres') {
        // a fix past any calendar month has no partition to go to: refused by name, nothing written
        const farFuture = await refused(store, { devices: [{ id: '0f000000-0000-4000-8000-0000000000fd', account: ids.acme, serial: 'Y', imei: '359710049095098' }], positions: [{ device: ids.truck1, timestamp: 1764000000, latitude: 1, longitude: 1 }, { device: ids.truck1, timestamp: 9e12, latitude: 1, longitude: 1 }] })
        expect(farFuture).toBeInstanceOf(Invalid)
        expect((farFuture as Invalid).errors).toEqual([{ path: '/positions/1/timestamp', message: expect.stringContaining('month') }])
        expect(await dump(opened!)).toEqual(before)
      }
      seen.refused = before
    })

    test('without upsert, a fix already stored or given twice is kept as first written and counted once', async () => {
      const store = await open()
      await importDataset(store, { ...baseDataset(), positions: [{ device: ids.truck1, timestamp: 1764000000, latitude: 1, longitude: 1 }] }, { now: NOW })
      const summary = await importDataset(store, {
        positions: [
          { device: ids.truck1, timestamp: 1764000000, latitude: 2, longitude: 2 },
          { device: ids.truck1, timestamp: 1764000001, latitude: 3, longitude: 3 },
          { device: ids.truck1, timestamp: 1764000001, latitude: 4, longitude: 4 },
          { device: ids.truck2, timestamp: 1764000001, latitude: 5, longitude: 5 },
        ],
      }, { now: NOW })
      expect(summary.positions).toBe(2)
      const fixes = (await dump(opened!)).positions.map((p) => [(p as { device: string }).device, (p as { ts: number }).ts, (p as { lat: number }).lat])
      expect(fixes).toEqual([
        [ids.truck1, 1764000000, 10_000_000],
        [ids.truck1, 1764000001, 30_000_000],
        [ids.truck2, 1764000001, 50_000_000],
      ])
      seen.stored = { summary, fixes }
    })

    test('upsert: devices and users moved, a model changed (audited), a fix given twice (the last kept), created_at kept unless given', async () => {
      const store = await open()
      await importDataset(store, { ...baseDataset(), positions: [{ device: ids.truck1, timestamp: 1764000000, latitude: 1, longitude: 1 }] }, { now: NOW })
      // dana's (an admin) link shows truck 2 alone; bob's (vans) shows van 1 and truck 2; alice's truck 1
      await seedLink('l-dana', ids.acme, ids.dana, [ids.truck2])
      await seedLink('l-bob', ids.acme, ids.bob, [ids.van1, ids.truck2])
      await seedLink('l-alice', ids.acme, ids.alice, [ids.truck1])
      const base = baseDataset()
      const change = {
        accounts: [{ id: ids.globex, name: 'Globex Corporation' }],
        users: [{ id: ids.bob, account: ids.globex, name: 'Bob', groups: [ids.globexGroup], role: 'admin' as const }],
        models: [{ ...base.models[0]!, commands: [{ ...base.models[0]!.commands![0]!, name: 'Stop the engine' }] }],
        devices: [
          { id: ids.truck2, account: ids.globex, groups: [ids.globexGroup], alias: 'Truck 2 (moved)', serial: 'S-T2', imei: '359710049095002', state: 'off' },
          { id: ids.van1, account: ids.acme, alias: 'Van 1', serial: 'S-V1', imei: '359710049095003', created_at: '2025-01-01T00:00:00Z', properties: { colour: 'blue' } },
        ],
        positions: [
          { device: ids.truck1, timestamp: 1764000000, latitude: 2, longitude: 2 },
          { device: ids.van1, timestamp: 1764000000, latitude: 3, longitude: 3 },
          { device: ids.van1, timestamp: 1764000000, latitude: 4, longitude: 4, speed: 10 },
        ],
      }
      const summary = await importDataset(store, change, { now: NOW + 5000, upsert: true })
      expect(summary).toEqual({ accounts: 1, groups: 0, users: 1, apiKeys: 0, models: 1, commands: 1, devices: 2, positions: 3, events: 0 })
      const after = await dump(opened!)
      const device = (id: string) => after.devices.find((d) => (d as { id: string }).id === id) as Record<string, unknown>
      expect(device(ids.truck2)).toMatchObject({ accountId: ids.globex, modelId: ids.gt06, alias: 'Truck 2 (moved)', state: 'off', createdAt: NOW })
      expect(device(ids.van1)).toMatchObject({ createdAt: Date.UTC(2025, 0, 1), latitude: 4, longitude: 4, properties: '{"colour":"blue"}' })
      expect(after.deviceGroups.filter((g) => (g as { deviceKey: string }).deviceKey === ids.truck2)).toEqual([{ groupId: ids.globexGroup, deviceKey: ids.truck2 }])
      expect(after.userGroups.filter((g) => (g as { userId: string }).userId === ids.bob)).toEqual([{ userId: ids.bob, groupId: ids.globexGroup }])
      expect(after.users.find((u) => (u as { id: string }).id === ids.bob)).toMatchObject({ accountId: ids.globex, role: 'admin', name: 'Bob' })
      expect(after.positions.filter((p) => (p as { device: string }).device === ids.van1)).toEqual([
        { device: ids.van1, ts: 1764000000, lat: 40_000_000, lon: 40_000_000, speed: 100, course: null, altitude: null, satellites: null, flags: 0, attributes: null },
      ])
      expect(after.positions.find((p) => (p as { device: string }).device === ids.truck1)).toMatchObject({ lat: 20_000_000 })
      // the model changed: audited in each account whose devices use it, before (acme) or after (globex, truck 2's new one)
      // truck 2 left acme: out of acme's links (dana's, left empty, ends); bob left acme: his link reaches nothing any more and ends (keeping its list)
      expect(after.shareLinkDevices).toEqual([{ linkId: 'l-alice', deviceKey: ids.truck1, ordinal: 0 }, { linkId: 'l-bob', deviceKey: ids.van1, ordinal: 0 }])
      expect(after.shareLinks.map((l) => [(l as { id: string }).id, (l as { revoked: boolean }).revoked, (l as { updatedAt: number }).updatedAt])).toEqual([
        ['l-alice', false, NOW],
        ['l-bob', true, NOW + 5000],
        ['l-dana', true, NOW + 5000],
      ])
      const audited = { actor: 'cli', action: 'update', objectType: 'model', objectId: ids.gt06, at: NOW + 5000, requestId: null }
      expect(after.auditLog).toEqual([{ accountId: ids.acme, ...audited }, { accountId: ids.globex, ...audited }])
      seen.moved = { summary, after }
    })
  })
}

describe('both engines', () => {
  test.if(testDatabaseUrl !== null)('answer the same, table for table', () => {
    for (const scenario of Object.keys(answers.sqlite!)) expect({ scenario, answer: answers.postgres[scenario] }).toEqual({ scenario, answer: answers.sqlite![scenario] })
    expect(Object.keys(answers.postgres).sort()).toEqual(Object.keys(answers.sqlite!).sort())
  })
})
