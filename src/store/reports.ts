/**
 * What the reports read that no other store answers: a window's fixes with every column (the
 * route report: course, altitude, satellites, attributes), the fixes that may be a location only.
 * Trips, stops and summaries read through the positions store as the history API does.
 */
import { and, asc, between, count, eq, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { DatabaseHandle } from '../../db/client'
import { positions } from '../../db/schema'
import { FLAG_UNLOCATABLE } from './positions'

/** A fix as stored (coordinates and speed encoded with positions.ts's scales). */
export interface ReportFixRow {
  ts: number
  lat: number
  lon: number
  speed: number | null
  course: number | null
  altitude: number | null
  satellites: number | null
  /** JSON text, or null */
  attributes: string | null
}

export interface ReportReads {
  /** Up to `limit` of the device's fixes that may be a location (FLAG_UNLOCATABLE clear) in the window (Unix seconds, both inclusive), oldest first. */
  locatableFixesIn(deviceKey: number, from: number, to: number, limit: number): Promise<ReportFixRow[]>
  /** How many such fixes the window holds. */
  locatableCountIn(deviceKey: number, from: number, to: number): Promise<number>
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
  return {
    locatableFixesIn: async (device, from, to, limit) => fixes.all({ device, from, to, limit }),
    locatableCountIn: async (device, from, to) => counted.get({ device, from, to })?.n ?? 0,
  }
}
