/**
 * A device's history over a window: its stored fixes handed to track/ for stops and travels,
 * travel places named by the geocoder, and its events. Access goes through the one access
 * function; a share link also needs the matching permission.
 *
 * Memory is bounded per request: fixes are read in chunks straight into columns (33 bytes a fix,
 * no object per fix), the route is written out a chunk at a time (route-body.ts), each user (their
 * keys, sessions and share links together) may have HISTORY_REQUESTS_PER_PRINCIPAL route or
 * travels requests in flight, and the process as a whole a memory budget of them (limit.ts).
 */
import type { DeviceAccess } from '../devices/access'
import { requireDevice } from '../devices/service'
import { Invalid } from '../errors'
import type { Geocoder } from '../geocode'
import type { Principal } from '../principal'
import { PERMISSION, requirePermission } from '../share/permissions'
import { eventBody, type EventReads } from '../store/events'
import { COORDINATE_SCALE, FLAG_UNLOCATABLE, SPEED_SCALE, type EncodedFixRow, type PositionReads } from '../store/positions'
import { allocateColumns, analyseTrackInPasses, fillMissingSpeedColumn, selectColumns, truncateColumns, type TrackAnalysis, type TrackColumns } from '../track'
import { BYTES_PER_FIX_IN_FLIGHT, createInFlightLimit, createMemoryBudget } from './limit'
import { MAX_RANGE_SECONDS, type EventBody, type TravelBody } from './model'
import { nextTurn, routeBody } from './route-body'
import { createStepTurns } from './turns'

export interface HistoryServiceDeps {
  positions: Pick<PositionReads, 'fixesIn' | 'countIn'>
  events: Pick<EventReads, 'ofDevice'>
  access: DeviceAccess
  geocoder: Geocoder
  /** bytes the route and travels requests in flight may hold together (HISTORY_MEMORY_MB); default DEFAULT_HISTORY_MEMORY_BYTES */
  memoryBytes?: number
  /** how long a request may wait for the memory budget; default MAX_HISTORY_WAIT_MS */
  maxWaitMs?: number
}

/** Route and travels requests one user may have in flight (their keys, sessions and share links together); more are 429. */
export const HISTORY_REQUESTS_PER_PRINCIPAL = 2

/** The process' history memory budget by default: two 31-day routes of a fix every 5 s at once. */
export const DEFAULT_HISTORY_MEMORY_BYTES = 64 * 1024 * 1024

/** Requests that may wait for the memory budget; more are 503 (each user has at most HISTORY_REQUESTS_PER_PRINCIPAL waiting). */
export const MAX_HISTORY_WAITING = 64

/** How long one may wait for it, then 503: half the server's idle timeout (10 s). */
export const MAX_HISTORY_WAIT_MS = 5000

/** Fixes read by one statement (about 5 ms, 20 under load); other requests are served between reads. */
export const FIXES_PER_READ = 16_384

/** A window's fixes are counted this many seconds at a time (a day: under 3 ms at 1 Hz). */
const COUNT_SLICE_SECONDS = 86_400

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

function checkRange({ from, to }: Range, maxSeconds = MAX_RANGE_SECONDS): void {
  if (from > to) throw Invalid.field('/from', `must not be after to (${from} > ${to})`)
  if (to - from > maxSeconds) throw Invalid.field('/to', `the window may span at most 31 days (${maxSeconds} s); got ${to - from} s`)
}

/**
 * A report's window: the report service counts its 31 days on the report zone's clocks, so a
 * month in which summer time ends is longer in seconds (by an hour; two in Antarctica/Troll).
 */
const MAX_REPORT_WINDOW_SECONDS = MAX_RANGE_SECONDS + 2 * 3600

/** A report's reader of many devices' windows (HistoryService.reportReader). */
export interface ReportReader {
  /** the device's window (the device already decided through the access function): every stored fix, and the analysis of those the device called valid */
  analyse(deviceKey: number, range: Range, thresholds: Thresholds): Promise<{ points: TrackColumns; analysis: TrackAnalysis }>
  /** gives the slot back; later calls do nothing */
  release(): void
}

export function createHistoryService({ positions, events, access, geocoder, memoryBytes = DEFAULT_HISTORY_MEMORY_BYTES, maxWaitMs = MAX_HISTORY_WAIT_MS }: HistoryServiceDeps) {
  const limit = createInFlightLimit(HISTORY_REQUESTS_PER_PRINCIPAL)
  const memory = createMemoryBudget({ maxBytes: memoryBytes, maxWaiting: MAX_HISTORY_WAITING, maxWaitMs })
  const turns = createStepTurns()

  /**
   * Takes one of the principal's slots (429 when they are taken), counts the window's fixes and
   * waits for the memory they will cost (503 when too many wait). The release gives both back.
   */
  async function admit(principal: Principal, deviceKey: number, range: Range, signal?: AbortSignal): Promise<{ fixes: number; release: () => void }> {
    const releaseSlot = limit.acquire(principal)
    try {
      const fixes = await countFixes(deviceKey, range)
      const releaseMemory = await memory.reserve(fixes * BYTES_PER_FIX_IN_FLIGHT, signal)
      let released = false
      return {
        fixes,
        release: () => {
          if (released) return
          released = true
          releaseMemory()
          releaseSlot()
          // a large window leaves tens of MB of garbage: collected soon, on a turn of its own
          turns.sent(fixes * BYTES_PER_FIX_IN_FLIGHT)
        },
      }
    } catch (error) {
      releaseSlot()
      throw error
    }
  }

  /**
   * How many fixes the window holds, counted a day at a time with a turn of the event loop
   * between: a 31-day count is 10–90 ms, and eight arriving at once were a 100 ms stall.
   */
  async function countFixes(deviceKey: number, range: Range): Promise<number> {
    let fixes = 0
    for (let from = range.from; from <= range.to; from += COUNT_SLICE_SECONDS) {
      if (from > range.from) await nextTurn()
      fixes += await positions.countIn(deviceKey, from, Math.min(range.to, from + COUNT_SLICE_SECONDS - 1))
    }
    return fixes
  }

  /**
   * Every stored fix in the window, read FIXES_PER_READ at a time (from the last one read on;
   * a fix stored meanwhile before that point is not seen, as if it came after the request).
   * Sized once from the count `admit` made: counting costs less than growing and copying (3 ms
   * for a day at 1 Hz).
   */
  async function readFixes(deviceKey: number, range: Range, counted: number, admitRead?: () => boolean): Promise<StoredFixes | null> {
    // a window read in one statement is a step too short to queue behind the others: it goes at once
    if (counted > FIXES_PER_READ) await turns.next()
    if (admitRead && !admitRead()) return null
    let rows: EncodedFixRow[] = await positions.fixesIn(deviceKey, range.from, range.to, FIXES_PER_READ)
    let capacity = Math.max(counted, rows.length)
    if (counted === 0 && rows.length === FIXES_PER_READ) {
      // not counted (a report's window): as many as the first read's pace says the window holds,
      // up to four reads' worth (then grown as they come)
      const seconds = rows[rows.length - 1][0] - range.from + 1
      capacity = Math.min(4 * FIXES_PER_READ, Math.ceil((FIXES_PER_READ * (range.to - range.from + 1)) / seconds))
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
      await turns.next()
      if (admitRead && !admitRead()) return null
      rows = await positions.fixesIn(deviceKey, after, range.to, FIXES_PER_READ)
    }
    return { points: truncateColumns(points, n), deviceValid: deviceValid.subarray(0, n), deviceInvalidCount }
  }

  /** Every stored fix, and the analysis of the fixes the device called valid. */
  async function analyse(deviceKey: number, range: Range, counted: number, thresholds: Thresholds): Promise<{ points: TrackColumns; analysis: TrackAnalysis }>
  async function analyse(deviceKey: number, range: Range, counted: number, thresholds: Thresholds, admitRead: () => boolean): Promise<{ points: TrackColumns; analysis: TrackAnalysis } | null>
  async function analyse(deviceKey: number, range: Range, counted: number, thresholds: Thresholds, admitRead?: () => boolean): Promise<{ points: TrackColumns; analysis: TrackAnalysis } | null> {
    const read = await readFixes(deviceKey, range, counted, admitRead)
    if (read === null) return null
    const { points, deviceValid, deviceInvalidCount } = read
    const stepwise = Math.max(counted, points.length) > FIXES_PER_READ
    if (stepwise) await turns.next()
    const tracked = deviceInvalidCount === 0 ? points : selectColumns(points, deviceValid)
    // a pass at a time, each on its own turn, unless the window is small enough for all at once
    const passes = analyseTrackInPasses(tracked, thresholds)
    for (;;) {
      const pass = passes.next()
      if (pass.done) return { points, analysis: pass.value }
      if (stepwise) await turns.next()
    }
  }

  /**
   * Distances and speeds are not rounded: the travels' distances add up to total_distance
   * exactly, and the route's total_distance is that same sum (movement only).
   */

  return {
    /** The route's JSON body (see route-body.ts); its slot is held until it has been sent. */
    async route(principal: Principal, deviceId: string, range: Range, thresholds: Thresholds, signal?: AbortSignal): Promise<string | ReadableStream<Uint8Array>> {
      checkRange(range)
      const device = await requireDevice(access, principal, deviceId)
      requirePermission(principal, PERMISSION.history)
      const { fixes, release } = await admit(principal, device.key, range, signal)
      try {
        const { points, analysis } = await analyse(device.key, range, fixes, thresholds)
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
        return routeBody(body, release, turns.next)
      } catch (error) {
        release()
        throw error
      }
    },

    async travels(principal: Principal, deviceId: string, range: Range, thresholds: Thresholds, signal?: AbortSignal): Promise<TravelBody> {
      checkRange(range)
      const device = await requireDevice(access, principal, deviceId)
      requirePermission(principal, PERMISSION.history)
      const { fixes, release } = await admit(principal, device.key, range, signal)
      try {
        const { analysis } = await analyse(device.key, range, fixes, thresholds)
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

    /**
     * A report's reader (src/reports): one reader over many devices, their windows read and
     * analysed one after the other as route and travels do. It takes one of the principal's slots
     * at once (429 when they are taken) and holds it until `release`. A report reads a hundred
     * windows back to back, so two things differ from route and travels:
     * - a window is not counted first (its count was an eighth of a week's trips report for 100
     *   devices): each read of FIXES_PER_READ fixes takes its share of the memory budget before it
     *   is made, while the budget has room at once (and none wait before it); when it has not, the
     *   shares go back and the window is admitted as route and travels are, counted and reserved
     *   whole (a wait, then 503). Either way the budget holds what the window costs while it is
     *   read and analysed, and gets it back once analysed; a report never waits holding any.
     * - each window analysed is told to `turns.sent` at what it was reckoned (BYTES_PER_FIX_IN_FLIGHT
     *   a fix), as an answer sent is: its garbage (the columns, the rows read while they were
     *   filled, the analysis' arrays) outlives the young generation's collections, and left to the
     *   engine a week's trips file for 100 devices at a fix every 10 s peaked 100–140 MB above idle;
     *   collected every 24 MB of windows, 47–59 MB (`npm run bench -- reports`; the contract's bound
     *   for files is 64 MB).
     */
    reportReader(principal: Principal, signal?: AbortSignal): ReportReader {
      const releaseSlot = limit.acquire(principal)
      return {
        async analyse(deviceKey, range, thresholds) {
          checkRange(range, MAX_REPORT_WINDOW_SECONDS)
          const held: (() => void)[] = []
          const giveBack = () => {
            for (const release of held.splice(0)) release()
          }
          // each read's share taken before it is made, while the budget has room at once
          const admitRead = () => {
            const release = memory.tryReserve(FIXES_PER_READ * BYTES_PER_FIX_IN_FLIGHT)
            if (release) held.push(release)
            return release !== null
          }
          let fixes = 0
          try {
            let analysed = signal?.aborted ? null : await analyse(deviceKey, range, 0, thresholds, admitRead)
            if (analysed === null) {
              // the budget has no room now: what the window took goes back, and it is admitted as
              // route and travels are, counted, by its whole (a wait, then 503)
              giveBack()
              const counted = await positions.countIn(deviceKey, range.from, range.to)
              held.push(await memory.reserve(counted * BYTES_PER_FIX_IN_FLIGHT, signal))
              analysed = await analyse(deviceKey, range, counted, thresholds)
            }
            fixes = analysed.points.length
            return analysed
          } finally {
            giveBack()
            turns.sent(fixes * BYTES_PER_FIX_IN_FLIGHT)
          }
        },
        release: releaseSlot,
      }
    },

    async events(principal: Principal, deviceId: string, range: Range): Promise<EventBody[]> {
      checkRange(range)
      const device = await requireDevice(access, principal, deviceId)
      requirePermission(principal, PERMISSION.events)
      return (await events.ofDevice(device.key, range.from, range.to)).map(eventBody)
    },
  }
}

export type HistoryService = ReturnType<typeof createHistoryService>
