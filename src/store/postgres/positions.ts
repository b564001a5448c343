/**
 * The positions table on PostgreSQL: src/store/positions.ts's reads (PositionReads: a device's
 * newest valid fix, the windows of history) over the schema's PostgreSQL twin, decoded with that
 * module's scales. `positions` is partitioned by month of `ts` (db/postgres/partitions.ts): each
 * read names its device and a range of `ts`, so a window is read from the months it spans only,
 * through each partition's (device, ts) primary key.
 */
import { and, between, count, desc, eq, sql } from 'drizzle-orm'
import type { PostgresHandle } from '../../../db/postgres/client'
import { positions } from '../../../db/postgres/schema'
import { decodeNewestFix, type EncodedFixRow, FLAG_UNLOCATABLE, type PositionReads } from '../positions'

const locatable = sql`(${positions.flags} & ${sql.raw(String(FLAG_UNLOCATABLE))}) = 0`

export function createPostgresPositionReads(database: Pick<PostgresHandle, 'db' | 'sql'>): PositionReads {
  const { db } = database
  const inWindow = (deviceKey: number, from: number, to: number) => and(eq(positions.device, deviceKey), between(positions.ts, from, to))
  return {
    async newestValid(deviceKey) {
      const [row] = await db
        .select({ ts: positions.ts, lat: positions.lat, lon: positions.lon, speed: positions.speed, course: positions.course })
        .from(positions)
        .where(and(eq(positions.device, deviceKey), locatable))
        .orderBy(desc(positions.ts))
        .limit(1)
      return row ? decodeNewestFix(row) : null
    },
    async fixesIn(deviceKey, from, to, limit) {
      // the history's bulk read: a week at 1 Hz is 37 of these. Rows as arrays straight from the
      // driver, in EncodedFixRow's order (no object a row), by a statement prepared once a connection
      const rows = await database.sql`
        SELECT ts, lat, lon, speed, flags FROM positions
        WHERE device = ${deviceKey} AND ts BETWEEN ${from} AND ${to}
        ORDER BY ts LIMIT ${limit}`.values()
      return rows as unknown as EncodedFixRow[]
    },
    async countIn(deviceKey, from, to) {
      const [row] = await db.select({ n: count() }).from(positions).where(inWindow(deviceKey, from, to))
      return row?.n ?? 0
    },
  }
}
