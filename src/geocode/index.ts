/**
 * Reverse geocoding: coordinates → a human-readable place for travels, stops and events.
 * Offline from the shipped world cities ("Montreuil, FR"); optionally a street address from a
 * Nominatim-compatible service, never waiting longer than its timeout. See geocoder.ts.
 */
export { createGeocoder, DEFAULT_USER_AGENT, type Geocoder, type GeocoderOptions, type LatLon } from './geocoder.ts'
export { Cities, decodeCities, type City } from './cities.ts'
export { CITIES_PBF_PATH, defaultCities, loadCities } from './dataset.ts'
export { createRequestLimiter, DEFAULT_LIMITS, sharedLimiter, type RequestLimiter, type RequestLimits } from './limiter.ts'
export { formatAddress, nominatimReverse, reverseUrl, type FetchLike } from './nominatim.ts'
