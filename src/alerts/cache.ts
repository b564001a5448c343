/**
 * The geofences of each account in memory, ready for the alert rules: prepared areas in a
 * bounding-box index (track/geofence.ts), built the first time an account's device reports and
 * kept until they change.
 *
 * Changes are noticed two ways: `invalidate(accountId)` at once (the API's service calls it after
 * its commit, through the app's `onGeofencesChanged`), and access_version row 5, which triggers
 * bump on any change to `geofences` from any process (checked at most once every
 * `versionCheckMs`). A rebuild re-prepares only the geofences whose area changed, and reads only
 * their areas: a row is told changed by its updated_at (the API moves it on every change, a
 * millisecond on if need be) or its area's length (a hand edit that left updated_at), so a rename
 * among 1,000 polygons of 1,000 points does not read 25 MB again.
 */
import type { Clock } from '../clock'
import { type Logger, silentLogger } from '../log'
import type { GeofenceCacheReads } from '../store/geofences'
import { type Area, areaBoxes, areaContains, type Box, createGeofenceIndex, type GeofenceIndex, type PreparedArea, prepareArea, type WorkMeter } from '../track/geofence'

/** how stale the cache may be after another process changed geofences */
export const VERSION_CHECK_MS = 1000

export interface CachedGeofence {
  id: string
  name: string
  /** empty: every device of the account */
  groups: ReadonlySet<string>
  /** km/h, or null */
  speedLimit: number | null
  area: PreparedArea
}

export interface AccountGeofences {
  readonly all: readonly CachedGeofence[]
  readonly byId: ReadonlyMap<string, CachedGeofence>
  readonly index: GeofenceIndex<CachedGeofence>
  /**
   * The geofences containing the point, in geofence order: the same answer as the index, read
   * through a memo of the candidates of each 0.01° cell the account's devices visit (a fleet
   * stays in few cells), so a fix costs a Map lookup and the exact tests of the few areas whose
   * boxes touch its cell, and allocates nothing when it is in none or in every candidate (the answer is then read-only).
   * `meter.work` grows by what it cost: a unit for each geofence whose box was compared or that
   * was tested, and each polygon edge read (for the rules, which bound a report's work).
   */
  containing(latitude: number, longitude: number, meter?: WorkMeter): readonly CachedGeofence[]
  /** whether any applies to some groups only (else a device's groups need not be read) */
  readonly grouped: boolean
}

/** a geofence's prepared area, and what tells whether its row changed since */
interface Prepared {
  updatedAt: number
  areaLength: number
  area: PreparedArea
}

export interface GeofenceCacheDeps {
  /** the geofence store's reads for the cache (src/store/geofences.ts), synchronous: the cache is built inside ingest's transaction */
  reads: GeofenceCacheReads
  clock: Clock
  log?: Logger
  versionCheckMs?: number
}

export function createGeofenceCache({ reads, clock, log = silentLogger, versionCheckMs = VERSION_CHECK_MS }: GeofenceCacheDeps) {
  const accounts = new Map<string, AccountGeofences>()
  /** prepared areas by account and geofence, with the row's updated_at and area length they were prepared from */
  const prepared = new Map<string, Map<string, Prepared>>()
  let version: number | null = null
  let checkedAt = -Infinity

  function checkVersion(): void {
    const now = clock.now()
    if (now - checkedAt < versionCheckMs) return
    checkedAt = now
    const current = reads.version()
    if (version !== null && current !== version) accounts.clear()
    version = current
  }

  function build(accountId: string): AccountGeofences {
    const before = prepared.get(accountId)
    const after = new Map<string, Prepared>()
    const all: CachedGeofence[] = []
    for (const row of reads.ofAccount(accountId)) {
      let entry = before?.get(row.id)
      if (entry === undefined || entry.updatedAt !== row.updatedAt || entry.areaLength !== row.areaLength) {
        try {
          const text = reads.areaOf(row.id)
          if (text === undefined) continue // deleted meanwhile (another process)
          entry = { updatedAt: row.updatedAt, areaLength: row.areaLength, area: prepareArea(JSON.parse(text) as Area) }
        } catch (error) {
          // only a hand-edited row can get here (the API checks every area): skip it, keep deriving the rest
          log.warn('geofence skipped: its area cannot be used', { geofence: row.id, error: (error as Error).message })
          continue
        }
      }
      after.set(row.id, entry)
      const groups = new Set<string>(JSON.parse(row.groups) as string[])
      all.push({ id: row.id, name: row.name, groups, speedLimit: row.speedLimit, area: entry.area })
    }
    prepared.set(accountId, after)
    let index: GeofenceIndex<CachedGeofence> | null = null
    return {
      all,
      byId: new Map(all.map((g) => [g.id, g])),
      // built when asked for: the rules read through the cell memo
      get index() {
        index ??= createGeofenceIndex(all.map((g) => ({ area: g.area, value: g })))
        return index
      },
      grouped: all.some((g) => g.groups.size > 0),
      containing: cellMemo(all),
    }
  }

  return {
    /** the account's geofences (built on first use, or after a change) */
    forAccount(accountId: string): AccountGeofences {
      checkVersion()
      let entry = accounts.get(accountId)
      if (entry === undefined) {
        entry = build(accountId)
        accounts.set(accountId, entry)
      }
      return entry
    },

    /** drops one account's geofences (or every account's): rebuilt on next use */
    invalidate(accountId?: string): void {
      if (accountId === undefined) accounts.clear()
      else accounts.delete(accountId)
    },
  }
}

export type GeofenceCache = ReturnType<typeof createGeofenceCache>

/** cells per degree of the candidates memo: 0.01°, about 1.1 km of latitude */
const CELLS_PER_DEGREE = 100
/** cells remembered per account before the memo starts over (each a short array) */
const MAX_MEMO_CELLS = 100_000
/** candidates remembered per account, all cells together, before the memo starts over (8 bytes each: 1,000 geofences as wide as a region would otherwise hold a gigabyte) */
const MAX_MEMO_CANDIDATES = 1_000_000
const NO_GEOFENCES: readonly CachedGeofence[] = []

function cellMemo(all: readonly CachedGeofence[]): AccountGeofences['containing'] {
  const boxes: Box[][] = all.map((g) => areaBoxes(g.area))
  const cells = new Map<number, readonly CachedGeofence[]>()
  let remembered = 0
  /** the geofences found so far for the point being tested (reused: copied only when some, not all, of a cell's contain it) */
  const found: CachedGeofence[] = []
  // a hair wider than the cell, so rounding at its edges never leaves a candidate out (the exact test decides)
  const pad = 1e-9
  function candidates(latCell: number, lonCell: number): readonly CachedGeofence[] {
    const minLat = latCell / CELLS_PER_DEGREE - 90 - pad
    const maxLat = (latCell + 1) / CELLS_PER_DEGREE - 90 + pad
    const minLon = lonCell / CELLS_PER_DEGREE - 180 - pad
    const maxLon = (lonCell + 1) / CELLS_PER_DEGREE - 180 + pad
    const touching: CachedGeofence[] = []
    all.forEach((g, i) => {
      if (boxes[i]!.some((b) => b.minLat <= maxLat && b.maxLat >= minLat && b.minLon <= maxLon && b.maxLon >= minLon)) touching.push(g)
    })
    return touching.length === 0 ? NO_GEOFENCES : touching
  }
  return (latitude, longitude, meter) => {
    if (all.length === 0 || !Number.isFinite(latitude) || !Number.isFinite(longitude)) return NO_GEOFENCES
    const latCell = Math.floor((latitude + 90) * CELLS_PER_DEGREE)
    const lonCell = Math.floor((longitude + 180) * CELLS_PER_DEGREE)
    const key = latCell * (360 * CELLS_PER_DEGREE + 1) + lonCell
    let list = cells.get(key)
    if (list === undefined) {
      list = candidates(latCell, lonCell)
      if (cells.size >= MAX_MEMO_CELLS || remembered + list.length > MAX_MEMO_CANDIDATES) {
        cells.clear()
        remembered = 0
      }
      cells.set(key, list)
      remembered += list.length
      if (meter) meter.work += all.length
    }
    if (meter) meter.work += list.length
    // most often every candidate of the cell or none contains the fix: then no array is made
    let hits = 0
    for (let i = 0; i < list.length; i++) if (areaContains(list[i]!.area, latitude, longitude, meter)) found[hits++] = list[i]!
    if (hits === 0) return NO_GEOFENCES
    if (hits === list.length) return list
    return found.slice(0, hits)
  }
}
