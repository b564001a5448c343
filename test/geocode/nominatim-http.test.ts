/** A real HTTP round trip: a fake Nominatim on 127.0.0.1, asked by the geocoder's default fetch. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Server } from 'bun'
import { createGeocoder, DEFAULT_USER_AGENT } from '../../src/geocode/index.ts'

const seen: { path: string; query: Record<string, string>; userAgent: string | null }[] = []
let releaseStalled: () => void = () => {}
const stalled = new Promise<void>((resolve) => (releaseStalled = resolve))
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
  server.stop(true)
})

test('a street address from the service', async () => {
  const geocoder = createGeocoder({ url: `${base}/nominatim/` })
  expect(await geocoder.reverse(53.4046, -2.9958)).toBe('Pier Head, Liverpool, GB')
  expect(seen.at(-1)).toEqual({
    path: '/nominatim/reverse',
    query: { format: 'jsonv2', lat: '53.4046', lon: '-2.9958', zoom: '18', addressdetails: '1' },
    userAgent: DEFAULT_USER_AGENT,
  })
})

test('answered from the cache the second time', async () => {
  const geocoder = createGeocoder({ url: base })
  const before = seen.length
  await geocoder.reverse(53.4046, -2.9958)
  await geocoder.reverse(53.4046, -2.9958)
  expect(seen.length - before).toBe(1)
})

test('the offline answer when the service cannot geocode, fails, or does not answer in time', async () => {
  expect(await createGeocoder({ url: base }).reverse(-45, -40)).toBe('Grytviken, GS') // South Atlantic
  expect(await createGeocoder({ url: `${base}/broken` }).reverse(53.4046, -2.9958)).toBe('Liverpool, GB')
  expect(await createGeocoder({ url: `${base}/stalled`, timeoutMs: 100 }).reverse(53.4046, -2.9958)).toBe('Liverpool, GB')
})

test('a batch over HTTP', async () => {
  const geocoder = createGeocoder({ url: base, concurrency: 2 })
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
