import { afterEach, describe, expect, test } from 'bun:test'
import { devicesWorld, type DevicesWorld } from './devices-world'
import { engines, type Opened } from './support'

/** two accounts (inserted b first), users, groups, models and devices with names to look up */
async function seed(world: DevicesWorld): Promise<void> {
  await world.insert('accounts', [
    { id: 'b', name: 'Beta' },
    { id: 'a', name: 'Acme' },
    { id: 'c', name: 'Empty' },
  ])
  await world.insert('users', [
    { id: 'ub', accountId: 'b', name: 'Bob', role: 'admin' },
    { id: 'ua', accountId: 'a', name: 'Ann', role: 'admin' },
    { id: 'um', accountId: 'a', name: 'Max', role: 'member' },
  ])
  await world.insert('groups', [
    { id: 'g1', accountId: 'a', name: 'First' },
    { id: 'gb', accountId: 'b', name: 'First' },
  ])
  await world.insert('models', [
    { id: 'm-shared', name: 'Shared' },
    { id: 'm-a', name: 'Tracker', accountId: 'a' },
    { id: 'm-b', name: 'Tracker', accountId: 'b' },
  ])
  await world.insert('devices', [
    { id: 'd1', accountId: 'a', alias: 'Van', imei: '111', serial: '', state: 'moving' },
    { id: 'd2', accountId: 'a', alias: 'van', imei: '', serial: 'S2' },
    { id: 'd3', accountId: 'a', alias: '_truck', imei: '333', serial: 'S3' },
    { id: 'd0', accountId: 'a', alias: 'Van', imei: '', serial: '' },
    { id: 'd4', accountId: 'b', alias: 'Bus', imei: 'S2', serial: '' },
  ])
}

const byId = <T extends { id: string }>(rows: T[]) => [...rows].sort((x, y) => (x.id < y.id ? -1 : 1))

for (const engine of engines('the operator name lookups on PostgreSQL')) {
  describe(`the operator name lookups on ${engine.name}`, () => {
    let opened: Opened | null = null
    afterEach(async () => {
      await opened?.close()
      opened = null
    })
    async function open(): Promise<DevicesWorld> {
      opened = await engine.open()
      const world = devicesWorld(opened)
      await seed(world)
      return world
    }

    test('accounts, users and groups by id or by name in any case', async () => {
      const { names } = await open()
      expect(await names.accounts({ name: 'ACME' })).toEqual([{ id: 'a', name: 'Acme' }])
      expect(await names.accounts({ id: 'b' })).toEqual([{ id: 'b', name: 'Beta' }])
      expect(await names.accounts({ id: 'B' })).toEqual([])
      expect(await names.accounts({ name: 'nobody' })).toEqual([])
      expect(await names.users({ name: 'max' })).toEqual([{ id: 'um', name: 'Max', accountId: 'a' }])
      expect(await names.users({ id: 'ub' })).toEqual([{ id: 'ub', name: 'Bob', accountId: 'b' }])
      expect(await names.groups('a', { name: 'FIRST' })).toEqual([{ id: 'g1', name: 'First' }])
      expect(await names.groups('b', { name: 'first' })).toEqual([{ id: 'gb', name: 'First' }])
      expect(await names.groups('c', { name: 'first' })).toEqual([])
      expect(await names.groups('a', { id: 'gb' })).toEqual([])
    })

    test('models: any, or those an account’s devices may use; anyModel whoever’s', async () => {
      const { names } = await open()
      expect(byId(await names.models({ name: 'tracker' }))).toEqual([
        { id: 'm-a', name: 'Tracker', accountId: 'a' },
        { id: 'm-b', name: 'Tracker', accountId: 'b' },
      ])
      expect(await names.models({ name: 'TRACKER' }, 'a')).toEqual([{ id: 'm-a', name: 'Tracker', accountId: 'a' }])
      expect(await names.models({ id: 'm-shared' }, 'c')).toEqual([{ id: 'm-shared', name: 'Shared', accountId: null }])
      expect(await names.models({ id: 'm-b' }, 'c')).toEqual([])
      expect(await names.anyModel({ id: 'm-b' })).toBe(true)
      expect(await names.anyModel({ name: 'shared' })).toBe(true)
      expect(await names.anyModel({ name: 'none' })).toBe(false)
    })

    test('devices by id, or by alias (any case), IMEI or serial, an empty text matching no empty identifier', async () => {
      const { names } = await open()
      expect(await names.devices({ id: 'd3' })).toEqual([{ id: 'd3', alias: '_truck', accountId: 'a' }])
      expect(await names.devices({ id: 'd3' }, 'b')).toEqual([])
      expect(byId(await names.devices({ text: 'VAN' }))).toEqual([
        { id: 'd0', alias: 'Van', accountId: 'a' },
        { id: 'd1', alias: 'Van', accountId: 'a' },
        { id: 'd2', alias: 'van', accountId: 'a' },
      ])
      expect(await names.devices({ text: '111' })).toEqual([{ id: 'd1', alias: 'Van', accountId: 'a' }])
      expect(byId(await names.devices({ text: 'S2' }))).toEqual([
        { id: 'd2', alias: 'van', accountId: 'a' },
        { id: 'd4', alias: 'Bus', accountId: 'b' },
      ])
      expect(await names.devices({ text: 'S2' }, 'b')).toEqual([{ id: 'd4', alias: 'Bus', accountId: 'b' }])
      expect(await names.devices({ text: '' })).toEqual([])
    })

    test('deviceList by alias then id in byte order, one account’s or all; accountsWithUsers by id; accountNames', async () => {
      const { names } = await open()
      expect((await names.deviceList('a')).map((d) => d.id)).toEqual(['d0', 'd1', 'd3', 'd2'])
      expect(await names.deviceList('b')).toEqual([{ id: 'd4', alias: 'Bus', imei: 'S2', serial: '', state: 'new' }])
      expect((await names.deviceList(null)).map((d) => d.id)).toEqual(['d4', 'd0', 'd1', 'd3', 'd2'])
      expect((await names.deviceList('a'))[1]).toEqual({ id: 'd1', alias: 'Van', imei: '111', serial: '', state: 'moving' })
      expect(await names.deviceList('c')).toEqual([])
      expect(await names.accountsWithUsers()).toEqual(['a', 'b'])
      expect(await names.accountNames()).toEqual(
        new Map([
          ['a', 'Acme'],
          ['b', 'Beta'],
          ['c', 'Empty'],
        ]),
      )
    })
  })
}
