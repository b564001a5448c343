/**
 * Ingest's group commit on PostgreSQL: the same unit of work as src/store/ingest.ts (fixes,
 * events, device rows and status, rule state and outbox rows, all or nothing), shaped for a
 * database a round trip away. The pipeline's batch writer stays synchronous: before it runs, one
 * transaction reads everything the batch may ask (IngestTouches: its devices, its fixes' and
 * alarms' keys) in one pipelined round trip; the writer then runs from memory, its writes
 * gathered; and they go out as one statement a table (arrays `unnest`ed), pipelined, before the
 * commit. About five round trips a batch, whatever its size.
 *
 * The batch's devices are locked for the transaction (`pg_advisory_xact_lock`, in key order): a
 * device whose session moved to another node while the old one still wrote is written by one node
 * at a time, so what this transaction read of it (its newest fix, which fixes and alarms are
 * stored, its rule state) stays true until the commit.
 *
 * The rules' state store (`createPostgresRuleStateStore`) and the outbox's writer
 * (`outboxWrites()` of the unit) answer from the same read-ahead and write into the same gathered
 * writes: they are valid only while `commit` runs the writer, as on SQLite.
 *
 * Raw statements (postgres.js), not Drizzle: they are the ingest hot path, they pass whole
 * columns as arrays, and Drizzle cannot pipeline statements on one transaction.
 */
import type { TransactionSql } from 'postgres'
import type { PostgresHandle } from '../../../db/postgres/client'
import { ensurePartitions, partitionOf } from '../../../db/postgres/partitions'
import type { EncodedEvent } from '../events'
import { DEVICES_RULES_VERSION_ROW, type RuleStateStore, type StoredRuleState } from '../geofences'
import type { IngestCommitOptions, IngestStore, IngestTouches, IngestUnit } from '../ingest'
import { CREDENTIALS_VERSION_ROW, NOTIFICATIONS_VERSION_ROW, type OutboxChannelRow, type OutboxDelivery, type OutboxSource } from '../notifications'
import { FLAG_UNLOCATABLE, type EncodedPosition, type NewestFix } from '../positions'
import { announceBatchInTransaction, type SignalledFix, type StoredBatch } from './signals'

/** the advisory lock space of devices being written (the first key of the two-key form) */
const DEVICE_LOCK_SPACE = 0x7472_6b02

interface DeviceRow {
  id: string
  alias: string
  account_id: string
  properties: string
  /** Unix ms of its last report (or change) */
  updated_at: number
}

/** What one batch read ahead, and what its writer has written so far. */
interface BatchState {
  newest: Map<number, NewestFix | null>
  storedFixes: Set<string>
  storedAlarms: Set<string>
  devices: Map<number, DeviceRow>
  groups: Map<number, string[]>
  ruleStates: Map<number, StoredRuleState>
  rulesVersion: number
  outboxVersion: number
  /** devices each user with alerts of their own reaches, among the batch's */
  reach: Map<string, Set<number>>
  writes: GatheredWrites
}

interface GatheredWrites {
  fixes: { device: number[]; row: EncodedPosition[] }
  alarms: { device: number; row: EncodedEvent; seq: number }[]
  derived: { device: number; row: EncodedEvent }[]
  /** device-row writes in the order the writer made them (seen, disconnected, model) */
  deviceOps: DeviceOp[]
  statuses: Map<number, { attributes: string; at: number }>
  ruleStates: Map<number, { state: StoredRuleState | null; lastFixTs: number | null; at: number }>
  deliveries: OutboxDelivery[]
}

type DeviceOp =
  | { kind: 'seen'; device: number; at: number; latitude: number | null; longitude: number | null; state: string | null }
  | { kind: 'disconnected'; device: number; at: number }
  | { kind: 'model'; device: number; modelId: string }

const fixKey = (device: number, ts: number) => `${device}:${ts}`
const alarmKey = (device: number, ts: number, code: string, seq: number) => `${device}:${ts}:${seq}:${code}`

/** The shared state of a PostgreSQL ingest store and the rule state store over it. */
interface IngestContext {
  current: BatchState | null
}

export interface PostgresIngestStore extends IngestStore {
  /** the rules' state, answered from the batch being written (pass to createAlertRules) */
  ruleStates(): RuleStateStore
}

export interface PostgresIngestOptions {
  /**
   * Reads ahead what the rules' geofence cache will ask of these accounts (src/store/postgres/
   * geofences.ts `load`): called with the batch's devices' accounts before the writer runs.
   */
  beforeWrite?: (accountIds: string[]) => Promise<void>
  /**
   * This node's name: each committed batch is announced to the other nodes (signals.ts), which
   * hand it to their live streams. Absent: nothing is announced (one node, a tool).
   */
  node?: string
}

export function createPostgresIngestStore(database: Pick<PostgresHandle, 'sql'>, { node, beforeWrite }: PostgresIngestOptions = {}): PostgresIngestStore {
  const { sql } = database
  const context: IngestContext = { current: null }
  /** months whose partition this process has seen made */
  const partitions = new Set<string>()
  /** the enabled channels as of the outbox version they were read at */
  let channels: { version: number; rows: OutboxChannelRow[] } | null = null

  async function ensureMonths(fixes: { ts: number }[]): Promise<void> {
    const missing: number[] = []
    for (const { ts } of fixes) {
      const name = partitionOf(ts).name
      if (!partitions.has(name)) missing.push(ts)
    }
    if (missing.length === 0) return
    for (const made of await ensurePartitions(sql, missing)) partitions.add(made.name)
  }

  async function readAhead(tx: TransactionSql, touches: IngestTouches): Promise<BatchState> {
    const devices = [...new Set(touches.devices)].sort((a, b) => a - b)
    const withFixes = [...new Set(touches.fixes.map((f) => f.device))]
    // the locks first, in key order (two nodes locking the same devices never deadlock), then every read at once
    await tx`SELECT pg_advisory_xact_lock(${DEVICE_LOCK_SPACE}, k) FROM unnest(${devices}::int[]) AS k ORDER BY k`
    const [newestRows, fixRows, alarmRows, deviceRows, groupRows, stateRows, versionRows] = await Promise.all([
      withFixes.length === 0
        ? []
        : tx<{ device: number; ts: number; lat: number; lon: number; speed: number | null; course: number | null }[]>`
          SELECT d.k AS device, p.ts, p.lat, p.lon, p.speed, p.course FROM unnest(${withFixes}::int[]) AS d(k)
          CROSS JOIN LATERAL (SELECT ts, lat, lon, speed, course FROM positions
            WHERE device = d.k AND (flags & ${FLAG_UNLOCATABLE}) = 0 ORDER BY ts DESC LIMIT 1) AS p`,
      touches.fixes.length === 0
        ? []
        : tx<{ device: number; ts: number }[]>`
          SELECT device, ts FROM positions WHERE (device, ts) IN (
            SELECT * FROM unnest(${touches.fixes.map((f) => f.device)}::int[], ${touches.fixes.map((f) => f.ts)}::bigint[]))`,
      touches.alarms.length === 0
        ? []
        : tx<{ device: number; ts: number; alarm_code: string; seq: number }[]>`
          SELECT device, ts, alarm_code, seq FROM events WHERE (device, ts, alarm_code, seq) IN (
            SELECT * FROM unnest(${touches.alarms.map((a) => a.device)}::int[], ${touches.alarms.map((a) => a.ts)}::bigint[],
              ${touches.alarms.map((a) => a.code)}::text[], ${touches.alarms.map((a) => a.seq)}::int[]))`,
      tx<(DeviceRow & { key: number })[]>`SELECT key, id, alias, account_id, properties, updated_at FROM devices WHERE key = ANY(${devices}::int[])`,
      tx<{ device_key: number; group_id: string }[]>`SELECT device_key, group_id FROM device_groups WHERE device_key = ANY(${devices}::int[])`,
      tx<(Omit<StoredRuleState, 'ignition' | 'online'> & { device_key: number; ignition: boolean | null; online: boolean | null })[]>`
        SELECT device_key, last_fix_ts, inside, overspeed_since, overspeed_reported_ts, ignition, ignition_ts, online
        FROM alert_states WHERE device_key = ANY(${devices}::int[])`,
      tx<{ id: number; version: number }[]>`SELECT id, version FROM access_version WHERE id IN (${DEVICES_RULES_VERSION_ROW}, ${NOTIFICATIONS_VERSION_ROW}, ${CREDENTIALS_VERSION_ROW})`,
    ])
    const version = (id: number) => versionRows.find((r) => r.id === id)?.version ?? 0
    const batch: BatchState = {
      newest: new Map(withFixes.map((k) => [k, null])),
      storedFixes: new Set(fixRows.map((r) => fixKey(r.device, r.ts))),
      storedAlarms: new Set(alarmRows.map((r) => alarmKey(r.device, r.ts, r.alarm_code, r.seq))),
      devices: new Map(deviceRows.map((r) => [r.key, { id: r.id, alias: r.alias, account_id: r.account_id, properties: r.properties, updated_at: r.updated_at }])),
      groups: new Map(),
      ruleStates: new Map(
        stateRows.map((r) => [
          r.device_key,
          {
            last_fix_ts: r.last_fix_ts,
            inside: r.inside,
            overspeed_since: r.overspeed_since,
            overspeed_reported_ts: r.overspeed_reported_ts,
            ignition: r.ignition === null ? null : Number(r.ignition),
            ignition_ts: r.ignition_ts,
            online: r.online === null ? null : Number(r.online),
          },
        ]),
      ),
      rulesVersion: version(DEVICES_RULES_VERSION_ROW),
      outboxVersion: version(NOTIFICATIONS_VERSION_ROW) + version(CREDENTIALS_VERSION_ROW),
      reach: new Map(),
      writes: { fixes: { device: [], row: [] }, alarms: [], derived: [], deviceOps: [], statuses: new Map(), ruleStates: new Map(), deliveries: [] },
    }
    for (const r of newestRows) {
      batch.newest.set(r.device, { timestamp: r.ts, latitude: r.lat / 1e7, longitude: r.lon / 1e7, speed: r.speed === null ? null : r.speed / 10, course: r.course })
    }
    for (const r of groupRows) {
      const list = batch.groups.get(r.device_key)
      if (list) list.push(r.group_id)
      else batch.groups.set(r.device_key, [r.group_id])
    }
    // the outbox: its channels when their version moved, and whom their users reach among the batch's devices
    if (channels?.version !== batch.outboxVersion) {
      const rows = await tx<OutboxChannelRow[]>`
        SELECT n.id, n.account_id AS "accountId", n.events, n.groups, n.positions, n.user_id AS "userId",
          u.role AS "userRole", u.account_id AS "userAccountId"
        FROM notifications n LEFT JOIN users u ON u.id = n.user_id WHERE n.enabled`
      channels = { version: batch.outboxVersion, rows: [...rows] }
    }
    const members = channels.rows.filter((c) => c.userId !== null && c.userRole !== 'admin').map((c) => c.userId!)
    if (members.length > 0 && devices.length > 0) {
      const rows = await tx<{ user_id: string; device_key: number }[]>`
        SELECT DISTINCT ug.user_id, dg.device_key FROM user_groups ug JOIN device_groups dg ON dg.group_id = ug.group_id
        WHERE ug.user_id = ANY(${members}::text[]) AND dg.device_key = ANY(${devices}::int[])`
      for (const r of rows) {
        const set = batch.reach.get(r.user_id)
        if (set) set.add(r.device_key)
        else batch.reach.set(r.user_id, new Set([r.device_key]))
      }
    }
    return batch
  }

  const current = (): BatchState => {
    if (!context.current) throw new Error('the outbox was written outside ingest’s unit of work')
    return context.current
  }
  /** one object for every batch (the outbox keeps its parsed channels by it), answering from the batch being written */
  const outbox: OutboxSource = {
    version: () => current().outboxVersion,
    enabledChannels: () => channels?.rows ?? [],
    device: (deviceKey) => {
      const row = current().devices.get(deviceKey)
      return row ? { id: row.id, alias: row.alias, accountId: row.account_id } : null
    },
    groupsOf: (deviceKey) => current().groups.get(deviceKey) ?? [],
    enqueue: (delivery) => void current().writes.deliveries.push(delivery),
    reachOfInTransaction(user) {
      const batch = current()
      if (user.role === 'admin') return (key) => batch.devices.get(key)?.account_id === user.accountId
      const reached = batch.reach.get(user.userId)
      return (key) => reached?.has(key) === true && batch.devices.get(key)?.account_id === user.accountId
    },
  }

  function unitOf(batch: BatchState): IngestUnit {
    const { writes } = batch
    return {
      newestValid(deviceKey) {
        const found = batch.newest.get(deviceKey)
        if (found === undefined) throw new Error(`device ${deviceKey}'s newest fix was not read ahead`)
        return found
      },
      insertFix(deviceKey, row) {
        const key = fixKey(deviceKey, row.ts)
        if (batch.storedFixes.has(key)) return false
        batch.storedFixes.add(key)
        writes.fixes.device.push(deviceKey)
        writes.fixes.row.push(row)
        return true
      },
      insertEvent(deviceKey, row, seq) {
        const key = alarmKey(deviceKey, row.ts, row.alarm_code, seq)
        if (batch.storedAlarms.has(key)) return false
        batch.storedAlarms.add(key)
        writes.alarms.push({ device: deviceKey, row, seq })
        return true
      },
      appendEvent(deviceKey, row) {
        writes.derived.push({ device: deviceKey, row })
      },
      markSeen(deviceKey, at, latitude, longitude, state) {
        writes.deviceOps.push({ kind: 'seen', device: deviceKey, at, latitude, longitude, state })
      },
      markDisconnected(deviceKey, at, since) {
        // a report after `since` reached another node: the device is connected there
        const device = batch.devices.get(deviceKey)
        if (device && device.updated_at > since) return false
        writes.deviceOps.push({ kind: 'disconnected', device: deviceKey, at })
        return true
      },
      giveBuiltinModel(deviceKey, modelId) {
        writes.deviceOps.push({ kind: 'model', device: deviceKey, modelId })
      },
      mergeStatus(deviceKey, attributes, at) {
        const pending = writes.statuses.get(deviceKey)
        // one merge a device a batch: a later one's keys win, as two json_patch calls in a row would
        writes.statuses.set(deviceKey, pending ? { attributes: JSON.stringify({ ...JSON.parse(pending.attributes), ...JSON.parse(attributes) }), at } : { attributes, at })
      },
      // the outbox's writer gets this store's outbox source in place of a connection (src/alerts/outbox.ts)
      inTransaction<T>(writer: (tx: never) => T): T {
        return writer(outbox as never)
      },
    }
  }

  /** Every gathered write, one statement a table, pipelined on the transaction. */
  function writeAll(tx: TransactionSql, writes: GatheredWrites): Promise<unknown>[] {
    const statements: Promise<unknown>[] = []
    const { fixes } = writes
    if (fixes.row.length > 0) {
      const rows = fixes.row
      statements.push(tx`
        INSERT INTO positions (device, ts, lat, lon, speed, course, altitude, satellites, flags, attributes)
        SELECT * FROM unnest(${fixes.device}::int[], ${rows.map((r) => r.ts)}::bigint[], ${rows.map((r) => r.lat)}::int[], ${rows.map((r) => r.lon)}::int[],
          ${rows.map((r) => r.speed)}::int[], ${rows.map((r) => r.course)}::int[], ${rows.map((r) => r.altitude)}::int[], ${rows.map((r) => r.satellites)}::int[],
          ${rows.map((r) => r.flags)}::int[], ${rows.map((r) => r.attributes)}::text[])
        ON CONFLICT (device, ts) DO NOTHING`)
    }
    if (writes.alarms.length > 0) statements.push(insertEvents(tx, writes.alarms, 'keyed'))
    if (writes.derived.length > 0) statements.push(insertEvents(tx, writes.derived.map((d) => ({ ...d, seq: 0 })), 'appended'))
    statements.push(...deviceWrites(tx, writes.deviceOps))
    if (writes.statuses.size > 0) {
      const keys = [...writes.statuses.keys()]
      const values = [...writes.statuses.values()]
      statements.push(mergeStatuses(tx, keys, values))
    }
    if (writes.ruleStates.size > 0) statements.push(...ruleStateWrites(tx, writes.ruleStates))
    if (writes.deliveries.length > 0) {
      const d = writes.deliveries
      statements.push(tx`
        INSERT INTO notification_deliveries (id, notification_id, kind, device_key, payload, fixes, status, attempts, next_attempt_at, created_at)
        SELECT id, n, k, dk, p, f, 'pending', 0, t, t FROM unnest(${d.map((x) => x.id)}::text[], ${d.map((x) => x.notificationId)}::text[],
          ${d.map((x) => x.kind)}::text[], ${d.map((x) => x.deviceKey)}::int[], ${d.map((x) => x.payload)}::text[], ${d.map((x) => x.fixes)}::int[],
          ${d.map((x) => x.now)}::bigint[]) AS v(id, n, k, dk, p, f, t)`)
    }
    return statements
  }

  return {
    async commit<T>(write: (unit: IngestUnit) => T, options: IngestCommitOptions<T>): Promise<T> {
      const touches = options.touches?.() ?? { devices: [], fixes: [], alarms: [] }
      await ensureMonths(touches.fixes)
      const result = await sql.begin(async (tx) => {
        const batch = await readAhead(tx, touches)
        if (beforeWrite) await beforeWrite([...new Set([...batch.devices.values()].map((d) => d.account_id))])
        context.current = batch
        let written: T
        try {
          written = write(unitOf(batch))
        } finally {
          context.current = null
        }
        const statements = writeAll(tx, batch.writes)
        if (node !== undefined) statements.push(...announceBatchInTransaction(tx, storedBatch(node, touches, batch.writes)))
        await Promise.all(statements)
        return written
      })
      options.committed?.(result as T)
      return result as T
    },
    async connectedDevices() {
      const rows = await sql<{ key: number; updated_at: number }[]>`SELECT key, updated_at FROM devices WHERE connected`
      return rows.map((r) => ({ key: r.key, updatedAt: r.updated_at }))
    },
    ruleStates: () => ruleStateStore(context),
  }
}

/** What a batch stored, as the other nodes' live streams receive it. */
function storedBatch(node: string, touches: IngestTouches, writes: GatheredWrites): StoredBatch {
  const fixes: SignalledFix[] = []
  writes.fixes.row.forEach((row, i) => {
    if ((row.flags & FLAG_UNLOCATABLE) === 0) fixes.push([writes.fixes.device[i]!, row.ts, row.lat, row.lon, row.speed, row.course])
  })
  return {
    node,
    devices: [...new Set(touches.devices)],
    fixes,
    alarms: [...writes.alarms, ...writes.derived].map((e) => [e.device, e.row]),
    statuses: [...writes.statuses].map(([device, { attributes, at }]) => [device, attributes, at]),
  }
}

/** Device alarms at their seq (a re-send stored once), or derived events after their second's highest seq. */
function insertEvents(tx: TransactionSql, events: { device: number; row: EncodedEvent; seq: number }[], mode: 'keyed' | 'appended'): Promise<unknown> {
  const rows = events.map((e) => e.row)
  const columns = [
    events.map((e) => e.device),
    rows.map((r) => r.ts),
    rows.map((r) => r.alarm_code),
    rows.map((r) => r.context),
    rows.map((r) => r.speed),
    rows.map((r) => r.satellite),
    rows.map((r) => r.latitude),
    rows.map((r) => r.longitude),
    rows.map((r) => r.mcc),
    rows.map((r) => r.mnc),
    rows.map((r) => r.dbm),
    events.map((e) => e.seq),
  ] as const
  const values = tx`unnest(${columns[0]}::int[], ${columns[1]}::bigint[], ${columns[2]}::text[], ${columns[3]}::text[], ${columns[4]}::int[], ${columns[5]}::int[],
    ${columns[6]}::float8[], ${columns[7]}::float8[], ${columns[8]}::int[], ${columns[9]}::int[], ${columns[10]}::int[], ${columns[11]}::int[])
    WITH ORDINALITY AS v(device, ts, alarm_code, context, speed, satellite, latitude, longitude, mcc, mnc, dbm, seq, ordinal)`
  if (mode === 'keyed') {
    return tx`
      INSERT INTO events (device, ts, alarm_code, context, speed, satellite, latitude, longitude, mcc, mnc, dbm, seq)
      SELECT device, ts, alarm_code, context, speed, satellite, latitude, longitude, mcc, mnc, dbm, seq FROM ${values}
      ON CONFLICT (device, ts, alarm_code, seq) DO NOTHING`
  }
  // each after the highest seq of its (device, second, code), never 0 (a device's own alarm's), in the order derived
  return tx`
    INSERT INTO events (device, ts, alarm_code, context, speed, satellite, latitude, longitude, mcc, mnc, dbm, seq)
    SELECT device, ts, alarm_code, context, speed, satellite, latitude, longitude, mcc, mnc, dbm,
      coalesce((SELECT max(e.seq) FROM events e WHERE e.device = v.device AND e.ts = v.ts AND e.alarm_code = v.alarm_code), 0)
        + row_number() OVER (PARTITION BY device, ts, alarm_code ORDER BY ordinal)
    FROM ${values}`
}

/** A device's status merged key by key (RFC 7396 at the top level: a null removes the key), one statement for the batch. */
function mergeStatuses(tx: TransactionSql, keys: number[], values: { attributes: string; at: number }[]): Promise<unknown> {
  return tx`
    INSERT INTO device_status (device_key, attributes, updated_at)
    SELECT v.k, merged.attributes, v.t
    FROM unnest(${keys}::int[], ${values.map((v) => v.attributes)}::text[], ${values.map((v) => v.at)}::bigint[]) AS v(k, patch, t)
    LEFT JOIN device_status s ON s.device_key = v.k
    CROSS JOIN LATERAL (
      SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}'::jsonb)::text AS attributes
      FROM jsonb_each(coalesce(s.attributes, '{}')::jsonb || v.patch::jsonb) AS e WHERE e.value <> 'null'::jsonb
    ) AS merged
    ON CONFLICT (device_key) DO UPDATE SET attributes = excluded.attributes, updated_at = excluded.updated_at`
}

/** The device-row writes in the writer's order: runs of `seen` as one statement, the rare others each alone. */
function deviceWrites(tx: TransactionSql, ops: DeviceOp[]): Promise<unknown>[] {
  const statements: Promise<unknown>[] = []
  let run: Extract<DeviceOp, { kind: 'seen' }>[] = []
  const seen = new Set<number>()
  const flushRun = () => {
    if (run.length === 0) return
    const r = run
    statements.push(tx`
      UPDATE devices AS d SET
        connected_at = CASE WHEN NOT d.connected OR d.connected_at IS NULL THEN v.at ELSE d.connected_at END,
        connected = true,
        updated_at = v.at,
        latitude = coalesce(v.latitude, d.latitude),
        longitude = coalesce(v.longitude, d.longitude),
        state = CASE WHEN v.state IS NULL OR d.state IN ('suspended', 'unlink', 'stolen') THEN d.state ELSE v.state END
      FROM unnest(${r.map((o) => o.device)}::int[], ${r.map((o) => o.at)}::bigint[], ${r.map((o) => o.latitude)}::float8[],
        ${r.map((o) => o.longitude)}::float8[], ${r.map((o) => o.state)}::text[]) AS v(key, at, latitude, longitude, state)
      WHERE d.key = v.key`)
    run = []
    seen.clear()
  }
  for (const op of ops) {
    if (op.kind === 'seen') {
      if (seen.has(op.device)) flushRun()
      run.push(op)
      seen.add(op.device)
      continue
    }
    flushRun()
    if (op.kind === 'disconnected') {
      statements.push(tx`
        UPDATE devices SET connected = false, disconnected_at = ${op.at}, updated_at = ${op.at},
          state = CASE WHEN state IN ('moving', 'stopped') THEN 'off' ELSE state END
        WHERE key = ${op.device} AND connected`)
    } else {
      statements.push(tx`UPDATE devices SET model_id = ${op.modelId} WHERE key = ${op.device} AND model_id IS NULL AND EXISTS (SELECT 1 FROM models WHERE id = ${op.modelId})`)
    }
  }
  flushRun()
  return statements
}

/** Rule states: whole states upserted, the common newest-fix-only moves as one update. */
function ruleStateWrites(tx: TransactionSql, states: GatheredWrites['ruleStates']): Promise<unknown>[] {
  const whole = [...states].filter(([, w]) => w.state !== null) as [number, { state: StoredRuleState; at: number }][]
  const lastFixOnly = [...states].filter(([, w]) => w.state === null)
  const statements: Promise<unknown>[] = []
  if (whole.length > 0) {
    const s = whole.map(([, w]) => w.state)
    // as text: postgres.js does not send an array of booleans as one
    const bool = (value: number | null) => (value === null ? null : value !== 0 ? 'true' : 'false')
    statements.push(tx`
      INSERT INTO alert_states (device_key, last_fix_ts, inside, overspeed_since, overspeed_reported_ts, ignition, ignition_ts, online, updated_at)
      SELECT * FROM unnest(${whole.map(([k]) => k)}::int[], ${s.map((x) => x.last_fix_ts)}::bigint[], ${s.map((x) => x.inside)}::text[],
        ${s.map((x) => x.overspeed_since)}::bigint[], ${s.map((x) => x.overspeed_reported_ts)}::bigint[], ${s.map((x) => bool(x.ignition))}::text[]::boolean[],
        ${s.map((x) => x.ignition_ts)}::bigint[], ${s.map((x) => bool(x.online))}::text[]::boolean[], ${whole.map(([, w]) => w.at)}::bigint[])
      ON CONFLICT (device_key) DO UPDATE SET last_fix_ts = excluded.last_fix_ts, inside = excluded.inside,
        overspeed_since = excluded.overspeed_since, overspeed_reported_ts = excluded.overspeed_reported_ts,
        ignition = excluded.ignition, ignition_ts = excluded.ignition_ts, online = excluded.online, updated_at = excluded.updated_at`)
  }
  if (lastFixOnly.length > 0) {
    statements.push(tx`
      UPDATE alert_states AS a SET last_fix_ts = v.ts, updated_at = v.at
      FROM unnest(${lastFixOnly.map(([k]) => k)}::int[], ${lastFixOnly.map(([, w]) => w.lastFixTs)}::bigint[], ${lastFixOnly.map(([, w]) => w.at)}::bigint[]) AS v(k, ts, at)
      WHERE a.device_key = v.k`)
  }
  return statements
}

/** The rules' reads and writes inside the batch being committed (src/store/geofences.ts's RuleStateStore). */
function ruleStateStore(context: IngestContext): RuleStateStore {
  const batch = (): BatchState => {
    if (!context.current) throw new Error("alert rules: call inside ingest's transaction, so the state and its events commit together")
    return context.current
  }
  return {
    inTransaction: () => context.current !== null,
    devicesVersion: () => batch().rulesVersion,
    device(deviceKey) {
      const row = batch().devices.get(deviceKey)
      return row ? { account_id: row.account_id, properties: row.properties } : null
    },
    groupsOf: (deviceKey) => batch().groups.get(deviceKey) ?? [],
    state(deviceKey) {
      const current = batch()
      const written = current.writes.ruleStates.get(deviceKey)
      if (written?.state) return written.state
      const stored = current.ruleStates.get(deviceKey) ?? null
      if (written && stored) return { ...stored, last_fix_ts: written.lastFixTs }
      return stored
    },
    writeState(deviceKey, state, atMs) {
      batch().writes.ruleStates.set(deviceKey, { state: { ...state }, lastFixTs: state.last_fix_ts, at: atMs })
    },
    writeLastFix(deviceKey, lastFixTs, atMs) {
      const writes = batch().writes.ruleStates
      const written = writes.get(deviceKey)
      if (written?.state) {
        written.state.last_fix_ts = lastFixTs
        written.lastFixTs = lastFixTs
        written.at = atMs
      } else writes.set(deviceKey, { state: null, lastFixTs, at: atMs })
    },
  }
}

