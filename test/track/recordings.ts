/**
 * Loaders for the real recordings in test/fixtures/tracks (see its README), and an
 * independent haversine to check the module's distances against.
 */
import { Database } from 'bun:sqlite'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import type { TrackPoint } from '../../src/track/types'

export const TRACKS_DIR = path.join(import.meta.dir, '..', 'fixtures', 'tracks')
export const BUS304_GPX = path.join(TRACKS_DIR, 'bus304_limerick_2019-02-18.gpx')
export const BUS304_STOPS_GPKG = path.join(TRACKS_DIR, 'stops_304_to_ul.gpkg')
export const LIVERPOOL_CSV = path.join(TRACKS_DIR, 'liverpool_bus_route14_outbound_2026-01-26.csv')

/** GPX track points (lat, lon, time); GPX carries no speed here, so speed is null. */
export function readGpx(file: string): TrackPoint[] {
  const text = readFileSync(file, 'utf8')
  const points: TrackPoint[] = []
  const trkpt = /<trkpt\b([^>]*)>([\s\S]*?)<\/trkpt>/g
  for (const match of text.matchAll(trkpt)) {
    const lat = /\blat="([^"]+)"/.exec(match[1])
    const lon = /\blon="([^"]+)"/.exec(match[1])
    const time = /<time>([^<]+)<\/time>/.exec(match[2])
    if (!lat || !lon || !time) throw new Error(`incomplete trkpt: ${match[0].slice(0, 80)}`)
    points.push({
      latitude: Number(lat[1]),
      longitude: Number(lon[1]),
      timestamp: Date.parse(time[1]) / 1000,
      speed: null,
    })
  }
  return points
}

export interface NamedPlace {
  id: string
  name: string
  latitude: number
  longitude: number
}

/**
 * Points of a GeoPackage table: the geometry blob is a GP header (magic "GP", version, flags,
 * srs_id int32, then an envelope sized by flags bits 1-3) followed by a WKB Point.
 */
export function readGeoPackagePoints(file: string, table: string): NamedPlace[] {
  const db = new Database(file, { readonly: true })
  try {
    const column = db
      .query<{ column_name: string; srs_id: number }, [string]>(
        'SELECT column_name, srs_id FROM gpkg_geometry_columns WHERE table_name = ?',
      )
      .get(table)
    if (!column) throw new Error(`${table}: no geometry column`)
    if (column.srs_id !== 4326) throw new Error(`${table}: srs ${column.srs_id}, only WGS84 (4326) is handled`)
    const rows = db
      .query<{ stop_id: string; stop_name: string; geom: Uint8Array }, []>(
        `SELECT stop_id, stop_name, "${column.column_name}" AS geom FROM "${table}"`,
      )
      .all()
    return rows.map((row) => {
      const [lon, lat] = decodeGeoPackagePoint(row.geom, column.srs_id)
      return { id: row.stop_id, name: row.stop_name, latitude: lat, longitude: lon }
    })
  } finally {
    db.close()
  }
}

const ENVELOPE_BYTES = [0, 32, 48, 48, 64]

/** [x, y] of a GeoPackage point geometry blob. */
export function decodeGeoPackagePoint(blob: Uint8Array, expectedSrs: number): [number, number] {
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength)
  if (blob[0] !== 0x47 || blob[1] !== 0x50) throw new Error('not a GeoPackage geometry (magic)')
  const flags = blob[3]
  const headerLittleEndian = (flags & 1) === 1
  const srs = view.getInt32(4, headerLittleEndian)
  if (srs !== expectedSrs) throw new Error(`geometry srs ${srs}, column says ${expectedSrs}`)
  const envelope = ENVELOPE_BYTES[(flags >> 1) & 7]
  if (envelope === undefined) throw new Error(`bad envelope code in flags ${flags}`)
  let at = 8 + envelope
  const wkbLittleEndian = blob[at] === 1
  const type = view.getUint32(at + 1, wkbLittleEndian)
  if (type !== 1) throw new Error(`WKB type ${type}, expected Point (1)`)
  at += 5
  return [view.getFloat64(at, wkbLittleEndian), view.getFloat64(at + 8, wkbLittleEndian)]
}

/** Liverpool route 14 fixes grouped by vehicle_id (local time = UTC in January), speed null. */
export function readLiverpoolBuses(file: string): Map<string, TrackPoint[]> {
  const lines = readFileSync(file, 'utf8').split(/\r?\n/).filter((line) => line.length > 0)
  const header = splitCsvLine(lines[0])
  const col = (name: string) => {
    const index = header.indexOf(name)
    if (index < 0) throw new Error(`no column ${name}`)
    return index
  }
  const vehicle = col('vehicle_id')
  const timestamp = col('timestamp')
  const latitude = col('latitude')
  const longitude = col('longitude')
  const buses = new Map<string, TrackPoint[]>()
  for (const line of lines.slice(1)) {
    const cells = splitCsvLine(line)
    const id = cells[vehicle]
    let points = buses.get(id)
    if (!points) buses.set(id, (points = []))
    points.push({
      timestamp: Date.parse(`${cells[timestamp].replace(' ', 'T')}Z`) / 1000,
      latitude: Number(cells[latitude]),
      longitude: Number(cells[longitude]),
      speed: null,
    })
  }
  for (const points of buses.values()) points.sort((a, b) => a.timestamp - b.timestamp)
  return buses
}

/** Enough CSV for this file: quoted cells without embedded quotes or commas. */
function splitCsvLine(line: string): string[] {
  return line.split(',').map((cell) => (cell.startsWith('"') && cell.endsWith('"') ? cell.slice(1, -1) : cell))
}

/** Great-circle distance in metres on the mean-radius sphere; independent of src/track. */
export function haversine(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const rad = Math.PI / 180
  const dLat = (lat2 - lat1) * rad
  const dLon = (lon2 - lon1) * rad
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * Math.sin(dLon / 2) ** 2
  return 2 * 6371008.8 * Math.asin(Math.min(1, Math.sqrt(h)))
}

/** Plain haversine length through every given fix. */
export function haversineLength(points: readonly TrackPoint[]): number {
  let total = 0
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]
    const b = points[i]
    total += haversine(a.latitude, a.longitude, b.latitude, b.longitude)
  }
  return total
}
