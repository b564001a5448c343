import { afterEach, describe, expect, test } from 'bun:test'
import { devicesWorld } from './devices-world'
import { engines, type Opened } from './support'

for (const engine of engines('the status reads on PostgreSQL')) {
  describe(`the status reads on ${engine.name}`, () => {
    let opened: Opened | null = null
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    test('latest answers the stored attributes parsed and when they were committed; null for a device without any', async () => {
      opened = await engine.open()
      const world = devicesWorld(opened)
      await world.insert('accounts', [{ id: 'a', name: 'A' }])
      await world.insert('devices', [
        { id: 'd1', accountId: 'a', alias: 'one', imei: '1', serial: '' },
        { id: 'd2', accountId: 'a', alias: 'two', imei: '2', serial: '' },
      ])
      await world.insert('deviceStatus', [{ deviceKey: 1, attributes: '{"battery":80,"ignition":true,"iButton":null,"cells":[1,2],"name":"Émile"}', updatedAt: 1_767_225_600_123 }])
      expect(await world.status.latest(1)).toEqual({
        attributes: { battery: 80, ignition: true, iButton: null, cells: [1, 2], name: 'Émile' },
        updatedAt: 1_767_225_600_123,
      })
      expect(await world.status.latest(2)).toBeNull()
      expect(await world.status.latest(99)).toBeNull()
    })
  })
}
