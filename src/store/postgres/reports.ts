/** src/store/reports.ts's reads on PostgreSQL (each names its device and a range of `ts`: only the months spanned are read). */
import { and, asc, between, count, desc, eq, sql } from 'drizzle-orm'
import type { PostgresHandle } from '../../../db/postgres/client'
import { positions } from '../../../db/postgres/schema'
import { FLAG_UNLOCATABLE } from '../positions'
import { ignitionChanges, reportFixColumns, type ReportReads } from '../reports'

export function createPostgresReportReads(database: Pick<PostgresHandle, 'db'>): ReportReads {
  const { db } = database
  const where = (device: number, from: number, to: number) =>
    and(eq(positions.device, device), between(positions.ts, from, to), sql`(${positions.flags} & ${sql.raw(String(FLAG_UNLOCATABLE))}) = 0`)
  return {
    locatableFixesIn: (device, from, to, limit) => db.select(reportFixColumns(positions)).from(positions).where(where(device, from, to)).orderBy(asc(positions.ts)).limit(limit),
    async locatableCountIn(device, from, to) {
      const [row] = await db.select({ n: count() }).from(positions).where(where(device, from, to))
      return row?.n ?? 0
    },
    async ignitionChangesIn(device, from, to) {
      const ignition = sql`(${positions.attributes}::jsonb -> 'ignition')`
      // each reading beside the one before (lag), so that only the changes leave the database
      const readings = db
        .select({
          ts: positions.ts,
          on: sql<boolean>`${ignition} = 'true'::jsonb`.as('reading_on'),
          before: sql<boolean | null>`lag(${ignition} = 'true'::jsonb) OVER (ORDER BY ${positions.ts})`.as('reading_before'),
        })
        .from(positions)
        .where(and(eq(positions.device, device), between(positions.ts, from, to), sql`jsonb_typeof(${ignition}) = 'boolean'`))
        .as('readings')
      const rows = await db
        .select({ ts: readings.ts, on: readings.on })
        .from(readings)
        .where(sql`${readings.before} IS NULL OR ${readings.before} <> ${readings.on}`)
        .orderBy(asc(readings.ts))
      return ignitionChanges(rows)
    },
    async odometerIn(device, from, to) {
      const odometer = sql`(${positions.attributes}::jsonb -> 'odometer')`
      const read = (order: typeof asc) =>
        db
          .select({ value: sql<number>`(${odometer})::text::double precision` })
          .from(positions)
          .where(and(eq(positions.device, device), between(positions.ts, from, to), sql`jsonb_typeof(${odometer}) = 'number'`))
          .orderBy(order(positions.ts))
          .limit(1)
      const [[first], [last]] = [await read(asc), await read(desc)]
      return { first: first === undefined ? null : Number(first.value), last: last === undefined ? null : Number(last.value) }
    },
  }
}
