/**
 * A device's history over a window: its stored fixes handed to track/ for stops and travels,
 * travel places named by the geocoder, and its events. Access goes through the one access
 * function; a share link also needs the matching permission.
 *
 * Memory is bounded per request: fixes are read in chunks straight into columns (33 bytes a fix,
 * no object per fix), the route is written out a chunk at a time (route-body.ts), and each user
 * or share link may have HISTORY_REQUESTS_PER_PRINCIPAL route or travels requests in flight.
 */
import type { Database } from 'bun:sqlite'
import type { DeviceAccess } from '../devices/access'
import { requireDevice } from '../devices/service'
import { Invalid } from '../errors'
import type { Geocoder } from '../geocode'
import type { Principal } from '../principal'
import { PERMISSION, requirePermission } from '../share/permissions'
import { createEventStore, eventBody } from '../store/events'
import { COORDINATE_SCALE, createPositionStore, FLAG_UNLOCATABLE, SPEED_SCALE, type EncodedFixRow } from '../store/positions'
import { allocateColumns, analyseTrack, fillMissingSpeedColumn, selectColumns, truncateColumns, type TrackAnalysis, type TrackColumns } from '../track'
import { createInFlightLimit } from './limit'
import { MAX_RANGE_SECONDS, type EventBody, type TravelBody } from './model'
import { nextTurn, routeBody } from './route-body'

export interface HistoryServiceDeps {
  sqlite: Database
  access: DeviceAccess
  geocoder: Geocoder
}

/** Route and travels requests one user or share link may have in flight; more are 429. */
export const HISTORY_REQUESTS_PER_PRINCIPAL = 2

/** Fixes read by one statement (about 10 ms); other requests are served between reads. */
export const FIXES_PER_READ = 32_768

/** A window's stored fixes, as columns. */
interface StoredFixes {
  points: TrackColumns
  /** per fix: 1 unless the device itself flagged the fix invalid */
  deviceValid: Uint8Array
  deviceInvalidCount: number
}

export interface Range {
  from: number
  to: number
}

/** `stop_threshold_time` and `gap_threshold_time`, seconds */
export interface Thresholds {
  stopThresholdSeconds: number
  gapThresholdSeconds: number
}

function checkRange({ from, to }: Range): void {
  if (from > to) throw Invalid.field('/from', `must not be after to (${from} > ${to})`)
  if (to - from > MAX_RANGE_SECONDS) throw Invalid.field('/to', `the window may span at most 31 days (${MAX_RANGE_SECONDS} s); got ${to - from} s`)
}

export function createHistoryService({ sqlite, access, geocoder }: HistoryServiceDeps) {
  const limit = createInFlightLimit(HISTORY_REQUESTS_PER_PRINCIPAL)
  const positions = createPositionStore(sqlite)
  const events = createEventStore(sqlite)

  /**
   * Every stored fix in the window, read FIXES_PER_READ at a time (from the last one read on;
   * a fix stored meanwhile before that point is not seen, as if it came after the request).
   */
  async function readFixes(deviceKey: number, range: Range): Promise<StoredFixes> {
    let rows: EncodedFixRow[] = positions.fixesIn(deviceKey, range.from, range.to, FIXES_PER_READ)
    // Sized once: counting the rest costs less than growing and copying (3 ms for a day at 1 Hz).
    let capacity = rows.length
    if (rows.length === FIXES_PER_READ) {
      capacity += positions.countIn(deviceKey, rows[rows.length - 1][0] + 1, range.to)
    }
    let points = allocateColumns(capacity)
    let deviceValid = new Uint8Array(capacity)
    let n = 0
    let deviceInvalidCount = 0
    for (;;) {
      if (n + rows.length > capacity) {
        // written since the count
        capacity = Math.max(2 * capacity, n + rows.length)
        const grown = allocateColumns(capacity)
        grown.timestamp.set(points.timestamp)
        grown.latitude.set(points.latitude)
        grown.longitude.set(points.longitude)
        grown.speed.set(points.speed)
        const grownValid = new Uint8Array(capacity)
        grownValid.set(deviceValid)
        points = grown
        deviceValid = grownValid
      }
      const { timestamp, latitude, longitude, speed } = points
      for (let k = 0; k < rows.length; k++, n++) {
        const row = rows[k]
        timestamp[n] = row[0]
        latitude[n] = row[1] / COORDINATE_SCALE
        longitude[n] = row[2] / COORDINATE_SCALE
        speed[n] = row[3] === null ? Number.NaN : row[3] / SPEED_SCALE
        if (row[4] & FLAG_UNLOCATABLE) deviceInvalidCount++
        else deviceValid[n] = 1
      }
      if (rows.length < FIXES_PER_READ) break
      const after = rows[rows.length - 1][0] + 1
      rows = []
      await nextTurn()
      rows = positions.fixesIn(deviceKey, after, range.to, FIXES_PER_READ)
    }
    return { points: truncateColumns(points, n), deviceValid: deviceValid.subarray(0, n), deviceInvalidCount }
  }

  /** Every stored fix, and the analysis of the fixes the device called valid. */
  async function analyse(deviceKey: number, range: Range, thresholds: Thresholds): Promise<{ points: TrackColumns; analysis: TrackAnalysis }> {
    const { points, deviceValid, deviceInvalidCount } = await readFixes(deviceKey, range)
    const tracked = deviceInvalidCount === 0 ? points : selectColumns(points, deviceValid)
    return { points, analysis: analyseTrack(tracked, thresholds) }
  }

  /**
   * Distances and speeds are not rounded: the travels' distances add up to total_distance
   * exactly, and the route's total_distance is that same sum (movement only).
   */

  return {
    /** The route's JSON body (see route-body.ts); its slot is held until it has been sent. */
    async route(principal: Principal, deviceId: string, range: Range, thresholds: Thresholds): Promise<string | ReadableStream<Uint8Array>> {
      checkRange(range)
      const device = requireDevice(access, principal, deviceId)
      requirePermission(principal, PERMISSION.history)
      const release = limit.acquire(principal)
      try {
        const { points, analysis } = await analyse(device.key, range, thresholds)
        fillMissingSpeedColumn(points)
        const { timestamp, length } = points
        const body = {
          points,
          stops: analysis.stops.map((s) => ({ latitude: s.latitude, longitude: s.longitude, duration: s.duration, start: s.start, end: s.end })),
          total_distance: analysis.totalDistance,
          // every listed point counts here, those the device itself called invalid included
          total_duration: length > 0 ? timestamp[length - 1] - timestamp[0] : 0,
          gaps: analysis.gaps.map((g) => ({ start: g.start, end: g.end, duration: g.duration, displacement: g.displacement })),
        }
        return routeBody(body, release)
      } catch (error) {
        release()
        throw error
      }
    },

    async travels(principal: Principal, deviceId: string, range: Range, thresholds: Thresholds): Promise<TravelBody> {
      checkRange(range)
      const device = requireDevice(access, principal, deviceId)
      requirePermission(principal, PERMISSION.history)
      const release = limit.acquire(principal)
      try {
        const { analysis } = await analyse(device.key, range, thresholds)
        const places = analysis.travels.flatMap((travel) => [travel.start, travel.end])
        const addresses = await geocoder.addresses(places)
        const travels = analysis.travels.map((travel, i) => ({
          start: { latitude: travel.start.latitude, longitude: travel.start.longitude, timestamp: travel.start.timestamp, address: addresses[2 * i] },
          end: { latitude: travel.end.latitude, longitude: travel.end.longitude, timestamp: travel.end.timestamp, address: addresses[2 * i + 1] },
          distance: travel.distance,
          duration: travel.duration,
          max_speed: travel.max_speed,
          avg_speed: travel.avg_speed,
        }))
        return {
          travels,
          total_travels: travels.length,
          total_distance: analysis.totalDistance,
          total_duration: travels.reduce((sum, travel) => sum + travel.duration, 0),
        }
      } finally {
        release()
      }
    },

    events(principal: Principal, deviceId: string, range: Range): EventBody[] {
      checkRange(range)
      const device = requireDevice(access, principal, deviceId)
      requirePermission(principal, PERMISSION.events)
      return events.ofDevice(device.key, range.from, range.to).map(eventBody)
    },
  }
}

export type HistoryService = ReturnType<typeof createHistoryService>
