/**
 * Reports over many devices (contracts/reports.md): which devices a report covers (through the
 * one access function), its period and zone, and its rows — trips and stops read and analysed by
 * the history service itself (analysedWindow: its reader, its track/ analysis), so that a device's
 * distances, durations and counts are the history API's for the same period; events and the route
 * from their stores.
 * Devices are read one at a time, in the report's order: a report holds one device's track at once,
 * each admitted as one of the user's history requests (their in-flight slots, the memory budget).
 */
import type { Clock } from '../clock'
import { type DeviceAccess, isAccountAdmin } from '../devices/access'
import { Forbidden, Invalid, NotFound } from '../errors'
import type { Geocoder } from '../geocode'
import type { HistoryService, Range, ReportReader, Thresholds } from '../history/service'
import type { Principal, UserPrincipal } from '../principal'
import type { EventReads } from '../store/events'
import type { PeopleStore } from '../store/people'
import { COORDINATE_SCALE, SPEED_SCALE } from '../store/positions'
import type { IgnitionChange, ReportReads } from '../store/reports'
import { checkZone, localDaysOf, offsetSeconds } from '../timezone'
import { DEFAULT_GAP_THRESHOLD_SECONDS, DEFAULT_STOP_THRESHOLD_SECONDS } from '../track'
import { garbageWatch } from './garbage'
import type { ReportColumn, ReportDocument, ReportKind, ReportRow } from './types'

/** The longest period of one report: 31 days. */
export const MAX_REPORT_SECONDS = 31 * 86_400
/** The most devices one report covers. */
export const MAX_REPORT_DEVICES = 1000
/** The most rows of a route report. */
export const MAX_ROUTE_ROWS = 100_000
/** Growth of the process while a route is read, above which it is collected (garbage.ts). */
const ROUTE_GROWTH_BYTES = 8 * 1024 * 1024
/** Fixes of a route report read by one statement. */
const ROUTE_ROWS_PER_READ = 5000

export interface ReportQuery {
  kind: ReportKind
  /** device ids; none (with no groups): every device the principal reaches */
  devices: readonly string[]
  groups: readonly string[]
  /** Unix seconds, both inclusive */
  from: number
  to: number
  /** an IANA zone; undefined: the user's own, else UTC */
  tz?: string
  /** stops and trips: the shortest stop, seconds */
  stopThresholdSeconds?: number
  /** summary: a row per device and local day */
  daily?: boolean
  /** events: only these codes */
  codes?: readonly string[]
}

export interface ReportServiceDeps {
  /** each device's window, read and analysed by the history service (its budget and its track/ analysis) */
  history: Pick<HistoryService, 'reportReader'>
  events: Pick<EventReads, 'ofDevice'>
  reports: ReportReads
  access: DeviceAccess
  people: Pick<PeopleStore, 'findGroup' | 'timezoneOf'>
  /** trips' and stops' addresses as the history API's travels name them; events' offline, as GET /events */
  geocoder: Pick<Geocoder, 'addresses' | 'reverseOffline'>
  clock: Clock
}

interface ReportDevice {
  key: number
  id: string
  alias: string
}

/** Devices' windows read and analysed as the history API does (HistoryService.reportReader), with the report's thresholds. */
interface Reader {
  analyse(device: ReportDevice, window: Range): ReturnType<ReportReader['analyse']>
  release(): void
}

/** A kind's rows, and its totals row (null when the kind has none): complete once the rows have been read. */
interface Made {
  rows: Iterable<ReportRow> | AsyncIterable<ReportRow>
  totals(): ReportRow | null
}

/** A summary row as summaryOf makes it (its totals are added up from these). */
type SummaryRow = {
  device: string
  alias: string
  distance_m: number
  driving_s: number
  stopped_s: number
  max_speed_kmh: number | null
  avg_speed_kmh: number
  trips: number
  stops: number
  events: number
  first_fix: number | null
  last_fix: number | null
  odometer_start_m: number | null
  odometer_end_m: number | null
}

const column = (key: string, type: ReportColumn['type'], title: string): ReportColumn => ({ key, type, title })
const DEVICE_COLUMNS = [column('device', 'text', 'Device id'), column('alias', 'text', 'Device')]

/** The columns of each kind, as contracts/reports.md names them, in its order. */
export const REPORT_COLUMNS: Record<ReportKind, readonly ReportColumn[]> = {
  trips: [
    ...DEVICE_COLUMNS,
    column('start', 'time', 'Start'),
    column('end', 'time', 'End'),
    column('duration_s', 'integer', 'Duration (s)'),
    column('distance_m', 'number', 'Distance (m)'),
    column('max_speed_kmh', 'number', 'Max speed (km/h)'),
    column('avg_speed_kmh', 'number', 'Average speed (km/h)'),
    column('start_address', 'text', 'Start address'),
    column('end_address', 'text', 'End address'),
    column('start_location', 'location', 'Start location'),
    column('end_location', 'location', 'End location'),
  ],
  stops: [
    ...DEVICE_COLUMNS,
    column('start', 'time', 'Start'),
    column('end', 'time', 'End'),
    column('duration_s', 'integer', 'Duration (s)'),
    column('location', 'location', 'Location'),
    column('address', 'text', 'Address'),
    column('engine_on_s', 'integer', 'Engine on (s)'),
  ],
  summary: [
    ...DEVICE_COLUMNS,
    column('distance_m', 'number', 'Distance (m)'),
    column('driving_s', 'integer', 'Driving (s)'),
    column('stopped_s', 'integer', 'Stopped (s)'),
    column('max_speed_kmh', 'number', 'Max speed (km/h)'),
    column('avg_speed_kmh', 'number', 'Average speed (km/h)'),
    column('trips', 'integer', 'Trips'),
    column('stops', 'integer', 'Stops'),
    column('events', 'integer', 'Events'),
    column('first_fix', 'time', 'First fix'),
    column('last_fix', 'time', 'Last fix'),
    column('odometer_start_m', 'number', 'Odometer start (m)'),
    column('odometer_end_m', 'number', 'Odometer end (m)'),
  ],
  events: [
    ...DEVICE_COLUMNS,
    column('timestamp', 'time', 'Time'),
    column('code', 'text', 'Event'),
    column('location', 'location', 'Location'),
    column('address', 'text', 'Address'),
    column('context', 'json', 'Details'),
  ],
  route: [
    ...DEVICE_COLUMNS,
    column('timestamp', 'time', 'Time'),
    column('latitude', 'number', 'Latitude'),
    column('longitude', 'number', 'Longitude'),
    column('speed_kmh', 'number', 'Speed (km/h)'),
    column('course', 'integer', 'Course (°)'),
    column('altitude_m', 'integer', 'Altitude (m)'),
    column('satellites', 'integer', 'Satellites'),
    column('attributes', 'json', 'Attributes'),
  ],
}

/** The summary's `day` column, after alias, with `daily=true`. */
const DAY_COLUMN = column('day', 'day', 'Day')

/** km/h from metres over seconds, 0 without time (as track/'s travels reckon avg_speed) */
const kmh = (metres: number, seconds: number): number => (seconds > 0 ? (metres / seconds) * 3.6 : 0)

/** UTF-16 order of text: device aliases, then ids, as the device list orders them */
const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

function requireUser(principal: Principal): UserPrincipal {
  if (principal.kind === 'share') throw new Forbidden('Reports are for users: a share token cannot read them')
  return principal
}

/**
 * At most 31 days of the report's zone, counted on its clocks: a month in which summer time ends
 * is 31 days and an hour of seconds, and is one month all the same (in UTC, plain seconds).
 */
function checkPeriod({ from, to }: Range, tz: string): void {
  if (from > to) throw Invalid.field('/from', `must not be after to (${from} > ${to})`)
  const localSpan = to + offsetSeconds(to, tz) - (from + offsetSeconds(from, tz))
  if (localSpan > MAX_REPORT_SECONDS) {
    throw Invalid.field('/to', `the period may span at most 31 days (${MAX_REPORT_SECONDS} s${tz === 'UTC' ? '' : ` of ${tz}'s clocks`}); got ${localSpan} s`)
  }
}

export function createReportService({ history, events, reports, access, people, geocoder, clock }: ReportServiceDeps) {

  /** The devices named (by id, by group), or every device reached; 404 for anything named out of reach. */
  async function devicesOf(user: UserPrincipal, query: ReportQuery): Promise<ReportDevice[]> {
    const reachable = await access.reachableDevices(user)
    const byId = new Map(reachable.map((d) => [d.id, d]))
    let chosen: ReportDevice[]
    if (query.devices.length === 0 && query.groups.length === 0) {
      chosen = reachable
    } else {
      const picked = new Map<number, ReportDevice>()
      for (const id of query.devices) {
        const device = byId.get(id.toLowerCase())
        if (!device) throw new NotFound(`No device ${id}`)
        picked.set(device.key, device)
      }
      const viewer = { accountId: user.accountId, userId: user.userId, admin: isAccountAdmin(user) }
      for (const id of query.groups) {
        const group = await people.findGroup(viewer, id.toLowerCase())
        if (!group) throw new NotFound(`No group ${id}`)
        for (const deviceId of group.devices) {
          const device = byId.get(deviceId)
          if (device) picked.set(device.key, device)
        }
      }
      chosen = [...picked.values()]
    }
    if (chosen.length > MAX_REPORT_DEVICES) {
      throw new Invalid(`A report covers at most ${MAX_REPORT_DEVICES} devices; these ${chosen.length}: name fewer with devices or groups`)
    }
    return chosen.sort((a, b) => compareText(a.alias, b.alias) || compareText(a.id, b.id))
  }

  async function zoneOf(user: UserPrincipal, tz: string | undefined): Promise<string> {
    if (tz !== undefined) return checkZone(tz, '/tz')
    return (await people.timezoneOf(user.userId))?.timezone ?? 'UTC'
  }


  /**
   * Rows produced device by device as they are read (a file holds one device's rows at a time,
   * never the report's), the reader's slot given back once they have all been read, or when they
   * are abandoned (`return` on the iterator, even before the first row). The first device is read
   * before the answer starts, so that what refuses it (a wait for the memory budget that runs
   * out: 503) is the answer's status rather than a cut body.
   */
  async function byDevice(devices: readonly ReportDevice[], rowsOf: (device: ReportDevice) => Promise<readonly ReportRow[]>, release: () => void): Promise<AsyncIterable<ReportRow>> {
    let first: readonly ReportRow[] = []
    try {
      if (devices.length > 0) first = await rowsOf(devices[0]!)
    } catch (error) {
      release()
      throw error
    }
    return {
      [Symbol.asyncIterator]() {
        const rows = (async function* () {
          try {
            yield* first
            for (let i = 1; i < devices.length; i++) yield* await rowsOf(devices[i]!)
          } finally {
            release()
          }
        })()
        return {
          next: () => rows.next(),
          return: () => {
            release()
            return rows.return(undefined)
          },
        }
      },
    }
  }

  async function trips(devices: readonly ReportDevice[], range: Range, reader: Reader): Promise<Made> {
    let distance = 0
    let duration = 0
    let maxSpeed: number | null = null
    const rows = await byDevice(devices, async (device) => {
      const { analysis } = await reader.analyse(device, range)
      const addresses = await geocoder.addresses(analysis.travels.flatMap((travel) => [travel.start, travel.end]))
      return analysis.travels.map((travel, i) => {
        distance += travel.distance
        duration += travel.duration
        maxSpeed = Math.max(maxSpeed ?? 0, travel.max_speed)
        return {
          device: device.id,
          alias: device.alias,
          start: travel.start.timestamp,
          end: travel.end.timestamp,
          duration_s: travel.duration,
          distance_m: travel.distance,
          max_speed_kmh: travel.max_speed,
          avg_speed_kmh: travel.avg_speed,
          start_address: addresses[2 * i],
          end_address: addresses[2 * i + 1],
          start_location: [travel.start.latitude, travel.start.longitude],
          end_location: [travel.end.latitude, travel.end.longitude],
        }
      })
    }, reader.release)
    const totals = () => ({ ...emptyRow('trips'), duration_s: duration, distance_m: distance, max_speed_kmh: maxSpeed, avg_speed_kmh: kmh(distance, duration) })
    return { rows, totals }
  }

  async function stops(devices: readonly ReportDevice[], range: Range, reader: Reader): Promise<Made> {
    let duration = 0
    let engineOn: number | null = null
    const rows = await byDevice(devices, async (device) => {
      const { analysis } = await reader.analyse(device, range)
      const addresses = await geocoder.addresses(analysis.stops)
      const ignition = analysis.stops.length === 0 ? [] : await reports.ignitionChangesIn(device.key, range.from, range.to)
      return analysis.stops.map((stop, i) => {
        duration += stop.duration
        const engineOnSeconds = ignition.length === 0 ? null : secondsOn(ignition, stop.start, stop.end)
        if (engineOnSeconds !== null) engineOn = (engineOn ?? 0) + engineOnSeconds
        return {
          device: device.id,
          alias: device.alias,
          start: stop.start,
          end: stop.end,
          duration_s: stop.duration,
          location: [stop.latitude, stop.longitude],
          address: addresses[i],
          engine_on_s: engineOnSeconds,
        }
      })
    }, reader.release)
    return { rows, totals: () => ({ ...emptyRow('stops'), duration_s: duration, engine_on_s: engineOn }) }
  }

  /** One summary row: what the history API's travels and route say of the window, and its events. */
  async function summaryOf(device: ReportDevice, range: Range, reader: Reader): Promise<SummaryRow> {
    const { points, analysis } = await reader.analyse(device, range)
    const driving = analysis.travels.reduce((sum, travel) => sum + travel.duration, 0)
    const eventCount = (await events.ofDevice(device.key, range.from, range.to)).length
    const odometer = await reports.odometerIn(device.key, range.from, range.to)
    return {
      device: device.id,
      alias: device.alias,
      distance_m: analysis.totalDistance,
      driving_s: driving,
      stopped_s: analysis.stops.reduce((sum, stop) => sum + stop.duration, 0),
      max_speed_kmh: analysis.travels.length === 0 ? null : Math.max(...analysis.travels.map((travel) => travel.max_speed)),
      avg_speed_kmh: kmh(analysis.totalDistance, driving),
      trips: analysis.travels.length,
      stops: analysis.stops.length,
      events: eventCount,
      first_fix: points.length > 0 ? points.timestamp[0] : null,
      last_fix: points.length > 0 ? points.timestamp[points.length - 1] : null,
      odometer_start_m: odometer.first,
      odometer_end_m: odometer.last,
    }
  }

  async function summary(devices: readonly ReportDevice[], range: Range, reader: Reader, daily: boolean, tz: string): Promise<Made> {
    // the totals, added up row by row in the rows' order as they are produced
    let distance = 0
    let driving = 0
    let stopped = 0
    let tripCount = 0
    let stopCount = 0
    let eventCount = 0
    let maxSpeed: number | null = null
    let firstFix: number | null = null
    let lastFix: number | null = null
    const counted = (row: SummaryRow): SummaryRow => {
      distance += row.distance_m
      driving += row.driving_s
      stopped += row.stopped_s
      tripCount += row.trips
      stopCount += row.stops
      eventCount += row.events
      if (row.max_speed_kmh !== null) maxSpeed = maxSpeed === null ? row.max_speed_kmh : Math.max(maxSpeed, row.max_speed_kmh)
      if (row.first_fix !== null) firstFix = firstFix === null ? row.first_fix : Math.min(firstFix, row.first_fix)
      if (row.last_fix !== null) lastFix = lastFix === null ? row.last_fix : Math.max(lastFix, row.last_fix)
      return row
    }
    const rows = await byDevice(devices, async (device) => {
      if (!daily) return [counted(await summaryOf(device, range, reader))]
      // each local day of the period on its own, as the history API would answer for that day
      const days: ReportRow[] = []
      for (const { day, from, to } of localDaysOf(range.from, range.to, tz)) {
        const { device: id, alias, ...figures } = counted(await summaryOf(device, { from, to }, reader))
        days.push({ device: id, alias, day, ...figures })
      }
      return days
    }, reader.release)
    const totals = () => {
      const row: Record<string, unknown> = {
        ...emptyRow('summary'),
        distance_m: distance,
        driving_s: driving,
        stopped_s: stopped,
        max_speed_kmh: maxSpeed,
        avg_speed_kmh: kmh(distance, driving),
        trips: tripCount,
        stops: stopCount,
        events: eventCount,
        first_fix: firstFix,
        last_fix: lastFix,
      }
      if (daily) row.day = null
      return row
    }
    return { rows, totals }
  }

  async function eventRows(devices: readonly ReportDevice[], range: Range, codes: readonly string[] | undefined): Promise<Made> {
    const wanted = codes && codes.length > 0 ? new Set(codes) : null
    const rows: ReportRow[] = []
    for (const device of devices) {
      for (const event of await events.ofDevice(device.key, range.from, range.to)) {
        if (wanted && !wanted.has(event.alarm_code)) continue
        const located = event.latitude !== null && event.longitude !== null
        rows.push({
          device: device.id,
          alias: device.alias,
          timestamp: event.ts,
          code: event.alarm_code,
          location: located ? [event.latitude, event.longitude] : null,
          address: located ? geocoder.reverseOffline(event.latitude!, event.longitude!) : null,
          context: JSON.parse(event.context),
        })
      }
    }
    return { rows, totals: () => null }
  }

  /** The route's rows, read a chunk at a time as they are written: up to MAX_ROUTE_ROWS, counted first. */
  async function route(devices: readonly ReportDevice[], range: Range): Promise<Made> {
    let total = 0
    for (const device of devices) total += await reports.locatableCountIn(device.key, range.from, range.to)
    if (total > MAX_ROUTE_ROWS) {
      throw new Invalid(`A route report holds at most ${MAX_ROUTE_ROWS} fixes; this one would hold ${total}: choose a shorter period or fewer devices`)
    }
    async function* rows(): AsyncGenerator<ReportRow> {
      const collectIfGrown = garbageWatch(ROUTE_GROWTH_BYTES)
      for (const device of devices) {
        let from = range.from
        for (;;) {
          collectIfGrown()
          const chunk = await reports.locatableFixesIn(device.key, from, range.to, ROUTE_ROWS_PER_READ)
          for (const fix of chunk) {
            yield {
              device: device.id,
              alias: device.alias,
              timestamp: fix.ts,
              latitude: fix.lat / COORDINATE_SCALE,
              longitude: fix.lon / COORDINATE_SCALE,
              speed_kmh: fix.speed === null ? null : fix.speed / SPEED_SCALE,
              course: fix.course,
              altitude_m: fix.altitude,
              satellites: fix.satellites,
              attributes: fix.attributes === null ? null : JSON.parse(fix.attributes),
            }
          }
          if (chunk.length < ROUTE_ROWS_PER_READ) break
          from = chunk[chunk.length - 1]!.ts + 1
        }
      }
    }
    return { rows: rows(), totals: () => null }
  }

  return {
    /** The report the query asks for, or the domain error that refuses it (400, 403, 404). */
    async report(principal: Principal, query: ReportQuery, signal?: AbortSignal): Promise<ReportDocument> {
      const user = requireUser(principal)
      const range = { from: query.from, to: query.to }
      const tz = await zoneOf(user, query.tz)
      checkPeriod(range, tz)
      const devices = await devicesOf(user, query)
      const thresholds: Thresholds = { stopThresholdSeconds: query.stopThresholdSeconds ?? DEFAULT_STOP_THRESHOLD_SECONDS, gapThresholdSeconds: DEFAULT_GAP_THRESHOLD_SECONDS }
      const generatedAt = Math.floor(clock.now() / 1000)
      let made: Made
      if (query.kind === 'events') made = await eventRows(devices, range, query.codes)
      else if (query.kind === 'route') made = await route(devices, range)
      else {
        // one of the user's history slots from here until the rows are read (429 now when taken);
        // no device, nothing to read: no slot (as before, when each device took one in turn)
        const read = devices.length > 0 ? history.reportReader(user, signal) : { analyse: () => Promise.reject(new Error('no device to read')), release: () => {} }
        const reader: Reader = { analyse: (device, window) => read.analyse(device.key, window, thresholds), release: read.release }
        made =
          query.kind === 'trips'
            ? await trips(devices, range, reader)
            : query.kind === 'stops'
              ? await stops(devices, range, reader)
              : await summary(devices, range, reader, query.daily ?? false, tz)
      }
      const columns = query.kind === 'summary' && query.daily ? [...DEVICE_COLUMNS, DAY_COLUMN, ...REPORT_COLUMNS.summary.slice(2)] : REPORT_COLUMNS[query.kind]
      return {
        kind: query.kind,
        columns,
        rows: made.rows,
        // trips', stops' and summaries' totals are added up as their rows are produced: complete once the rows have been read
        get totals() {
          return made.totals()
        },
        period: range,
        tz,
        generatedAt,
      }
    },
  }
}

/**
 * The seconds of [start, end] during which the ignition was on: each reading holds until the next
 * one (the last until the end); the time before the window's first reading is unknown and not counted.
 */
export function secondsOn(changes: readonly IgnitionChange[], start: number, end: number): number {
  let seconds = 0
  for (let i = 0; i < changes.length; i++) {
    const change = changes[i]!
    const until = i + 1 < changes.length ? changes[i + 1]!.ts : Number.POSITIVE_INFINITY
    if (until <= start) continue
    if (change.ts >= end) break
    if (change.on) seconds += Math.min(until, end) - Math.max(change.ts, start)
  }
  return seconds
}

/** A row of the kind's columns, every value null: the start of a totals row. */
function emptyRow(kind: ReportKind): Record<string, unknown> {
  return Object.fromEntries(REPORT_COLUMNS[kind].map((c) => [c.key, null]))
}

export type ReportService = ReturnType<typeof createReportService>
