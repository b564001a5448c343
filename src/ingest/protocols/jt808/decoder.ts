/**
 * The JT/T 808 decoder: one checked frame (framing.ts) in, what it means out. Pure.
 *
 * Messages (terminal → platform, JT/T 808-2013 §8 and the 2019 revision):
 *
 *   0x0100 registration       a login: answered 0x8100 (result 0 and an authentication code)
 *   0x0102 authentication     a login: answered 0x8001
 *   0x0002 heartbeat          keeps the device alive: 0x8001
 *   0x0200 location           a fix, its alarms and extras: 0x8001
 *   0x0201 location answer    the answer to a position query (0x8201): a fix and a command answer
 *   0x0704 batch              each item a 0x0200 body: fixes, one 0x8001
 *   0x0001 general response   the terminal's answer to a command: nothing is sent back
 *   anything else             nothing kept; answered 0x8001, which is what the terminal waits for
 *
 * The location body: alarm flags (4), status (4), latitude and longitude (4 each, millionths of a
 * degree; status bits 2 and 3 say south and west), altitude (2, m), speed (2, 0.1 km/h), course
 * (2), time (BCD YYMMDDhhmmss in GMT+8, as the standard says), then additional items, each an id
 * (1), a length (1) and a value: 0x01 mileage (4, 0.1 km), 0x02 fuel (2, 0.1 L), 0x30 signal (1),
 * 0x31 satellites (1), 0x25 extended vehicle signals (4), 0x2A IO status (2), 0x2B analog (4).
 * Items of other ids (vendors' extensions among them) are skipped by their length.
 */
import { OutOfBytes, ByteReader } from '../bytes'
import { deviceAlarm, eventAtFix, eventWithoutFix } from '../events'
import type { DecodedEvent, DecodedFix, DecodedReport } from '../../types'
import type { Jt808Frame } from './framing'
import { buildGeneralResponse, buildRegistrationResponse, REGISTRATION_RESULT, RESULT } from './replies'

export const MESSAGE = {
  generalResponse: 0x0001,
  heartbeat: 0x0002,
  registration: 0x0100,
  authentication: 0x0102,
  location: 0x0200,
  locationAnswer: 0x0201,
  batch: 0x0704,
} as const

/** the GMT+8 of the standard's times, in seconds */
const DEVICE_TIME_OFFSET_SECONDS = 8 * 3600
const LOCATION_BASIC_BYTES = 28

const STATUS_ACC = 1 << 0
const STATUS_LOCATED = 1 << 1
const STATUS_SOUTH = 1 << 2
const STATUS_WEST = 1 << 3
const STATUS_FUEL_CUT = 1 << 10

/**
 * The alarm flags (JT/T 808-2019 table 24), bit by bit, as our alarm codes: a bit we have a code
 * for is that code, another is stored as `alarm` with its own name as the raw code (events.ts).
 * Bits 15–17 are reserved: never raised.
 */
const ALARM_BITS: readonly (string | null)[] = [
  'sos', // 0 emergency alarm (the alarm button)
  'overspeed', // 1
  'fatigue_driving', // 2
  'danger_warning', // 3
  'gnss_module_fault', // 4
  'gnss_antenna_cut', // 5 antenna not connected or cut
  'gnss_antenna_short', // 6
  'low_battery', // 7 main power undervoltage
  'power_cut', // 8 main power off
  'display_fault', // 9
  'tts_fault', // 10
  'camera_fault', // 11
  'ic_card_fault', // 12
  'overspeed_warning', // 13
  'fatigue_warning', // 14
  null,
  null,
  null,
  'driving_time_exceeded', // 18 the day's driving time
  'parking_overtime', // 19
  'geofence', // 20 entering or leaving an area
  'route_enter_exit', // 21
  'route_driving_time', // 22 too short or too long on a route section
  'route_deviation', // 23
  'vss_fault', // 24
  'fuel_abnormal', // 25
  'vehicle_stolen', // 26
  'illegal_ignition', // 27
  'movement', // 28 illegal displacement
  'collision', // 29 collision warning
  'rollover', // 30
  'door', // 31 illegal door opening
]

/** What a terminal's general response (0x0001) said of a command. */
export interface Jt808Answer {
  /** the serial of the platform message it answers */
  replySerial: number
  replyMessageId: number
  result: number
}

export type Jt808Message =
  /** registration or authentication: the device names itself; `accept`/`refuse` per the standard */
  | { kind: 'login'; uniqueId: string; accept: Uint8Array; refuse: Uint8Array }
  /**
   * What to store (a fix, status, or nothing but a sign of life) and what to answer. `alarmFlags`:
   * the last location's flags (alarms are raised when their bit turns on), null without a location.
   */
  | { kind: 'report'; report: DecodedReport; reply: Uint8Array | null; alarmFlags: number | null; answer?: Jt808Answer }

export interface Jt808DecodeOptions {
  /** the server's clock, Unix seconds: the time of an alarm without a usable device time */
  now: number
  /** the alarm flags of this connection's previous location: a bit already on raises nothing */
  previousAlarmFlags?: number | null
}

class MalformedBody extends Error {}

function bcd(byte: number): number {
  const high = byte >> 4
  const low = byte & 0x0f
  if (high > 9 || low > 9) throw new MalformedBody('not BCD')
  return high * 10 + low
}

/** The BCD time in GMT+8 as Unix seconds; null when it is no date (all zeros, or 31 February). */
function deviceTime(bytes: Uint8Array): number | null {
  try {
    const [year, month, day, hour, minute, second] = Array.from(bytes, bcd)
    if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null
    const local = Date.UTC(2000 + year, month - 1, day, hour, minute, second)
    // Date.UTC rolls 31 February over into March: a date that does not survive is none
    if (new Date(local).getUTCDate() !== day) return null
    return local / 1000 - DEVICE_TIME_OFFSET_SECONDS
  } catch {
    return null
  }
}

const hex8 = (value: number) => value.toString(16).padStart(8, '0')

interface Location {
  alarmFlags: number
  /** null: the location has no usable place or time (0/0, no date, out of range) */
  fix: DecodedFix | null
  /** the device's time, when it sent a usable one */
  time: number | null
  status: Record<string, unknown>
}

/** One location body (0x0200, a 0x0704 item, the tail of 0x0201). */
function readLocation(bytes: Uint8Array): Location {
  if (bytes.length < LOCATION_BASIC_BYTES) throw new MalformedBody(`a location of ${bytes.length} bytes, less than the ${LOCATION_BASIC_BYTES} of its basic block`)
  const reader = new ByteReader(bytes, 'location')
  const alarmFlags = reader.u32()
  const statusFlags = reader.u32()
  const latitudeRaw = reader.u32()
  const longitudeRaw = reader.u32()
  const altitude = reader.i16()
  const speed = reader.u16() / 10
  const course = reader.u16()
  const time = deviceTime(reader.bytesOf(6))

  const attributes: Record<string, unknown> = { status_flags: hex8(statusFlags), ignition: (statusFlags & STATUS_ACC) !== 0 }
  if (alarmFlags !== 0) attributes.alarm_flags = hex8(alarmFlags)
  if (statusFlags & STATUS_FUEL_CUT) attributes.fuel_cut = true
  const status: Record<string, unknown> = { ignition: attributes.ignition }
  let satellites: number | null = null
  while (reader.remaining >= 2) {
    const id = reader.u8()
    const length = reader.u8()
    // a last item cut short (firmware that miscounts): what came before stands
    if (length > reader.remaining) break
    const value = reader.bytesOf(length)
    const view = new DataView(value.buffer, value.byteOffset, value.byteLength)
    switch (id) {
      case 0x01:
        if (length === 4) attributes.odometer = view.getUint32(0) * 100
        break
      case 0x02:
        if (length === 2) attributes.fuel_litres = view.getUint16(0) / 10
        break
      case 0x25:
        if (length === 4) attributes.vehicle_signals = hex8(view.getUint32(0))
        break
      case 0x2a:
        if (length === 2) attributes.io_status = view.getUint16(0)
        break
      case 0x2b:
        if (length === 4) attributes.analog = view.getUint32(0)
        break
      case 0x30:
        if (length === 1) attributes.gsm_signal = status.gsm_signal = value[0]
        break
      case 0x31:
        if (length === 1) satellites = value[0]
        break
    }
  }
  if (attributes.odometer !== undefined) status.odometer = attributes.odometer

  const latitude = ((statusFlags & STATUS_SOUTH) !== 0 ? -latitudeRaw : latitudeRaw) / 1e6
  const longitude = ((statusFlags & STATUS_WEST) !== 0 ? -longitudeRaw : longitudeRaw) / 1e6
  const placed = latitudeRaw <= 90_000_000 && longitudeRaw <= 180_000_000 && (latitudeRaw !== 0 || longitudeRaw !== 0)
  const fix: DecodedFix | null =
    placed && time !== null
      ? { timestamp: time, latitude, longitude, speed, course: course <= 360 ? course : null, altitude, satellites, valid: (statusFlags & STATUS_LOCATED) !== 0, attributes }
      : null
  return { alarmFlags, fix, time, status }
}

/** The events of the alarm bits that turned on since `previous`. */
function alarmEvents(location: Location, previous: number, now: number): DecodedEvent[] {
  const raised = (location.alarmFlags & ~previous) >>> 0
  if (raised === 0) return []
  const events: DecodedEvent[] = []
  const noCell = { mcc: null, mnc: null, dbm: null }
  for (let bit = 0; bit < 32; bit++) {
    const name = ALARM_BITS[bit]
    if (!name || (raised & (1 << bit)) === 0) continue
    const { alarmCode, context } = deviceAlarm(name)
    const withBit = { ...context, alarm_bit: bit }
    events.push(
      location.fix
        ? eventAtFix(alarmCode, location.fix, noCell, withBit)
        : eventWithoutFix(alarmCode, location.time ?? now, noCell, { ...withBit, time_source: location.time === null ? 'server' : 'device' }),
    )
  }
  return events
}

function emptyReport(uniqueId: string): DecodedReport {
  return { uniqueId, fixes: [], events: [] }
}

/** The locations' fixes and alarms in one report, in order; the status of the newest. */
function reportOf(uniqueId: string, locations: Location[], previousAlarmFlags: number | null, now: number): { report: DecodedReport; alarmFlags: number | null } {
  const report = emptyReport(uniqueId)
  let previous = previousAlarmFlags ?? 0
  for (const location of locations) {
    if (location.fix) report.fixes.push(location.fix)
    report.events.push(...alarmEvents(location, previous, now))
    previous = location.alarmFlags
  }
  const newest = locations.at(-1)
  if (newest) report.status = newest.status
  return { report, alarmFlags: newest ? newest.alarmFlags : previousAlarmFlags }
}

/** The items of a batch (0x0704): count (2), type (1: 0 regular, 1 re-sent from the blind area), then each length (2) and body. */
function batchLocations(body: Uint8Array): Location[] {
  const reader = new ByteReader(body, 'batch')
  const count = reader.u16()
  reader.u8()
  const locations: Location[] = []
  for (let i = 0; i < count; i++) locations.push(readLocation(reader.bytesOf(reader.u16())))
  return locations
}

/** What `frame` says, and what the terminal is to be answered. Never throws. */
export function decodeJt808Frame(frame: Jt808Frame, options: Jt808DecodeOptions): Jt808Message {
  const uniqueId = frame.terminalId
  const { now } = options
  const previous = options.previousAlarmFlags ?? null
  const ok = () => buildGeneralResponse(frame, RESULT.success)
  switch (frame.messageId) {
    case MESSAGE.registration:
      // the code the terminal authenticates with afterwards: its own identifier (device protocols are not authenticated; README "Security model")
      return {
        kind: 'login',
        uniqueId,
        accept: buildRegistrationResponse(frame, REGISTRATION_RESULT.success, uniqueId),
        refuse: buildRegistrationResponse(frame, REGISTRATION_RESULT.unknownTerminal, ''),
      }
    case MESSAGE.authentication:
      return { kind: 'login', uniqueId, accept: ok(), refuse: buildGeneralResponse(frame, RESULT.failure) }
    case MESSAGE.generalResponse: {
      if (frame.body.length < 5) return { kind: 'report', report: emptyReport(uniqueId), reply: null, alarmFlags: previous }
      const view = new DataView(frame.body.buffer, frame.body.byteOffset, frame.body.byteLength)
      return {
        kind: 'report',
        report: emptyReport(uniqueId),
        reply: null,
        alarmFlags: previous,
        answer: { replySerial: view.getUint16(0), replyMessageId: view.getUint16(2), result: frame.body[4] },
      }
    }
  }
  // a packet of a long message, or an encrypted body: received, not read
  if (frame.packet !== null) return { kind: 'report', report: emptyReport(uniqueId), reply: ok(), alarmFlags: previous }
  if (frame.encryption !== 0) return { kind: 'report', report: emptyReport(uniqueId), reply: buildGeneralResponse(frame, RESULT.notSupported), alarmFlags: previous }
  try {
    switch (frame.messageId) {
      case MESSAGE.location:
        return { kind: 'report', ...reportOf(uniqueId, [readLocation(frame.body)], previous, now), reply: ok() }
      case MESSAGE.batch:
        return { kind: 'report', ...reportOf(uniqueId, batchLocations(frame.body), previous, now), reply: ok() }
      case MESSAGE.locationAnswer: {
        if (frame.body.length < 2) throw new MalformedBody('no serial')
        const replySerial = (frame.body[0] << 8) | frame.body[1]
        const answer = { replySerial, replyMessageId: 0x8201, result: RESULT.success }
        return { kind: 'report', ...reportOf(uniqueId, [readLocation(frame.body.subarray(2))], previous, now), reply: ok(), answer }
      }
      default:
        // a heartbeat, a logout, or a message we do not read: a sign of life, answered as received
        return { kind: 'report', report: emptyReport(uniqueId), reply: ok(), alarmFlags: previous }
    }
  } catch (error) {
    if (!(error instanceof MalformedBody || error instanceof OutOfBytes)) throw error
    // the terminal is told its message was wrong, and the connection stays its own
    return { kind: 'report', report: emptyReport(uniqueId), reply: buildGeneralResponse(frame, RESULT.messageError), alarmFlags: previous }
  }
}
