import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { ids, keys, makeWorld, type World } from '../support/world'

let world: World
beforeAll(() => {
  world = makeWorld()
})
afterAll(() => world.close())

describe('access decisions follow group changes made by another process at once', () => {
  test('removing and restoring a membership from another connection changes the answer on the next request', async () => {
    const get = () => world.call('GET', `/devices/${ids.truck2}`, { token: keys.bob })
    expect((await get()).status).toBe(200) // bob reaches truck2 through vans

    // as `cli import --upsert` would, from its own process
    const other = new Database(join(world.dir, 'tracker.db'))
    try {
      other.run('DELETE FROM user_groups WHERE user_id = ?', [ids.bob])
      expect((await get()).status).toBe(404)
      other.run('INSERT INTO user_groups (user_id, group_id) VALUES (?, ?)', [ids.bob, ids.vans])
      expect((await get()).status).toBe(200)
      // moving the device out of bob's group
      other.run('DELETE FROM device_groups WHERE group_id = ? AND device_key = (SELECT key FROM devices WHERE id = ?)', [ids.vans, ids.truck2])
      expect((await get()).status).toBe(404)
      expect((await world.call('GET', `/devices/${ids.truck2}`, { token: keys.alice })).status).toBe(200) // still in trucks
    } finally {
      other.close()
    }
  })

  test('one user\'s reach never leaks to another', async () => {
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.alice })).status).toBe(200)
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.bob })).status).toBe(404)
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: keys.alice })).status).toBe(200)
  })
})
