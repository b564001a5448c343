/**
 * A real HTTP round trip: a fake Nominatim on 127.0.0.1, asked by the geocoder's default fetch;
 * and the process-wide request budget, counted by what the server sees.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Server } from 'bun'
import { createGeocoder, DEFAULT_USER_AGENT } from '../../src/geocode/index.ts'

const seen: { path: string; query: Record<string, string>; userAgent: string | null }[] = []
let releaseStalled: () => void = () => {}
const stalled = new Promise<void>((resolve) => (releaseStalled = resolve))
/** /held/reverse answers when the test says so */
let releaseHeld: () => void = () => {}
let held = new Promise<void>((resolve) => (releaseHeld = resolve))
/** the budget tests leave it to the limits under test */
const UNLIMITED = { intervalMs: 0, maxInFlight: 100 }
const LIVERPOOL = { latitude: 53.4046, longitude: -2.9958 }
/** n distinct points near Liverpool (distinct to the 5th decimal: no cache hit, no shared request) */
const near = (n: number) => Array.from({ length: n }, (_, i) => ({ latitude: LIVERPOOL.latitude + i / 1000, longitude: LIVERPOOL.longitude }))
const seenUnder = (prefix: string) => seen.filter((s) => s.path.startsWith(prefix)).length
let server: Server<undefined>
let base: string

beforeAll(() => {
  server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const url = new URL(request.url)
      seen.push({ path: url.pathname, query: Object.fromEntries(url.searchParams), userAgent: request.headers.get('user-agent') })
      const lat = Number(url.searchParams.get('lat'))
      if (url.pathname.endsWith('/stalled/reverse')) {
        await stalled
        return Response.json({ error: 'too late' })
      }
      if (url.pathname.endsWith('/held/reverse')) await held
      if (url.pathname.endsWith('/broken/reverse')) return new Response('Internal Server Error', { status: 500 })
      if (!url.pathname.endsWith('/reverse')) return new Response('not found', { status: 404 })
      if (lat < 0) return Response.json({ error: 'Unable to geocode' })
      return Response.json({
        place_id: 42,
        display_name: 'Pier Head, Liverpool, England, L3 1BY, United Kingdom',
        address: { road: 'Pier Head', city: 'Liverpool', country: 'United Kingdom', country_code: 'gb' },
      })
    },
  })
  base = `http://127.0.0.1:${server.port}`
})

afterAll(() => {
  releaseStalled()
  releaseHeld()
  server.stop(true)
})

test('a street address from the service', async () => {
  const geocoder = createGeocoder({ ...UNLIMITED, url: `${base}/nominatim/` })
  expect(await geocoder.reverse(53.4046, -2.9958)).toBe('Pier Head, Liverpool, GB')
  expect(seen.at(-1)).toEqual({
    path: '/nominatim/reverse',
    query: { format: 'jsonv2', lat: '53.4046', lon: '-2.9958', zoom: '18', addressdetails: '1' },
    userAgent: DEFAULT_USER_AGENT,
  })
})

test('answered from the cache the second time', async () => {
  const geocoder = createGeocoder({ ...UNLIMITED, url: base })
  const before = seen.length
  await geocoder.reverse(53.4046, -2.9958)
  await geocoder.reverse(53.4046, -2.9958)
  expect(seen.length - before).toBe(1)
})

test('the offline answer when the service cannot geocode, fails, or does not answer in time', async () => {
  expect(await createGeocoder({ ...UNLIMITED, url: base }).reverse(-45, -40)).toBe('Grytviken, GS') // South Atlantic
  expect(await createGeocoder({ ...UNLIMITED, url: `${base}/broken` }).reverse(53.4046, -2.9958)).toBe('Liverpool, GB')
  expect(await createGeocoder({ ...UNLIMITED, url: `${base}/stalled`, timeoutMs: 100 }).reverse(53.4046, -2.9958)).toBe('Liverpool, GB')
})

test('a batch over HTTP', async () => {
  const geocoder = createGeocoder({ ...UNLIMITED, url: base, concurrency: 2 })
  const answers = await geocoder.addresses(
    [
      { latitude: 53.4, longitude: -2.99 },
      { latitude: -45, longitude: -40 },
      { latitude: 53.41, longitude: -2.98 },
    ],
    { deadlineMs: 10_000 },
  )
  expect(answers).toEqual(['Pier Head, Liverpool, GB', 'Grytviken, GS', 'Pier Head, Liverpool, GB'])
})

test('by default at most one request a second for the whole process: a burst asks once, the rest is answered offline at once', async () => {
  // two geocoders, as two apps in one process would have: one budget
  const first = createGeocoder({ url: `${base}/rated` })
  const second = createGeocoder({ url: `${base}/rated` })
  const points = near(20)
  const answers = await Promise.all(points.map((p, i) => (i % 2 ? second : first).reverse(p.latitude, p.longitude)))
  expect(seenUnder('/rated/')).toBe(1)
  expect(answers[0]).toBe('Pier Head, Liverpool, GB')
  expect(answers.slice(1)).toEqual(points.slice(1).map((p) => first.reverseOffline(p.latitude, p.longitude)))
  // a batch over budget is answered too, without waiting for a slot
  const batch = await second.addresses(near(5), { deadlineMs: 60_000 })
  expect(batch).toHaveLength(5)
  expect(seenUnder('/rated/')).toBeLessThanOrEqual(2)
})

test('at most maxInFlight requests wait for the service; a slot comes back when one is answered', async () => {
  const geocoder = createGeocoder({ url: `${base}/held`, intervalMs: 0, maxInFlight: 2, timeoutMs: 10_000 })
  const points = near(10)
  const lookups = points.map((p) => geocoder.reverse(p.latitude, p.longitude))
  // all but the first two are answered offline while those two still wait for the service
  expect(await Promise.all(lookups.slice(2))).toEqual(points.slice(2).map((p) => geocoder.reverseOffline(p.latitude, p.longitude)))
  while (seenUnder('/held/') < 2) await Bun.sleep(1)
  expect(seenUnder('/held/')).toBe(2)
  releaseHeld()
  expect(await Promise.all(lookups.slice(0, 2))).toEqual(['Pier Head, Liverpool, GB', 'Pier Head, Liverpool, GB'])
  held = Promise.resolve()
  expect(await geocoder.reverse(points[5].latitude, points[5].longitude)).toBe('Pier Head, Liverpool, GB')
  expect(seenUnder('/held/')).toBe(3)
})
