/**
 * What the reports read that no other store answers: a window's fixes with every column (the
 * route report: course, altitude, satellites, attributes), the fixes that may be a location only.
 * Trips, stops and summaries read through the positions store as the history API does.
 */
import { and, asc, between, count, desc, eq, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { DatabaseHandle } from '../../db/client'
import { positions } from '../../db/schema'
import { type EncodedPosition, FLAG_UNLOCATABLE } from './positions'

/** A fix as stored (coordinates and speed encoded with positions.ts's scales), without its flags: a report reads locatable fixes only. */
export type ReportFixRow = Omit<EncodedPosition, 'flags'>

export interface ReportReads {
  /** Up to `limit` of the device's fixes that may be a location (FLAG_UNLOCATABLE clear) in the window (Unix seconds, both inclusive), oldest first. */
  locatableFixesIn(deviceKey: number, from: number, to: number, limit: number): Promise<ReportFixRow[]>
  /** How many such fixes the window holds. */
  locatableCountIn(deviceKey: number, from: number, to: number): Promise<number>
  /**
   * The window's fixes (any flag) whose attributes carry a boolean `ignition`, oldest first, as
   * [Unix seconds, on]: only the readings where the state changed (the first always), chosen in
   * the database, so a week of fixes costs a few pairs. Read only for the stops report.
   */
  ignitionChangesIn(deviceKey: number, from: number, to: number): Promise<IgnitionChange[]>
  /** The first and the last numeric `odometer` attribute (metres, as the decoders store it) in the window; null when none. */
  odometerIn(deviceKey: number, from: number, to: number): Promise<{ first: number | null; last: number | null }>
}

/** An ignition reading that differs from the one before it. */
export interface IgnitionChange {
  ts: number
  on: boolean
}

/** Readings oldest first, the repeats dropped (what the database left of them: a change at a tie of times). */
export function ignitionChanges(readings: Iterable<{ ts: number; on: unknown }>): IgnitionChange[] {
  const changes: IgnitionChange[] = []
  for (const { ts, on } of readings) {
    const value = on === true || on === 1 || on === 't'
    if (changes.length === 0 || changes[changes.length - 1]!.on !== value) changes.push({ ts: Number(ts), on: value })
  }
  return changes
}

/** the selection of a ReportFixRow, over either engine's positions table */
export const reportFixColumns = <T extends Record<keyof ReportFixRow, unknown>>(p: T): Pick<T, keyof ReportFixRow> => ({
  ts: p.ts,
  lat: p.lat,
  lon: p.lon,
  speed: p.speed,
  course: p.course,
  altitude: p.altitude,
  satellites: p.satellites,
  attributes: p.attributes,
})

const placeholder = sql.placeholder

export function createReportReads(database: Pick<DatabaseHandle, 'sqlite'>): ReportReads {
  const db = drizzle(database.sqlite)
  const where = and(
    eq(positions.device, placeholder('device')),
    between(positions.ts, placeholder('from'), placeholder('to')),
    sql`(${positions.flags} & ${sql.raw(String(FLAG_UNLOCATABLE))}) = 0`,
  )
  const fixes = db.select(reportFixColumns(positions)).from(positions).where(where).orderBy(asc(positions.ts)).limit(placeholder('limit')).prepare()
  const counted = db.select({ n: count() }).from(positions).where(where).prepare()
  // JSON booleans and numbers only (json_type names them); PostgreSQL: jsonb_typeof over attributes::jsonb
  const inWindow = and(eq(positions.device, placeholder('device')), between(positions.ts, placeholder('from'), placeholder('to')))
  const ignitionType = sql`json_type(${positions.attributes}, '$.ignition')`
  // each reading beside the one before (lag), so that only the changes leave the database
  const readings = db
    .select({
      ts: positions.ts,
      on: sql<number>`${ignitionType} = 'true'`.as('reading_on'),
      before: sql<number | null>`lag(${ignitionType} = 'true') OVER (ORDER BY ${positions.ts})`.as('reading_before'),
    })
    .from(positions)
    .where(and(inWindow, sql`${positions.attributes} IS NOT NULL`, sql`${ignitionType} IN ('true', 'false')`))
    .as('readings')
  const ignition = db
    .select({ ts: readings.ts, on: readings.on })
    .from(readings)
    .where(sql`${readings.before} IS NULL OR ${readings.before} <> ${readings.on}`)
    .orderBy(asc(readings.ts))
    .prepare()
  const odometerWhere = and(inWindow, sql`${positions.attributes} IS NOT NULL`, sql`json_type(${positions.attributes}, '$.odometer') IN ('integer', 'real')`)
  const odometerValue = { value: sql<number>`json_extract(${positions.attributes}, '$.odometer')` }
  const firstOdometer = db.select(odometerValue).from(positions).where(odometerWhere).orderBy(asc(positions.ts)).limit(1).prepare()
  const lastOdometer = db.select(odometerValue).from(positions).where(odometerWhere).orderBy(desc(positions.ts)).limit(1).prepare()
  return {
    locatableFixesIn: async (device, from, to, limit) => fixes.all({ device, from, to, limit }),
    locatableCountIn: async (device, from, to) => counted.get({ device, from, to })?.n ?? 0,
    ignitionChangesIn: async (device, from, to) => ignitionChanges(ignition.all({ device, from, to })),
    odometerIn: async (device, from, to) => ({
      first: firstOdometer.get({ device, from, to })?.value ?? null,
      last: lastOdometer.get({ device, from, to })?.value ?? null,
    }),
  }
}
