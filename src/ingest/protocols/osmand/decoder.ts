/**
 * OsmAnd / Traccar Client HTTP protocol: pure parsing of one request into a DecodedReport.
 *
 * Two shapes arrive on the same port:
 *
 * 1. OsmAnd "online tracking" parameters, in the query string (GET) or a form body (POST),
 *    as documented at traccar.org/osmand and sent by the classic Traccar Client:
 *      id | deviceid        device unique id (required)
 *      lat, lon | location  degrees; `location=lat,lon` is the alternative form (required)
 *      timestamp            epoch seconds, epoch milliseconds (> 1e11), ISO 8601, or
 *                           `yyyy-MM-dd HH:mm:ss` (UTC); missing → the injected `now`
 *      speed                KNOTS → km/h (× 1.852)
 *      bearing | heading    degrees
 *      altitude             metres
 *      accuracy, hdop       → attributes accuracy (m), hdop
 *      batt                 → attribute battery_level (%)
 *      charge               → attribute charging (boolean)
 *      valid                false / 0 → fix not valid
 *      alarm                → a DecodedEvent (`alarm=sos` is what the Traccar Client SOS sends); a
 *                           code the product does not list is stored as `alarm`, the value sent
 *                           in the event's context as `raw_alarm` (alarmOf)
 *      anything else        kept as an attribute (numbers and true/false converted)
 *
 * 2. The JSON body of the current Traccar Client (9.x+, built on a background-geolocation
 *    library): `{ device_id, location: { timestamp (ISO), coords: { latitude, longitude, speed
 *    (m/s → km/h × 3.6), heading, altitude, accuracy }, is_moving, odometer, battery: { level
 *    (0..1), is_charging }, activity: { type }, event, extras } }`. The stock client syncs one
 *    location per request (batchSync off); the library's batch mode sends an array under the
 *    same root key, so `location` may also be an array, and a `locations` array is accepted too.
 *
 * `event` (OsmAnd parameter, or the library's motionchange / heartbeat / geofence lifecycle
 * events) is kept as an attribute, not turned into an alarm: those are not alarms. Only
 * `alarm` (parameter, top-level JSON key, or `location.extras.alarm`) makes a DecodedEvent.
 *
 * User input never throws: the result is a discriminated union naming the bad parameter.
 */

import { deviceAlarm, eventAtFix } from '../events'
import type { DecodedEvent, DecodedFix, DecodedReport } from '../../types'

export type OsmandResult =
  | { ok: true; report: DecodedReport }
  | { ok: false; error: { parameter: string; message: string } }

/** A URLSearchParams, or a plain map of already-decoded string parameters. */
export type OsmandParams = URLSearchParams | Readonly<Record<string, string | undefined>>

const KNOTS_TO_KMH = 1.852
const METRES_PER_SECOND_TO_KMH = 3.6
/** Epoch values above this are milliseconds: 1e11 s is the year 5138, 1e11 ms is 1973. */
const MILLISECONDS_THRESHOLD = 1e11
/** Bounds the attributes one request can add (they are stored as JSON with every fix). */
export const OSMAND_MAX_EXTRA_ATTRIBUTES = 64
const MAX_ATTRIBUTE_VALUE_LENGTH = 1024

class InvalidParameter extends Error {
  constructor(
    readonly parameter: string,
    message: string,
  ) {
    super(message)
  }
}

function fail(parameter: string, message: string): never {
  throw new InvalidParameter(parameter, message)
}

function run(body: () => DecodedReport): OsmandResult {
  try {
    return { ok: true, report: body() }
  } catch (error) {
    if (!(error instanceof InvalidParameter)) throw error
    return { ok: false, error: { parameter: error.parameter, message: error.message } }
  }
}

// ---------------------------------------------------------------------------------------------
// Value parsing shared by both shapes
// ---------------------------------------------------------------------------------------------

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/

/** A finite decimal number from a string or a JSON number; hex, '', NaN and Infinity are not. */
function parseNumber(value: unknown, parameter: string): number {
  if (value === undefined || value === null || value === '') fail(parameter, `${parameter} is required`)
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return value
  } else if (typeof value === 'string' && DECIMAL.test(value.trim())) {
    return Number(value.trim())
  }
  fail(parameter, `${parameter} must be a number, got ${JSON.stringify(value)}`)
}

function optionalNumber(value: unknown, parameter: string): number | null {
  if (value === undefined || value === null || value === '') return null
  return parseNumber(value, parameter)
}

function latitudeOf(value: unknown, parameter: string): number {
  const latitude = parseNumber(value, parameter)
  if (latitude < -90 || latitude > 90) fail(parameter, `${parameter} must be within [-90, 90], got ${latitude}`)
  return latitude
}

function longitudeOf(value: unknown, parameter: string): number {
  const longitude = parseNumber(value, parameter)
  if (longitude < -180 || longitude > 180) fail(parameter, `${parameter} must be within [-180, 180], got ${longitude}`)
  return longitude
}

/** Clients send -1 for "unknown" speed and heading (iOS does); that is no value, not an error. */
function nonNegativeOrNull(value: number | null): number | null {
  return value === null || value < 0 ? null : value
}

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?/
const HAS_ZONE = /(Z|[+-]\d{2}:?\d{2})$/i
/** A '+' in an unencoded query string arrives as a space: "…:05 02:00" meant "…:05+02:00". */
const SPACE_FOR_PLUS_OFFSET = / (\d{2}:?\d{2})$/

/**
 * Unix seconds (integer) from epoch seconds, epoch milliseconds, ISO 8601, or
 * `yyyy-MM-dd HH:mm:ss` read as UTC. Missing → `now`.
 */
function timestampOf(value: unknown, parameter: string, now: number): number {
  if (value === undefined || value === null || value === '') return Math.floor(now)
  if (typeof value === 'number' || (typeof value === 'string' && DECIMAL.test(value.trim()))) {
    const epoch = parseNumber(value, parameter)
    if (epoch < 0) fail(parameter, `${parameter} must not be negative`)
    return Math.floor(epoch > MILLISECONDS_THRESHOLD ? epoch / 1000 : epoch)
  }
  if (typeof value === 'string' && ISO_DATE_TIME.test(value.trim())) {
    let text = value.trim()
    if (/^\d{4}-\d{2}-\d{2} /.test(text)) text = text.replace(' ', 'T')
    text = text.replace(SPACE_FOR_PLUS_OFFSET, '+$1')
    // Without a zone, Date.parse would use the server's local time; the protocol means UTC.
    if (!HAS_ZONE.test(text)) text += 'Z'
    const millis = Date.parse(text)
    if (Number.isFinite(millis)) return Math.floor(millis / 1000)
  }
  fail(parameter, `${parameter} must be epoch seconds or milliseconds, ISO 8601, or "yyyy-MM-dd HH:mm:ss"; got ${JSON.stringify(value)}`)
}

function booleanOf(value: unknown, parameter: string): boolean {
  if (typeof value === 'boolean') return value
  if (typeof value === 'number' && (value === 0 || value === 1)) return value === 1
  if (typeof value === 'string') {
    const text = value.trim().toLowerCase()
    if (text === 'true' || text === '1') return true
    if (text === 'false' || text === '0') return false
  }
  fail(parameter, `${parameter} must be true/false or 1/0, got ${JSON.stringify(value)}`)
}

/**
 * Traccar's alarm names (what other OsmAnd senders use, lower_snake_case) that are one of the
 * product's codes under another name; the names that are the same (`sos`, `power_cut`,
 * `low_battery`, `geofence_enter`, …) need no entry.
 */
const ALARM_SYNONYMS: Readonly<Record<string, string>> = {
  fall_down: 'fall',
  accident: 'collision',
  tow: 'towing',
  idle: 'idling',
  hard_acceleration: 'harsh_acceleration',
  hard_braking: 'harsh_braking',
  hard_cornering: 'harsh_cornering',
  tampering: 'tamper',
  removing: 'tamper',
}

/** An alarm as the event stores it: its code, and what its context says of it. */
interface Alarm {
  alarmCode: string
  context: Record<string, unknown>
}

/**
 * "Power Cut" / "powerCut" / "power-cut" → `power_cut`; "hardBraking" → `harsh_braking` (a
 * synonym); a code the product does not list ("fuelTheft") → `alarm` with `raw_alarm:
 * "fuelTheft"`, the value as sent.
 */
function alarmOf(value: unknown, parameter: string): Alarm {
  if (typeof value !== 'string' || value.trim() === '') fail(parameter, `${parameter} must be a non-empty string`)
  const code = value
    .trim()
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
  if (code === '') fail(parameter, `${parameter} ${JSON.stringify(value)} has no letters or digits`)
  return deviceAlarm(Object.hasOwn(ALARM_SYNONYMS, code) ? ALARM_SYNONYMS[code] : code, value.trim())
}

function uniqueIdOf(value: unknown, parameter: string): string {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : typeof value === 'string' ? value.trim() : ''
  if (text === '') fail(parameter, `${parameter} (the device identifier) is required`)
  if (text.length > 128) fail(parameter, `${parameter} is longer than 128 characters`)
  return text
}

/** Query-string values typed: finite decimals → number, true/false → boolean, else the string. */
function typedValue(text: string): string | number | boolean {
  const trimmed = text.trim()
  if (DECIMAL.test(trimmed)) return Number(trimmed)
  if (trimmed === 'true') return true
  if (trimmed === 'false') return false
  return text.length > MAX_ATTRIBUTE_VALUE_LENGTH ? text.slice(0, MAX_ATTRIBUTE_VALUE_LENGTH) : text
}

function makeEvent({ alarmCode, context }: Alarm, fix: DecodedFix): DecodedEvent {
  const { mcc, mnc } = fix.attributes
  return eventAtFix(alarmCode, fix, { mcc: typeof mcc === 'number' ? mcc : null, mnc: typeof mnc === 'number' ? mnc : null, dbm: null }, context)
}

// ---------------------------------------------------------------------------------------------
// OsmAnd parameters (query string or form body)
// ---------------------------------------------------------------------------------------------

/** Parameters read into the fix itself, never copied to attributes. */
const CONSUMED_PARAMS = new Set(['id', 'deviceid', 'lat', 'lon', 'location', 'timestamp', 'speed', 'bearing', 'heading', 'altitude', 'valid'])
/** Parameters kept under a clearer attribute name. */
const RENAMED_PARAMS: Readonly<Record<string, string>> = { batt: 'battery_level', charge: 'charging' }

function paramEntries(params: OsmandParams): Array<[string, string]> {
  if (params instanceof URLSearchParams) return [...params.entries()]
  return Object.entries(params).flatMap(([key, value]) => (value === undefined ? [] : [[key, value] as [string, string]]))
}

/**
 * Decode OsmAnd parameters. `now` (Unix seconds) is used when the request has no timestamp.
 * The first occurrence of a repeated parameter wins, as URLSearchParams.get does.
 */
export function decodeOsmandParams(params: OsmandParams, now: number): OsmandResult {
  return run(() => {
    const values = new Map<string, string>()
    for (const [key, value] of paramEntries(params)) if (!values.has(key)) values.set(key, value)
    const get = (key: string) => values.get(key)

    const idKey = get('id') !== undefined ? 'id' : 'deviceid'
    const uniqueId = uniqueIdOf(get(idKey), idKey)

    let latitude: number
    let longitude: number
    if (get('lat') !== undefined || get('lon') !== undefined) {
      latitude = latitudeOf(get('lat'), 'lat')
      longitude = longitudeOf(get('lon'), 'lon')
    } else if (get('location') !== undefined) {
      const parts = get('location')!.split(',')
      if (parts.length !== 2) fail('location', 'location must be "lat,lon"')
      latitude = latitudeOf(parts[0], 'location')
      longitude = longitudeOf(parts[1], 'location')
    } else {
      fail('lat', 'lat and lon (or location=lat,lon) are required')
    }

    const knots = nonNegativeOrNull(optionalNumber(get('speed'), 'speed'))
    const courseKey = get('bearing') !== undefined ? 'bearing' : 'heading'
    const fix: DecodedFix = {
      timestamp: timestampOf(get('timestamp'), 'timestamp', now),
      latitude,
      longitude,
      speed: knots === null ? null : knots * KNOTS_TO_KMH,
      course: nonNegativeOrNull(optionalNumber(get(courseKey), courseKey)),
      altitude: optionalNumber(get('altitude'), 'altitude'),
      satellites: null,
      valid: get('valid') === undefined || get('valid') === '' ? true : booleanOf(get('valid'), 'valid'),
      attributes: {},
    }

    let extra = 0
    let alarm: Alarm | null = null
    for (const [key, text] of values) {
      if (CONSUMED_PARAMS.has(key)) continue
      if (++extra > OSMAND_MAX_EXTRA_ATTRIBUTES) fail(key, `more than ${OSMAND_MAX_EXTRA_ATTRIBUTES} extra parameters`)
      if (key === 'accuracy' || key === 'hdop' || key === 'batt') {
        const number = optionalNumber(text, key)
        if (number !== null) fix.attributes[RENAMED_PARAMS[key] ?? key] = number
      } else if (key === 'charge') {
        if (text !== '') fix.attributes.charging = booleanOf(text, key)
      } else if (key === 'alarm') {
        if (text.trim() !== '') {
          alarm = alarmOf(text, key)
          fix.attributes.alarm = alarm.alarmCode
        }
      } else if (key !== '__proto__') {
        fix.attributes[key] = typedValue(text)
      }
    }

    const events = alarm ? [makeEvent(alarm, fix)] : []
    return { uniqueId, fixes: [fix], events }
  })
}

// ---------------------------------------------------------------------------------------------
// Traccar Client JSON
// ---------------------------------------------------------------------------------------------

type JsonObject = Record<string, unknown>

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function objectAt(parent: JsonObject, key: string, path: string): JsonObject | null {
  const value = parent[key]
  if (value === undefined || value === null) return null
  if (!isObject(value)) fail(path, `${path} must be an object`)
  return value
}

/** A primitive JSON value worth keeping as an attribute, or undefined. */
function primitive(value: unknown): string | number | boolean | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined
  if (typeof value === 'boolean') return value
  if (typeof value === 'string') return value.length > MAX_ATTRIBUTE_VALUE_LENGTH ? value.slice(0, MAX_ATTRIBUTE_VALUE_LENGTH) : value
  return undefined
}

function decodeJsonLocation(location: unknown, path: string, now: number, topAlarm: Alarm | null): { fix: DecodedFix; alarm: Alarm | null } {
  if (!isObject(location)) fail(path, `${path} must be an object`)
  const coords = objectAt(location, 'coords', `${path}.coords`)
  if (!coords) fail(`${path}.coords`, `${path}.coords with latitude and longitude is required`)

  const metresPerSecond = nonNegativeOrNull(optionalNumber(coords.speed, `${path}.coords.speed`))
  const fix: DecodedFix = {
    timestamp: timestampOf(location.timestamp, `${path}.timestamp`, now),
    latitude: latitudeOf(coords.latitude, `${path}.coords.latitude`),
    longitude: longitudeOf(coords.longitude, `${path}.coords.longitude`),
    speed: metresPerSecond === null ? null : metresPerSecond * METRES_PER_SECOND_TO_KMH,
    course: nonNegativeOrNull(optionalNumber(coords.heading, `${path}.coords.heading`)),
    altitude: optionalNumber(coords.altitude, `${path}.coords.altitude`),
    satellites: null,
    valid: true,
    attributes: {},
  }
  const attributes = fix.attributes

  // extras first: the named fields below win over a same-named extra
  const extras = objectAt(location, 'extras', `${path}.extras`)
  let alarm = topAlarm
  if (extras) {
    let count = 0
    for (const [key, value] of Object.entries(extras)) {
      if (key === 'alarm') {
        if (value !== undefined && value !== null && value !== '') alarm = alarmOf(value, `${path}.extras.alarm`)
        continue
      }
      const kept = primitive(value)
      if (kept === undefined || key === '__proto__') continue
      if (++count > OSMAND_MAX_EXTRA_ATTRIBUTES) fail(`${path}.extras`, `more than ${OSMAND_MAX_EXTRA_ATTRIBUTES} extras`)
      attributes[key] = kept
    }
  }

  const accuracy = optionalNumber(coords.accuracy, `${path}.coords.accuracy`)
  if (accuracy !== null) attributes.accuracy = accuracy
  if (location.is_moving !== undefined && location.is_moving !== null) {
    attributes.movement = booleanOf(location.is_moving, `${path}.is_moving`)
  }
  const odometer = optionalNumber(location.odometer, `${path}.odometer`)
  if (odometer !== null) attributes.odometer = odometer // metres
  const battery = objectAt(location, 'battery', `${path}.battery`)
  if (battery) {
    // level is a fraction 0..1; -1 means unknown
    const level = optionalNumber(battery.level, `${path}.battery.level`)
    if (level !== null && level >= 0) attributes.battery_level = Math.round(level * 100)
    if (battery.is_charging !== undefined && battery.is_charging !== null) {
      attributes.charging = booleanOf(battery.is_charging, `${path}.battery.is_charging`)
    }
  }
  const activity = objectAt(location, 'activity', `${path}.activity`)
  if (activity && typeof activity.type === 'string') attributes.activity = activity.type
  if (typeof location.event === 'string') attributes.event = location.event
  if (location.mock === true) attributes.mock = true
  if (alarm) attributes.alarm = alarm.alarmCode
  return { fix, alarm }
}

/**
 * Decode a Traccar Client JSON body (already parsed). `now` (Unix seconds) stands in for a
 * missing location timestamp.
 */
export function decodeOsmandJson(body: unknown, now: number): OsmandResult {
  return run(() => {
    if (!isObject(body)) fail('body', 'the JSON body must be an object')
    const idKey = body.device_id !== undefined ? 'device_id' : body.id !== undefined ? 'id' : 'deviceid'
    const uniqueId = uniqueIdOf(body[idKey], idKey)
    const topAlarm = body.alarm === undefined || body.alarm === null || body.alarm === '' ? null : alarmOf(body.alarm, 'alarm')

    const key = body.location !== undefined ? 'location' : 'locations'
    const raw = body[key]
    if (raw === undefined || raw === null) fail('location', 'location (an object or an array of them) is required')
    const list = Array.isArray(raw) ? raw : [raw]
    if (list.length === 0) fail(key, `${key} must not be empty`)
    if (list.length > 1000) fail(key, `${key} holds more than 1000 locations`)

    const fixes: DecodedFix[] = []
    const events: DecodedEvent[] = []
    list.forEach((location, index) => {
      const path = Array.isArray(raw) ? `${key}[${index}]` : key
      // A top-level alarm belongs to the request, so to its newest (last) location only.
      const requestAlarm = index === list.length - 1 ? topAlarm : null
      const { fix, alarm } = decodeJsonLocation(location, path, now, requestAlarm)
      fixes.push(fix)
      if (alarm) events.push(makeEvent(alarm, fix))
    })
    return { uniqueId, fixes, events }
  })
}
