import { describe, expect, test } from 'bun:test'
import { createGeocoder, DEFAULT_USER_AGENT, formatAddress, type FetchLike } from '../../src/geocode/index.ts'

// Montreuil town hall; offline, the nearest populated place.
const LAT = 48.8638
const LON = 2.4485
const OFFLINE = 'Montreuil, FR'

const montreuil = {
  place_id: 1,
  display_name: '12, Rue de Paris, Croix de Chavaux, Montreuil, Seine-Saint-Denis, Île-de-France, 93100, France',
  address: { house_number: '12', road: 'Rue de Paris', suburb: 'Croix de Chavaux', city: 'Montreuil', postcode: '93100', country: 'France', country_code: 'fr' },
}

/** A fetch that answers from `respond` and remembers what it was asked. */
function fakeFetch(respond: (url: URL) => Response | Promise<Response> = () => Response.json(montreuil)) {
  const calls: { url: URL; headers: Record<string, string>; signal: AbortSignal }[] = []
  const fetch: FetchLike = async (url, init) => {
    calls.push({ url: new URL(url), headers: init.headers, signal: init.signal })
    return respond(new URL(url))
  }
  return { fetch, calls }
}

/** no spacing and room in flight: these tests are about answers, not the request budget (limiter tests below) */
const UNLIMITED = { intervalMs: 0, maxInFlight: 100 }

const never = () => new Promise<Response>(() => {})

describe('offline only (no GEOCODER_URL)', () => {
  test('reverse is the nearest place, and nothing is fetched', async () => {
    const { fetch, calls } = fakeFetch()
    const geocoder = createGeocoder({ fetch })
    expect(await geocoder.reverse(LAT, LON)).toBe(OFFLINE)
    expect(geocoder.reverseOffline(LAT, LON)).toBe(OFFLINE)
    expect(await geocoder.addresses([{ latitude: LAT, longitude: LON }, { latitude: 53.4075, longitude: -2.9778 }])).toEqual([OFFLINE, 'Liverpool, GB'])
    expect(calls).toHaveLength(0)
  })

  test('rejects what is not a position', async () => {
    const geocoder = createGeocoder()
    await expect(geocoder.reverse(Number.NaN, 0)).rejects.toThrow(RangeError)
    await expect(geocoder.addresses([{ latitude: 0, longitude: 0 }, { latitude: 91, longitude: 0 }])).rejects.toThrow(RangeError)
    expect(() => geocoder.reverseOffline(0, Number.NaN)).toThrow(RangeError)
  })

  test('refuses nonsensical options', () => {
    expect(() => createGeocoder({ timeoutMs: 0 })).toThrow(RangeError)
    expect(() => createGeocoder({ cacheSize: -1 })).toThrow(RangeError)
    expect(() => createGeocoder({ concurrency: Number.NaN })).toThrow(RangeError)
  })
})

describe('online, with an injected fetch', () => {
  test('a street address, asked for with the Nominatim reverse query and a User-Agent', async () => {
    const { fetch, calls } = fakeFetch()
    const geocoder = createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org/', fetch })
    expect(await geocoder.reverse(48.863812345, 2.448498765)).toBe('12 Rue de Paris, Montreuil, FR')
    expect(calls).toHaveLength(1)
    const { url, headers } = calls[0]
    expect(url.origin + url.pathname).toBe('https://nominatim.example.org/reverse')
    expect(Object.fromEntries(url.searchParams)).toEqual({ format: 'jsonv2', lat: '48.86381', lon: '2.4485', zoom: '18', addressdetails: '1' })
    expect(headers['User-Agent']).toBe(DEFAULT_USER_AGENT)
  })

  test('the User-Agent can be set', async () => {
    const { fetch, calls } = fakeFetch()
    await createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org', fetch, userAgent: 'acme-fleet/2 (ops@acme.test)' }).reverse(LAT, LON)
    expect(calls[0].headers['User-Agent']).toBe('acme-fleet/2 (ops@acme.test)')
  })

  test.each([
    ['the service is unreachable', () => Promise.reject(new TypeError('fetch failed'))],
    ['the service answers 500', () => new Response('oops', { status: 500 })],
    ['the body is not JSON', () => new Response('<html>busy</html>', { headers: { 'content-type': 'text/html' } })],
    ['Nominatim cannot geocode the point', () => Response.json({ error: 'Unable to geocode' })],
    ['the payload has no address', () => Response.json({ place_id: 1, address: { country_code: 'fr' } })],
    ['the payload is not an object', () => Response.json(['Montreuil'])],
  ])('falls back to the offline answer when %s', async (_, respond) => {
    const { fetch, calls } = fakeFetch(respond)
    expect(await createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org', fetch }).reverse(LAT, LON)).toBe(OFFLINE)
    expect(calls).toHaveLength(1)
  })

  test('a fetch that never answers: the offline answer arrives at the timeout, and the request is aborted', async () => {
    const { fetch, calls } = fakeFetch(never)
    const geocoder = createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org', fetch, timeoutMs: 50 })
    expect(await geocoder.reverse(LAT, LON)).toBe(OFFLINE)
    expect(calls[0].signal.aborted).toBe(true)
    expect((calls[0].signal.reason as DOMException).name).toBe('TimeoutError')
  })

  test('a cached answer is not fetched again, even a metre away', async () => {
    const { fetch, calls } = fakeFetch()
    const geocoder = createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org', fetch })
    const first = await geocoder.reverse(LAT, LON)
    expect(await geocoder.reverse(LAT, LON)).toBe(first)
    expect(await geocoder.reverse(LAT + 0.000004, LON - 0.000004)).toBe(first) // same 5-decimal key
    expect(calls).toHaveLength(1)
    await geocoder.reverse(LAT + 0.0001, LON)
    expect(calls).toHaveLength(2)
  })

  test('the cache keeps at most cacheSize answers', async () => {
    const { fetch, calls } = fakeFetch()
    const geocoder = createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org', fetch, cacheSize: 1 })
    await geocoder.reverse(LAT, LON)
    await geocoder.reverse(LAT + 1, LON)
    await geocoder.reverse(LAT, LON)
    expect(calls).toHaveLength(3)
  })

  test('a failure is not cached: the next lookup asks again', async () => {
    let fail = true
    const { fetch, calls } = fakeFetch(() => (fail ? new Response('', { status: 503 }) : Response.json(montreuil)))
    const geocoder = createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org', fetch })
    expect(await geocoder.reverse(LAT, LON)).toBe(OFFLINE)
    fail = false
    expect(await geocoder.reverse(LAT, LON)).toBe('12 Rue de Paris, Montreuil, FR')
    expect(calls).toHaveLength(2)
  })

  test('concurrent lookups of one place share one request', async () => {
    let answer: (response: Response) => void = () => {}
    const { fetch, calls } = fakeFetch(() => new Promise<Response>((resolve) => (answer = resolve)))
    const geocoder = createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org', fetch })
    const both = Promise.all([geocoder.reverse(LAT, LON), geocoder.reverse(LAT, LON)])
    await Bun.sleep(0)
    answer(Response.json(montreuil))
    expect(await both).toEqual(['12 Rue de Paris, Montreuil, FR', '12 Rue de Paris, Montreuil, FR'])
    expect(calls).toHaveLength(1)
  })
})

describe('addresses (a batch)', () => {
  const points = Array.from({ length: 9 }, (_, i) => ({ latitude: 48.8 + i / 100, longitude: 2.4 }))

  test('answers in order, with at most `concurrency` requests in flight', async () => {
    let inFlight = 0
    let most = 0
    const { fetch, calls } = fakeFetch(async (url) => {
      most = Math.max(most, ++inFlight)
      await Bun.sleep(1)
      inFlight--
      return Response.json({ address: { road: `Road ${url.searchParams.get('lat')}`, city: 'Somewhere', country_code: 'fr' } })
    })
    const geocoder = createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org', fetch, concurrency: 3 })
    const answers = await geocoder.addresses(points)
    expect(answers).toEqual(points.map((p) => `Road ${Number(p.latitude.toFixed(5))}, Somewhere, FR`))
    expect(calls).toHaveLength(points.length)
    expect(most).toBe(3)
  })

  test('an empty batch is an empty answer', async () => {
    expect(await createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org', fetch: fakeFetch().fetch }).addresses([])).toEqual([])
  })

  test('one deadline for the whole batch: what is not answered by then gets the offline answer', async () => {
    // Requests would wait 20 s each; the 50 ms batch deadline answers first (else the test times out).
    let asked = 0
    const { fetch } = fakeFetch((url) => (++asked === 1 ? Response.json(montreuil) : never()))
    const geocoder = createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org', fetch, timeoutMs: 20_000, concurrency: 2 })
    const answers = await geocoder.addresses([{ latitude: LAT, longitude: LON }, ...points], { deadlineMs: 50 })
    expect(answers[0]).toBe('12 Rue de Paris, Montreuil, FR')
    expect(answers.slice(1)).toEqual(points.map((p) => geocoder.reverseOffline(p.latitude, p.longitude)))
    expect(asked).toBe(3) // the workers stop taking points at the deadline
  }, 5_000)

  test('cached answers come back without asking again', async () => {
    const { fetch, calls } = fakeFetch()
    const geocoder = createGeocoder({ ...UNLIMITED, url: 'https://nominatim.example.org', fetch })
    await geocoder.reverse(LAT, LON)
    expect(await geocoder.addresses([{ latitude: LAT, longitude: LON }, { latitude: LAT, longitude: LON }])).toEqual([
      '12 Rue de Paris, Montreuil, FR',
      '12 Rue de Paris, Montreuil, FR',
    ])
    expect(calls).toHaveLength(1)
  })
})

describe('formatAddress', () => {
  test('house number, street, locality, country code', () => {
    expect(formatAddress(montreuil)).toBe('12 Rue de Paris, Montreuil, FR')
  })

  test('whatever of those there is', () => {
    expect(formatAddress({ address: { road: 'N7', country_code: 'fr' } })).toBe('N7, FR')
    expect(formatAddress({ address: { house_number: '3', village: 'Tarnac', country_code: 'fr' } })).toBe('Tarnac, FR')
    expect(formatAddress({ address: { pedestrian: 'Strøget', city: 'København' } })).toBe('Strøget, København')
    expect(formatAddress({ address: { town: 'Ennis', county: 'County Clare', country_code: 'ie' } })).toBe('Ennis, IE')
  })

  test('display_name when the address has no street or locality', () => {
    expect(formatAddress({ display_name: 'Mont Blanc, France', address: { country_code: 'fr' } })).toBe('Mont Blanc, France')
  })

  test('nothing from an error or a shapeless payload', () => {
    expect(formatAddress({ error: 'Unable to geocode' })).toBeUndefined()
    expect(formatAddress({ address: { country_code: 'fr' } })).toBeUndefined()
    expect(formatAddress({ display_name: '  ', address: 'Montreuil' })).toBeUndefined()
    expect(formatAddress(null)).toBeUndefined()
    expect(formatAddress('Montreuil')).toBeUndefined()
  })
})
