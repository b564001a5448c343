/**
 * Ingest's group commit on both engines: the same writer (what the pipeline does in a batch:
 * fixes with an in-batch and a stored duplicate, a device's own alarm and its re-send, derived
 * events sharing a second, the device row, status merged key by key, rule state, outbox rows
 * for an account channel and a member's own alerts) committed through src/store/ingest.ts and
 * src/store/postgres/ingest.ts leaves the same rows and answers the same.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { manualClock } from '../../../src/clock'
import { beginOutboxBatch } from '../../../src/alerts/outbox'
import { encodeEvent } from '../../../src/store/events'
import { createRuleStateStore, type RuleStateStore } from '../../../src/store/geofences'
import { createIngestStore, type IngestStore, type IngestTouches, type IngestUnit } from '../../../src/store/ingest'
import { createPostgresIngestStore } from '../../../src/store/postgres/ingest'
import { encodePosition } from '../../../src/store/positions'
import { engines, type Opened } from './support'

const T = Date.UTC(2026, 10, 25, 12) / 1000
const SEED = [
  `INSERT INTO accounts (id, name) VALUES ('acc', 'A')`,
  `INSERT INTO models (id, name, protocol) VALUES ('m-gt06', 'GT06', 'gt06')`,
  `INSERT INTO groups (id, account_id, name) VALUES ('g1', 'acc', 'G1'), ('g2', 'acc', 'G2')`,
  `INSERT INTO users (id, account_id, name, role) VALUES ('bob', 'acc', 'bob', 'member')`,
  `INSERT INTO user_groups (user_id, group_id) VALUES ('bob', 'g1')`,
  `INSERT INTO devices (key, id, account_id, alias, serial, imei) VALUES (1, 'dev-a', 'acc', 'A', 'SA', '1001'), (2, 'dev-b', 'acc', 'B', 'SB', '1002')`,
  `INSERT INTO device_groups (group_id, device_key) VALUES ('g1', 1), ('g2', 2)`,
  `INSERT INTO notifications (id, account_id, name, events, groups, positions, channel_type, url, created_at, updated_at) VALUES
    ('hook', 'acc', 'Hook', '["sos","ignition_on"]', '[]', false, 'webhook', 'http://127.0.0.1:1/', 0, 0),
    ('fixes', 'acc', 'Fixes', '[]', '["g2"]', true, 'webhook', 'http://127.0.0.1:1/', 0, 0)`,
  `INSERT INTO notifications (id, account_id, name, events, groups, positions, channel_type, url, created_at, updated_at, user_id) VALUES
    ('bob-mail', 'acc', 'Bob', '["*"]', '[]', false, 'email', 'mailto:bob@example.com', 0, 0, 'bob')`,
]

const fixAt = (ts: number, latitude = 48.85, speed = 30) => encodePosition({ timestamp: ts, latitude, longitude: 2.35, speed, course: 90, satellites: 7, attributes: { io: ts % 7 } }, true)
const sos = encodeEvent({ timestamp: T + 2, alarmCode: 'sos', latitude: 48.85, longitude: 2.35, speed: 30, context: { source: 'device' } } as never, true)
const derived = (code: string, ts: number) => encodeEvent({ timestamp: ts, alarmCode: code, latitude: null, longitude: null, context: { derived: true } } as never, false)

interface Engine {
  store: IngestStore
  rules: RuleStateStore
  rows(sql: string): Promise<Record<string, unknown>[]>
}

async function engineOf(opened: Opened): Promise<Engine> {
  if (opened.engine === 'sqlite') {
    const { sqlite } = opened.handle
    sqlite.run('PRAGMA foreign_keys = OFF')
    for (const statement of SEED) sqlite.run(statement.replace(/\bfalse\b/g, '0'))
    sqlite.run('PRAGMA foreign_keys = ON')
    return { store: createIngestStore(opened.handle), rules: createRuleStateStore(opened.handle), rows: async (sql) => sqlite.query(sql).all() as Record<string, unknown>[] }
  }
  const { sql } = opened.handle
  for (const statement of SEED) await sql.unsafe(statement)
  const store = createPostgresIngestStore(opened.handle)
  return {
    store,
    rules: store.ruleStates(),
    rows: async (text) => [...(await sql.unsafe(text))].map((row) => normalize(row as Record<string, unknown>)),
  }
}

/** PostgreSQL's booleans as SQLite's 0/1, so rows compare as they are */
function normalize(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'boolean' ? Number(v) : v]))
}

/** Batch 1: new fixes (one repeated in the batch), an alarm, two derived events in one second, rule state, status, outbox. */
function firstBatch(rules: RuleStateStore) {
  return (unit: IngestUnit) => {
    const outbox = unit.inTransaction(beginOutboxBatch)
    const newestBefore = unit.newestValid(1)
    const stored = [T, T + 1, T + 1, T + 2].map((ts) => unit.insertFix(1, fixAt(ts)))
    stored.push(unit.insertFix(2, fixAt(T + 5, 45.7)))
    const alarm = unit.insertEvent(1, sos, 0)
    outbox.enqueueEvent({ device: 1, ...sos }, 1000)
    for (const e of [derived('ignition_on', T + 2), derived('ignition_on', T + 2), derived('geofence_enter', T + 2)]) {
      unit.appendEvent(1, e)
      outbox.enqueueEvent({ device: 1, ...e }, 1000)
    }
    outbox.enqueuePositions([{ device: 2, timestamp: T + 5, latitude: 45.7, longitude: 2.35, speed: 45, course: 90, altitude: null, attributes: {} }], 1000)
    unit.markSeen(1, 5000, 48.85, 2.35, 'moving')
    unit.markSeen(2, 5000, 45.7, 2.35, null)
    unit.giveBuiltinModel(1, 'm-gt06')
    unit.mergeStatus(1, JSON.stringify({ battery: 80, ignition: true, ibutton: 'ab' }), 5000)
    const state = rules.state(1)
    rules.writeState(1, { last_fix_ts: T + 2, inside: '["z"]', overspeed_since: null, overspeed_reported_ts: null, ignition: 1, ignition_ts: T + 2, online: 1 }, 5000)
    rules.writeLastFix(1, T + 3, 5001)
    return { newestBefore, stored, alarm, state, device: rules.device(1), groups: rules.groupsOf(2), version: typeof rules.devicesVersion() }
  }
}

/** Batch 2: the same fixes and alarm again (stored once), a newer fix, one more derived event at that second, a disconnect. */
function secondBatch(rules: RuleStateStore) {
  return (unit: IngestUnit) => {
    const newestBefore = unit.newestValid(1)
    const stored = [T + 1, T + 3].map((ts) => unit.insertFix(1, fixAt(ts)))
    const alarm = unit.insertEvent(1, sos, 0)
    unit.appendEvent(1, derived('ignition_on', T + 2))
    unit.mergeStatus(1, JSON.stringify({ battery: 75, ibutton: null }), 6000)
    unit.markSeen(1, 6000, null, null, null)
    const disconnected = unit.markDisconnected(1, 7000, 6000)
    const state = rules.state(1)
    rules.writeLastFix(1, T + 3, 7000)
    return { newestBefore, stored, alarm, state, disconnected }
  }
}

const touches = (fixes: [number, number][], alarms: IngestTouches['alarms']): IngestTouches => ({
  devices: [1, 2],
  fixes: fixes.map(([device, ts]) => ({ device, ts })),
  alarms,
})

const answers: Record<string, unknown[]> = {}
const tables: Record<string, Record<string, unknown>> = {}

for (const engine of engines('the ingest store on PostgreSQL')) {
  describe(`ingest's group commit on ${engine.name}`, () => {
    let opened: Opened | null = null
    afterEach(async () => {
      await opened?.close()
      opened = null
    })

    test('writes a batch all at once, and a re-sent batch stores nothing twice', async () => {
      opened = await engine.open()
      const { store, rules, rows } = await engineOf(opened)
      const clock = manualClock(T * 1000)
      const committed: unknown[] = []
      const first = await store.commit(firstBatch(rules), {
        clock,
        committed: (result) => committed.push(result),
        touches: () => touches([[1, T], [1, T + 1], [1, T + 1], [1, T + 2], [2, T + 5]], [{ device: 1, ts: T + 2, code: 'sos', seq: 0 }]),
      })
      expect(committed).toEqual([first])
      expect(first.stored).toEqual([true, true, false, true, true])
      expect(first.alarm).toBe(true)
      expect(first.newestBefore).toBeNull()
      expect(first.state).toBeNull()
      expect(first.device).toEqual({ account_id: 'acc', properties: '{}' })
      expect(first.groups).toEqual(['g2'])
      const second = await store.commit(secondBatch(rules), {
        clock,
        touches: () => touches([[1, T + 1], [1, T + 3]], [{ device: 1, ts: T + 2, code: 'sos', seq: 0 }]),
      })
      expect(second.stored).toEqual([false, true])
      expect(second.alarm).toBe(false)
      expect(second.disconnected).toBe(true)
      expect(second.newestBefore).toMatchObject({ timestamp: T + 2, latitude: 48.85, longitude: 2.35, speed: 30, course: 90 })
      expect(second.state).toMatchObject({ last_fix_ts: T + 3, inside: '["z"]', ignition: 1, online: 1 })
      expect(await store.connectedDevices()).toEqual([{ key: 2, updatedAt: 5000 }])

      // a writer that throws leaves nothing behind
      await expect(
        store.commit((unit) => {
          unit.insertFix(2, fixAt(T + 100))
          throw new Error('the writer failed')
        }, { clock, touches: () => touches([[2, T + 100]], []) }),
      ).rejects.toThrow('the writer failed')

      answers[engine.name] = [first, second]
      tables[engine.name] = {
        positions: await rows('SELECT device, ts, lat, lon, speed, course, altitude, satellites, flags, attributes FROM positions ORDER BY device, ts'),
        events: await rows('SELECT device, ts, alarm_code, seq, context, latitude, speed FROM events ORDER BY device, ts, alarm_code, seq'),
        devices: await rows('SELECT key, model_id, state, latitude, longitude, connected, connected_at, disconnected_at, updated_at FROM devices ORDER BY key'),
        // as JSON values: PostgreSQL's jsonb writes its text with spaces
        status: (await rows('SELECT device_key, attributes, updated_at FROM device_status ORDER BY device_key')).map((r) => ({ ...r, attributes: JSON.parse(r.attributes as string) })),
        rules: await rows('SELECT device_key, last_fix_ts, inside, ignition, ignition_ts, online, updated_at FROM alert_states ORDER BY device_key'),
        deliveries: await rows('SELECT notification_id, kind, device_key, fixes, status, attempts FROM notification_deliveries ORDER BY notification_id, key'),
      }
      const events = tables[engine.name]!.events as { alarm_code: string; seq: number }[]
      expect(events.map((e) => `${e.alarm_code}#${e.seq}`)).toEqual(['geofence_enter#1', 'ignition_on#1', 'ignition_on#2', 'ignition_on#3', 'sos#0'])
      expect((tables[engine.name]!.status as { attributes: unknown }[]).map((s) => s.attributes)).toEqual([{ battery: 75, ignition: true }])
      // the account channel: sos and ignition_on (three); Bob's own alerts: every event of dev-a (his group's), five; fixes of dev-b (g2)
      const deliveries = tables[engine.name]!.deliveries as { notification_id: string }[]
      expect(deliveries.filter((d) => d.notification_id === 'hook').length).toBe(3)
      expect(deliveries.filter((d) => d.notification_id === 'bob-mail').length).toBe(4)
      expect(deliveries.filter((d) => d.notification_id === 'fixes').length).toBe(1)
    })

    if (engine.name === 'postgres') {
      test('a disconnection is not written when the device has reported since through another node', async () => {
        opened = await engine.open()
        const { store, rows } = await engineOf(opened)
        const clock = manualClock(T * 1000)
        await store.commit((unit) => unit.markSeen(2, 5000, 45.7, 2.35, null), { clock, touches: () => touches([], []) })
        // this node last saw device 2 at 4000; another node's report at 5000 is newer: no disconnection
        expect(await store.commit((unit) => unit.markDisconnected(2, 9000, 4000), { clock, touches: () => touches([], []) })).toBe(false)
        expect(await rows('SELECT connected, disconnected_at FROM devices WHERE key = 2')).toEqual([{ connected: 1, disconnected_at: null }])
        // its own last sighting is the newest: disconnected
        expect(await store.commit((unit) => unit.markDisconnected(2, 9000, 5000), { clock, touches: () => touches([], []) })).toBe(true)
        expect(await rows('SELECT connected, disconnected_at FROM devices WHERE key = 2')).toEqual([{ connected: 0, disconnected_at: 9000 }])
      })

      test('leaves exactly what SQLite leaves', () => {
        expect(answers.postgres).toEqual(answers.sqlite!)
        expect(tables.postgres).toEqual(tables.sqlite!)
      })
    }
  })
}
