import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { type SQL, sql } from 'drizzle-orm'
import { DatasetError, MAX_PROBLEMS, type ImportOptions } from '../../src/dataset/service'
import { hashKey } from '../../src/keys/service'
import { baseDataset, type EngineWorld, ids, keys, openWorld } from '../support/world'

// an empty database on the run's engine: each test imports into it
let world: EngineWorld
beforeEach(async () => {
  world = await openWorld({})
})
afterEach(() => world.close())

const importNow = (document: unknown, options?: ImportOptions) => world.importMore(document, options)
const count = (table: string) => world.count(table)
/** the first row a query answers */
const one = async (query: SQL) => (await world.execute(query))[0]
const TABLES = ['accounts', 'groups', 'users', 'user_groups', 'api_keys', 'models', 'commands', 'devices', 'device_groups', 'positions', 'events']
const snapshot = async () => Object.fromEntries(await Promise.all(TABLES.map(async (t) => [t, await count(t)])))

async function expectRejected(document: unknown, path: string, message?: RegExp | null, options = {}) {
  const before = await snapshot()
  let error: unknown
  try {
    await importNow(document, options)
  } catch (e) {
    error = e
  }
  expect(error).toBeInstanceOf(DatasetError)
  expect((error as DatasetError).path).toBe(path)
  if (message) expect((error as DatasetError).reason).toMatch(message)
  expect(await snapshot()).toEqual(before)
}

describe('importDataset', () => {
  test('writes every entity, hashes keys and keeps widgets as given', async () => {
    const summary = await importNow({
      ...baseDataset(),
      positions: [{ device: ids.van1, timestamp: 1764000000, latitude: 48.85, longitude: 2.35, speed: 12.5, course: 90, altitude: 35, satellites: 9 }],
      events: [{ device: ids.van1, alarm_code: 'sos', context: { a: 1 }, speed: 0, satellite: 7, coordinates: [48.85, 2.35], mcc: 208, mnc: 1, dbm: -71, timestamp: 1764000100 }],
    })
    expect(summary).toEqual({ accounts: 2, groups: 3, users: 5, apiKeys: 5, models: 2, commands: 2, devices: 5, positions: 1, events: 1 })
    const stored = await world.execute<{ hash: string }>(sql`SELECT hash FROM api_keys`)
    expect(stored.map((k) => k.hash).sort()).toEqual(Object.values(keys).map(hashKey).sort())
    expect(JSON.stringify(stored)).not.toContain(keys.alice)
    const widget = (await one(sql`SELECT widget FROM commands WHERE id = ${ids.engineStop}`))!.widget as string
    expect(JSON.parse(widget)).toEqual(baseDataset().models[0].commands![0].widget)
    // van1 had no location: it takes its newest position's
    const van = await one(sql`SELECT latitude, longitude FROM devices WHERE id = ${ids.van1}`)
    expect(van).toEqual({ latitude: 48.85, longitude: 2.35 })
    const position = await one(sql`SELECT ts, lat, lon, speed, course, altitude, satellites FROM positions`)
    expect(position).toEqual({ ts: 1764000000, lat: 488500000, lon: 23500000, speed: 125, course: 90, altitude: 35, satellites: 9 })
  })

  test('a minimal fleet: names, alias and the optional device fields may be left out', async () => {
    const summary = await importNow({
      accounts: [{ id: ids.acme }],
      groups: [{ id: ids.trucks, account: ids.acme }],
      users: [{ id: ids.alice, account: ids.acme }],
      models: [{ id: ids.bare, commands: [{ id: ids.engineStop, widget: { type: 'button', label: 'Go', confirm: false } }] }],
      devices: [{ id: ids.truck1, account: ids.acme, model: ids.bare }],
    })
    expect(summary.devices).toBe(1)
    // connected read as 0/1 on both engines (a boolean on PostgreSQL)
    expect(await one(sql`SELECT alias, serial, imei, iccid, state, properties, latitude, CASE WHEN connected THEN 1 ELSE 0 END AS connected FROM devices`)).toEqual({
      alias: '', serial: '', imei: '', iccid: '', state: 'new', properties: '{}', latitude: null, connected: 0,
    })
  })

  test('an empty document and empty arrays are fine', async () => {
    expect((await importNow({})).devices).toBe(0)
    expect((await importNow({ accounts: [], positions: [] })).accounts).toBe(0)
  })

  test('importing the same document twice fails on a duplicate id, unless upserting', async () => {
    await importNow(baseDataset())
    await expectRejected(baseDataset(), '/accounts/0/id', /already exists/)
    const changed = baseDataset()
    changed.devices[0].alias = 'Renamed truck'
    await importNow(changed, { upsert: true })
    expect(await one(sql`SELECT alias FROM devices WHERE id = ${ids.truck1}`)).toEqual({ alias: 'Renamed truck' })
    expect(await count('devices')).toBe(5)
    expect(await count('api_keys')).toBe(5)
  })

  const bad: [string, (d: ReturnType<typeof baseDataset> & Record<string, unknown>) => void, string, RegExp?][] = [
    ['an unknown top-level key', (d) => (d.vehicles = []), '/vehicles'],
    ['an unknown nested key', (d) => ((d.devices[0] as Record<string, unknown>).colour = 'red'), '/devices/0/colour'],
    ['a malformed id', (d) => (d.accounts[1].id = 'nope'), '/accounts/1/id'],
    ['a duplicate id in the file', (d) => (d.groups[1].id = d.groups[0].id), '/groups/1/id', /duplicate/],
    ['a group of a missing account', (d) => (d.groups[0].account = '0a000000-0000-4000-8000-0000000000ff'), '/groups/0/account', /no account/],
    ['a user in another account\'s group', (d) => d.users[0].groups.push(ids.globexGroup), '/users/0/groups/2', /another account/],
    ['a device in another account\'s group', (d) => d.devices[0].groups.push(ids.globexGroup), '/devices/0/groups/1', /another account/],
    ['a device of a missing model', (d) => (d.devices[2].model = '0d000000-0000-4000-8000-0000000000ff'), '/devices/2/model', /no model/],
    ['an unknown state', (d) => (d.devices[0].state = 'parked'), '/devices/0/state'],
    ['a short API key', (d) => (d.users[0].api_keys = ['short']), '/users/0/api_keys/0'],
    ['a bad datetime', (d) => (d.devices[0].created_at = 'yesterday'), '/devices/0/created_at'],
    ['a latitude out of range', (d) => (d.positions = [{ device: ids.truck1, timestamp: 1, latitude: 91, longitude: 0 }]), '/positions/0/latitude'],
    ['a longitude out of range', (d) => (d.positions = [{ device: ids.truck1, timestamp: 1, latitude: 0, longitude: -180.5 }]), '/positions/0/longitude'],
    ['a fractional timestamp', (d) => (d.positions = [{ device: ids.truck1, timestamp: 1.5, latitude: 0, longitude: 0 }]), '/positions/0/timestamp'],
    ['a string timestamp', (d) => (d.events = [{ device: ids.truck1, alarm_code: 'sos', timestamp: '1764000000' }]), '/events/0/timestamp'],
    ['a position of a missing device', (d) => (d.positions = [{ device: '0f000000-0000-4000-8000-0000000000ff', timestamp: 1, latitude: 0, longitude: 0 }]), '/positions/0/device', /no device/],
    ['a position without coordinates', (d) => (d.positions = [{ device: ids.truck1, timestamp: 1 }]), '/positions/0/latitude'],
    ['not an object at all', () => {}, ''],
  ]
  test.each(bad.map(([name, spoil, path, message]) => [name, spoil, path, message ?? null] as const))('rejects %s, naming the path, and writes nothing', async (_name, spoil, path, message) => {
    const document = baseDataset() as ReturnType<typeof baseDataset> & Record<string, unknown>
    spoil(document)
    await expectRejected(path === '' ? [document] : document, path, message)
  })

  test('a late error (the last of many positions) still writes nothing', async () => {
    const document = {
      ...baseDataset(),
      positions: [
        ...Array.from({ length: 1000 }, (_, i) => ({ device: ids.truck1, timestamp: 1764000000 + i, latitude: 48, longitude: 2 })),
        { device: '0f000000-0000-4000-8000-0000000000ff', timestamp: 1, latitude: 0, longitude: 0 },
      ],
    }
    await expectRejected(document, '/positions/1000/device')
  })

  test('a resent position (same device and timestamp) is stored once', async () => {
    const summary = await importNow({
      ...baseDataset(),
      positions: [
        { device: ids.truck1, timestamp: 1764000000, latitude: 48, longitude: 2 },
        { device: ids.truck1, timestamp: 1764000000, latitude: 48, longitude: 2 },
      ],
    })
    expect(summary.positions).toBe(1)
    expect(await count('positions')).toBe(1)
  })

  test('loads 100,000 positions in one transaction', async () => {
    const positions = Array.from({ length: 100_000 }, (_, i) => ({
      device: i % 2 ? ids.truck1 : ids.truck2, timestamp: 1764000000 + Math.floor(i / 2), latitude: 48 + i * 1e-6, longitude: 2 + i * 1e-6, speed: i % 90,
    }))
    let progressCalls = 0
    const summary = await importNow({ ...baseDataset(), positions }, { onProgress: () => progressCalls++ })
    expect(summary.positions).toBe(100_000)
    expect(await count('positions')).toBe(100_000)
    expect(progressCalls).toBeGreaterThan(10)
  })
})

describe('a rejected document', () => {
  const rejected = async (document: unknown) => {
    const before = await snapshot()
    let error: unknown
    try {
      await importNow(document)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(DatasetError)
    expect(await snapshot()).toEqual(before)
    return error as DatasetError
  }

  test('names every bad field with its path and a plain message, in document order', async () => {
    const document = baseDataset() as ReturnType<typeof baseDataset> & Record<string, unknown>
    document.vehicles = []
    ;(document.devices[0] as Record<string, unknown>).colour = 'red'
    ;(document.devices[0] as Record<string, unknown>).state = 'flying'
    ;(document.devices[1] as Record<string, unknown>).alias = 5
    delete (document.devices[2] as Partial<(typeof document.devices)[2]>).account
    ;(document.devices[2] as Record<string, unknown>).location = [48]
    ;(document.devices[3] as Record<string, unknown>).connected_at = 'yesterday'
    document.users[0].api_keys = ['short']
    document.positions = [{ device: ids.truck1, timestamp: 1.5, latitude: 91, longitude: 'east', speed: -1 }]
    document.events = [{ device: 'truck-1', timestamp: 1 }]
    const error = (await rejected(document))
    expect(error.problems).toEqual([
      { path: '/vehicles', message: 'is not a known field' },
      { path: '/users/0/api_keys/0', message: 'must be 16 to 512 printable ASCII characters, no spaces' },
      { path: '/devices/0/colour', message: 'is not a known field' },
      { path: '/devices/0/state', message: 'must be one of new, off, moving, stopped, suspended, unlink, stolen' },
      { path: '/devices/1/alias', message: 'must be a string' },
      { path: '/devices/2/account', message: 'is required' },
      { path: '/devices/2/location', message: 'must be [latitude, longitude] (latitude from -90 to 90, longitude from -180 to 180) or null' },
      { path: '/devices/3/connected_at', message: 'must be an ISO 8601 datetime with Z or an offset, such as 2026-11-01T08:00:00Z or null' },
      { path: '/positions/0/timestamp', message: 'must be an integer ≥ 0 (Unix seconds)' },
      { path: '/positions/0/latitude', message: 'must be a number from -90 to 90' },
      { path: '/positions/0/longitude', message: 'must be a number from -180 to 180' },
      { path: '/positions/0/speed', message: 'must be a number ≥ 0 or null' },
      { path: '/events/0/alarm_code', message: 'is required' },
      { path: '/events/0/device', message: 'must be a UUID' },
    ])
    expect(error.message.split('\n')).toEqual([
      '14 problems in the dataset (nothing was imported):',
      ...error.problems.map((p) => `  ${p.path}: ${p.message}`),
    ])
    expect(error.message).not.toMatch(/Expected|union/i)
  })

  test('lists every bad reference, not only the first', async () => {
    const document = baseDataset()
    document.devices[0].model = '0d000000-0000-4000-8000-0000000000ff'
    document.devices[2].account = '0a000000-0000-4000-8000-0000000000ff'
    const error = await rejected({ ...document, events: [{ device: '0f000000-0000-4000-8000-0000000000ff', alarm_code: 'sos', timestamp: 1 }] })
    expect(error.problems.map((p) => p.path)).toEqual(['/devices/0/model', '/devices/2/account', '/events/0/device'])
    expect(error.problems[0].message).toBe('no model 0d000000-0000-4000-8000-0000000000ff')
  })

  test(`stops at ${MAX_PROBLEMS}, and says there are more`, async () => {
    const positions = Array.from({ length: 50 }, (_, i) => ({ device: ids.truck1, timestamp: i, latitude: 100, longitude: 0 }))
    const error = await rejected({ ...baseDataset(), positions })
    expect(error.problems).toHaveLength(MAX_PROBLEMS)
    expect(error.problems.at(-1)).toEqual({ path: `/positions/${MAX_PROBLEMS - 1}/latitude`, message: 'must be a number from -90 to 90' })
    expect(error.message.split('\n')[0]).toBe(`the first ${MAX_PROBLEMS} problems in the dataset (nothing was imported):`)
  })

  test('with one problem, is one line', async () => {
    const document = baseDataset()
    document.devices[0].model = '0d000000-0000-4000-8000-0000000000ff'
    expect((await rejected(document)).message).toBe('/devices/0/model: no model 0d000000-0000-4000-8000-0000000000ff')
  })
})

describe('roles and sign-in names', () => {
  test('a user\'s role is imported (member when left out) and kept by an --upsert that leaves it out', async () => {
    const role = async (id: string) => (await one(sql`SELECT role FROM users WHERE id = ${id}`))!.role
    await importNow(baseDataset())
    expect([await role(ids.alice), await role(ids.dana)]).toEqual(['member', 'admin'])
    const again = baseDataset()
    delete (again.users[3] as { role?: string }).role
    await importNow(again, { upsert: true })
    expect(await role(ids.dana)).toBe('admin')
  })

  test('a sign-in name used twice, whatever its case, is refused naming the path, and nothing is written', async () => {
    const dataset = baseDataset()
    dataset.users[1]!.name = 'ALICE'
    await expectRejected(dataset, '/users/1/name', /already the name of user/)
  })
})
