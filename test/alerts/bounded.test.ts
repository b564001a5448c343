/**
 * One report's geofence work is bounded (issue 19, item 5), through the ingest pipeline as the
 * server wires it, geofences drawn and events read over the API: past 1,000 geofence events, or
 * once its tests are spent, a report's fixes are no longer tested against geofences but for its
 * newest, which settles where the device is; the next report derives from there; the log says
 * so, a line a minute at most. And with many large polygons, every enter and exit is derived at
 * its fix, as the test of every edge says.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { createGeofenceCache } from '../../src/alerts/cache'
import { MAX_GEOFENCE_EVENTS_PER_REPORT, type RuleFix } from '../../src/alerts/derive'
import { createAlertRules } from '../../src/alerts/rules'
import { LivePositions } from '../../src/ingest/live'
import { createIngestPipeline, type IngestPipeline } from '../../src/ingest/pipeline'
import type { DecodedFix } from '../../src/ingest/types'
import { createLogger } from '../../src/log'
import { crossesEast, onEdge } from '../../src/track/edge-grid'
import { EDGE_TOLERANCE_DEGREES } from '../../src/track/geofence'
import { seededRandom } from '../support/random'
import { type EngineWorld, ids, keys, openWorld } from '../support/world'

let world: EngineWorld
let pipeline: IngestPipeline
let logged: Record<string, unknown>[]

beforeEach(async () => {
  world = await openWorld(undefined, { onGeofencesChanged: (account) => rules.geofencesChanged(account) })
  logged = []
  const log = createLogger('warn', (line) => logged.push(JSON.parse(line)))
  rules = createAlertRules({ states: world.stores.ruleStates, clock: world.clock, geofences: createGeofenceCache({ reads: world.stores.geofenceCache, clock: world.clock }), log })
  pipeline = createIngestPipeline({
    stores: world.stores, clock: world.clock, log, live: new LivePositions(), offlineAfterSeconds: 600, sweepIntervalMs: 0,
    alerts: { rules, wake: () => {} },
  })
})
let rules: ReturnType<typeof createAlertRules>
afterEach(async () => {
  await pipeline.stop()
  await world.close()
})

const IN = { latitude: 48.85, longitude: 2.35 }
const OUT = { latitude: 48.9, longitude: 2.35 }
const T0 = () => Math.floor(world.clock.now() / 1000) - 7200

const fix = (timestamp: number, where: { latitude: number; longitude: number }): DecodedFix => ({
  timestamp, ...where, speed: 20, course: 0, altitude: 30, satellites: 9, valid: true, attributes: {},
})

async function draw(name: string, area: object): Promise<string> {
  const res = await world.call('POST', '/geofences', { token: keys.dana, body: { name, area } })
  expect(res.status).toBe(201)
  return ((await res.json()) as { id: string }).id
}

interface Listed {
  alarm_code: string
  timestamp: number
  context: { geofence?: string }
}

async function geofenceEvents(from: number, to: number): Promise<Listed[]> {
  const res = await world.call('GET', `/devices/${ids.truck1}/history/events?from=${from}&to=${to}`, { token: keys.alice })
  expect(res.status).toBe(200)
  return ((await res.json()) as Listed[]).filter((e) => e.alarm_code.startsWith('geofence_'))
}

const boundedLines = () => logged.filter((line) => String(line.msg).startsWith('geofence work bounded'))

describe('a report that would derive more than 1,000 geofence events', () => {
  test('derives the first 1,000; its later fixes are settled at its newest, and the next report derives from there', async () => {
    await draw('Gate', { type: 'Circle', center: [IN.latitude, IN.longitude], radius: 200 })
    await draw('Yard', { type: 'Circle', center: [IN.latitude, IN.longitude], radius: 300 })
    const t0 = T0()
    // in and out of both at every fix: 2,000 crossings in one report
    const fixes = Array.from({ length: 1000 }, (_, i) => fix(t0 + i, i % 2 === 0 ? IN : OUT))
    await pipeline.ingest({ uniqueId: 'S-T1', fixes, events: [] })
    const first = await geofenceEvents(t0 - 60, t0 + 999)
    expect(first).toHaveLength(MAX_GEOFENCE_EVENTS_PER_REPORT)
    // the fixes up to the 500th derived them, at their own seconds (a second pair moved a second back)
    expect(Math.max(...first.map((e) => e.timestamp))).toBe(t0 + 499)
    expect(boundedLines()).toHaveLength(1)
    expect(boundedLines()[0]).toMatchObject({ level: 'warn', reports: 1, untested_fixes: 499 })

    // the newest fix (outside) settled the device outside both: the next fix inside enters both
    await pipeline.ingest({ uniqueId: 'S-T1', fixes: [fix(t0 + 1000, IN)], events: [] })
    const next = await geofenceEvents(t0 + 999, t0 + 1000)
    expect(next.map((e) => e.alarm_code)).toEqual(['geofence_enter', 'geofence_enter'])
    // a line a minute at most
    await pipeline.ingest({ uniqueId: 'S-T1', fixes: Array.from({ length: 1000 }, (_, i) => fix(t0 + 1001 + i, i % 2 === 0 ? OUT : IN)), events: [] })
    expect(boundedLines()).toHaveLength(1)
  })
})

describe('a report whose tests are spent', () => {
  test('against 1,000 geofences, an excursion after a million tests is not seen; the newest fix settles the device', async () => {
    for (let g = 0; g < 1000; g++) await draw(`G${String(g).padStart(4, '0')}`, { type: 'Circle', center: [IN.latitude, IN.longitude], radius: 500 + g })
    const t0 = T0()
    // inside all 1,000 (their enters share a second: how many are stored is not this test's matter)
    await pipeline.ingest({ uniqueId: 'S-T1', fixes: [fix(t0, IN)], events: [] })

    // 1,500 fixes inside all 1,000 (a million tests by the 1,000th), out of all at the 1,200th, back at the 1,201st
    const fixes = Array.from({ length: 1500 }, (_, i) => fix(t0 + 1 + i, i === 1199 ? OUT : IN))
    await pipeline.ingest({ uniqueId: 'S-T1', fixes, events: [] })
    expect(await geofenceEvents(t0 + 1, t0 + 1500)).toEqual([])
    expect(boundedLines()[0]).toMatchObject({ reports: 1 })
    // and the device is still inside them: a fix outside leaves them
    await pipeline.ingest({ uniqueId: 'S-T1', fixes: [fix(t0 + 1501, OUT)], events: [] })
    expect((await geofenceEvents(t0 + 1441, t0 + 1501)).filter((e) => e.alarm_code === 'geofence_exit').length).toBeGreaterThan(0)
    // 1,000 geofences drawn over the API, each its own unit of work: seconds on PostgreSQL on a busy machine
  }, 30_000)
})

describe('many large polygons', () => {
  test('every enter and exit at its fix, as the test of every edge says', async () => {
    const random = seededRandom(5)
    // 40 polygons of 1,000 points overlapping where the device drives: jagged stars and combs
    const rings: number[][][] = []
    for (let p = 0; p < 40; p++) {
      const ring: number[][] = []
      if (p % 4 === 3) {
        const teeth = 249
        const [west, south, width, height] = [2.3 - random() * 0.01, 48.82 - random() * 0.01, 0.1, 0.06]
        const step = width / teeth
        ring.push([west, south], [west + width, south])
        for (let t = teeth - 1; t >= 0; t--) {
          const x = west + t * step
          ring.push([x + step * 0.6, south + 0.005], [x + step * 0.6, south + height], [x + step * 0.1, south + height], [x + step * 0.1, south + 0.005])
        }
        ring.push([west, south + 0.005])
      } else {
        const [lon, lat, radius] = [2.35 + (random() - 0.5) * 0.02, 48.85 + (random() - 0.5) * 0.02, 0.01 + random() * 0.02]
        for (let k = 0; k < 999; k++) {
          const angle = (k / 999) * 2 * Math.PI
          const r = radius * (0.8 + random() * 0.2)
          ring.push([Math.round((lon + r * Math.cos(angle) * 1.5) * 1e7) / 1e7, Math.round((lat + r * Math.sin(angle)) * 1e7) / 1e7])
        }
      }
      rings.push(ring)
    }
    const idOf: string[] = []
    for (const [p, ring] of rings.entries()) idOf.push(await draw(`P${String(p).padStart(2, '0')}`, { type: 'Polygon', coordinates: [[...ring, ring[0]!]] }))

    // a drive across them, a fix a second, some fixes exactly on corners and edges (inside)
    const t0 = T0()
    const drive: RuleFix[] = []
    for (let i = 0; i < 3000; i++) {
      const f = i / 2999
      let latitude = Math.round((48.85 + 0.035 * Math.sin(f * 9 * Math.PI)) * 1e7) / 1e7
      let longitude = Math.round((2.29 + 0.12 * f) * 1e7) / 1e7
      if (i % 97 === 0) [longitude, latitude] = rings[i % 40]![(i * 7) % 999]! as [number, number]
      drive.push({ timestamp: t0 + i, latitude, longitude, speed: 20, valid: true })
    }
    // expected: each fix's geofences by the test of every edge, exits then enters, in geofence order
    const insideOf = (lat: number, lon: number) => rings.map((ring) => {
      let inside = false
      for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
        const [xi, yi] = ring[i]! as [number, number]
        const [xj, yj] = ring[j]! as [number, number]
        if (onEdge(xi, yi, xj, yj, lon, lat, EDGE_TOLERANCE_DEGREES)) return true
        if (crossesEast(xi, yi, xj, yj, lon, lat)) inside = !inside
      }
      return inside
    })
    const expected: [string, number, string][] = []
    let was = rings.map(() => false)
    for (const f of drive) {
      const now = insideOf(f.latitude, f.longitude)
      now.forEach((inside, p) => { if (was[p] && !inside) expected.push(['geofence_exit', f.timestamp, idOf[p]!]) })
      now.forEach((inside, p) => { if (!was[p] && inside) expected.push(['geofence_enter', f.timestamp, idOf[p]!]) })
      was = now
    }
    expect(expected.length).toBeGreaterThan(300)

    // the rules as ingest calls them, a report of 100 fixes at a time (each under 1,000 events)
    const device = await world.deviceKey(ids.truck1)
    const derived: [string, number, string][] = []
    for (let from = 0; from < drive.length; from += 100) {
      const events = await world.ingestUnit([device], () => rules.onFixes(device, drive.slice(from, from + 100)))
      for (const e of events) if (e.alarmCode.startsWith('geofence_')) derived.push([e.alarmCode, e.timestamp, e.context.geofence as string])
    }
    expect(derived).toEqual(expected)
    expect(boundedLines()).toEqual([])
    // 40 polygons of 1,000 points tested edge by edge for the expectation: seconds of CPU on a busy machine
  }, 30_000)
})
