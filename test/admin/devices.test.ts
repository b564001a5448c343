/** POST /devices, PATCH and DELETE /devices/{id}: an account admin managing the account's devices. */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { type SQL, sql } from 'drizzle-orm'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeEach(async () => {
  const dataset = {
    ...baseDataset(),
    positions: [
      { device: ids.truck1, timestamp: 1764000000, latitude: 48.85, longitude: 2.35 },
      { device: ids.truck1, timestamp: 1764000060, latitude: 48.86, longitude: 2.36 },
      { device: ids.truck2, timestamp: 1764000000, latitude: 45.75, longitude: 4.85 },
    ],
    events: [
      { device: ids.truck1, alarm_code: 'sos', timestamp: 1764000030 },
      { device: ids.truck2, alarm_code: 'sos', timestamp: 1764000030 },
    ],
  }
  world = await openWorld(dataset)
})
afterEach(() => world.close())

const DEVICE_FIELDS = ['alias', 'connected', 'connected_at', 'created_at', 'disconnected_at', 'iccid', 'id', 'imei', 'location', 'model', 'properties', 'serial', 'state', 'updated_at']
const NOW = Date.UTC(2026, 10, 25, 12, 0, 0) // manualClock's start

type DeviceJson = Record<string, unknown> & { id: string }

/** `token` null: no credentials */
const post = (body: unknown, token: string | null = keys.dana) => world.call('POST', '/devices', { token: token ?? undefined, body })
const patch = (id: string, body: unknown, token: string | null = keys.dana) => world.call('PATCH', `/devices/${id}`, { token: token ?? undefined, body })
const remove = (id: string, token: string | null = keys.dana) => world.call('DELETE', `/devices/${id}`, { token: token ?? undefined })
const get = (id: string, token = keys.dana) => world.call('GET', `/devices/${id}`, { token })

async function created(body: unknown, token = keys.dana): Promise<DeviceJson> {
  const res = await post(body, token)
  if (res.status !== 201) throw new Error(`expected 201, got ${res.status}: ${await res.text()}`)
  return (await res.json()) as DeviceJson
}

/** errors[] paths of a 400 problem */
async function badPaths(res: Response): Promise<string[]> {
  const body = await problem(res, 400)
  expect(body.errors?.length).toBeGreaterThan(0)
  return body.errors!.map((e) => e.path)
}

const count = (table: string, where?: SQL) => world.count(table, where)
const audit = () =>
  world.execute<{ account_id: string; actor: string; action: string; object_type: string; object_id: string; request_id: string | null; at: number }>(
    sql`SELECT account_id, actor, action, object_type, object_id, request_id, at FROM audit_log ORDER BY id`,
  )
const keyOf = (id: string) => world.deviceKey(id)

describe('POST /devices', () => {
  test('201 with the device as GET /devices/{id} shows it, a Location, and an audit entry with the request id', async () => {
    const res = await post({
      alias: 'Truck 9', model: ids.gt06, groups: [ids.trucks], imei: '123456789012345', serial: 'S-T9', iccid: '8934071179000000009',
      properties: { plate: 'ZZ-999-ZZ' },
    })
    expect(res.status).toBe(201)
    const device = (await res.json()) as DeviceJson
    expect(Object.keys(device).sort()).toEqual(DEVICE_FIELDS)
    expect(device.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(res.headers.get('location')).toBe(`/devices/${device.id}`)
    expect(device).toMatchObject({
      alias: 'Truck 9', model: ids.gt06, imei: '123456789012345', serial: 'S-T9', iccid: '8934071179000000009', properties: { plate: 'ZZ-999-ZZ' },
      state: 'new', location: null, connected: false, connected_at: null, disconnected_at: null,
      created_at: new Date(NOW).toISOString(), updated_at: new Date(NOW).toISOString(),
    })
    expect(await (await get(device.id)).json()).toEqual(device)

    // reached through its group: alice (trucks) sees it, bob (vans) does not
    expect((await get(device.id, keys.alice)).status).toBe(200)
    await problem(await get(device.id, keys.bob), 404)

    const requestId = res.headers.get('x-request-id')
    expect(requestId).toBeTruthy()
    expect(await audit()).toEqual([
      { account_id: ids.acme, actor: ids.dana, action: 'create', object_type: 'device', object_id: device.id, request_id: requestId, at: NOW },
    ])
  })

  test('an imei alone or a serial alone is enough; the state may be given; groups default to none', async () => {
    const byImei = await created({ alias: 'By IMEI', model: ids.bare, imei: '000000000000001' })
    expect(byImei).toMatchObject({ imei: '000000000000001', serial: '', iccid: '', properties: {}, state: 'new' })
    const bySerial = await created({ alias: 'By serial', model: ids.bare, serial: 'phone-42', imei: '', state: 'suspended' })
    expect(bySerial).toMatchObject({ imei: '', serial: 'phone-42', state: 'suspended' })
    // in no group: no member reaches it, the admin does
    await problem(await get(bySerial.id, keys.alice), 404)
    expect((await get(bySerial.id)).status).toBe(200)
  })

  test('an IMEI need not pass the check digit (a tracker\'s terminal id)', async () => {
    // 359710049095095 passes Luhn; ...096 does not
    expect((await created({ alias: 'T', model: ids.gt06, imei: '359710049095096' })).imei).toBe('359710049095096')
  })

  test.each([
    ['no alias', { model: ids.gt06, imei: '123456789012345' }, ['/alias']],
    ['a blank alias', { alias: '   ', model: ids.gt06, imei: '123456789012345' }, ['/alias']],
    ['a malformed model id', { alias: 'T', model: 'gt06', imei: '123456789012345' }, ['/model']],
    ['neither imei nor serial', { alias: 'T', model: ids.gt06 }, ['/imei', '/serial']],
    ['both empty', { alias: 'T', model: ids.gt06, imei: '', serial: '' }, ['/imei', '/serial']],
    ['an imei of 14 digits', { alias: 'T', model: ids.gt06, imei: '12345678901234' }, ['/imei']],
    ['an imei of 16 digits', { alias: 'T', model: ids.gt06, imei: '1234567890123456' }, ['/imei']],
    ['an imei with a letter', { alias: 'T', model: ids.gt06, imei: '12345678901234A' }, ['/imei']],
    ['an imei as a number', { alias: 'T', model: ids.gt06, imei: 123456789012345 }, ['/imei']],
    ['a serial with a space', { alias: 'T', model: ids.gt06, serial: 'S 1' }, ['/serial']],
    ['a serial of 65 characters', { alias: 'T', model: ids.gt06, serial: 'x'.repeat(65) }, ['/serial']],
    ['an unknown state', { alias: 'T', model: ids.gt06, serial: 'S-X', state: 'parked' }, ['/state']],
    ['properties that are not an object', { alias: 'T', model: ids.gt06, serial: 'S-X', properties: ['a'] }, ['/properties']],
    ['a malformed group id', { alias: 'T', model: ids.gt06, serial: 'S-X', groups: ['trucks'] }, ['/groups/0']],
    ['an unknown field', { alias: 'T', model: ids.gt06, serial: 'S-X', account: ids.acme }, ['/account']],
    ['an id (the server chooses it)', { id: ids.truck1, alias: 'T', model: ids.gt06, serial: 'S-X' }, ['/id']],
  ])('%s is 400 naming the field, and nothing is written', async (_, body, paths) => {
    const before = await count('devices')
    expect(await badPaths(await post(body))).toEqual(expect.arrayContaining(paths))
    expect(await count('devices')).toBe(before)
    expect(await audit()).toEqual([])
  })

  test.each([
    ["another device's imei", { imei: '359710049095001' }, 'imei'],
    ["another account's device's imei", { imei: '359710049095005' }, 'imei'],
    ["an unlinked device's imei", { imei: '359710049095004' }, 'imei'],
    ["another device's serial", { serial: 'S-T1' }, 'serial'],
    ["another device's imei as a serial (devices are found by either)", { serial: '359710049095002' }, 'serial'],
  ])('%s is 409, and nothing is written', async (_, identifiers, field) => {
    const before = await count('devices')
    const body = await problem(await post({ alias: 'Dup', model: ids.gt06, ...identifiers }), 409)
    expect(body.detail).toContain(field)
    // another account's device is never named
    expect(body.detail).not.toContain(ids.globexCar)
    expect(await count('devices')).toBe(before)
    expect(await audit()).toEqual([])
  })

  test('the same identifier twice in a row: the second is 409', async () => {
    await created({ alias: 'One', model: ids.gt06, imei: '111111111111111' })
    await problem(await post({ alias: 'Two', model: ids.gt06, imei: '111111111111111' }), 409)
    await problem(await post({ alias: 'Two', model: ids.gt06, serial: '111111111111111' }), 409)
  })

  test('a taken serial is reported against the serial, never the empty imei; an empty imei never collides', async () => {
    // two devices without an IMEI: the empty value is no identifier, so no clash
    await created({ alias: 'Phone A', model: ids.bare, serial: 'phone-a' })
    await created({ alias: 'Phone B', model: ids.bare, serial: 'phone-b', imei: '' })
    const posted = await problem(await post({ alias: 'Phone C', model: ids.bare, serial: 'phone-a' }), 409)
    expect(posted.detail).toStartWith('serial: phone-a ')
    expect(posted.errors).toEqual([{ path: '/serial', message: expect.stringContaining('already') }])
    const b = (await (await world.call('GET', '/devices', { token: keys.dana })).json()) as DeviceJson[]
    const phoneB = b.find((d) => d.alias === 'Phone B')!
    const patched = await problem(await patch(phoneB.id, { serial: 'phone-a' }), 409)
    expect(patched.detail).toStartWith('serial: phone-a ')
    expect(patched.errors?.map((e) => e.path)).toEqual(['/serial'])
  })

  test("an unknown model, an unknown group and another account's group are 404, and nothing is written", async () => {
    const before = await count('devices')
    const unknown = '0b000000-0000-4000-8000-0000000000ff'
    expect((await problem(await post({ alias: 'T', model: unknown, serial: 'S-X' }), 404)).detail).toContain('model')
    expect((await problem(await post({ alias: 'T', model: ids.gt06, serial: 'S-X', groups: [unknown] }), 404)).detail).toContain('group')
    expect((await problem(await post({ alias: 'T', model: ids.gt06, serial: 'S-X', groups: [ids.trucks, ids.globexGroup] }), 404)).detail).toContain('group')
    expect(await count('devices')).toBe(before)
    expect(await count('device_groups')).toBe(6)
    expect(await audit()).toEqual([])
  })

  test('group and model ids in any case', async () => {
    const device = await created({ alias: 'T', model: ids.gt06.toUpperCase(), serial: 'S-X', groups: [ids.vans.toUpperCase(), ids.vans] })
    expect(device.model).toBe(ids.gt06)
    expect((await get(device.id, keys.bob)).status).toBe(200)
  })

  test('a member and a share token get 403, no credentials 401, and nothing is written', async () => {
    const body = { alias: 'T', model: ids.gt06, serial: 'S-X', groups: [ids.trucks] }
    await problem(await post(body, keys.alice), 403)
    const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { token: string }
    await problem(await post(body, link.token), 403)
    await problem(await post(body, null), 401)
    expect(await count('devices', sql`serial = ${'S-X'}`)).toBe(0)
  })

  test("another account's admin creates in their own account only", async () => {
    const device = await created({ alias: 'Globex van', model: ids.bare, serial: 'G-1', groups: [ids.globexGroup] }, keys.erin)
    expect((await get(device.id, keys.carol)).status).toBe(200)
    await problem(await get(device.id, keys.dana), 404)
    await problem(await post({ alias: 'T', model: ids.bare, serial: 'G-2', groups: [ids.trucks] }, keys.erin), 404)
    expect((await audit()).map((e) => [e.account_id, e.actor])).toEqual([[ids.globex, ids.erin]])
  })
})

describe('PATCH /devices/{id}', () => {
  test('changes only the fields sent and answers the device; groups and properties replace', async () => {
    const res = await patch(ids.truck1, { alias: 'Truck one', groups: [ids.vans], properties: { plate: 'NEW' }, state: 'stolen' })
    expect(res.status).toBe(200)
    const device = (await res.json()) as DeviceJson
    expect(Object.keys(device).sort()).toEqual(DEVICE_FIELDS)
    expect(device).toMatchObject({
      id: ids.truck1, alias: 'Truck one', properties: { plate: 'NEW' }, state: 'stolen', imei: '359710049095001', serial: 'S-T1', model: ids.gt06,
      created_at: '2026-01-01T00:00:00.000Z', updated_at: new Date(NOW).toISOString(),
    })
    expect(await (await get(ids.truck1)).json()).toEqual(device)
    // now in vans only: bob reaches it
    expect((await get(ids.truck1, keys.bob)).status).toBe(200)
    expect(await audit()).toEqual([
      { account_id: ids.acme, actor: ids.dana, action: 'update', object_type: 'device', object_id: ids.truck1, request_id: res.headers.get('x-request-id'), at: NOW },
    ])

    // an empty group list leaves every group
    await patch(ids.truck1, { groups: [] })
    await problem(await get(ids.truck1, keys.bob), 404)
    await problem(await get(ids.truck1, keys.alice), 404)
  })

  test('re-identifies: a new imei or serial, or clears one while the other stays', async () => {
    expect(await (await patch(ids.truck2, { imei: '222222222222222', serial: '' })).json()).toMatchObject({ imei: '222222222222222', serial: '' })
    // its old identifiers are free again
    expect((await created({ alias: 'Reuse', model: ids.gt06, serial: 'S-T2' })).serial).toBe('S-T2')
    // keeping its own identifier is no clash
    expect((await patch(ids.truck2, { imei: '222222222222222', alias: 'Same' })).status).toBe(200)
    expect(await (await patch(ids.truck2, { model: ids.bare, iccid: '' })).json()).toMatchObject({ model: ids.bare, iccid: '' })
  })

  test('a device left without imei and serial is 400; a taken identifier 409; nothing is written', async () => {
    expect(await badPaths(await patch(ids.truck1, { imei: '', serial: '' }))).toEqual(['/imei', '/serial'])
    await patch(ids.van1, { serial: '' })
    expect(await badPaths(await patch(ids.van1, { imei: '' }))).toEqual(['/imei', '/serial'])
    await problem(await patch(ids.truck1, { imei: '359710049095005' }), 409)
    await problem(await patch(ids.truck1, { serial: 'S-C', alias: 'Renamed' }), 409)
    const stored = (await (await get(ids.truck1)).json()) as DeviceJson
    expect(stored).toMatchObject({ alias: 'Truck 1', imei: '359710049095001', serial: 'S-T1' })
    expect((await audit()).map((e) => e.object_id)).toEqual([ids.van1])
  })

  test.each([
    ['an unknown field', { location: [1, 2] }, ['/location']],
    ['a bad imei', { imei: '1234' }, ['/imei']],
    ['an empty alias', { alias: '' }, ['/alias']],
    ['a bad state', { state: 'gone' }, ['/state']],
  ])('%s is 400 naming the field', async (_, body, paths) => {
    expect(await badPaths(await patch(ids.truck1, body))).toEqual(paths)
    expect(await audit()).toEqual([])
  })

  test("an unknown model or another account's group is 404; a malformed id 400", async () => {
    await problem(await patch(ids.truck1, { model: '0d000000-0000-4000-8000-0000000000ff' }), 404)
    await problem(await patch(ids.truck1, { groups: [ids.globexGroup] }), 404)
    expect(await badPaths(await patch('truck-1', { alias: 'X' }))).toEqual(['/id'])
    expect(await audit()).toEqual([])
  })

  test("a member and a share token get 403, no credentials 401, another account's admin 404; nothing changes", async () => {
    await problem(await patch(ids.truck1, { alias: 'X' }, keys.alice), 403)
    const link = (await (await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })).json()) as { token: string }
    await problem(await patch(ids.truck1, { alias: 'X' }, link.token), 403)
    await problem(await patch(ids.truck1, { alias: 'X' }, null), 401)
    await problem(await patch(ids.truck1, { alias: 'X' }, keys.erin), 404)
    await problem(await patch('0f000000-0000-4000-8000-0000000000ff', { alias: 'X' }), 404)
    expect(((await (await get(ids.truck1)).json()) as DeviceJson).alias).toBe('Truck 1')
    expect(await audit()).toEqual([])
  })
})

describe('DELETE /devices/{id}', () => {
  async function share(devices: string[]) {
    const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices, ttl: 3600 } })
    return (await res.json()) as { id: string; token: string }
  }

  test('204: the device, its positions and events are gone; its share links lose it and one left empty is revoked', async () => {
    const alone = await share([ids.truck1])
    const both = await share([ids.truck1, ids.truck2])
    // the tokens are cached by now
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: alone.token })).status).toBe(200)
    expect((await world.call('GET', `/devices/${ids.truck1}`, { token: both.token })).status).toBe(200)
    const key = await keyOf(ids.truck1)

    const res = await remove(ids.truck1)
    expect(res.status).toBe(204)
    expect(await res.text()).toBe('')

    await problem(await get(ids.truck1), 404)
    await problem(await get(ids.truck1, keys.alice), 404)
    expect(await count('positions', sql`device = ${key}`)).toBe(0)
    expect(await count('events', sql`device = ${key}`)).toBe(0)
    expect(await count('device_groups', sql`device_key = ${key}`)).toBe(0)
    // the other devices keep theirs
    expect(await count('positions')).toBe(1)
    expect(await count('events')).toBe(1)

    // the link that held only this device is revoked: its token is 401 at once
    await problem(await world.call('GET', '/devices', { token: alone.token }), 401)
    const revoked = (await (await world.call('GET', `/devices/share/${alone.id}`, { token: keys.dana })).json()) as { revoked: boolean; devices: string[] }
    expect(revoked).toMatchObject({ revoked: true, devices: [] })
    // the other link keeps its other device
    await problem(await world.call('GET', `/devices/${ids.truck1}`, { token: both.token }), 404)
    const listed = (await (await world.call('GET', '/devices', { token: both.token })).json()) as DeviceJson[]
    expect(listed.map((d) => d.id)).toEqual([ids.truck2])

    expect(await audit()).toEqual([
      { account_id: ids.acme, actor: ids.dana, action: 'delete', object_type: 'device', object_id: ids.truck1, request_id: res.headers.get('x-request-id'), at: NOW },
    ])
    // gone: a second delete is 404
    await problem(await remove(ids.truck1), 404)
  })

  test('its identifiers are free again', async () => {
    await remove(ids.truck1)
    expect((await created({ alias: 'Again', model: ids.gt06, imei: '359710049095001', serial: 'S-T1' })).imei).toBe('359710049095001')
  })

  test("a member and a share token get 403, no credentials 401, another account's admin 404; nothing is deleted", async () => {
    const link = await share([ids.truck1])
    await problem(await remove(ids.truck1, keys.alice), 403)
    await problem(await remove(ids.truck1, link.token), 403)
    await problem(await remove(ids.truck1, null), 401)
    await problem(await remove(ids.truck1, keys.erin), 404)
    expect(await badPaths(await remove('truck-1'))).toEqual(['/id'])
    expect(await count('devices', sql`id = ${ids.truck1}`)).toBe(1)
    expect(await count('positions', sql`device = ${await keyOf(ids.truck1)}`)).toBe(2)
    expect(await audit()).toEqual([])
  })
})
