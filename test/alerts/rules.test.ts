/**
 * The alert rules: the pure derivation (derive.ts) on sequences of fixes, and the entry point
 * ingest calls in its transaction (rules.ts) against a real database: state read and written in
 * the caller's transaction, kept across a reopened database, geofences created over the API.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createGeofenceCache } from '../../src/alerts/cache'
import type { Stores } from '../../src/store'
import { deriveFromConnection, deriveFromFixes, INITIAL_STATE, OVERSPEED_REPEAT_SECONDS, type RuleContext, type RuleFix, type RuleState } from '../../src/alerts/derive'
import { createAlertRules, type AlertRules } from '../../src/alerts/rules'
import { createGeofenceIndex, prepareArea, type Area } from '../../src/track/geofence'
import { baseDataset, type EngineWorld, ids, keys, openWorld } from '../support/world'

const T0 = 1_795_000_000
const YARD = { type: 'Circle', center: [48.85, 2.35], radius: 200 } as const
const IN_YARD = { latitude: 48.85, longitude: 2.35 }
const OUTSIDE = { latitude: 48.86, longitude: 2.35 }

const fix = (timestamp: number, where: { latitude: number; longitude: number }, more: Partial<RuleFix> = {}): RuleFix => ({
  timestamp,
  ...where,
  speed: 10,
  valid: true,
  satellites: 8,
  attributes: {},
  ...more,
})

/** a context over plain geofences, all applying, for the pure tests */
function contextOf(geofences: { id: string; name: string; area: Area; speedLimit?: number }[], deviceSpeedLimit: number | null = null): RuleContext {
  const list = geofences.map((g) => ({ id: g.id, name: g.name, speedLimit: g.speedLimit ?? null }))
  const index = createGeofenceIndex(geofences.map((g, i) => ({ area: prepareArea(g.area), value: list[i]! })))
  return {
    geofencesAt: (lat, lon) => index.containing(lat, lon),
    applicable: (id) => list.find((g) => g.id === id) ?? null,
    deviceSpeedLimit,
  }
}

/** runs fixes one call at a time, threading the state; the codes of the events, per call */
function run(context: RuleContext, calls: RuleFix[][], start: RuleState = INITIAL_STATE) {
  let state = start
  const codes: string[][] = []
  const events = []
  for (const fixes of calls) {
    const derived = deriveFromFixes(state, fixes, context)
    state = derived.state
    codes.push(derived.events.map((e) => e.alarmCode))
    events.push(...derived.events)
  }
  return { state, codes, events }
}

describe('derive: geofences', () => {
  const yard = contextOf([{ id: 'g-yard', name: 'Yard', area: YARD as Area }])

  test('out, in, in, out: one enter, one exit, with the fix and { geofence, name }', () => {
    const { codes, events } = run(yard, [[fix(T0, OUTSIDE)], [fix(T0 + 10, IN_YARD)], [fix(T0 + 20, IN_YARD)], [fix(T0 + 30, OUTSIDE)]])
    expect(codes).toEqual([[], ['geofence_enter'], [], ['geofence_exit']])
    expect(events[0]).toEqual({
      timestamp: T0 + 10, alarmCode: 'geofence_enter', latitude: 48.85, longitude: 2.35, speed: 10, satellites: 8, mcc: null, mnc: null, dbm: null,
      context: { geofence: 'g-yard', name: 'Yard' },
    })
    expect(events[1]!.context).toEqual({ geofence: 'g-yard', name: 'Yard' })
  })

  test('the first fix a device ever sends inside counts as an enter; its first outside derives nothing', () => {
    expect(run(yard, [[fix(T0, IN_YARD)]]).codes).toEqual([['geofence_enter']])
    expect(run(yard, [[fix(T0, OUTSIDE)]]).codes).toEqual([[]])
  })

  test('a late, older fix derives nothing and changes nothing; nor does a re-sent one', () => {
    const { state, codes } = run(yard, [[fix(T0 + 100, IN_YARD)], [fix(T0 + 50, OUTSIDE)], [fix(T0 + 100, OUTSIDE)], [fix(T0 + 150, IN_YARD)]])
    expect(codes).toEqual([['geofence_enter'], [], [], []])
    expect(state.lastFixTs).toBe(T0 + 150)
  })

  test('a batch counts in timestamp order, whatever order it came in', () => {
    const { codes, state } = run(yard, [[fix(T0 + 20, OUTSIDE), fix(T0, OUTSIDE), fix(T0 + 10, IN_YARD)]])
    expect(codes).toEqual([['geofence_enter', 'geofence_exit']])
    expect(state.inside).toEqual([])
  })

  test('an invalid fix, or a 0/0 placeholder, derives nothing and changes nothing', () => {
    const { codes, state } = run(yard, [[fix(T0, IN_YARD)], [fix(T0 + 10, OUTSIDE, { valid: false })], [fix(T0 + 20, { latitude: 0, longitude: 0 })]])
    expect(codes).toEqual([['geofence_enter'], [], []])
    expect(state).toMatchObject({ lastFixTs: T0, inside: ['g-yard'] })
  })

  test('from one geofence into an overlapping one: exits before enters', () => {
    const two = contextOf([
      { id: 'a', name: 'A', area: { type: 'Circle', center: [48.85, 2.35], radius: 200 } },
      { id: 'b', name: 'B', area: { type: 'Circle', center: [48.85, 2.354], radius: 200 } },
    ])
    const { events } = run(two, [[fix(T0, { latitude: 48.85, longitude: 2.349 })], [fix(T0 + 10, { latitude: 48.85, longitude: 2.352 })], [fix(T0 + 20, { latitude: 48.85, longitude: 2.355 })]])
    expect(events.map((e) => [e.alarmCode, e.context.geofence])).toEqual([
      ['geofence_enter', 'a'],
      ['geofence_enter', 'b'],
      ['geofence_exit', 'a'],
    ])
  })

  test('a geofence that no longer applies is forgotten without an exit', () => {
    const { state } = run(yard, [[fix(T0, IN_YARD)]])
    expect(run(contextOf([]), [[fix(T0 + 10, OUTSIDE)]], state)).toMatchObject({ codes: [[]], state: { inside: [] } })
  })
})

describe('derive: overspeed', () => {
  const at = (seconds: number, speed: number | null, where = OUTSIDE) => fix(T0 + seconds, where, { speed })

  test('once, then once more per 5 minutes of continuous overspeed (by fix timestamps); a fix under the limit ends it', () => {
    const device50 = contextOf([], 50)
    const { codes, events } = run(device50, [
      [at(0, 60)],
      [at(60, 70)],
      [at(OVERSPEED_REPEAT_SECONDS - 1, 80)],
      [at(OVERSPEED_REPEAT_SECONDS, 65)],
      [at(OVERSPEED_REPEAT_SECONDS + 30, null)], // no speed: neither continues nor ends it
      [at(OVERSPEED_REPEAT_SECONDS + 60, 50)], // at the limit is not over it
      [at(OVERSPEED_REPEAT_SECONDS + 90, 51)],
    ])
    expect(codes).toEqual([['overspeed'], [], [], ['overspeed'], [], [], ['overspeed']])
    expect(events[0]!.context).toEqual({ limit: 50, speed: 60 })
    expect(events[1]!.context).toEqual({ limit: 50, speed: 65 })
    expect(events[0]!.speed).toBe(60)
  })

  test("a geofence's lower limit applies inside it, named in the context", () => {
    const school = contextOf([{ id: 'school', name: 'School', area: YARD as Area, speedLimit: 30 }], 90)
    const { events } = run(school, [[at(0, 40, IN_YARD)], [at(10, 20, IN_YARD)], [at(20, 100, OUTSIDE)]])
    expect(events.map((e) => [e.alarmCode, e.context])).toEqual([
      ['geofence_enter', { geofence: 'school', name: 'School' }],
      ['overspeed', { limit: 30, speed: 40, geofence: 'school' }],
      ['geofence_exit', { geofence: 'school', name: 'School' }],
      ['overspeed', { limit: 90, speed: 100 }],
    ])
  })

  test('no limit, no overspeed', () => {
    expect(run(contextOf([]), [[at(0, 300)]]).codes).toEqual([[]])
  })
})

describe('derive: ignition and connections', () => {
  const none = contextOf([])
  const ign = (seconds: number, ignition: unknown, valid = true) => fix(T0 + seconds, OUTSIDE, { attributes: { ignition }, valid })

  test('a change of the ignition attribute; the first reading is not a change; an invalid fix is not read', () => {
    const { codes } = run(none, [[ign(0, true)], [ign(10, false)], [ign(20, false)], [ign(30, true, false)], [ign(40, 1)], [fix(T0 + 50, OUTSIDE)], [ign(60, 0)]])
    expect(codes).toEqual([[], ['ignition_off'], [], [], ['ignition_on'], [], ['ignition_off']])
  })

  test('online after offline; offline once; the first connection is not "again"', () => {
    let state = INITIAL_STATE
    const codes: string[][] = []
    for (const [connected, at] of [[true, 0], [true, 5], [false, 10], [false, 15], [true, 20.9]] as const) {
      const derived = deriveFromConnection(state, connected, T0 + at)
      state = derived.state
      codes.push(derived.events.map((e) => `${e.alarmCode}@${e.timestamp - T0}`))
    }
    expect(codes).toEqual([[], [], ['device_offline@10'], [], ['device_online@20']])
  })
})

describe('the entry point, in ingest transactions', () => {
  let world: EngineWorld
  let rules: AlertRules
  let device: number
  let yardId: string

  function dataset() {
    const data = baseDataset()
    data.devices[0]!.properties = { plate: 'AB-123-CD', speed_limit: 50 } as never
    return data
  }

  beforeEach(async () => {
    world = await openWorld(dataset(), { onGeofencesChanged: (account) => rules.geofencesChanged(account) })
    rules = rulesOver(world.stores)
    device = await world.deviceKey(ids.truck1)
    yardId = await addGeofence({ name: 'Yard', area: YARD, speed_limit: 20 })
  })
  afterEach(() => world.close())

  /** the rules over a set of stores, as the server makes them (src/server.ts) */
  const rulesOver = (stores: Stores) => createAlertRules({ states: stores.ruleStates, clock: world.clock, geofences: createGeofenceCache({ reads: stores.geofenceCache, clock: world.clock }) })
  /** one unit of ingest's store over `stores` (on either engine), committed */
  const unitOf = (stores: Stores) => <T>(work: () => T): Promise<T> =>
    stores.ingest.commit(() => work(), { clock: world.clock, touches: () => ({ devices: [device], fixes: [], alarms: [] }) })
  /** a row as SQLite answers it (a bigint as a number) */
  const asSqlite = (row: Record<string, unknown> | undefined) =>
    row ? Object.fromEntries(Object.entries(row).map(([key, value]) => [key, typeof value === 'bigint' || (typeof value === 'string' && /^-?\d+$/.test(value)) ? Number(value) : value])) : null

  async function addGeofence(body: object): Promise<string> {
    const res = await world.call('POST', '/geofences', { token: keys.dana, body })
    expect(res.status).toBe(201)
    return ((await res.json()) as { id: string }).id
  }

  const inTransaction = <T>(work: () => T): Promise<T> => unitOf(world.stores)(work)
  const onFixes = async (...fixes: RuleFix[]) => (await inTransaction(() => rules.onFixes(device, fixes))).map((e) => [e.alarmCode, e.context])
  const stateRow = async () => asSqlite((await world.execute(sql`SELECT * FROM alert_states WHERE device_key = ${device}`))[0])

  test('fixes in and out of a geofence; the device limit and the geofence limit', async () => {
    expect(await onFixes(fix(T0, OUTSIDE))).toEqual([])
    expect(await onFixes(fix(T0 + 10, IN_YARD, { speed: 25 }))).toEqual([
      ['geofence_enter', { geofence: yardId, name: 'Yard' }],
      ['overspeed', { limit: 20, speed: 25, geofence: yardId }],
    ])
    expect(await onFixes(fix(T0 + 20, IN_YARD, { speed: 5 }))).toEqual([])
    expect(await onFixes(fix(T0 + 30, OUTSIDE, { speed: 55 }))).toEqual([
      ['geofence_exit', { geofence: yardId, name: 'Yard' }],
      ['overspeed', { limit: 50, speed: 55 }],
    ])
    expect(await stateRow()).toMatchObject({ last_fix_ts: T0 + 30, inside: '[]', overspeed_since: T0 + 30 })
  })

  test('outside a transaction it refuses, so no state is ever written apart from its events', async () => {
    expect(() => rules.onFixes(device, [fix(T0, IN_YARD)])).toThrow("inside ingest's transaction")
    expect(() => rules.onConnection(device, false, world.clock.now())).toThrow()
    expect(await stateRow()).toBeNull()
  })

  test('a transaction that rolls back forgets the state: the same fix derives the same events again', async () => {
    await expect(
      inTransaction(() => {
        expect(rules.onFixes(device, [fix(T0, IN_YARD)])).toHaveLength(1)
        throw new Error('crash before commit')
      }),
    ).rejects.toThrow('crash before commit')
    expect(await stateRow()).toBeNull()
    expect(await onFixes(fix(T0, IN_YARD))).toEqual([['geofence_enter', { geofence: yardId, name: 'Yard' }]])
    // committed: the re-sent fix derives nothing
    expect(await onFixes(fix(T0, IN_YARD))).toEqual([])
  })

  test("in batches, as ingest calls them: a rolled-back batch is dropped, a committed one is the next batch's start", async () => {
    const codes = (events: { alarmCode: string }[]) => events.map((e) => e.alarmCode)
    /** one ingest transaction: the batch's calls, then committed() only if it did not throw */
    const batch = async <T>(work: (b: ReturnType<AlertRules['beginBatch']>) => T): Promise<T> => {
      // begun inside the unit, as the pipeline does (src/ingest/pipeline.ts)
      let b!: ReturnType<AlertRules['beginBatch']>
      const result = await inTransaction(() => work((b = rules.beginBatch())))
      b.committed()
      return result
    }
    expect(await batch((b) => codes(b.onFixes(device, [fix(T0, OUTSIDE)])))).toEqual([])
    // entering, twice in one batch (two reports of the device): the second report sees the first's state
    expect(await batch((b) => [codes(b.onFixes(device, [fix(T0 + 10, IN_YARD, { speed: 5 })])), codes(b.onFixes(device, [fix(T0 + 20, IN_YARD, { speed: 5 })]))])).toEqual([
      ['geofence_enter'],
      [],
    ])
    // leaving, in a batch that rolls back: nothing of it is kept
    await expect(
      batch((b) => {
        expect(codes(b.onFixes(device, [fix(T0 + 30, OUTSIDE)]))).toEqual(['geofence_exit'])
        throw new Error('crash before commit')
      }),
    ).rejects.toThrow('crash before commit')
    expect(await stateRow()).toMatchObject({ last_fix_ts: T0 + 20, inside: JSON.stringify([yardId]) })
    expect(await batch((b) => codes(b.onFixes(device, [fix(T0 + 30, OUTSIDE)])))).toEqual(['geofence_exit'])
    // a call outside a batch and the batches after it agree
    expect(codes(await inTransaction(() => rules.onFixes(device, [fix(T0 + 40, IN_YARD, { speed: 5 })])))).toEqual(['geofence_enter'])
    expect(await batch((b) => codes(b.onFixes(device, [fix(T0 + 50, OUTSIDE)])))).toEqual(['geofence_exit'])
    expect(await batch((b) => codes(b.onFixes(device, [fix(T0 + 45, IN_YARD)])))).toEqual([])
  })

  test("a device's speed limit changed over the API, or by another process, applies to the next batch", async () => {
    const overspeeds = async (timestamp: number, speed: number) => {
      let b!: ReturnType<AlertRules['beginBatch']>
      const events = await inTransaction(() => (b = rules.beginBatch()).onFixes(device, [fix(timestamp, OUTSIDE, { speed })]))
      b.committed()
      return events.map((e) => e.context)
    }
    expect(await overspeeds(T0, 55)).toEqual([{ limit: 50, speed: 55 }])
    expect(await overspeeds(T0 + 10, 45)).toEqual([])
    const res = await world.call('PATCH', `/devices/${ids.truck1}`, { token: keys.dana, body: { properties: { plate: 'AB-123-CD', speed_limit: 40 } } })
    expect(res.status).toBe(200)
    expect(await overspeeds(T0 + 20, 45)).toEqual([{ limit: 40, speed: 45 }])
    expect(await overspeeds(T0 + 30, 30)).toEqual([])
    await world.executeElsewhere(sql`UPDATE devices SET properties = ${'{"speed_limit":20}'} WHERE key = ${device}`)
    expect(await overspeeds(T0 + 40, 30)).toEqual([{ limit: 20, speed: 30 }])
  })

  test('a geofence added, changed or deleted over the API applies to the next fix', async () => {
    expect(await onFixes(fix(T0, OUTSIDE))).toEqual([])
    const outer = await addGeofence({ name: 'Outer', area: { ...YARD, radius: 5000 } })
    expect(await onFixes(fix(T0 + 10, OUTSIDE))).toEqual([['geofence_enter', { geofence: outer, name: 'Outer' }]])
    const patched = await world.call('PATCH', `/geofences/${outer}`, { token: keys.dana, body: { name: 'Small', area: { ...YARD, radius: 100 } } })
    expect(patched.status).toBe(200)
    expect(await onFixes(fix(T0 + 20, OUTSIDE))).toEqual([['geofence_exit', { geofence: outer, name: 'Small' }]])
    expect((await onFixes(fix(T0 + 30, IN_YARD, { speed: 5 }))).map(([code]) => code)).toEqual(['geofence_enter', 'geofence_enter'])
    expect((await world.call('DELETE', `/geofences/${outer}`, { token: keys.dana })).status).toBe(204)
    expect(await onFixes(fix(T0 + 40, OUTSIDE))).toEqual([['geofence_exit', { geofence: yardId, name: 'Yard' }]])
  })

  test("another process's change is seen within a second: the version row moves", async () => {
    expect(await onFixes(fix(T0, OUTSIDE))).toEqual([])
    // as another process would: straight into the table, no call to this process's cache
    await world.executeElsewhere(
      sql`INSERT INTO geofences (id, account_id, name, area, groups, created_at, updated_at) VALUES (${crypto.randomUUID()}, ${ids.acme}, 'Imported', '{"type":"Circle","center":[48.86,2.35],"radius":100}', '[]', 0, 0)`,
    )
    expect(await onFixes(fix(T0 + 10, OUTSIDE))).toEqual([])
    world.clock.advance(1000)
    expect((await onFixes(fix(T0 + 20, OUTSIDE))).map(([code, context]) => [code, (context as { name: string }).name])).toEqual([['geofence_enter', 'Imported']])
  })

  test('a geofence of other groups does not apply; one of its groups does', async () => {
    const vans = await addGeofence({ name: 'Vans only', area: { ...YARD, radius: 5000 }, groups: [ids.vans] })
    const trucks = await addGeofence({ name: 'Trucks only', area: { ...YARD, radius: 5000 }, groups: [ids.vans, ids.trucks] })
    expect(await onFixes(fix(T0, OUTSIDE))).toEqual([['geofence_enter', { geofence: trucks, name: 'Trucks only' }]])
    expect(vans).not.toBe(trucks)
  })

  test('ignition from fixes and from status reports; connections', async () => {
    expect(await onFixes(fix(T0, OUTSIDE, { attributes: { ignition: false } }))).toEqual([])
    expect((await inTransaction(() => rules.onAttributes(device, { ignition: true }, T0 + 5))).map((e) => [e.alarmCode, e.timestamp, e.latitude])).toEqual([['ignition_on', T0 + 5, null]])
    expect(await inTransaction(() => rules.onAttributes(device, { ignition: false }, T0 + 1))).toEqual([])
    expect(await onFixes(fix(T0 + 10, OUTSIDE, { attributes: { ignition: false } }))).toEqual([['ignition_off', {}]])
    const at = world.clock.now()
    expect(await inTransaction(() => rules.onConnection(device, true, at))).toEqual([])
    expect((await inTransaction(() => rules.onConnection(device, false, at + 1500))).map((e) => [e.alarmCode, e.timestamp])).toEqual([['device_offline', Math.floor((at + 1500) / 1000)]])
    expect(await inTransaction(() => rules.onConnection(device, false, at + 2000))).toEqual([])
    expect((await inTransaction(() => rules.onConnection(device, true, at + 9000))).map((e) => e.alarmCode)).toEqual(['device_online'])
  })

  test('the state is kept across a reopened database', async () => {
    expect((await onFixes(fix(T0, IN_YARD, { speed: 30, attributes: { ignition: true } }))).map(([code]) => code)).toEqual(['geofence_enter', 'overspeed'])
    await inTransaction(() => rules.onConnection(device, false, world.clock.now()))

    // another process's stores over the same database, on a connection of their own (closed with the world)
    const database = await world.otherStores()
    {
      const reopened = rulesOver(database)
      const call = unitOf(database)
      // still inside, still over the limit (under 5 minutes), ignition still on, still offline
      expect(await call(() => reopened.onFixes(device, [fix(T0 + 60, IN_YARD, { speed: 30, attributes: { ignition: true } })]))).toEqual([])
      expect(await call(() => reopened.onFixes(device, [fix(T0 + 30, OUTSIDE)]))).toEqual([])
      expect((await call(() => reopened.onConnection(device, true, world.clock.now()))).map((e) => e.alarmCode)).toEqual(['device_online'])
      expect((await call(() => reopened.onFixes(device, [fix(T0 + 90, OUTSIDE, { attributes: { ignition: false } })]))).map((e) => e.alarmCode)).toEqual([
        'geofence_exit',
        'ignition_off',
      ])
    }
  })

  test('a deleted device takes its state with it; an unknown device derives nothing', async () => {
    await onFixes(fix(T0, IN_YARD))
    expect(await inTransaction(() => rules.onFixes(999_999, [fix(T0, IN_YARD)]))).toEqual([])
    await world.execute(sql`DELETE FROM devices WHERE key = ${device}`)
    expect(await stateRow()).toBeNull()
  })
})
