import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../../src/config'
import { RECORDINGS_CREDIT, loadTracks, osmandQuery, parseCsv, runDemo } from '../../src/demo'
import { devicePortsOff } from '../support/process'
import { serverDatabase } from '../support/server-database'

test('the embedded recordings are read: bus 304 and the eight Liverpool buses', () => {
  const tracks = loadTracks()
  expect(tracks.length).toBe(9)
  expect(tracks[0]).toMatchObject({ serial: 'demo-bus-304' })
  expect(tracks[0].points.length).toBe(2144)
  expect(tracks[0].points.at(-1)!.offset).toBe(74 * 60 + 36) // 07:45:50 to 09:00:26
  expect(tracks.slice(1).reduce((n, t) => n + t.points.length, 0)).toBe(1533)
  for (const track of tracks) {
    expect(track.points.every((p, i) => i === 0 || p.offset >= track.points[i - 1].offset)).toBe(true)
  }
})

test('CSV fields may be quoted; an OsmAnd query carries speed in knots', () => {
  expect(parseCsv('a,"b",c\n1,"x, ""y""",\n')).toEqual([{ a: '1', b: 'x, "y"', c: '' }])
  // 0.001° of latitude (111.2 m) in 10 s: 11.1 m/s = 21.6 knots, heading north
  const query = new URLSearchParams(
    osmandQuery('bus', { offset: 10, latitude: 52.001, longitude: -8, altitude: 20, bearing: null }, { offset: 0, latitude: 52, longitude: -8, altitude: 20, bearing: null }, 1000),
  )
  expect(Number(query.get('speed'))).toBeCloseTo(21.6, 1)
  expect(query.get('bearing')).toBe('0')
  expect(query.get('timestamp')).toBe('1000')
})

test('the demo replays every fix through OsmAnd into the database', async () => {
  // the demo's database, on the run's engine
  const database = await serverDatabase('demo')
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const osmandPort = probe.port
  probe.stop(true)
  const config = loadConfig({ ...devicePortsOff(), ...database.env, PORT: '0', HOST: '127.0.0.1', OSMAND_PORT: String(osmandPort), LOG_LEVEL: 'silent' })
  const lines: string[] = []
  try {
    const result = await runDemo({ config, speed: 1_000_000, exitWhenDone: true, print: (l) => lines.push(l) })
    expect(result).toEqual({ sent: 3677, refused: 0 })
    expect(lines.some((l) => /API key \(shown once\): \S{16,}/.test(l))).toBe(true)
    expect(lines).toContain(RECORDINGS_CREDIT)
    expect(await database.count('positions')).toBe(3677)
    expect(await database.count('devices', sql`state IN ('moving', 'stopped') AND latitude IS NOT NULL`)).toBe(9)
  } finally {
    await database.close()
  }
}, 30_000)
