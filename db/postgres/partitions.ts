/**
 * `positions` on PostgreSQL is partitioned by month of `ts` (Unix seconds, UTC months): one table
 * `positions_yYYYYmMM` a month. The server creates the partitions ahead (this month and the next
 * PARTITIONS_AHEAD_MONTHS), and a write that reaches a month without one (an import of old
 * history, a device whose clock is years off) creates its month first: a fix is never refused for
 * its date. Retention drops a whole partition once every fix it may hold is older than the cutoff.
 */
import type { Sql } from 'postgres'

export const PARTITIONS_AHEAD_MONTHS = 2

export interface MonthPartition {
  name: string
  /** first second of the month, Unix s (inclusive) */
  fromSeconds: number
  /** first second of the next month (exclusive) */
  toSeconds: number
}

/** The month partition a fix at `tsSeconds` belongs to. */
export function partitionOf(tsSeconds: number): MonthPartition {
  const date = new Date(tsSeconds * 1000)
  const year = date.getUTCFullYear()
  const month = date.getUTCMonth()
  const fromSeconds = Date.UTC(year, month, 1) / 1000
  const toSeconds = Date.UTC(year, month + 1, 1) / 1000
  const name = `positions_y${String(year).padStart(4, '0')}m${String(month + 1).padStart(2, '0')}`
  return { name, fromSeconds, toSeconds }
}

/** Creates the partitions of these fix timestamps' months that do not exist yet; two nodes may race harmlessly. */
export async function ensurePartitions(sql: Sql, tsSeconds: Iterable<number>): Promise<MonthPartition[]> {
  const wanted = new Map<string, MonthPartition>()
  for (const ts of tsSeconds) {
    const partition = partitionOf(ts)
    wanted.set(partition.name, partition)
  }
  for (const partition of wanted.values()) {
    try {
      await sql.unsafe(
        `CREATE TABLE IF NOT EXISTS "${partition.name}" PARTITION OF "positions" FOR VALUES FROM (${partition.fromSeconds}) TO (${partition.toSeconds})`,
      )
    } catch (error) {
      // another node created it between our IF NOT EXISTS and the catalogue's unique index
      const code = (error as { code?: string }).code
      if (code !== '42P07' && code !== '23505') throw error
    }
  }
  return [...wanted.values()]
}

/** This month's partition and the next PARTITIONS_AHEAD_MONTHS. */
export function partitionsAhead(nowMs: number, aheadMonths = PARTITIONS_AHEAD_MONTHS): number[] {
  const now = new Date(nowMs)
  const months: number[] = []
  for (let i = 0; i <= aheadMonths; i++) months.push(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + i, 1) / 1000)
  return months
}

/** The partitions of positions that exist, oldest first. */
export async function existingPartitions(sql: Sql): Promise<MonthPartition[]> {
  const rows = await sql<{ name: string }[]>`
    SELECT child.relname AS name FROM pg_inherits
    JOIN pg_class parent ON parent.oid = pg_inherits.inhparent
    JOIN pg_class child ON child.oid = pg_inherits.inhrelid
    JOIN pg_namespace ns ON ns.oid = parent.relnamespace
    WHERE parent.relname = 'positions' AND ns.nspname = current_schema()`
  const partitions: MonthPartition[] = []
  for (const { name } of rows) {
    const match = /^positions_y(\d{4})m(\d{2})$/.exec(name)
    if (!match) continue
    partitions.push(partitionOf(Date.UTC(Number(match[1]), Number(match[2]) - 1, 1) / 1000))
  }
  return partitions.sort((a, b) => a.fromSeconds - b.fromSeconds)
}

/** Drops every partition whose every second is older than `cutoffSeconds`; the names dropped. */
export async function dropPartitionsBefore(sql: Sql, cutoffSeconds: number): Promise<string[]> {
  const dropped: string[] = []
  for (const partition of await existingPartitions(sql)) {
    if (partition.toSeconds > cutoffSeconds) continue
    await sql.unsafe(`DROP TABLE IF EXISTS "${partition.name}"`)
    dropped.push(partition.name)
  }
  return dropped
}
