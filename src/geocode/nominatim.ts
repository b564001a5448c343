/**
 * The optional online half: one reverse lookup against a Nominatim-compatible service.
 * Nothing here throws; any failure is `undefined`, and the caller falls back to the offline answer.
 */

/** The part of `fetch` we use, so tests can pass a plain function. `globalThis.fetch` fits. */
export type FetchLike = (url: string, init: { headers: Record<string, string>; signal: AbortSignal }) => Promise<Response>

export interface NominatimRequest {
  /** base URL, e.g. "https://nominatim.example.org"; `/reverse` is appended */
  base: string
  lat: number
  lon: number
  timeoutMs: number
  userAgent: string
  fetch: FetchLike
}

export function reverseUrl(base: string, lat: number, lon: number): string {
  const query = new URLSearchParams({
    format: 'jsonv2',
    lat: String(lat),
    lon: String(lon),
    zoom: '18',
    addressdetails: '1',
  })
  return `${base.replace(/\/+$/, '')}/reverse?${query}`
}

/**
 * The address for (lat, lon), or undefined on a network error, a non-2xx answer, a payload without
 * an address, or when `timeoutMs` passes first. It settles within `timeoutMs` even if `fetch`
 * ignores its abort signal, because it races the request against the same timer that aborts it.
 */
export async function nominatimReverse(request: NominatimRequest): Promise<string | undefined> {
  const controller = new AbortController()
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new DOMException('reverse geocoding timed out', 'TimeoutError'))
      resolve(undefined)
    }, request.timeoutMs)
  })
  try {
    return await Promise.race([fetchAddress(request, controller.signal), expired])
  } catch {
    return undefined
  } finally {
    clearTimeout(timer)
  }
}

async function fetchAddress(request: NominatimRequest, signal: AbortSignal): Promise<string | undefined> {
  const response = await request.fetch(reverseUrl(request.base, request.lat, request.lon), {
    headers: { 'User-Agent': request.userAgent, Accept: 'application/json' },
    signal,
  })
  if (!response.ok) {
    await response.body?.cancel()
    return undefined
  }
  return formatAddress(await response.json())
}

type Json = Record<string, unknown>

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function text(object: Json, ...keys: string[]): string | undefined {
  for (const key of keys) {
    const value = object[key]
    if (typeof value === 'string' && value.trim() !== '') return value.trim()
  }
  return undefined
}

/**
 * A compact address from a Nominatim jsonv2 payload: "12 Rue de Paris, Montreuil, FR" from
 * `address` (house number, street, locality, country code), else `display_name`, else undefined
 * (Nominatim answers `{"error": "Unable to geocode"}` out at sea).
 */
export function formatAddress(payload: unknown): string | undefined {
  if (!isObject(payload) || 'error' in payload) return undefined
  const address = isObject(payload.address) ? payload.address : {}
  const road = text(address, 'road', 'pedestrian', 'footway', 'path', 'cycleway')
  const street = road && [text(address, 'house_number'), road].filter(Boolean).join(' ')
  const locality = text(address, 'city', 'town', 'village', 'hamlet', 'municipality', 'suburb', 'county')
  if (street || locality) {
    return [street, locality, text(address, 'country_code')?.toUpperCase()].filter(Boolean).join(', ')
  }
  return text(payload, 'display_name')
}
