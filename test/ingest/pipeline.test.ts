import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { type SQL, sql } from 'drizzle-orm'
import { manualClock } from '../../src/clock'
import { LivePositions, type LiveFix } from '../../src/ingest/live'
import {
  createIngestPipeline,
  MaskedUnknownDevice,
  PipelineStopped,
  UnknownDevice,
  type IngestPipeline,
  type PipelineOptions,
} from '../../src/ingest/pipeline'
import { createLogger } from '../../src/log'
import { FLAG_UNLOCATABLE } from '../../src/store/positions'
import { type EngineWorld, testEngine } from '../support/world'
import {
  DEVICES,
  deviceRow as fleetDeviceRow,
  event,
  firstRow as fleetFirstRow,
  fix,
  openFleet,
  positionCount as fleetPositionCount,
  rows as fleetRows,
} from './fleet'

const START = Date.UTC(2026, 10, 25, 12, 0, 0)
const T = START / 1000

// the fleet's world on the run's engine (TRACKER_TEST_ENGINE)
let db: EngineWorld
let clock: ReturnType<typeof manualClock>
let live: LivePositions
let logLines: string[]
let pipeline: IngestPipeline

function build(options: Partial<PipelineOptions> = {}) {
  return createIngestPipeline({
    stores: db.stores,
    clock,
    log: createLogger('debug', (line) => logLines.push(line)),
    live,
    offlineAfterSeconds: 600,
    sweepIntervalMs: 0,
    ...options,
  })
}

// the shared readers (./fleet), over this test's world
const rows = <Row = Record<string, unknown>>(query: SQL) => fleetRows<Row>(db, query)
const firstRow = <Row = Record<string, unknown>>(query: SQL) => fleetFirstRow<Row>(db, query)
const deviceRow = (id: string) => fleetDeviceRow(db, id)
const positionCount = (deviceId?: string) => fleetPositionCount(db, deviceId)
/** flush, and wait for its commit (on PostgreSQL a commit is round trips away) */
async function flushed() {
  pipeline.flush()
  await pipeline.afterCommit()
}

beforeEach(async () => {
  db = await openFleet()
  clock = manualClock(START)
  live = new LivePositions()
  logLines = []
  pipeline = build()
})

afterEach(async () => {
  await pipeline.stop()
  await db.close()
})

describe('device lookup', () => {
  test('finds a device by IMEI and by serial', async () => {
    const byImei = await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T - 10)], events: [] })
    const bySerial = await pipeline.ingest({ uniqueId: DEVICES.fresh.serial, fixes: [fix(T - 5)], events: [] })
    expect(byImei.device.id).toBe(DEVICES.fresh.id)
    expect(bySerial.device.id).toBe(DEVICES.fresh.id)
    expect(await positionCount(DEVICES.fresh.id)).toBe(2)
  })

  test('an unknown device is refused, and logged at most once a minute', async () => {
    for (let i = 0; i < 3; i++) {
      await expect(pipeline.ingest({ uniqueId: '000000000000001', fixes: [fix(T)], events: [] })).rejects.toBeInstanceOf(UnknownDevice)
    }
    const refusals = () => logLines.filter((l) => l.includes('device refused')).length
    expect(refusals()).toBe(1)
    clock.advance(61_000)
    await expect(pipeline.ingest({ uniqueId: '000000000000001', fixes: [], events: [] })).rejects.toThrow(UnknownDevice)
    expect(refusals()).toBe(2)
    expect(await positionCount()).toBe(0)
  })

  test('what unknown identifiers are told is rationed per source; a known device is never refused for its source', async () => {
    await pipeline.stop()
    pipeline = build({ unknownIdentifiers: { perSource: 2, windowMs: 60_000 } })
    const from = (source: string, uniqueId: string) => pipeline.ingest({ uniqueId, fixes: [], events: [] }, { source })
    await expect(from('10.0.0.1', 'guess-1')).rejects.toBeInstanceOf(UnknownDevice)
    await expect(from('10.0.0.1', 'guess-2')).rejects.toBeInstanceOf(UnknownDevice)
    // past the ration: a known identifier is served, a further unknown one masked
    expect((await from('10.0.0.1', DEVICES.fresh.imei)).device.id).toBe(DEVICES.fresh.id)
    await expect(from('10.0.0.1', 'guess-3')).rejects.toBeInstanceOf(MaskedUnknownDevice)
    // one already told is told again (a misconfigured device retrying)
    await expect(from('10.0.0.1', 'guess-1')).rejects.toBeInstanceOf(UnknownDevice)
    // an IPv4-mapped IPv6 address is the same source
    await expect(from('::ffff:10.0.0.1', 'guess-4')).rejects.toBeInstanceOf(MaskedUnknownDevice)
    expect((await from('::ffff:10.0.0.1', DEVICES.parked.imei)).device.id).toBe(DEVICES.parked.id)
    await expect(from('10.0.0.2', 'guess-3')).rejects.toBeInstanceOf(UnknownDevice)
    // without an origin (a report inside a session) there is nothing to mask
    await expect(pipeline.ingest({ uniqueId: 'guess-5', fixes: [], events: [] })).rejects.toBeInstanceOf(UnknownDevice)
    // one IPv6 /64 is one source
    await expect(from('2001:db8:1:2::a', 'guess-1')).rejects.toBeInstanceOf(UnknownDevice)
    await expect(from('2001:db8:1:2:ffff::b', 'guess-2')).rejects.toBeInstanceOf(UnknownDevice)
    await expect(from('2001:0db8:0001:0002:0:0:0:c', 'guess-3')).rejects.toBeInstanceOf(MaskedUnknownDevice)
    expect((await from('2001:0db8:0001:0002:0:0:0:c', DEVICES.fresh.serial)).device.id).toBe(DEVICES.fresh.id)
    await expect(from('2001:db8:1:3::a', 'guess-3')).rejects.toBeInstanceOf(UnknownDevice)
    // a new window tells again
    clock.advance(60_000)
    await expect(from('10.0.0.1', 'guess-3')).rejects.toBeInstanceOf(UnknownDevice)
    expect(await positionCount()).toBe(0)
  })

  test('a masked identifier stores nothing and is answered only after the commit a known one waits for', async () => {
    await pipeline.stop()
    pipeline = build({ unknownIdentifiers: { perSource: 0, windowMs: 60_000 } })
    const order: string[] = []
    const known = pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T - 1)], events: [] }, { source: '10.0.0.1' }).then(() => order.push('known'))
    const masked = pipeline.ingest({ uniqueId: 'guess-1', fixes: [fix(T - 1)], events: [event(T - 1, 'sos')] }, { source: '10.0.0.1' }).catch((error) => order.push(error.name))
    // nothing is settled before the batch commits
    await Promise.resolve()
    expect(order).toEqual([])
    await Promise.all([known, masked])
    expect(order).toEqual(['known', 'MaskedUnknownDevice'])
    await pipeline.discard({ source: '10.0.0.1' })
    expect(await positionCount()).toBe(1)
    expect(await db.count('events')).toBe(0)
  })

  test('an empty identifier never matches a device without an IMEI', async () => {
    await expect(pipeline.ingest({ uniqueId: '', fixes: [fix(T)], events: [] })).rejects.toBeInstanceOf(UnknownDevice)
  })

  test("an unlink device's data is refused", async () => {
    await expect(pipeline.ingest({ uniqueId: DEVICES.unlinked.imei, fixes: [fix(T)], events: [] })).rejects.toBeInstanceOf(UnknownDevice)
    expect(await positionCount()).toBe(0)
    expect(logLines.some((l) => l.includes('"reason":"unlink"'))).toBe(true)
  })

  test('devices changed by another process (an import) are seen within a second', async () => {
    await pipeline.ingest({ uniqueId: DEVICES.parked.imei, fixes: [fix(T - 60)], events: [] })
    await expect(pipeline.ingest({ uniqueId: '359710049099999', fixes: [fix(T)], events: [] })).rejects.toBeInstanceOf(UnknownDevice)
    {
      // another process's writes (on PostgreSQL: another session, heard by this node)
      await db.executeElsewhere(sql`UPDATE devices SET state = 'unlink' WHERE id = ${DEVICES.parked.id}`)
      await db.executeElsewhere(sql`UPDATE devices SET imei = '359710049099999' WHERE id = ${DEVICES.fresh.id}`)
      // within the second the cached lookups still answer
      await pipeline.ingest({ uniqueId: DEVICES.parked.imei, fixes: [fix(T - 30)], events: [] })
      clock.advance(1000)
      await expect(pipeline.ingest({ uniqueId: DEVICES.parked.imei, fixes: [fix(T)], events: [] })).rejects.toBeInstanceOf(UnknownDevice)
      await pipeline.ingest({ uniqueId: '359710049099999', fixes: [fix(T)], events: [] })
      expect(await positionCount(DEVICES.fresh.id)).toBe(1)
      // moving state changes made by the pipeline itself do not empty the cache: no version bump
      const version = async () => (await firstRow<{ version: number }>(sql`SELECT version FROM access_version WHERE id = 2`))!.version
      const before = await version()
      await pipeline.ingest({ uniqueId: '359710049099999', fixes: [fix(T + 1, { speed: 50 })], events: [] })
      expect(await version()).toBe(before)
      await db.executeElsewhere(sql`UPDATE devices SET state = 'stopped' WHERE id = ${DEVICES.parked.id}`)
      clock.advance(1000)
      await pipeline.ingest({ uniqueId: DEVICES.parked.imei, fixes: [fix(T)], events: [] })
      expect(await positionCount(DEVICES.parked.id)).toBe(3)
    }
  })
})

describe('fixes', () => {
  test('are stored in compact units', async () => {
    await pipeline.ingest({
      uniqueId: DEVICES.fresh.imei,
      fixes: [fix(T - 1, { latitude: 52.6291513, longitude: -8.6617468, speed: 42.57, course: 181.4, altitude: 19.6, satellites: 11, attributes: { ignition: true } })],
      events: [],
    })
    const row = (await firstRow(sql`SELECT * FROM positions`))!
    expect(row).toMatchObject({ ts: T - 1, lat: 526291513, lon: -86617468, speed: 426, course: 181, altitude: 20, satellites: 11, flags: 0 })
    expect(JSON.parse(row.attributes as string)).toEqual({ ignition: true })
  })

  test('a repeated (device, timestamp) adds no row', async () => {
    const first = await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T - 2), fix(T - 1)], events: [] })
    const again = await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T - 2, { latitude: 1 }), fix(T - 1), fix(T)], events: [] })
    expect(first).toMatchObject({ stored: 2, duplicates: 0 })
    expect(again).toMatchObject({ stored: 1, duplicates: 2 })
    expect(await positionCount()).toBe(3)
    // the first one stays
    expect((await firstRow<{ lat: number }>(sql`SELECT lat FROM positions WHERE ts = ${T - 2}`))!.lat).toBe(526291510)
  })

  test('invalid fixes and 0/0 are stored but flagged, and move nothing', async () => {
    const result = await pipeline.ingest({
      uniqueId: DEVICES.fresh.imei,
      fixes: [fix(T - 2, { valid: false, latitude: 10, longitude: 10 }), fix(T - 1, { latitude: 0, longitude: 0 })],
      events: [],
    })
    expect(result.stored).toBe(2)
    const flags = await rows<{ flags: number }>(sql`SELECT flags FROM positions ORDER BY ts`)
    expect(flags.map((r) => r.flags & FLAG_UNLOCATABLE)).toEqual([1, 1])
    const device = await deviceRow(DEVICES.fresh.id)
    expect(device.state).toBe('new')
    expect(device.latitude).toBeNull()
    expect(device.connected).toBe(1)
    expect(live.get(device.key)).toBeUndefined()
  })

  test('impossible fixes are refused: out of range, not finite, more than a day ahead', async () => {
    const result = await pipeline.ingest({
      uniqueId: DEVICES.fresh.imei,
      fixes: [
        fix(T, { latitude: 90.5 }),
        fix(T + 1, { longitude: -181 }),
        fix(T + 2, { latitude: Number.NaN }),
        fix(T + 86_400 + 1),
        fix(T + 86_400 - 1),
        fix(-5),
      ],
      events: [event(T + 2 * 86_400, 'sos')],
    })
    expect(result).toMatchObject({ stored: 1, rejected: 5, events: 0 })
    expect(await rows(sql`SELECT ts FROM positions`)).toEqual([{ ts: T + 86_400 - 1 }])
  })

  test('fixes and events older than MAX_FIX_AGE_DAYS (365 by default) are refused: a clock reset to 1970 stores nothing', async () => {
    const result = await pipeline.ingest({
      uniqueId: DEVICES.fresh.imei,
      fixes: [fix(0), fix(T - 365 * 86_400 - 1), fix(T - 365 * 86_400)],
      events: [event(0, 'sos'), event(T - 10, 'sos')],
    })
    expect(result).toMatchObject({ stored: 1, rejected: 2, events: 1 })
    expect(await rows(sql`SELECT ts FROM positions`)).toEqual([{ ts: T - 365 * 86_400 }])
    expect(await rows(sql`SELECT ts FROM events`)).toEqual([{ ts: T - 10 }])
  })
})

describe('device state', () => {
  test('new becomes moving on a fast first fix, then stopped, with location and connection times', async () => {
    await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T - 10, { speed: 50, latitude: 52.1, longitude: -8.1 })], events: [] })
    let device = await deviceRow(DEVICES.fresh.id)
    expect(device).toMatchObject({ state: 'moving', latitude: 52.1, longitude: -8.1, connected: 1, connected_at: START, updated_at: START })
    clock.advance(5000)
    await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T - 5, { speed: 2, latitude: 52.2, longitude: -8.2 })], events: [] })
    device = await deviceRow(DEVICES.fresh.id)
    // connected_at is the start of the connection, not the last report
    expect(device).toMatchObject({ state: 'stopped', latitude: 52.2, longitude: -8.2, connected_at: START, updated_at: START + 5000 })
  })

  test('at most MOVING_SPEED_KMH is stopped; a slow first fix makes a new device stopped', async () => {
    await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T, { speed: 3 })], events: [] })
    expect((await deviceRow(DEVICES.fresh.id)).state).toBe('stopped')
  })

  test('without a speed, the state comes from the distance to the previous fix', async () => {
    // 0.001° of latitude is 111 m: in 10 s that is 40 km/h
    await pipeline.ingest({ uniqueId: DEVICES.phone.serial, fixes: [fix(T - 20, { speed: null, latitude: 52 })], events: [] })
    expect((await deviceRow(DEVICES.phone.id)).state).toBe('stopped')
    await pipeline.ingest({ uniqueId: DEVICES.phone.serial, fixes: [fix(T - 10, { speed: null, latitude: 52.001 })], events: [] })
    expect((await deviceRow(DEVICES.phone.id)).state).toBe('moving')
  })

  test('an older re-sent fix is stored but does not move the device back', async () => {
    await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T, { speed: 0, latitude: 51 })], events: [] })
    await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T - 100, { speed: 80, latitude: 50 })], events: [] })
    const device = await deviceRow(DEVICES.fresh.id)
    expect(device).toMatchObject({ state: 'stopped', latitude: 51 })
    expect(live.get(device.key)!.latitude).toBe(51)
    expect(await positionCount()).toBe(2)
  })

  test('within one batch the newest fix decides', async () => {
    const fixes = [fix(T - 1, { speed: 0, latitude: 3 }), fix(T - 3, { speed: 60, latitude: 1 }), fix(T - 2, { speed: 60, latitude: 2 })]
    await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes, events: [] })
    expect(await deviceRow(DEVICES.fresh.id)).toMatchObject({ state: 'stopped', latitude: 3 })
  })

  test('suspended, unlink and stolen are never changed', async () => {
    await pipeline.ingest({ uniqueId: DEVICES.suspended.imei, fixes: [fix(T, { speed: 90 })], events: [] })
    await pipeline.ingest({ uniqueId: DEVICES.stolen.imei, fixes: [fix(T, { speed: 90, latitude: 48 })], events: [] })
    expect(await deviceRow(DEVICES.suspended.id)).toMatchObject({ state: 'suspended', connected: 1 })
    // a stolen vehicle's location is exactly what one wants to follow
    expect(await deviceRow(DEVICES.stolen.id)).toMatchObject({ state: 'stolen', latitude: 48 })
    const session = await pipeline.openSession(DEVICES.stolen.imei)
    session.close()
    await flushed()
    expect(await deviceRow(DEVICES.stolen.id)).toMatchObject({ state: 'stolen', connected: 0 })
    // even when set behind the pipeline's cached lookup
    await db.execute(sql`UPDATE devices SET state = 'suspended' WHERE id = ${DEVICES.parked.id}`)
    await pipeline.ingest({ uniqueId: DEVICES.parked.imei, fixes: [fix(T, { speed: 90 })], events: [] })
    expect((await deviceRow(DEVICES.parked.id)).state).toBe('suspended')
  })

  test('closing the last TCP session disconnects: off, disconnected_at', async () => {
    const first = await pipeline.openSession(DEVICES.parked.imei)
    expect(await deviceRow(DEVICES.parked.id)).toMatchObject({ connected: 1, connected_at: START })
    const second = await pipeline.openSession(DEVICES.parked.imei)
    await pipeline.ingest({ uniqueId: DEVICES.parked.imei, fixes: [fix(T, { speed: 30 })], events: [] })
    clock.advance(1000)
    first.close()
    await flushed()
    expect(await deviceRow(DEVICES.parked.id)).toMatchObject({ connected: 1, state: 'moving' })
    second.close()
    second.close()
    await flushed()
    expect(await deviceRow(DEVICES.parked.id)).toMatchObject({ connected: 0, state: 'off', disconnected_at: START + 1000 })
    // reconnecting sets a new connected_at; the state waits for a fix
    clock.advance(1000)
    const third = await pipeline.openSession(DEVICES.parked.imei)
    expect(await deviceRow(DEVICES.parked.id)).toMatchObject({ connected: 1, state: 'off', connected_at: START + 2000 })
    await pipeline.ingest({ uniqueId: DEVICES.parked.imei, fixes: [fix(T + 2, { speed: 0 })], events: [] })
    expect((await deviceRow(DEVICES.parked.id)).state).toBe('stopped')
    third.close()
  })

  test('a device that never sent a fix stays new when it disconnects', async () => {
    const session = await pipeline.openSession(DEVICES.fresh.imei)
    session.close()
    await flushed()
    expect(await deviceRow(DEVICES.fresh.id)).toMatchObject({ state: 'new', connected: 0 })
  })
})

describe('offline sweep', () => {
  test('a device quiet for OFFLINE_AFTER becomes disconnected, on the injected clock', async () => {
    await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T, { speed: 20 })], events: [] })
    await pipeline.ingest({ uniqueId: DEVICES.parked.imei, fixes: [fix(T, { speed: 0 })], events: [] })
    clock.advance(300_000)
    await pipeline.ingest({ uniqueId: DEVICES.parked.imei, fixes: [], events: [] }) // keep-alive
    clock.advance(299_000)
    expect(pipeline.sweep()).toBe(0)
    clock.advance(1000)
    expect(pipeline.sweep()).toBe(1)
    await pipeline.afterCommit()
    expect(await deviceRow(DEVICES.fresh.id)).toMatchObject({ connected: 0, state: 'off', disconnected_at: START + 600_000 })
    expect(await deviceRow(DEVICES.parked.id)).toMatchObject({ connected: 1, state: 'stopped' })
    clock.advance(300_000)
    expect(pipeline.sweep()).toBe(1)
    await pipeline.afterCommit()
    expect(await deviceRow(DEVICES.parked.id)).toMatchObject({ connected: 0, state: 'off' })
    expect(pipeline.sweep()).toBe(0)
  })

  test('devices left connected by a previous run are swept after OFFLINE_AFTER', async () => {
    await db.execute(sql`UPDATE devices SET connected = true, state = 'moving', updated_at = ${START - 500_000} WHERE id = ${DEVICES.parked.id}`)
    await pipeline.stop()
    pipeline = build()
    // the new pipeline reads the devices left connected as it starts (on PostgreSQL a round trip):
    // a commit, several round trips issued after it, is done once it has
    await pipeline.afterCommit()
    expect(pipeline.sweep()).toBe(0)
    clock.advance(100_000)
    expect(pipeline.sweep()).toBe(1)
    await pipeline.afterCommit()
    expect(await deviceRow(DEVICES.parked.id)).toMatchObject({ connected: 0, state: 'off' })
  })

  test('the stored sweep disconnects a device the database holds connected and quiet, unless this process holds its session or heard it lately', async () => {
    // connected in the database, by another node that died: quiet for 500 s (OFFLINE_AFTER is 600)
    for (const id of [DEVICES.parked.id, DEVICES.fresh.id]) {
      await db.execute(sql`UPDATE devices SET connected = true, state = 'moving', updated_at = ${START - 500_000} WHERE id = ${id}`)
    }
    expect(await pipeline.sweepStored()).toBe(0)
    clock.advance(100_000)
    // the fresh one just reported here, over a session it still holds
    const session = await pipeline.openSession(DEVICES.fresh.imei)
    await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(clock.now() / 1000 - 1)], events: [] })
    expect(await pipeline.sweepStored()).toBe(1)
    await pipeline.afterCommit()
    expect(await deviceRow(DEVICES.parked.id)).toMatchObject({ connected: 0, state: 'off' })
    expect(await deviceRow(DEVICES.fresh.id)).toMatchObject({ connected: 1 })
    session.close()
  })
})

describe('events', () => {
  test('go to the events table; a re-sent event is one row', async () => {
    const report = { uniqueId: DEVICES.parked.imei, fixes: [], events: [event(T - 5, 'sos', { context: { alarm_byte: 1 }, speed: 12.6 }), event(T - 5, 'power_cut', { latitude: 0, longitude: 0 })] }
    expect((await pipeline.ingest(report)).events).toBe(2)
    expect((await pipeline.ingest(report)).events).toBe(0)
    expect(await rows(sql`SELECT alarm_code, context, speed, latitude, mcc, dbm FROM events ORDER BY alarm_code`)).toEqual([
      { alarm_code: 'power_cut', context: '{}', speed: 0, latitude: null, mcc: 272, dbm: -80 },
      { alarm_code: 'sos', context: '{"alarm_byte":1}', speed: 13, latitude: 52.6, mcc: 272, dbm: -80 },
    ])
  })

  test('a code the product does not list, whatever the decoder, is stored as `alarm` with the raw code in its context', async () => {
    const events = [
      event(T - 9, 'alarm_0x1f', { context: { alarm_byte: 0x1f } }),
      // a decoder that named the raw code itself keeps its naming
      event(T - 8, 'fuel_theft', { context: { raw_alarm: 'fuelTheft' } }),
      // the server's own codes cannot come from a device
      event(T - 7, 'device_offline'),
      event(T - 6, 'command_answered'),
      event(T - 5, 'x'.repeat(200)),
      event(T - 4, 'sos'),
    ]
    const published: string[] = []
    live.subscribeAlarms((alarm) => published.push(alarm.alarmCode))
    expect((await pipeline.ingest({ uniqueId: DEVICES.parked.imei, fixes: [], events })).events).toBe(6)
    const stored = await rows<{ alarm_code: string; context: string }>(sql`SELECT alarm_code, context FROM events ORDER BY ts`)
    expect(stored.map((row) => ({ code: row.alarm_code, context: JSON.parse(row.context) }))).toEqual([
      { code: 'alarm', context: { alarm_byte: 0x1f, raw_alarm: 'alarm_0x1f' } },
      { code: 'alarm', context: { raw_alarm: 'fuelTheft' } },
      { code: 'alarm', context: { raw_alarm: 'device_offline' } },
      { code: 'alarm', context: { raw_alarm: 'command_answered' } },
      { code: 'alarm', context: { raw_alarm: 'x'.repeat(64) } },
      { code: 'sos', context: {} },
    ])
    // live streams hear the stored code
    expect(published).toEqual(['alarm', 'alarm', 'alarm', 'alarm', 'alarm', 'sos'])
  })

  test('two different unknown alarms in one second are both kept as `alarm`; each re-sent is still one row', async () => {
    const report = { uniqueId: DEVICES.parked.imei, fixes: [], events: [event(T - 3, 'fuelTheft'), event(T - 3, 'doorOpenedWhileParked'), event(T - 3, 'sos')] }
    expect((await pipeline.ingest(report)).events).toBe(3)
    expect((await pipeline.ingest(report)).events).toBe(0)
    const stored = await rows<{ alarm_code: string; context: string }>(sql`SELECT alarm_code, context FROM events ORDER BY alarm_code, context`)
    expect(stored.map((row) => ({ code: row.alarm_code, context: JSON.parse(row.context) }))).toEqual([
      { code: 'alarm', context: { raw_alarm: 'doorOpenedWhileParked' } },
      { code: 'alarm', context: { raw_alarm: 'fuelTheft' } },
      { code: 'sos', context: {} },
    ])
  })
})

describe('group commit', () => {
  test('many reports share one transaction, and each promise resolves after the commit', async () => {
    // read on another connection (SQLite: the world's own, which the pipeline's store shares, sees only what is
    // committed; PostgreSQL: a connection of the world's pool, read committed)
    const visible = () => db.count('positions')
    const pending = Array.from({ length: 20 }, (_, i) => pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T - 100 + i)], events: [] }))
    // what another connection sees at the moment each caller is told "committed"
    const seenAtResolve: Promise<number>[] = []
    pending.forEach((p) => p.then(() => seenAtResolve.push(visible())))
    // queued, not committed, not acknowledged (the read is sent before the batch's flush, a turn of the event loop away)
    const beforeCommit = visible()
    expect(await beforeCommit).toBe(0)
    await Promise.all(pending)
    await Bun.sleep(0)
    expect(await Promise.all(seenAtResolve)).toEqual(Array(20).fill(20))
    expect(pipeline.stats.batches).toBe(1)
  })

  test('a full batch flushes at once, without waiting for the timer', async () => {
    await pipeline.stop()
    pipeline = build({ maxBatchFixes: 10, maxBatchDelayMs: 60_000 })
    const fixes = Array.from({ length: 12 }, (_, i) => fix(T - 100 + i))
    const result = await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes, events: [] })
    expect(result.stored).toBe(12)
  })

  test('a failed commit rejects every report in it, and nothing is acknowledged', async () => {
    // the same failing trigger in each engine's dialect
    if (testEngine === 'sqlite') await db.execute(sql`CREATE TRIGGER fail BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'disk full'); END`)
    else {
      await db.execute(sql`CREATE FUNCTION fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$`)
      await db.execute(sql`CREATE TRIGGER fail BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION fail()`)
    }
    // both devices known to the pipeline first (a lookup is a round trip on PostgreSQL): the two reports join one batch
    await pipeline.identify(DEVICES.fresh.imei)
    await pipeline.identify(DEVICES.parked.imei)
    const good = pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T)], events: [] })
    const bad = pipeline.ingest({ uniqueId: DEVICES.parked.imei, fixes: [fix(T)], events: [event(T, 'sos')] })
    const [goodOutcome, badOutcome] = await Promise.allSettled([good, bad])
    expect(goodOutcome).toMatchObject({ status: 'rejected', reason: { message: 'disk full' } })
    expect(badOutcome).toMatchObject({ status: 'rejected', reason: { message: 'disk full' } })
    expect(await positionCount()).toBe(0)
    expect((await deviceRow(DEVICES.fresh.id)).connected).toBe(0)
    await db.execute(testEngine === 'sqlite' ? sql`DROP TRIGGER fail` : sql`DROP TRIGGER fail ON events`)
    await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T)], events: [] })
    expect(await positionCount()).toBe(1)
  })

  test('committed fixes are published to live positions, in commit order', async () => {
    const seen: LiveFix[] = []
    live.subscribe((f) => seen.push(f))
    const result = await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T - 1, { speed: 36 }), fix(T, { speed: 40, course: 10 })], events: [] })
    expect(seen.map((f) => f.timestamp)).toEqual([T - 1, T])
    expect(live.get(result.device.key)).toEqual({ deviceKey: result.device.key, timestamp: T, latitude: 52.629151, longitude: -8.661746, speed: 40, course: 10 })
    // a duplicate is not news
    await pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T)], events: [] })
    expect(seen.length).toBe(2)
  })

  test('a live subscriber that throws breaks neither the commit nor the next report', async () => {
    live.subscribe(() => {
      throw new Error('subscriber bug')
    })
    await expect(pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T - 1)], events: [] })).resolves.toMatchObject({ stored: 1 })
    await expect(pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T)], events: [] })).resolves.toMatchObject({ stored: 1 })
    expect(logLines.some((l) => l.includes('subscriber failed'))).toBe(true)
  })

  test('a report that is not data (attributes JSON cannot hold) is rejected, not thrown', async () => {
    const bad = fix(T, { attributes: { odometer: 10n } })
    const outcome = pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [bad], events: [] })
    await expect(outcome).rejects.toThrow()
    expect(await positionCount()).toBe(0)
  })

  test('stop flushes what is queued, then refuses', async () => {
    const pending = pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T)], events: [] })
    await pipeline.stop()
    await expect(pending).resolves.toMatchObject({ stored: 1 })
    await expect(pipeline.ingest({ uniqueId: DEVICES.fresh.imei, fixes: [fix(T + 1)], events: [] })).rejects.toBeInstanceOf(PipelineStopped)
  })
})
