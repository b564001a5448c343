/**
 * A device's history over a window: its stored fixes handed to track/ for stops and travels,
 * travel places named by the geocoder, and its events. Access goes through the one access
 * function; a share link also needs the matching permission.
 */
import type { Database } from 'bun:sqlite'
import type { DeviceAccess } from '../devices/access'
import { requireDevice } from '../devices/service'
import { Invalid } from '../errors'
import type { Geocoder } from '../geocode'
import type { Principal } from '../principal'
import { PERMISSION, requirePermission } from '../share/permissions'
import { analyseTrack, fillMissingSpeeds, type TrackAnalysis, type TrackPoint } from '../track'
import { MAX_RANGE_SECONDS, type EventBody, type RouteBody, type RoutePointBody, type TravelBody } from './model'

export interface HistoryServiceDeps {
  sqlite: Database
  access: DeviceAccess
  geocoder: Geocoder
}

/** ts, lat and lon in 1e-7 degrees, speed in 0.1 km/h or null, flags */
type FixRow = [number, number, number, number | null, number]

export interface Range {
  from: number
  to: number
}

function checkRange({ from, to }: Range): void {
  if (from > to) throw Invalid.field('/from', `must not be after to (${from} > ${to})`)
  if (to - from > MAX_RANGE_SECONDS) throw Invalid.field('/to', `the window may span at most 31 days (${MAX_RANGE_SECONDS} s); got ${to - from} s`)
}

export function createHistoryService({ sqlite, access, geocoder }: HistoryServiceDeps) {
  // values() returns arrays, which is markedly cheaper than objects for a day of fixes
  const fixesIn = sqlite.query<unknown, [number, number, number]>(
    'SELECT ts, lat, lon, speed, flags FROM positions WHERE device = ? AND ts BETWEEN ? AND ? ORDER BY ts',
  )
  const eventsIn = sqlite.query<
    { alarm_code: string; context: string; speed: number | null; satellite: number | null; latitude: number | null; longitude: number | null; mcc: number | null; mnc: number | null; dbm: number | null; ts: number },
    [number, number, number]
  >('SELECT alarm_code, context, speed, satellite, latitude, longitude, mcc, mnc, dbm, ts FROM events WHERE device = ? AND ts BETWEEN ? AND ? ORDER BY ts, id')

  /** Every stored fix as a route point, and the analysis of the fixes the device called valid. */
  function analyse(deviceKey: number, range: Range, stopThresholdSeconds: number): { points: RoutePointBody[]; analysis: TrackAnalysis } {
    const rows = fixesIn.values(deviceKey, range.from, range.to) as unknown as FixRow[]
    const stored: TrackPoint[] = new Array(rows.length)
    let deviceInvalid = 0
    for (let i = 0; i < rows.length; i++) {
      const [ts, lat, lon, speed, flags] = rows[i]
      stored[i] = { latitude: lat / 1e7, longitude: lon / 1e7, speed: speed === null ? null : speed / 10, timestamp: ts }
      if (flags & 1) deviceInvalid++
    }
    const tracked = deviceInvalid === 0 ? stored : stored.filter((_, i) => (rows[i][4] & 1) === 0)
    const analysis = analyseTrack(tracked, { stopThresholdSeconds })
    return { points: fillMissingSpeeds(stored), analysis }
  }

  /**
   * Distances and speeds are not rounded: the travels' distances add up to total_distance
   * exactly, and the route's total_distance is that same sum (movement only).
   */

  return {
    route(principal: Principal, deviceId: string, range: Range, stopThresholdSeconds: number): RouteBody {
      checkRange(range)
      const device = requireDevice(access, principal, deviceId)
      requirePermission(principal, PERMISSION.history)
      const { points, analysis } = analyse(device.key, range, stopThresholdSeconds)
      return {
        points,
        stops: analysis.stops.map((s) => ({ latitude: s.latitude, longitude: s.longitude, duration: s.duration, start: s.start, end: s.end })),
        total_distance: analysis.totalDistance,
        // every listed point counts here, those the device itself called invalid included
        total_duration: points.length > 0 ? points[points.length - 1].timestamp - points[0].timestamp : 0,
      }
    },

    async travels(principal: Principal, deviceId: string, range: Range, stopThresholdSeconds: number): Promise<TravelBody> {
      checkRange(range)
      const device = requireDevice(access, principal, deviceId)
      requirePermission(principal, PERMISSION.history)
      const { analysis } = analyse(device.key, range, stopThresholdSeconds)
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
    },

    events(principal: Principal, deviceId: string, range: Range): EventBody[] {
      checkRange(range)
      const device = requireDevice(access, principal, deviceId)
      requirePermission(principal, PERMISSION.events)
      return eventsIn.all(device.key, range.from, range.to).map((e) => ({
        alarm_code: e.alarm_code,
        context: JSON.parse(e.context),
        speed: e.speed,
        satellite: e.satellite,
        coordinates: e.latitude === null || e.longitude === null ? null : [e.latitude, e.longitude],
        mcc: e.mcc,
        mnc: e.mnc,
        dbm: e.dbm,
        timestamp: e.ts,
      }))
    },
  }
}

export type HistoryService = ReturnType<typeof createHistoryService>
