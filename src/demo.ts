/**
 * `tracker demo [--speed N] [--exit]`: a demo fleet that moves. Creates (or updates) an account,
 * a group, an admin user with a fresh API key and a fresh password (both printed, for the API and
 * the console), a model and nine buses — route 304 in Limerick
 * and the eight route-14 buses in Liverpool — then starts the server and replays their real
 * recordings through the OsmAnd protocol over HTTP, as phones running Traccar Client would.
 *
 * Timing: each recording starts when the replay starts; a point recorded t seconds in is sent
 * t / speed seconds after the start, stamped start + t. Fixes keep their recorded spacing, so
 * routes, stops and travels look real, and at speed > 1 their timestamps run ahead of the clock
 * (at most the recording's length, well within the one day the pipeline accepts).
 */
import { openProduct } from './database'
// Text imports, so that `bun build --compile` embeds the recordings and `tracker demo` needs no
// folder. Their sources and terms: test/fixtures/tracks/README.md.
import bus304Gpx from '../test/fixtures/tracks/bus304_limerick_2019-02-18.gpx' with { type: 'text' }
import liverpoolCsv from '../test/fixtures/tracks/liverpool_bus_route14_outbound_2026-01-26.csv' with { type: 'text' }
import type { Config } from './config'
import { importDataset } from './dataset/service'
import { generateKey } from './keys/service'
import { hashPassword } from './session/passwords'
import { devicePortsOf } from './ingest/protocols/ports'
import { startServer } from './server'

/** What stops the demo before it starts: no OsmAnd port, a bad speed. */
export class DemoError extends Error {}

export interface TrackPoint {
  /** seconds since the recording's first point */
  offset: number
  latitude: number
  longitude: number
  altitude: number | null
  /** degrees, when the recording has it */
  bearing: number | null
}

export interface Track {
  /** the device serial it is replayed as */
  serial: string
  alias: string
  points: TrackPoint[]
}

/** The texts of the two recordings the demo replays. */
export interface Recordings {
  bus304Gpx: string
  liverpoolCsv: string
}

/** The recordings embedded in this program (and in the compiled binary). */
const EMBEDDED_RECORDINGS: Recordings = { bus304Gpx, liverpoolCsv }

/** Who recorded them, and on what terms: printed with every demo. */
export const RECORDINGS_CREDIT =
  'recordings: bus 304, Limerick, by B.A. MacGabhann (usage restrictions: none); Liverpool route 14 from the UK Bus Open Data Service, Crown copyright, Open Government Licence'

/** GPX track points: lat, lon, ele, time. */
export function parseGpx(text: string): { time: number; latitude: number; longitude: number; altitude: number | null }[] {
  const points = []
  for (const match of text.matchAll(/<trkpt\b([^>]*)>([\s\S]*?)<\/trkpt>/g)) {
    const latitude = Number(/\blat="([^"]+)"/.exec(match[1])?.[1])
    const longitude = Number(/\blon="([^"]+)"/.exec(match[1])?.[1])
    const time = Date.parse(/<time>([^<]+)<\/time>/.exec(match[2])?.[1] ?? '')
    const ele = /<ele>([^<]+)<\/ele>/.exec(match[2])?.[1]
    if (!Number.isFinite(latitude) || !Number.isFinite(longitude) || !Number.isFinite(time)) continue
    points.push({ time: time / 1000, latitude, longitude, altitude: ele === undefined ? null : Number(ele) })
  }
  return points
}

/** A CSV line into fields: commas separate, double quotes may wrap a field ("" is a quote). */
function csvFields(line: string): string[] {
  const fields: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        field += '"'
        i++
      } else if (c === '"') quoted = false
      else field += c
    } else if (c === '"') quoted = true
    else if (c === ',') {
      fields.push(field)
      field = ''
    } else field += c
  }
  fields.push(field)
  return fields
}

/** Rows of a CSV with a header line, as objects keyed by the header's names. */
export function parseCsv(text: string): Record<string, string>[] {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '')
  const header = csvFields(lines[0] ?? '')
  return lines.slice(1).map((line) => {
    const values = csvFields(line)
    return Object.fromEntries(header.map((name, i) => [name, values[i] ?? '']))
  })
}

/** The nine demo buses, from the recordings (the embedded ones unless told otherwise). */
export function loadTracks(recordings: Recordings = EMBEDDED_RECORDINGS): Track[] {
  const tracks: Track[] = []
  const gpx = parseGpx(recordings.bus304Gpx)
  if (gpx.length > 0) {
    tracks.push({
      serial: 'demo-bus-304',
      alias: 'Bus 304 (Limerick)',
      points: gpx.map((p) => ({ offset: p.time - gpx[0].time, latitude: p.latitude, longitude: p.longitude, altitude: p.altitude, bearing: null })),
    })
  }
  // Local times in UK winter time, i.e. UTC. All eight buses share one clock, so that they
  // keep their real spacing along the route.
  const rows = parseCsv(recordings.liverpoolCsv)
    .map((r) => ({ vehicle: r.vehicle_id, time: Date.parse(`${r.timestamp.replace(' ', 'T')}Z`) / 1000, latitude: Number(r.latitude), longitude: Number(r.longitude), bearing: r.bearing === '' ? null : Number(r.bearing) }))
    .filter((r) => r.vehicle && Number.isFinite(r.time) && Number.isFinite(r.latitude) && Number.isFinite(r.longitude))
  const first = Math.min(...rows.map((r) => r.time))
  const vehicles = [...new Set(rows.map((r) => r.vehicle))].sort()
  for (const vehicle of vehicles) {
    const points = rows
      .filter((r) => r.vehicle === vehicle)
      .sort((a, b) => a.time - b.time)
      .map((r) => ({ offset: r.time - first, latitude: r.latitude, longitude: r.longitude, altitude: null, bearing: r.bearing }))
    tracks.push({ serial: `demo-liverpool-${vehicle}`, alias: `Bus 14 #${vehicle} (Liverpool)`, points })
  }
  return tracks
}

const DEMO = {
  account: 'de300000-0000-4000-8000-000000000001',
  group: 'de300000-0000-4000-8000-000000000002',
  user: 'de300000-0000-4000-8000-000000000003',
  model: 'de300000-0000-4000-8000-000000000004',
}
/** the demo admin's sign-in name */
export const DEMO_USER_NAME = 'demo'
const deviceId = (i: number) => `de300000-0000-4000-8000-1000000000${String(i).padStart(2, '0')}`

/** The demo fleet as an import document (docs/import-format.md), for `importDataset` with upsert; `apiKey`: a new key of the demo admin. */
export function demoDataset(tracks: Track[], apiKey?: string) {
  return {
    accounts: [{ id: DEMO.account, name: 'Demo Transit' }],
    groups: [{ id: DEMO.group, account: DEMO.account, name: 'Buses' }],
    users: [{ id: DEMO.user, account: DEMO.account, name: DEMO_USER_NAME, role: 'admin' as const, groups: [DEMO.group], ...(apiKey ? { api_keys: [apiKey] } : {}) }],
    models: [{ id: DEMO.model, name: 'Phone with Traccar Client', protocol: 'osmand' }],
    devices: tracks.map((track, i) => ({
      id: deviceId(i),
      account: DEMO.account,
      model: DEMO.model,
      groups: [DEMO.group],
      alias: track.alias,
      properties: { route: track.serial.includes('304') ? '304' : '14' },
      serial: track.serial,
      imei: '',
      state: 'new' as const,
    })),
  }
}

/** Metres between two points (equirectangular; consecutive fixes are close). */
function metres(a: TrackPoint, b: TrackPoint): number {
  const rad = Math.PI / 180
  const x = (b.longitude - a.longitude) * rad * Math.cos(((a.latitude + b.latitude) / 2) * rad)
  const y = (b.latitude - a.latitude) * rad
  return Math.sqrt(x * x + y * y) * 6_371_008
}

function bearing(a: TrackPoint, b: TrackPoint): number {
  const rad = Math.PI / 180
  const y = Math.sin((b.longitude - a.longitude) * rad) * Math.cos(b.latitude * rad)
  const x = Math.cos(a.latitude * rad) * Math.sin(b.latitude * rad) - Math.sin(a.latitude * rad) * Math.cos(b.latitude * rad) * Math.cos((b.longitude - a.longitude) * rad)
  return (Math.atan2(y, x) / rad + 360) % 360
}

/** One OsmAnd request's query: speed in knots (the protocol's unit), from the previous point. */
export function osmandQuery(serial: string, point: TrackPoint, previous: TrackPoint | null, timestamp: number): string {
  const params = new URLSearchParams({ id: serial, lat: point.latitude.toFixed(7), lon: point.longitude.toFixed(7), timestamp: String(timestamp) })
  if (previous && point.offset > previous.offset) {
    const metresPerSecond = metres(previous, point) / (point.offset - previous.offset)
    params.set('speed', (metresPerSecond * 1.943844).toFixed(2))
    params.set('bearing', String(Math.round(point.bearing ?? bearing(previous, point))))
  } else if (point.bearing !== null) params.set('bearing', String(point.bearing))
  if (point.altitude !== null) params.set('altitude', String(point.altitude))
  return params.toString()
}

export interface DemoOptions {
  config: Config
  /** replay speed-up, > 0 */
  speed: number
  /** the buses to replay; default: the embedded recordings */
  tracks?: Track[]
  /** stop the server once the replay is done (otherwise it keeps serving until stopped) */
  exitWhenDone: boolean
  print?: (line: string) => void
}

export async function runDemo(options: DemoOptions): Promise<{ sent: number; refused: number }> {
  const print = options.print ?? ((line: string) => console.log(line))
  const { config, speed } = options
  if (!(speed > 0)) throw new DemoError('--speed must be a positive number')
  if (!devicePortsOf(config.env).osmand) throw new DemoError('the demo replays over OsmAnd: OSMAND_PORT must not be 0')
  const tracks = options.tracks ?? loadTracks()

  // a new password at every run, like the key: nothing fixed to guess on a demo left running
  const password = Buffer.from(crypto.getRandomValues(new Uint8Array(12))).toString('base64url')
  const passwordHash = await hashPassword(password)
  const database = await openProduct(config, { purpose: 'command' })
  const key = generateKey()
  try {
    // the fleet and the run's new key, in one unit of work
    await importDataset(database.stores.dataset, demoDataset(tracks, key), { upsert: true })
    // a new password ends the sessions of the last run
    await database.stores.people.replaceDemoPassword(DEMO.user, passwordHash)
  } finally {
    await database.close()
  }

  const server = await startServer(config)
  const api = `http://localhost:${server.port}`
  const osmand = `http://127.0.0.1:${server.ports.osmand}`
  print(`demo fleet: ${tracks.length} buses in group "Buses" (account "Demo Transit")`)
  print(RECORDINGS_CREDIT)
  print(`API key (shown once): ${key}`)
  print(`try: curl -H "Authorization: Bearer ${key}" ${api}/devices`)
  // the console works at any address that reaches the server; APP_URL is the one to name. PORT=0 (tests) has none
  const consoleUrl = new URL(config.appUrl).port === '0' ? api : config.appUrl.replace(/\/+$/, '')
  print(`console: ${consoleUrl}/ — sign in as "${DEMO_USER_NAME}" with password ${password} (shown once; new at every demo run)`)
  print(`replaying ${tracks.reduce((n, t) => n + t.points.length, 0)} fixes at ${speed}× over OsmAnd (${osmand})…`)

  // One timeline across all buses, in the order the points were recorded.
  const timeline = tracks
    .flatMap((track) => track.points.map((point, i) => ({ track, point, previous: i > 0 ? track.points[i - 1] : null })))
    .sort((a, b) => a.point.offset - b.point.offset)
  const startMs = Date.now()
  const startSeconds = Math.floor(startMs / 1000)
  let sent = 0
  let refused = 0
  let stopping = false
  let wakeUp = () => {}
  const stopped = new Promise<void>((resolve) => (wakeUp = resolve))
  const stop = () => {
    stopping = true
    wakeUp()
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  try {
    for (const { track, point, previous } of timeline) {
      if (stopping) break
      const due = startMs + (point.offset * 1000) / speed
      const wait = due - Date.now()
      if (wait > 0) await Promise.race([Bun.sleep(wait), stopped])
      if (stopping) break
      const query = osmandQuery(track.serial, point, previous, startSeconds + Math.round(point.offset))
      try {
        const response = await fetch(`${osmand}/?${query}`)
        if (response.ok) sent++
        else refused++
      } catch {
        refused++
      }
      if ((sent + refused) % 500 === 0) print(`  ${sent + refused} of ${timeline.length} sent`)
    }
    print(`replay done: ${sent} fixes accepted, ${refused} refused`)
    if (!options.exitWhenDone && !stopping) {
      print('still serving; Ctrl-C stops')
      await stopped
    }
  } finally {
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
    await server.stop()
  }
  return { sent, refused }
}
