import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ids, keys, openWorld, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeAll(async () => {
  world = await openWorld()
})
afterAll(() => world.close())

describe('access decisions follow group changes made by another process at once', () => {
  test('removing and restoring a membership from another connection changes the answer on the next request', async () => {
    const get = () => world.call('GET', `/devices/${ids.truck2}`, { token: keys.bob })
    expect((await get()).status).toBe(200) // bob reaches truck2 through vans

    // as `cli import --upsert` would, from its own process
    {
      await world.executeElsewhere(sql`DELETE FROM user_groups WHERE user_id = ${ids.bob}`)
      expect((await get()).status).toBe(404)
      await world.executeElsewhere(sql`INSERT INTO user_groups (user_id, group_id) VALUES (${ids.bob}, ${ids.vans})`)
      expect((await get()).status).toBe(200)
      // moving the device out of bob's group
      await world.executeElsewhere(sql`DELETE FROM device_groups WHERE group_id = ${ids.vans} AND device_key = (SELECT key FROM devices WHERE id = ${ids.truck2})`)
      expect((await get()).status).toBe(404)
      expect((await world.call('GET', `/devices/${ids.truck2}`, { token: keys.alice })).status).toBe(200) // still in trucks
    }
  })

  test('one user\'s reach never leaks to another', async () => {
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.alice })).status).toBe(200)
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.bob })).status).toBe(404)
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.alice })).status).toBe(200)
  })
})
