/**
 * RETENTION_DAYS' deletes (src/ops/retention.ts decides when): positions and events older than a
 * cutoff, through their owners' deletes (store/positions.ts, store/events.ts), a bounded batch a
 * transaction. Each batch is one unit of work owned here: it takes the write lock at once
 * (BEGIN IMMEDIATE; PostgreSQL: a plain transaction) and, while another process holds it (an
 * import), waits asynchronously and runs again from the start (store/busy.ts).
 */
import { asc } from 'drizzle-orm'
import type { DatabaseHandle } from '../../db/client'
import { devices } from '../../db/schema'
import type { Clock } from '../clock'
import { retryWhileBusy, settled } from './busy'
import { createEventStore } from './events'
import { createPositionStore } from './positions'

export type RetainedTable = 'positions' | 'events'

/** One device's rows of one table: what a batch visits. */
export interface RetentionTask {
  table: RetainedTable
  key: number
}

export interface RetentionBatch {
  deleted: Record<RetainedTable, number>
  /** the task the next batch starts at (tasks.length: done) */
  next: number
}

export interface RetentionStore {
  /** every device's key, in order */
  deviceKeys(): Promise<number[]>
  /**
   * One transaction: from task `from`, deletes up to `rows` rows older than `beforeSeconds`,
   * visiting at most `devices` tasks; what it deleted and where the next batch starts.
   */
  deleteBatch(tasks: readonly RetentionTask[], from: number, beforeSeconds: number, limits: { rows: number; devices: number }): Promise<RetentionBatch>
}

/**
 * One batch's walk over the tasks (both engines' adapters drive it): yields each task visited with
 * the rows it may still delete, and is told how many its delete took; returns the batch's answer.
 */
export function* retentionBatchWalk(
  tasks: readonly RetentionTask[],
  from: number,
  limits: { rows: number; devices: number },
): Generator<{ task: RetentionTask; budget: number }, RetentionBatch, number> {
  const deleted = { positions: 0, events: 0 }
  let next = from
  let budget = limits.rows
  let visited = 0
  while (budget > 0 && next < tasks.length && visited < limits.devices) {
    const task = tasks[next]!
    const rows = yield { task, budget }
    deleted[task.table] += rows
    budget -= rows
    visited++
    // fewer than asked: this device has nothing older left (exactly as many: look again next batch)
    if (budget > 0) next++
  }
  return { deleted, next }
}

export function createRetentionStore(database: DatabaseHandle, clock: Clock): RetentionStore {
  const { sqlite, db } = database
  const keys = db.select({ key: devices.key }).from(devices).orderBy(asc(devices.key)).prepare()
  // the tables' own deletes (their owners')
  const stores: Record<RetainedTable, { deleteOlder(deviceKey: number, beforeSeconds: number, limit: number): number }> = {
    positions: createPositionStore(sqlite),
    events: createEventStore(sqlite),
  }
  // Pure in its outcome, so that a retry after a busy attempt (rolled back) starts over.
  const batch = sqlite.transaction((tasks: readonly RetentionTask[], from: number, beforeSeconds: number, limits: { rows: number; devices: number }): RetentionBatch => {
    const walk = retentionBatchWalk(tasks, from, limits)
    let step = walk.next()
    while (!step.done) step = walk.next(stores[step.value.task.table].deleteOlder(step.value.task.key, beforeSeconds, step.value.budget))
    return step.value
  })
  return {
    deviceKeys() {
      return settled(() => keys.all().map((row) => row.key))
    },
    deleteBatch(tasks, from, beforeSeconds, limits) {
      return retryWhileBusy(sqlite, () => batch.immediate(tasks, from, beforeSeconds, limits), { clock })
    },
  }
}
