/**
 * The geocoder services use: offline always, online when an operator configures a
 * Nominatim-compatible URL (GEOCODER_URL), with the offline answer whenever the online one fails
 * or the process's request budget for the service (limiter.ts) is spent.
 */
import { LRUCache } from 'lru-cache'
import { checkCoordinates, type Cities } from './cities.ts'
import { defaultCities } from './dataset.ts'
import { DEFAULT_LIMITS, sharedLimiter, type RequestLimiter } from './limiter.ts'
import { nominatimReverse, type FetchLike } from './nominatim.ts'

export interface GeocoderOptions {
  /** Nominatim-compatible base URL; none (the default) means offline only */
  url?: string | null
  /** per online request, default 1500 ms; also the default deadline of `addresses` */
  timeoutMs?: number
  fetch?: FetchLike
  /** online answers kept, by coordinates rounded to 5 decimals (about 1 m); default 10,000 */
  cacheSize?: number
  userAgent?: string
  /** online requests in flight at once during `addresses`, default 4 (and never more than maxInFlight) */
  concurrency?: number
  /**
   * minimum time between two online requests, default 1000 (Nominatim's policy: 1 a second);
   * 0 leaves only maxInFlight. A lookup over budget gets the offline answer at once.
   */
  intervalMs?: number
  /** online requests waiting for their answer at once, default 2 */
  maxInFlight?: number
  /** the budget to draw on; default the process-wide one for this service and these limits */
  limiter?: RequestLimiter
  /** the offline index; default the shipped world cities, decoded at first use */
  cities?: Cities | (() => Cities)
}

export interface LatLon {
  latitude: number
  longitude: number
}

export interface Geocoder {
  /** A street address from the online service if configured and it answers in time, else `reverseOffline`. */
  reverse(lat: number, lon: number): Promise<string>
  /** "City, CC" of the nearest populated place, e.g. "Montreuil, FR". Microseconds after the first call. */
  reverseOffline(lat: number, lon: number): string
  /**
   * `reverse` for many points, in order, `concurrency` at a time, all answered within one
   * deadline (default `timeoutMs`): points not geocoded online by then get the offline answer.
   */
  addresses(points: readonly LatLon[], options?: { deadlineMs?: number }): Promise<string[]>
}

export const DEFAULT_USER_AGENT = 'fleet-tracker/0.1 (self-hosted GPS tracking server)'

export function createGeocoder(options: GeocoderOptions = {}): Geocoder {
  const base = options.url ? options.url.replace(/\/+$/, '') : null
  const timeoutMs = positive('timeoutMs', options.timeoutMs ?? 1500)
  const limiter = options.limiter ?? (base ? sharedLimiter(base, { intervalMs: options.intervalMs ?? DEFAULT_LIMITS.intervalMs, maxInFlight: options.maxInFlight ?? DEFAULT_LIMITS.maxInFlight }) : null)
  // more workers than requests allowed in flight would only answer offline sooner
  const concurrency = Math.min(Math.floor(positive('concurrency', options.concurrency ?? 4)), limiter?.limits.maxInFlight ?? Infinity)
  const userAgent = options.userAgent ?? DEFAULT_USER_AGENT
  const fetchImpl: FetchLike = options.fetch ?? ((url, init) => fetch(url, init))
  const source = options.cities
  let cities: Cities | undefined = typeof source === 'function' ? undefined : source
  const cache = new LRUCache<string, string>({ max: Math.floor(positive('cacheSize', options.cacheSize ?? 10_000)) })
  /** requests in flight by cache key, so concurrent lookups of one place ask the service once */
  const inFlight = new Map<string, Promise<string | undefined>>()

  function reverseOffline(lat: number, lon: number): string {
    cities ??= typeof source === 'function' ? source() : defaultCities()
    return cities.label(lat, lon)
  }

  async function reverse(lat: number, lon: number): Promise<string> {
    checkCoordinates(lat, lon)
    if (!base) return reverseOffline(lat, lon)
    const key = `${lat.toFixed(5)},${lon.toFixed(5)}`
    const cached = cache.get(key)
    if (cached !== undefined) return cached
    let pending = inFlight.get(key)
    if (!pending) {
      // over budget: the offline answer now, rather than a queue that grows with the traffic
      const release = limiter!.tryAcquire()
      if (release === null) return reverseOffline(lat, lon)
      pending = nominatimReverse({ base, lat: Number(lat.toFixed(5)), lon: Number(lon.toFixed(5)), timeoutMs, userAgent, fetch: fetchImpl })
      inFlight.set(key, pending)
      pending.then((address) => {
        // nominatimReverse settles within timeoutMs and never rejects: the slot always comes back
        release()
        inFlight.delete(key)
        // Only answers are cached: after a failure the next lookup asks again.
        if (address !== undefined) cache.set(key, address)
      })
    }
    return (await pending) ?? reverseOffline(lat, lon)
  }

  async function addresses(points: readonly LatLon[], { deadlineMs = timeoutMs }: { deadlineMs?: number } = {}): Promise<string[]> {
    for (const point of points) checkCoordinates(point.latitude, point.longitude)
    const answers: (string | undefined)[] = new Array(points.length)
    if (base && points.length > 0) {
      let next = 0
      let expired = false
      const worker = async () => {
        while (!expired && next < points.length) {
          const i = next++
          answers[i] = await reverse(points[i].latitude, points[i].longitude)
        }
      }
      let timer: ReturnType<typeof setTimeout> | undefined
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, positive('deadlineMs', deadlineMs))
      })
      const workers = Array.from({ length: Math.min(concurrency, points.length) }, worker)
      // Requests still running at the deadline finish on their own (within timeoutMs) and fill the cache.
      await Promise.race([Promise.all(workers), deadline])
      expired = true
      clearTimeout(timer)
    }
    return points.map((point, i) => answers[i] ?? reverseOffline(point.latitude, point.longitude))
  }

  return { reverse, reverseOffline, addresses }
}

function positive(name: string, value: number): number {
  if (!(value > 0) || !Number.isFinite(value)) throw new RangeError(`${name} must be a positive number, got ${value}`)
  return value
}
