/**
 * Ingest's group commit as one unit of work: the pipeline (src/ingest/pipeline.ts) hands its
 * batch writer to `commit`, which opens the transaction (BEGIN IMMEDIATE), runs the writer to
 * completion, synchronously, and commits. The writer writes through `IngestUnit` only: fixes
 * (positions), events, the device rows, device status, and, through the writers of the alert
 * rules and the outbox (their owners' in-transaction writers, handed the transaction by
 * `inTransaction`), rule state and outbox rows. All of it commits, or none of it.
 *
 * Another process holding the write lock (an import, an `sqlite3` shell) is waited for
 * asynchronously (store/busy.ts): the writer runs again from the start, the previous attempt
 * rolled back, until it commits or WRITE_DEADLINE_MS passes (then Timeout).
 *
 * SQLite-only: BEGIN IMMEDIATE, taking the write lock at the start so that a busy database fails
 * the attempt before any work (PostgreSQL: a plain transaction; rows lock as they are written).
 *
 * The SQLite adapter answers with a settled promise: the batch has committed when `commit`
 * returns. A PostgreSQL adapter implements the same `commit` with an asynchronous transaction
 * (its writer then awaits each write): the writer's shape is the one part that would change.
 */
import type { Database } from 'bun:sqlite'
import { eq } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { Connectable, DatabaseHandle } from '../../db/client'
import * as schema from '../../db/schema'
import { devices } from '../../db/schema'
import type { Clock } from '../clock'
import { isDatabaseBusy, retryWhileBusy } from './busy'
import { deviceWritesInTransaction } from './devices'
import { createEventStore, type EncodedEvent } from './events'
import { createPositionStore, type EncodedPosition, type NewestFix } from './positions'
import { createStatusStore } from './status'

/** What a batch writer may do inside the unit of work; valid only while `commit` runs it. */
export interface IngestUnit {
  /** the device's newest stored fix that may be a location, as this transaction sees it */
  newestValid(deviceKey: number): NewestFix | null
  /** writes the fix unless its (device, ts) is stored; true when written */
  insertFix(deviceKey: number, row: EncodedPosition): boolean
  /** writes a device's own event unless stored (same second, code and seq); true when written */
  insertEvent(deviceKey: number, row: EncodedEvent, seq: number): boolean
  /** writes an event the server derived, at the next seq of its second */
  appendEvent(deviceKey: number, row: EncodedEvent): void
  /** a report came at `at` (Unix ms); the newest fix's place and state when it moved the device */
  markSeen(deviceKey: number, at: number, latitude: number | null, longitude: number | null, state: string | null): void
  /**
   * the device is disconnected at `at` (Unix ms), unless it has reported after `since` (the last
   * report this process saw) through another process: false then, and nothing is written. One
   * process alone on the database (SQLite) has seen every report: always true.
   */
  markDisconnected(deviceKey: number, at: number, since: number): boolean
  /** a device still without a model gets its protocol's built-in one */
  giveBuiltinModel(deviceKey: number, modelId: string): void
  /** merges attributes (JSON object text) into the device's status, committed at `at` (Unix ms) */
  mergeStatus(deviceKey: number, attributes: string, at: number): void
  /**
   * Runs another owner's in-transaction writer (the alert outbox's batch) on this unit's
   * transaction: the writer gets the transaction, the caller never holds it.
   */
  inTransaction<T>(writer: (tx: Connectable) => T): T
}

/**
 * What a batch will write, known before its writer runs (the pipeline gathers it from its
 * operations): an adapter whose reads are round trips (PostgreSQL) reads all it needs up front,
 * in one go, and lets the writer run from memory. The SQLite adapter never asks.
 */
export interface IngestTouches {
  /** every device the batch writes for */
  devices: number[]
  /** the fixes' (device, ts) */
  fixes: { device: number; ts: number }[]
  /** the devices' own alarms' (device, ts, code, seq) */
  alarms: { device: number; ts: number; code: string; seq: number }[]
}

export interface IngestCommitOptions<T> {
  clock: Clock
  /** what the batch will write: asked only by adapters that read ahead (see IngestTouches) */
  touches?: () => IngestTouches
  /**
   * Told what the writer returned as soon as the unit has committed, before the promise settles
   * (on SQLite within `commit` itself): the caller's memory of what is stored (newest fixes, rule
   * states) follows the commit before anything else runs. It must not throw.
   */
  committed?: (result: T) => void
  /** told once when the first attempt found another process's write lock (the batch now waits for it) */
  onBusy?: () => void
}

export interface ConnectedDevice {
  key: number
  /** Unix ms */
  updatedAt: number
}

export interface IngestStore {
  /**
   * Runs `write` in one unit of work and commits it; resolves with what it returned once durable.
   * Rejects with its error (rolled back), or Timeout when the lock stayed held past the deadline.
   */
  commit<T>(write: (unit: IngestUnit) => T, options: IngestCommitOptions<T>): Promise<T>
  /**
   * Devices marked connected (left so by a previous run), each with its last update (Unix ms):
   * read once as the pipeline starts. SQLite answers at once (the pipeline's first sweep already
   * knows them); PostgreSQL a moment later.
   */
  connectedDevices(): ConnectedDevice[] | Promise<ConnectedDevice[]>
}

export function createIngestStore(database: Pick<DatabaseHandle, 'sqlite'>): IngestStore {
  const sqlite: Database = database.sqlite
  const positions = createPositionStore(sqlite)
  const events = createEventStore(sqlite)
  const statuses = createStatusStore(sqlite)
  const deviceWrites = deviceWritesInTransaction(sqlite)
  const connected = drizzle(sqlite, { schema }).select({ key: devices.key, updatedAt: devices.updatedAt }).from(devices).where(eq(devices.connected, true)).prepare()

  const unit: IngestUnit = {
    newestValid: (deviceKey) => positions.newestValid(deviceKey),
    insertFix: (deviceKey, row) => positions.insert(deviceKey, row),
    insertEvent: (deviceKey, row, seq) => events.insert(deviceKey, row, seq),
    appendEvent: (deviceKey, row) => events.append(deviceKey, row),
    markSeen: deviceWrites.markSeen,
    markDisconnected: (deviceKey, at) => {
      deviceWrites.markDisconnected(deviceKey, at)
      return true
    },
    giveBuiltinModel: deviceWrites.giveBuiltinModel,
    mergeStatus: (deviceKey, attributes, at) => statuses.merge(deviceKey, attributes, at),
    inTransaction: (writer) => writer(sqlite),
  }

  return {
    commit<T>(write: (unit: IngestUnit) => T, options: IngestCommitOptions<T>): Promise<T> {
      let result: T
      const attempt = (): T => {
        sqlite.transaction(() => (result = write(unit))).immediate()
        options.committed?.(result)
        return result
      }
      try {
        return Promise.resolve(attempt())
      } catch (error) {
        if (!isDatabaseBusy(error)) return Promise.reject(error)
        options.onBusy?.()
        return retryWhileBusy(sqlite, attempt, { clock: options.clock, afterBusy: true })
      }
    },
    connectedDevices() {
      return connected.all()
    },
  }
}
