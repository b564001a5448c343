/**
 * The owner of the positions table: how a fix is encoded in it, the statements that write and
 * read it, and the one "newest valid fix" query. Ingest, import, history, devices and live
 * streams all come through here; nothing else knows the columns' scales or the flags.
 *
 * Encoding (db/schema.ts): latitude and longitude as integers of 1e-7 degrees (1 cm), speed in
 * 0.1 km/h, course and altitude rounded, `flags` bit 0 set when the fix may never become the
 * device's location (the device called it invalid, or it is 0/0), attributes as JSON or NULL.
 *
 * The reads are Drizzle's prepared builder queries: measured in CPU time against the same
 * statements in raw bun:sqlite, a day of 86,400 fixes read as arrays costs the same (5.6–6.0 ms
 * either way) and the newest-fix read 7.2–7.9 against 6.9–7.1 µs. The insert is raw SQL, bound
 * positionally: it is the ingest hot path, and Drizzle's (an object of named values mapped to
 * parameters on every call) cost 7.3–8.3 µs of CPU a fix through the whole pipeline against
 * 5.5–6.5 µs raw (200,000 fixes in reports of 10, 100 devices; scripts/bench/ingest (a) measures
 * the pipeline against a plain batched insert).
 */
import type { Changes, Database } from 'bun:sqlite'
import { and, asc, between, count, desc, eq, inArray, lt, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import * as schema from '../../db/schema'
import { positions } from '../../db/schema'

/** Stored coordinates are integers of 1 / COORDINATE_SCALE degrees. */
export const COORDINATE_SCALE = 1e7
/** Stored speeds are integers of 1 / SPEED_SCALE km/h. */
export const SPEED_SCALE = 10
/** `flags` bit 0: the device said the fix is invalid, or it is the 0/0 placeholder; never a location. */
export const FLAG_UNLOCATABLE = 1

/** A fix as a protocol decoder hands it over (units converted: km/h, degrees, metres, Unix seconds). */
export interface FixToStore {
  timestamp: number
  latitude: number
  longitude: number
  speed?: number | null
  course?: number | null
  altitude?: number | null
  satellites?: number | null
  attributes?: Record<string, unknown>
}

/** A fix as it is stored: one row of positions, without its device. */
export interface EncodedPosition {
  ts: number
  lat: number
  lon: number
  speed: number | null
  course: number | null
  altitude: number | null
  satellites: number | null
  flags: number
  attributes: string | null
}

/** The newest fix that may be a location, decoded. */
export interface NewestFix {
  /** Unix seconds */
  timestamp: number
  latitude: number
  longitude: number
  /** km/h, null when the device sent none */
  speed: number | null
  course: number | null
}

/** A fix read for track analysis: ts, lat, lon (encoded), speed (encoded or null), flags. */
export type EncodedFixRow = [number, number, number, number | null, number]

const finiteOrNull = (value: number | null | undefined): number | null =>
  value === null || value === undefined || !Number.isFinite(value) ? null : value

const roundOrNull = (value: number | null | undefined, scale = 1): number | null => {
  const finite = finiteOrNull(value)
  return finite === null ? null : Math.round(finite * scale)
}

function hasKeys(object: Record<string, unknown> | undefined): boolean {
  if (!object) return false
  for (const _ in object) return true
  return false
}

export const encodeCoordinate = (degrees: number): number => Math.round(degrees * COORDINATE_SCALE)
export const decodeCoordinate = (stored: number): number => stored / COORDINATE_SCALE
export const decodeSpeed = (stored: number | null): number | null => (stored === null ? null : stored / SPEED_SCALE)

/** The newest-fix read's row (ts, lat, lon, speed, course as stored) decoded: both engines' adapters. */
export function decodeNewestFix(row: { ts: number; lat: number; lon: number; speed: number | null; course: number | null }): NewestFix {
  return { timestamp: row.ts, latitude: decodeCoordinate(row.lat), longitude: decodeCoordinate(row.lon), speed: decodeSpeed(row.speed), course: row.course }
}

/** The row for a fix; `locatable` false sets FLAG_UNLOCATABLE. Throws if its attributes cannot be JSON. */
export function encodePosition(fix: FixToStore, locatable: boolean): EncodedPosition {
  return {
    ts: Math.floor(fix.timestamp),
    lat: encodeCoordinate(fix.latitude),
    lon: encodeCoordinate(fix.longitude),
    speed: roundOrNull(fix.speed, SPEED_SCALE),
    course: roundOrNull(fix.course),
    altitude: roundOrNull(fix.altitude),
    satellites: roundOrNull(fix.satellites),
    flags: locatable ? 0 : FLAG_UNLOCATABLE,
    attributes: hasKeys(fix.attributes) ? JSON.stringify(fix.attributes) : null,
  }
}

const placeholder = sql.placeholder

type PositionParameters = [number, number, number, number, number | null, number | null, number | null, number | null, number, string | null]

export function createPositionStore(sqlite: Database) {
  const db = drizzle(sqlite, { schema })
  // a re-sent (device, ts) is a duplicate, not a new row: devices resend buffered data;
  // an import with --upsert replaces what it names
  const columns = '(device, ts, lat, lon, speed, course, altitude, satellites, flags, attributes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'
  // SQLite-only: INSERT OR IGNORE (PostgreSQL: ON CONFLICT (device, ts) DO NOTHING), INSERT OR REPLACE (ON CONFLICT … DO UPDATE)
  const insertOrIgnore = sqlite.query<unknown, PositionParameters>(`INSERT OR IGNORE INTO positions ${columns}`)
  const insertOrReplace = sqlite.query<unknown, PositionParameters>(`INSERT OR REPLACE INTO positions ${columns}`)
  const locatable = sql`(${positions.flags} & ${sql.raw(String(FLAG_UNLOCATABLE))}) = 0`
  const newestValid = db
    .select({ ts: positions.ts, lat: positions.lat, lon: positions.lon, speed: positions.speed, course: positions.course })
    .from(positions)
    .where(and(eq(positions.device, placeholder('device')), locatable))
    .orderBy(desc(positions.ts))
    .limit(1)
    .prepare()
  const inWindow = and(eq(positions.device, placeholder('device')), between(positions.ts, placeholder('from'), placeholder('to')))
  const fixesIn = db
    .select({ ts: positions.ts, lat: positions.lat, lon: positions.lon, speed: positions.speed, flags: positions.flags })
    .from(positions)
    .where(inWindow)
    .orderBy(asc(positions.ts))
    .limit(placeholder('limit'))
    .prepare()
  const countIn = db.select({ n: count() }).from(positions).where(inWindow).prepare()
  // the oldest first, a bounded number at a time: retention keeps each transaction short
  const oldest = db
    .select({ ts: positions.ts })
    .from(positions)
    .where(and(eq(positions.device, placeholder('device')), lt(positions.ts, placeholder('before'))))
    .orderBy(asc(positions.ts))
    .limit(placeholder('limit'))
  const deleteOlder = db.delete(positions).where(and(eq(positions.device, placeholder('device')), inArray(positions.ts, oldest))).prepare()
  const deleteAll = db.delete(positions).where(eq(positions.device, placeholder('device'))).prepare()

  return {
    /** Writes the fix unless its (device, ts) is stored; true when it was written. */
    insert(deviceKey: number, row: EncodedPosition): boolean {
      return insertOrIgnore.run(deviceKey, row.ts, row.lat, row.lon, row.speed, row.course, row.altitude, row.satellites, row.flags, row.attributes).changes > 0
    },
    /** Writes the fix, replacing a stored one at the same (device, ts); true when anything changed. */
    upsert(deviceKey: number, row: EncodedPosition): boolean {
      return insertOrReplace.run(deviceKey, row.ts, row.lat, row.lon, row.speed, row.course, row.altitude, row.satellites, row.flags, row.attributes).changes > 0
    },
    /** The device's newest fix that may be a location (FLAG_UNLOCATABLE clear), or null. */
    newestValid(deviceKey: number): NewestFix | null {
      const row = newestValid.get({ device: deviceKey })
      return row ? decodeNewestFix(row) : null
    },
    /**
     * Up to `limit` fixes of a window (Unix seconds, both inclusive), oldest first, as arrays:
     * arrays cost markedly less than objects for a day of fixes. Decode with the scales above.
     */
    fixesIn(deviceKey: number, from: number, to: number, limit: number): EncodedFixRow[] {
      return fixesIn.values({ device: deviceKey, from, to, limit }) as EncodedFixRow[]
    },
    /** How many fixes a window holds. */
    countIn(deviceKey: number, from: number, to: number): number {
      return countIn.get({ device: deviceKey, from, to })?.n ?? 0
    },
    /** Deletes up to `limit` of the device's oldest fixes before `beforeSeconds` (retention); how many. */
    deleteOlder(deviceKey: number, beforeSeconds: number, limit: number): number {
      return (deleteOlder.run({ device: deviceKey, before: beforeSeconds, limit }) as unknown as Changes).changes
    },
    /** Deletes every fix of the device (the device is deleted); how many. */
    deleteAll(deviceKey: number): number {
      return (deleteAll.run({ device: deviceKey }) as unknown as Changes).changes
    },
  }
}

export type PositionStore = ReturnType<typeof createPositionStore>

/**
 * What services read of positions (devices, history): the store's boundary, answering promises
 * (a PostgreSQL adapter answers the same). The SQLite adapter reads synchronously and answers
 * settled promises. Writers (insert, upsert, the deletes) stay on PositionStore: they run inside
 * other owners' units of work (ingest, import, retention, a device's deletion).
 */
export interface PositionReads {
  /** The device's newest fix that may be a location, or null. */
  newestValid(deviceKey: number): Promise<NewestFix | null>
  /** Up to `limit` fixes of a window (Unix seconds, both inclusive), oldest first, as encoded arrays. */
  fixesIn(deviceKey: number, from: number, to: number, limit: number): Promise<EncodedFixRow[]>
  /** How many fixes a window holds. */
  countIn(deviceKey: number, from: number, to: number): Promise<number>
}

export function createPositionReads(database: { sqlite: Database }): PositionReads {
  const store = createPositionStore(database.sqlite)
  return {
    newestValid: async (deviceKey) => store.newestValid(deviceKey),
    fixesIn: async (deviceKey, from, to, limit) => store.fixesIn(deviceKey, from, to, limit),
    countIn: async (deviceKey, from, to) => store.countIn(deviceKey, from, to),
  }
}
