/**
 * RETENTION_DAYS' deletes on PostgreSQL: store/retention.ts's store, where positions are
 * partitioned by month. Each batch first drops the month partitions whose every fix is older than
 * the cutoff (db/postgres/partitions.ts: a DROP TABLE, however many rows, and no dead rows left to
 * vacuum), counting their rows into the batch's answer; the rows older than the cutoff that remain
 * are then all in the one partition that straddles it, and go device by device in bounded batches
 * as on SQLite (the `ts < cutoff` condition prunes every other partition). Events are not
 * partitioned: they go by batches only.
 *
 * Retention must run on one node at a time (scale-out contract, "Background work runs once"):
 * whoever schedules it holds the lock; a batch here is a plain unit of work.
 */
import { asc, sql } from 'drizzle-orm'
import type { PgConnectable, PostgresHandle } from '../../../db/postgres/client'
import { dropPartitionsBefore, existingPartitions } from '../../../db/postgres/partitions'
import { devices } from '../../../db/postgres/schema'
import { type RetainedTable, type RetentionStore, retentionBatchWalk } from '../retention'
import { unitOfWork } from './unit'

/** positions.ts's deleteOlder: up to `limit` of the device's oldest fixes before `beforeSeconds`; how many. */
async function deleteOlderPositions(tx: PgConnectable, deviceKey: number, beforeSeconds: number, limit: number): Promise<number> {
  const result = await tx.execute(sql`
    DELETE FROM positions WHERE device = ${deviceKey} AND ts IN (
      SELECT ts FROM positions WHERE device = ${deviceKey} AND ts < ${beforeSeconds} ORDER BY ts LIMIT ${limit})`)
  return result.count
}

/** events.ts's deleteOlder: up to `limit` of the device's oldest events before `beforeSeconds`; how many. */
async function deleteOlderEvents(tx: PgConnectable, deviceKey: number, beforeSeconds: number, limit: number): Promise<number> {
  const result = await tx.execute(sql`
    DELETE FROM events WHERE id IN (
      SELECT id FROM events WHERE device = ${deviceKey} AND ts < ${beforeSeconds} ORDER BY ts LIMIT ${limit})`)
  return result.count
}

const deleteOlder: Record<RetainedTable, typeof deleteOlderPositions> = { positions: deleteOlderPositions, events: deleteOlderEvents }

export function createPostgresRetentionStore(database: Pick<PostgresHandle, 'db' | 'sql' | 'versions'>): RetentionStore {
  const { db } = database

  /** Drops the partitions wholly older than the cutoff; the fixes they held. */
  async function dropOldPartitions(beforeSeconds: number): Promise<number> {
    const old = (await existingPartitions(database.sql)).filter((partition) => partition.toSeconds <= beforeSeconds)
    if (old.length === 0) return 0
    const rows = new Map<string, number>()
    for (const partition of old) {
      const [counted] = await database.sql<{ n: number }[]>`SELECT count(*)::bigint AS n FROM ${database.sql(partition.name)}`
      rows.set(partition.name, Number(counted?.n ?? 0))
    }
    const dropped = await dropPartitionsBefore(database.sql, beforeSeconds)
    return dropped.reduce((sum, name) => sum + (rows.get(name) ?? 0), 0)
  }

  return {
    async deviceKeys() {
      return (await db.select({ key: devices.key }).from(devices).orderBy(asc(devices.key))).map((row) => row.key)
    },
    async deleteBatch(tasks, from, beforeSeconds, limits) {
      const dropped = await dropOldPartitions(beforeSeconds)
      const batch = await unitOfWork(database, async (tx) => {
        const walk = retentionBatchWalk(tasks, from, limits)
        let step = walk.next()
        while (!step.done) step = walk.next(await deleteOlder[step.value.task.table](tx, step.value.task.key, beforeSeconds, step.value.budget))
        return step.value
      })
      return { ...batch, deleted: { ...batch.deleted, positions: batch.deleted.positions + dropped } }
    },
  }
}
