/**
 * GT06 / Concox binary protocol (GT06, GT06N, JM-VL01/VL02/VL03, GT800 and the many clones): the
 * frame decoder.
 *
 * Wire format (all integers big-endian):
 *
 *   start   length      protocol  content  serial  crc  stop
 *   78 78   1 byte      1 byte    N bytes  2       2    0D 0A     length = 5 + N
 *   79 79   2 bytes     1 byte    N bytes  2       2    0D 0A     (long frames, same meaning)
 *
 * The CRC is CRC-16/X.25 ("CRC-ITU" in the documents) over the length field(s) through the
 * serial number. References, cited beside the code as "GT06 doc", "GT06N doc", "VL03 doc":
 * - "GPS Tracker Communication Protocol (GT06)", Concox, V1.8: 0x01 / 0x12 / 0x13 / 0x16, the
 *   login example and its response.
 * - "GPS Tracker Communication Protocol (GT06N)" and "(JM-VW01, GT06N, GT06F, GT06E, ...)",
 *   Concox, V1.1.x: 0x22 / 0x26 / 0x8A, the alarm table.
 * - "GPS Tracker Communication Protocol (JM-VL03)", Concox, V1.1.2 (2017): 0x13 heartbeat, 0x22,
 *   0x26 / 0x27, 0x28, 0x8A, 0x94 information types, and the 4G packets 0xA0 / 0xA1 / 0xA4
 *   ("MNC 1 or 2 bytes as MCC bit 15 says, LAC 4 bytes, cell ID 8 bytes"), with example frames.
 * - "GT03A/B Communication protocol", Concox, V1.82: 0x11 LBS and 0x19 LBS + status packets.
 * - For what no Concox document describes (dashcam 0x95, VL103 0x70, the model variants of 0x10,
 *   0x11, 0x16, 0x17, 0x22, 0x24, 0x25, 0x31..0x38, 0x61, 0xA2): the frames real devices sent,
 *   collected with their sources in test/fixtures/gt06/frames.ts, each layout checked against
 *   them (docs/protocols.md, GT06 section, says how the variants are told apart).
 *
 * Split of responsibilities: framing.ts turns arbitrary TCP chunks into CRC-checked frames (or
 * errors the listener can log or close on); `decodeGt06Frame()` here turns one frame into a
 * login, a report, a status, or "nothing to store", each with the acknowledgement (replies.ts)
 * to send *after* the data is durable. Both are pure: no I/O, no clock (the caller passes `now`).
 */

import type { DecodedEvent, DecodedFix, DecodedReport } from '../../types'
import { ByteReader, OutOfBytes } from '../bytes'
import { eventAtFix, eventWithoutFix, GENERIC_ALARM_CODE, RAW_ALARM_KEY } from '../events'
import { isBcd, TERMINAL_ID_BYTES, type Gt06Frame } from './framing'
import { buildGt06Ack, buildGt06LongAck, buildGt06TimeResponse } from './replies'

// ---------------------------------------------------------------------------------------------
// Decoding: tables
// ---------------------------------------------------------------------------------------------

/** Protocol numbers this decoder knows. */
export const PROTOCOL = {
  login: 0x01,
  /** LBS only (GT03A/B doc): date, one cell */
  lbs: 0x11,
  location: 0x12,
  status: 0x13,
  alarm: 0x16,
  /** LBS + status, no GPS (GT03A/B doc): an alarm without a fix */
  lbsAlarm: 0x19,
  locationUtc: 0x22,
  heartbeat: 0x23,
  alarmUtc: 0x26,
  /** 0x26 plus the fence number (VL03 doc, "alarm data, multiple geofences") */
  alarmFence: 0x27,
  /** date, 7 cells, timing advance, language (VL03 doc) */
  lbsMulti: 0x28,
  /** as 0x28, then Wi-Fi access points */
  lbsWifi: 0x2c,
  timeRequest: 0x8a,
  /** information transmission (VL03 doc): external voltage, ICCID, door, fuel sensor, ... */
  information: 0x94,
  /** 4G: 0x22 with the wider cell (VL03 doc) */
  location4g: 0xa0,
  /** 4G: 0x28 with the wider cells (VL03 doc) */
  lbsMulti4g: 0xa1,
  /** 4G: 0x2C with the wider cells */
  lbsWifi4g: 0xa2,
  /** 4G: 0x27 with the wider cell (VL03 doc, "multi-fence alarm packet") */
  alarm4g: 0xa4,
  /** 4G: 0x19 with the wider cell */
  lbsAlarm4g: 0xa5,
  /** JC100 / JC400 / JC450 dashcams: an alarm or event, with the names of its video files */
  dashcamAlarm: 0x95,
  /** VL103 / VL802 information in modules (0x7979): position, events, battery, ICCID, cell */
  modular: 0x70,
  /** GK310: GPS block only */
  gps: 0x10,
  /** 0x22 with a driver's card (XT40 / NT series) */
  locationDriver: 0x25,
  /** GPS and a driver's RFID card (0x28-byte frames), else Wi-Fi */
  locationRfid: 0x17,
  /** SR411 mini: GPS, cell, ignition, voltages (0x2E-byte frames); else a cell list */
  locationPower: 0x24,
  /** JI09: GPS, then cells */
  locationCells: 0x1e,
  /** GK310 address request: GPS, then a phone number */
  addressRequest: 0x2a,
  /** SL4X: GPS, cell, ignition, event, odometer, altitude */
  locationAltitude: 0x31,
  /** SL4X: GPS, cell, status, altitude; AZ735 (0x7979): GPS with a length byte */
  statusAltitude: 0x32,
  /** AZ735 (0x7979): an alarm with an optional GPS block */
  alarmAz735: 0x33,
  /** X1: data word, GPS, odometer, cell, driver, voltages (SL4X sends a cell list under it) */
  locationX1: 0x34,
  /** TRX16I / VL103: GPS, cell, odometer, voltages, engine hours, RFID card */
  locationRfid4: 0x36,
  /** GPS, cell, ignition, then modules (odometer, accuracy) */
  locationModules: 0x37,
  /** GPS, upload mode, cell with its type */
  locationCellType: 0x38,
  /** iButton: IMEI, GPS, cell, driver key */
  locationIbutton: 0x61,
} as const

/**
 * Alarm byte ("alarm/language", former byte) → alarm code. 0x00 is "normal" (no alarm). The
 * table is the VL03 doc's "alert and language" list (the GT06 doc has only 0x01..0x05); several
 * codes name the same kind of alarm so that users filter on few codes. Anything else is the
 * generic `alarm`, the byte in its context as `raw_alarm` ("0x1f"), so nothing a device reports
 * is lost and no firmware invents a code.
 *
 * 0x0C: the VL03 doc calls it "powered on alert", but devices in the field send it for
 * tampering (a real 0x26 capture in Traccar's GT06 tests is decoded so), and tampering is what
 * this server reports; 0x25 is in no Concox table and a real 0x16 capture in the same tests is
 * tampering too. The byte stays in the event's context (`alarm_byte`) should a model mean
 * otherwise.
 */
export const GT06_ALARM_CODES: Readonly<Record<number, string>> = {
  0x01: 'sos',
  0x02: 'power_cut',
  0x03: 'vibration',
  0x04: 'geofence_enter',
  0x05: 'geofence_exit',
  0x06: 'overspeed',
  0x09: 'movement', // "tow/theft alert": moved while parked
  0x0a: 'gps_blind_spot_enter',
  0x0b: 'gps_blind_spot_exit',
  0x0c: 'tamper',
  0x0d: 'gps_first_fix',
  0x0e: 'low_battery', // low external battery
  0x0f: 'low_battery', // external battery low-voltage protection
  0x10: 'sim_change',
  0x11: 'power_off',
  0x12: 'airplane_mode', // after the external battery's low-voltage protection
  0x13: 'tamper',
  0x14: 'door',
  0x15: 'power_off', // shut down by a low battery
  0x16: 'sound', // sound-controlled alert
  0x17: 'rogue_base_station',
  0x18: 'cover_open',
  0x19: 'low_battery', // low internal battery
  0x20: 'deep_sleep',
  0x23: 'fall',
  0x25: 'tamper',
  0x29: 'harsh_acceleration',
  0x2a: 'harsh_cornering', // sharp left
  0x2b: 'harsh_cornering', // sharp right
  0x2c: 'collision',
  0x30: 'harsh_braking',
  0x32: 'power_cut', // device unplugged
  0xfe: 'ignition_on',
  0xff: 'ignition_off',
}

export function gt06AlarmCode(alarmByte: number): string {
  return GT06_ALARM_CODES[alarmByte] ?? GENERIC_ALARM_CODE
}

/** An alarm byte the table does not name, as the event's context keeps it: `raw_alarm: "0x1f"` (nothing for a named one). */
function rawAlarmContext(alarmByte: number): Record<string, string> {
  return alarmByte === 0 || GT06_ALARM_CODES[alarmByte] !== undefined ? {} : { [RAW_ALARM_KEY]: `0x${hex2(alarmByte)}` }
}

/**
 * Terminal information bits 5..3 (status and alarm packets): the alarm state the terminal is in.
 * 0b000 is normal; 0b001..0b100 are in every Concox document. 0b110 and 0b111 are in none, but
 * devices send them: 0b111 with no alarm byte is a removal (a 0x16 capture in Traccar's GT06
 * tests), 0b110 a geofence alarm without a direction. 0b101 is unknown and ignored.
 */
const TERMINAL_ALARM_CODES: Readonly<Record<number, string>> = {
  0b001: 'vibration',
  0b010: 'power_cut',
  0b011: 'low_battery',
  0b100: 'sos',
  0b110: 'geofence',
  0b111: 'tamper',
}

/**
 * GSM signal level (0 no signal .. 4 strong) → an ESTIMATED dBm. The protocol only sends the
 * level; these are the middles of the usual GSM bar thresholds (≤ -107, -107..-101, -101..-93,
 * -93..-83, ≥ -83 dBm), good enough to rank signal quality, not a measurement.
 */
export const GT06_GSM_LEVEL_DBM: readonly number[] = [-113, -104, -97, -88, -75]

/** The voltage level byte is documented 0 (none) .. 6 (very high). */
const MAX_VOLTAGE_LEVEL = 6

// ---------------------------------------------------------------------------------------------
// Decoding: types
// ---------------------------------------------------------------------------------------------

export interface Gt06Session {
  /** the IMEI from an accepted login on this connection, or null before login */
  imei: string | null
}

export interface Gt06DecodeOptions {
  /**
   * The server's clock (Unix seconds). Used to answer time calibration requests, to date what
   * carries no time of its own (cell-only alarms, alarms in status packets) and as the timestamp
   * of a report whose date is all zeros (devices without a GPS time send zeros); such fixes and
   * events carry `time_source: 'server'`. Without it those cases are malformed (or, for a status
   * packet's alarm, not raised).
   */
  now?: number
}

/** Attributes of a status (0x13 / 0x23) packet or the status part of an alarm packet. */
export interface Gt06TerminalStatus {
  /** terminal info bit 7: oil and electricity circuit cut by the relay (engine immobilised) */
  immobilized: boolean
  /** bit 6 */
  gps_tracking: boolean
  /** bits 5..3 decoded, or null when normal */
  terminal_alarm: string | null
  /** bit 2 */
  charging: boolean
  /** bit 1: ACC high */
  ignition: boolean
  /** bit 0: defence (armed) activated */
  armed: boolean
}

/**
 * What a packet says about the device itself, under the names the other protocols use. Only
 * what the packet carried is present. For the listener to keep as the device's latest state.
 */
export interface Gt06DeviceStatus {
  ignition?: boolean
  /** terminal info bit 2, "charging, with external power connected" in the documents */
  charging?: boolean
  /** the same bit: the documents tie charging to the external power being connected */
  external_power?: boolean
  /** fuel / power relay cut (terminal info bit 7) */
  immobilized?: boolean
  armed?: boolean
  gps_tracking?: boolean
  /** 0 (no power) .. 6 (very high), as documented */
  voltage_level?: number
  /** %, from firmware that sends a percentage where the documents have the voltage level */
  battery_level?: number
  /** V (0x23 heartbeat) */
  battery_voltage?: number
  /** V (0x94 type 0x00, or the 2-byte voltage of 0x16 without the LBS length byte) */
  external_voltage?: number
  /** 0 (none) .. 4 (strong), as documented; some firmware sends larger numbers */
  gsm_signal?: number
  iccid?: string
  imsi?: string
  door?: boolean
  /** °C, from the fuel sensor (0x94 type 0x0D) */
  temperature?: number
  /** the fuel sensor's measured level, in the sensor's own unit */
  fuel_level?: number
}

export interface Gt06CellTower {
  mcc: number
  mnc: number
  lac: number
  /** null only when an 8-byte 4G cell ID does not fit a JavaScript number (never seen) */
  cell_id: number | null
  /** the packet's signal byte as sent: 0x00 weakest .. 0xFF strongest (VL03 doc) */
  signal?: number
}

export interface Gt06WifiAccessPoint {
  /** MAC address, lower case, colon-separated */
  bssid: string
  /** the signal byte as sent */
  signal: number
}

/** The cells and Wi-Fi access points a packet named (empty cell slots left out). */
export interface Gt06Network {
  /** the device's time of the measurement (Unix seconds), when the packet carries a valid one */
  timestamp?: number
  cells: Gt06CellTower[]
  wifi: Gt06WifiAccessPoint[]
  timing_advance?: number
}

/**
 * Added to every report and status (additive to the original shape): `status` and `network`
 * when the packet carried them, and `keepAlive` when it carries no fix and no event, so it only
 * shows that the device is alive.
 */
interface Gt06Extras {
  status?: Gt06DeviceStatus
  network?: Gt06Network
  keepAlive: boolean
}

export type Gt06Message =
  /**
   * 0x01. Check the IMEI, then set `session.imei` and send `ack`; refuse by closing. The type
   * identifier and the time zone (minutes east of UTC) when the login carries them.
   */
  | {
      kind: 'login'
      protocol: number
      imei: string
      ack: Uint8Array
      typeIdentifier?: number
      timeZoneOffsetMinutes?: number
      language?: number
    }
  /**
   * Fixes and events to store, then send `ack` (null: none due): 0x12 / 0x22 / 0xA0 positions
   * and the model-specific ones (0x10, 0x11, 0x17, 0x1E, 0x24, 0x25, 0x2A, 0x31..0x38, 0x61,
   * 0xA2), 0x16 / 0x26 / 0x27 / 0xA4 alarms, 0x95 dashcam alarms, 0x70 information modules,
   * 0x19 / 0xA5 alarms without a fix, and (with nothing in the report, `keepAlive`) the cell and
   * Wi-Fi packets 0x11 / 0x28 / 0x2C / 0xA1 / 0xA2.
   */
  | ({ kind: 'report'; protocol: number; report: DecodedReport; ack: Uint8Array | null } & Gt06Extras)
  /**
   * 0x13 / 0x23 (send `ack`) and 0x94 (no ack): terminal state without a position. `report`
   * holds the events of a status packet's alarm byte (dated by `now`).
   */
  | ({
      kind: 'status'
      protocol: number
      uniqueId: string
      attributes: Record<string, unknown>
      ack: Uint8Array | null
      report: DecodedReport
      status: Gt06DeviceStatus
    } & Gt06Extras)
  /** nothing to store; send `ack` when non-null (time calibration) */
  | { kind: 'other'; protocol: number; ack: Uint8Array | null }
  /** unusable frame: data before login, or content too short / out of range. Nothing to ack. */
  | { kind: 'invalid'; protocol: number; reason: 'not_logged_in' | 'malformed'; message: string; ack: null }

class MalformedContent extends Error {}

interface DecodeContext {
  frame: Gt06Frame
  uniqueId: string
  options: Gt06DecodeOptions
}

type Handler = (context: DecodeContext) => Gt06Message

/**
 * Decode one frame. `session.imei` must hold the accepted login IMEI for anything but a login;
 * the decoder never mutates the session (the listener sets it once the device is known).
 */
export function decodeGt06Frame(
  frame: Gt06Frame,
  session: Gt06Session,
  options: Gt06DecodeOptions = {},
): Gt06Message {
  const { protocol, serial } = frame
  try {
    if (frame.lenient && !frame.lenient.crcChecked && protocol !== PROTOCOL.login) {
      throw new MalformedContent('frame without a CRC') // the splitter only lets logins through so
    }
    if (protocol === PROTOCOL.login) return decodeLogin(frame)
    if (protocol === PROTOCOL.timeRequest) {
      const ack = options.now === undefined ? null : buildGt06TimeResponse(serial, options.now)
      return { kind: 'other', protocol, ack }
    }
    const handler = HANDLERS[protocol]
    // Other protocol numbers (0x15 / 0x21 command replies, 0x1A / 0x2A address requests, ...)
    // carry nothing we store and expect no reply.
    if (!handler) return { kind: 'other', protocol, ack: null }
    if (session.imei === null) {
      return {
        kind: 'invalid',
        protocol,
        reason: 'not_logged_in',
        message: `GT06 protocol 0x${hex2(protocol)} received before a login`,
        ack: null,
      }
    }
    return handler({ frame, uniqueId: session.imei, options })
  } catch (error) {
    if (!(error instanceof MalformedContent || error instanceof OutOfBytes)) throw error
    return {
      kind: 'invalid',
      protocol,
      reason: 'malformed',
      message: `GT06 protocol 0x${hex2(protocol)}: ${error.message}`,
      ack: null,
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Decoding: login
// ---------------------------------------------------------------------------------------------

/** Terminal ID: 8 bytes BCD, the 15-digit IMEI with a leading 0. */
function decodeImei(content: Uint8Array): string {
  if (content.length < TERMINAL_ID_BYTES) {
    throw new MalformedContent(`login needs 8 bytes of terminal ID, got ${content.length}`)
  }
  let digits = ''
  for (let i = 0; i < TERMINAL_ID_BYTES; i++) {
    const high = content[i] >> 4
    const low = content[i] & 0x0f
    if (high > 9 || low > 9) throw new MalformedContent(`terminal ID is not BCD (byte ${i} = 0x${hex2(content[i])})`)
    digits += String(high) + String(low)
  }
  return digits.startsWith('0') ? digits.slice(1) : digits
}

/**
 * Time zone / language word of a login (VL03 doc): bits 15..4 the zone × 100 (0x320 = 800 =
 * GMT+8:00, 0x4DD = 1245 = 12:45), bit 3 set for west. Null when it is no real zone.
 */
function timeZoneMinutes(word: number): number | null {
  const hundredths = word >> 4
  const hours = Math.floor(hundredths / 100)
  const minutes = hundredths % 100
  if (hours > 14 || minutes >= 60) return null
  const offset = hours * 60 + minutes
  return word & 0x08 && offset !== 0 ? -offset : offset
}

/**
 * 0x01: terminal ID (8), then (VL03 doc) a type identification code (2) and the time zone /
 * language word (2), which older firmware leaves out. A login without serial number and CRC
 * (see the splitter) is answered with serial 0, and its bytes after the ID are not read.
 */
function decodeLogin(frame: Gt06Frame): Gt06Message {
  const { content, protocol } = frame
  const message: Extract<Gt06Message, { kind: 'login' }> = {
    kind: 'login',
    protocol,
    imei: decodeImei(content),
    ack: buildGt06Ack(protocol, frame.serial),
  }
  if (frame.lenient?.crcChecked === false) return message
  if (content.length >= TERMINAL_ID_BYTES + 2) message.typeIdentifier = (content[8] << 8) | content[9]
  if (content.length >= TERMINAL_ID_BYTES + 4) {
    const word = (content[10] << 8) | content[11]
    const offset = timeZoneMinutes(word)
    if (offset !== null) message.timeZoneOffsetMinutes = offset
    message.language = word & 0x03
  }
  return message
}

// ---------------------------------------------------------------------------------------------
// Decoding: GPS block, cells, terminal status
// ---------------------------------------------------------------------------------------------

const GPS_BLOCK_BYTES = 18
/** coordinates are minutes × 30000, i.e. degrees × 1,800,000 */
const COORDINATE_SCALE = 1_800_000
/** terminal info, voltage level, GSM level, alarm, language: the tail of every status-bearing packet */
const STATUS_TAIL_BYTES = 5

interface GpsBlock {
  timestamp: number
  timeFromServer: boolean
  satellites: number
  latitude: number
  longitude: number
  speed: number
  course: number
  positioned: boolean
  differential: boolean
  /** latitude and longitude both zero */
  empty: boolean
}

function isValidDate(fields: Uint8Array): number | null {
  const [year, month, day, hour, minute, second] = fields
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) return null
  const millis = Date.UTC(2000 + year, month - 1, day, hour, minute, second)
  // Date.UTC rolls 31 February over into March; a date that does not survive is invalid.
  return new Date(millis).getUTCDate() === day ? millis / 1000 : null
}

/**
 * Date and time, UTC (YY MM DD hh mm ss). All zeros is what a device without a GPS time sends:
 * then the server's clock, if given. Any other impossible date is malformed: a fix is never made
 * from bytes that are not a date.
 */
function readDateTime(reader: ByteReader, options: Gt06DecodeOptions): { timestamp: number; fromServer: boolean } {
  const fields = reader.bytesOf(6)
  const timestamp = isValidDate(fields)
  if (timestamp !== null) return { timestamp, fromServer: false }
  if (fields.every((byte) => byte === 0) && options.now !== undefined) {
    return { timestamp: Math.floor(options.now), fromServer: true }
  }
  throw new MalformedContent(`invalid date/time ${Array.from(fields, hex2).join(' ')}`)
}

/** The date of a cell or Wi-Fi packet: only metadata, so an invalid one is just left out. */
function readOptionalDate(reader: ByteReader): number | undefined {
  return isValidDate(reader.bytesOf(6)) ?? undefined
}

/**
 * How a packet lays out its GPS block. `standard` (GT06 doc): date/time (6), GPS info length +
 * satellites (1), latitude (4), longitude (4), speed (1), course/status (2). `dashcam` (JC400 /
 * JC450 0x95): the course/status word before a 2-byte speed. `bare` (0x95 of the older dashcams):
 * date, latitude, longitude, course/status; no satellites, no speed.
 */
type GpsForm = 'standard' | 'dashcam' | 'bare'

/**
 * The GPS block (see GpsForm). Course/status word: bit 13 differential (1) / real-time (0) GPS,
 * bit 12 positioned, bit 11 west longitude (1) / east (0), bit 10 north latitude (1) / south
 * (0), bits 9..0 course, 0..360 (GT06 doc). Coordinates beyond 90° / 180° or a course beyond 360
 * are malformed, not a fix.
 */
function readGpsBlock(reader: ByteReader, options: Gt06DecodeOptions, form: GpsForm = 'standard'): GpsBlock {
  const { timestamp, fromServer } = readDateTime(reader, options)
  return readGpsAfterDate(reader, timestamp, fromServer, form)
}

/** The GPS block after its date (AZ735 puts a length byte between the two). */
function readGpsAfterDate(reader: ByteReader, timestamp: number, fromServer: boolean, form: GpsForm): GpsBlock {
  const gpsInfo = form === 'bare' ? 0 : reader.u8()
  const latitudeRaw = reader.u32()
  const longitudeRaw = reader.u32()
  let speed = 0
  let courseStatus: number
  if (form === 'standard') {
    speed = reader.u8()
    courseStatus = reader.u16()
  } else {
    courseStatus = reader.u16()
    if (form === 'dashcam') speed = reader.u16()
  }
  const course = courseStatus & 0x03ff
  if (latitudeRaw > 90 * COORDINATE_SCALE || longitudeRaw > 180 * COORDINATE_SCALE) {
    throw new MalformedContent(`coordinates out of range (0x${latitudeRaw.toString(16)}, 0x${longitudeRaw.toString(16)})`)
  }
  if (course > 360) throw new MalformedContent(`course ${course} out of range`)
  const north = (courseStatus & 0x0400) !== 0
  const west = (courseStatus & 0x0800) !== 0
  return {
    timestamp,
    timeFromServer: fromServer,
    satellites: gpsInfo & 0x0f,
    latitude: (north ? 1 : -1) * (latitudeRaw / COORDINATE_SCALE),
    longitude: (west ? -1 : 1) * (longitudeRaw / COORDINATE_SCALE),
    speed,
    course,
    positioned: (courseStatus & 0x1000) !== 0,
    differential: (courseStatus & 0x2000) !== 0,
    empty: latitudeRaw === 0 && longitudeRaw === 0,
  }
}

/**
 * The fixes a GPS block gives: one, flagged not valid when the device says "not positioned"
 * (its last known place); none when the block holds no place at all (coordinates zero and not
 * positioned: a device without a fix yet).
 */
function fixesOf(gps: GpsBlock, fix: DecodedFix): DecodedFix[] {
  return gps.empty && !gps.positioned ? [] : [fix]
}

/** 2G packets (GT06 doc): LAC 2 bytes, cell ID 3. 4G packets (VL03 doc): LAC 4, cell ID 8. */
type CellFamily = '2g' | '4g'

interface CellInfo {
  mcc: number
  mnc: number
  lac: number
  cellId: number | null
}

function mncBytesOf(mccField: number): 1 | 2 {
  // MCC bit 15 announces a 2-byte MNC (VL03 doc, on the 4G packets; 2G firmware uses it too)
  return mccField & 0x8000 ? 2 : 1
}

function standardCellIdBytes(family: CellFamily): number {
  return family === '4g' ? 8 : 3
}

function cellBytes(family: CellFamily, mncBytes: number, cellIdBytes = standardCellIdBytes(family)): number {
  return 2 + mncBytes + (family === '4g' ? 4 : 2) + cellIdBytes
}

/**
 * The cell ID width that makes a cell block of exactly `size` bytes, or null. 2G cells have a
 * 3-byte ID, or 4 from firmware that widened it (two real 0x16 captures in Traccar's GT06 tests,
 * `78782616...`, only decode to their SOS and 93 % battery with a 4-byte ID); 4G cells 8.
 */
function cellIdBytesFor(size: number, mncBytes: number, family: CellFamily): number | null {
  if (family === '4g') return size === cellBytes('4g', mncBytes) ? 8 : null
  const width = size - cellBytes('2g', mncBytes, 0)
  return width === 3 || width === 4 ? width : null
}

/** MCC (2), MNC (1 or 2), LAC (2 or 4), cell ID (`cellIdBytes`). */
function readCell(reader: ByteReader, family: CellFamily, cellIdBytes = standardCellIdBytes(family)): CellInfo {
  const mccField = reader.u16()
  const mnc = mncBytesOf(mccField) === 2 ? reader.u16() : reader.u8()
  const lac = family === '4g' ? reader.u32() : reader.u16()
  return { mcc: mccField & 0x7fff, mnc, lac, cellId: reader.uint(cellIdBytes) }
}

/** A cell worth keeping: a real country code, and not an empty slot (LAC and cell ID zero). */
function isRealCell(cell: CellInfo): boolean {
  return cell.mcc > 0 && cell.mcc <= 999 && !(cell.lac === 0 && !cell.cellId)
}

function towerOf(cell: CellInfo, signal?: number): Gt06CellTower {
  const tower: Gt06CellTower = { mcc: cell.mcc, mnc: cell.mnc, lac: cell.lac, cell_id: cell.cellId }
  if (signal !== undefined) tower.signal = signal
  return tower
}

function networkOf(cells: CellInfo[]): Gt06Network | undefined {
  const real = cells.filter(isRealCell)
  return real.length > 0 ? { cells: real.map((cell) => towerOf(cell)), wifi: [] } : undefined
}

function gpsAttributes(gps: GpsBlock, cell: CellInfo | null): Record<string, unknown> {
  const attributes: Record<string, unknown> = {}
  if (cell) {
    attributes.mcc = cell.mcc
    attributes.mnc = cell.mnc
    attributes.lac = cell.lac
    attributes.cell_id = cell.cellId
  }
  attributes.gps_differential = gps.differential
  if (gps.timeFromServer) attributes.time_source = 'server'
  return attributes
}

function toFix(gps: GpsBlock, attributes: Record<string, unknown>): DecodedFix {
  return {
    timestamp: gps.timestamp,
    latitude: gps.latitude,
    longitude: gps.longitude,
    speed: gps.speed,
    course: gps.course,
    altitude: null,
    satellites: gps.satellites,
    valid: gps.positioned,
    attributes,
  }
}

function decodeTerminalInfo(info: number): Gt06TerminalStatus {
  return {
    immobilized: (info & 0x80) !== 0,
    gps_tracking: (info & 0x40) !== 0,
    terminal_alarm: TERMINAL_ALARM_CODES[(info >> 3) & 0x07] ?? null,
    charging: (info & 0x04) !== 0,
    ignition: (info & 0x02) !== 0,
    armed: (info & 0x01) !== 0,
  }
}

function statusOfTerminal(terminal: Gt06TerminalStatus): Gt06DeviceStatus {
  return {
    ignition: terminal.ignition,
    charging: terminal.charging,
    external_power: terminal.charging,
    immobilized: terminal.immobilized,
    armed: terminal.armed,
    gps_tracking: terminal.gps_tracking,
  }
}

/**
 * The voltage level byte: 0..6 as documented; firmware that sends 7..100 there sends a battery
 * percentage (a real 0x16 capture in Traccar's GT06 tests says 93); anything else is not kept.
 */
function levelAttributes(level: number): { voltage_level?: number; battery_level?: number } {
  if (level <= MAX_VOLTAGE_LEVEL) return { voltage_level: level }
  if (level <= 100) return { battery_level: level }
  return {}
}

/** The status tail of an alarm packet, whichever layout it came in. */
interface StatusTail {
  terminal: Gt06TerminalStatus
  level: { voltage_level?: number; battery_level?: number }
  externalVoltage: number | null
  gsmSignal: number
  alarmByte: number
  language: number | null
}

/** Terminal info (1), voltage level (1), GSM signal level (1), alarm (1), language (1). */
function readStatusTail(reader: ByteReader): StatusTail {
  const terminal = decodeTerminalInfo(reader.u8())
  const level = levelAttributes(reader.u8())
  const gsmSignal = reader.u8()
  const alarmByte = reader.u8()
  return { terminal, level, externalVoltage: null, gsmSignal, alarmByte, language: reader.u8() }
}

/**
 * The tail of a 0x16 without the LBS length byte: terminal info (1), external voltage in
 * hundredths of a volt (2), GSM signal level (1), alarm (1). No Concox document has this
 * packet; it is the layout the same firmware (VXT01) uses in its 0x12, and the only one under
 * which the real capture (Traccar's GT06 tests, `7878241617070a...`) is in range: 12.52 V,
 * GSM 4, no alarm byte, and the SOS in the terminal info bits.
 */
function readVoltageTail(reader: ByteReader): StatusTail {
  const terminal = decodeTerminalInfo(reader.u8())
  const externalVoltage = reader.u16() / 100
  const gsmSignal = reader.u8()
  return { terminal, level: {}, externalVoltage, gsmSignal, alarmByte: reader.u8(), language: null }
}

function tailStatus(tail: StatusTail): Gt06DeviceStatus {
  const status: Gt06DeviceStatus = { ...statusOfTerminal(tail.terminal), ...tail.level, gsm_signal: tail.gsmSignal }
  if (tail.externalVoltage !== null) status.external_voltage = tail.externalVoltage
  return status
}

/** The alarm byte names the alarm; when it is 0, the terminal info bits may still hold one. */
function tailAlarm(tail: StatusTail): string | null {
  return tail.alarmByte !== 0 ? gt06AlarmCode(tail.alarmByte) : tail.terminal.terminal_alarm
}

/** What every alarm event says about the terminal, besides its place. */
function tailContext(tail: StatusTail, cell: CellInfo | null): Record<string, unknown> {
  const context: Record<string, unknown> = { alarm_byte: tail.alarmByte, ...rawAlarmContext(tail.alarmByte) }
  if (cell) {
    context.lac = cell.lac
    context.cell_id = cell.cellId
  }
  Object.assign(context, tail.terminal, tail.level, { gsm_signal: tail.gsmSignal, dbm_estimated: true })
  if (tail.externalVoltage !== null) context.external_voltage = tail.externalVoltage
  if (tail.language !== null) context.language = tail.language
  return context
}

/** A driver's card or key as sent (hex, lower case); null when it is all zeros (no card). */
function driverIdOf(bytes: Uint8Array): string | null {
  let text = ''
  let blank = true
  for (const byte of bytes) {
    if (byte !== 0) blank = false
    text += hex2(byte)
  }
  return blank ? null : text
}

function eventCell(cell: CellInfo | null, gsmSignal: number): { mcc: number | null; mnc: number | null; dbm: number | null } {
  return { mcc: cell?.mcc ?? null, mnc: cell?.mnc ?? null, dbm: GT06_GSM_LEVEL_DBM[gsmSignal] ?? null }
}

function reportMessage(
  frame: Gt06Frame,
  report: DecodedReport,
  ack: Uint8Array | null,
  status?: Gt06DeviceStatus,
  network?: Gt06Network,
): Gt06Message {
  const message: Extract<Gt06Message, { kind: 'report' }> = {
    kind: 'report',
    protocol: frame.protocol,
    report,
    ack,
    keepAlive: report.fixes.length === 0 && report.events.length === 0,
  }
  if (status && Object.keys(status).length > 0) message.status = status
  if (network) message.network = network
  return message
}

// ---------------------------------------------------------------------------------------------
// Decoding: positions (0x12, 0x22, 0xA0)
// ---------------------------------------------------------------------------------------------

/**
 * 0x12: GPS block + cell (GT06 doc); some firmware stops after the GPS block, and the JM family
 * appends a 4-byte mileage (metres, as in 0x22); other trailing bytes are model-specific and
 * ignored. 0x22 (and 0xA0, its 4G form with the wider cell, VL03 doc) add ACC (1), data upload
 * mode (1), real-time / re-upload (1) and an optional 4-byte mileage. None is acknowledged: the
 * documents say "no server response packet required".
 */
function decodePosition(context: DecodeContext): Gt06Message {
  const { frame, uniqueId, options } = context
  const { content } = frame
  if (frame.protocol === PROTOCOL.locationUtc && isNtForm(content)) return decodeNtPosition(context)
  const reader = new ByteReader(content, 'content')
  // QH302R puts its IMEI before the GPS block of its 0x12: BCD where the date would be
  if (
    frame.protocol === PROTOCOL.location &&
    content[0] < 0x10 && // an IMEI's leading 0 digit; a date's year byte is 0x10 and more since 2016
    content.length >= TERMINAL_ID_BYTES + GPS_BLOCK_BYTES &&
    isBcd(content, 0, TERMINAL_ID_BYTES) &&
    !hasDateAt(content, 0) &&
    hasDateAt(content, TERMINAL_ID_BYTES)
  ) {
    reader.skip(TERMINAL_ID_BYTES)
  }
  const family: CellFamily = frame.protocol === PROTOCOL.location4g ? '4g' : '2g'
  const gps = readGpsBlock(reader, options)
  const cell = frame.protocol === PROTOCOL.location && reader.remaining === 0 ? null : readCell(reader, family)
  const attributes = gpsAttributes(gps, cell)
  const status: Gt06DeviceStatus = {}
  if (frame.protocol === PROTOCOL.location) {
    if (reader.remaining === 4) attributes.odometer = reader.u32()
  } else {
    attributes.ignition = status.ignition = reader.u8() === 0x01
    attributes.upload_mode = reader.u8()
    attributes.reupload = reader.u8() === 0x01
    if (reader.remaining >= 4) attributes.odometer = reader.u32()
  }
  const fix = toFix(gps, attributes)
  return reportMessage(frame, { uniqueId, fixes: fixesOf(gps, fix), events: [] }, null, status, networkOf(cell ? [cell] : []))
}

// ---------------------------------------------------------------------------------------------
// Decoding: the model-specific positions (0x10, 0x11, 0x17, 0x1E, 0x24, 0x25, 0x2A, 0x31..0x38,
// 0x61, 0xA2; 0x12 and 0x22 of the NT / XT40 / QH302R models)
// ---------------------------------------------------------------------------------------------
//
// Chinese GT06 firmware reuses the protocol numbers: the same number means different layouts on
// different models. Every case here is told apart by the packet's own length and content (a
// valid date where the GPS block must start, BCD where an IMEI must be), never by a device
// setting; when neither fits, the packet is kept as what the documents say, or as nothing.

/** A cell read with explicit widths (the model forms do not announce theirs). */
function readCellOf(reader: ByteReader, mncBytes: 1 | 2, lacBytes: 2 | 4, cellIdBytes: number): CellInfo {
  const mcc = reader.u16() & 0x7fff
  const mnc = mncBytes === 2 ? reader.u16() : reader.u8()
  const lac = lacBytes === 4 ? reader.u32() : reader.u16()
  return { mcc, mnc, lac, cellId: reader.uint(cellIdBytes) }
}

/** Whether a valid GPS date starts at `at` (the test that tells a GPS-led layout from another). */
function hasDateAt(content: Uint8Array, at: number): boolean {
  return content.length >= at + GPS_BLOCK_BYTES && isValidDate(content.subarray(at, at + 6)) !== null
}

/** The report of a GPS-led packet: its fix (none for an empty block), its cell as network data. */
function gpsReport(
  frame: Gt06Frame,
  uniqueId: string,
  gps: GpsBlock,
  cell: CellInfo | null,
  extra: Record<string, unknown>,
  status: Gt06DeviceStatus = {},
  ack: Uint8Array | null = null,
  altitude: number | null = null,
): Gt06Message {
  const fix = toFix(gps, { ...gpsAttributes(gps, cell), ...extra })
  fix.altitude = altitude
  return reportMessage(frame, { uniqueId, fixes: fixesOf(gps, fix), events: [] }, ack, status, networkOf(cell && isRealCell(cell) ? [cell] : []))
}

/**
 * 0x10 (GK310), 0x1E (JI09), 0x2A (GK310 address request), 0x38: the GPS block first; what
 * follows (2 status bytes, a cell list, a phone number asking for an address, an upload mode and
 * a typed cell) is not kept. The address request is not answered: the server has no addresses.
 */
function decodeGpsFirst({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const reader = new ByteReader(frame.content, 'content')
  const gps = readGpsBlock(reader, options)
  return gpsReport(frame, uniqueId, gps, null, {})
}

/**
 * 0x11: the GT03 documents' LBS packet (date, one cell), or, 26 bytes and more starting with a
 * GPS block, the GK310's GPS packet: GPS block, MCC (2), MNC (2), LAC (2), cell ID (4).
 */
function decodeLbsOrGps(context: DecodeContext): Gt06Message {
  const { frame, uniqueId, options } = context
  const { content } = frame
  if (content.length < GPS_BLOCK_BYTES + 10 || !hasDateAt(content, 0)) return decodeSingleCell(context)
  const reader = new ByteReader(content, 'content')
  const gps = readGpsBlock(reader, options)
  return gpsReport(frame, uniqueId, gps, readCellOf(reader, 2, 2, 4), {})
}

/** the RFID form of 0x17: GPS block, 2G cell (8), card (8), card validity (1) */
const RFID_POSITION_BYTES = GPS_BLOCK_BYTES + 8 + 8 + 1

/**
 * 0x17, 35 bytes starting with a GPS block: GPS, cell, the driver's RFID card (8, hex), its
 * validity. Other 0x17 packets (Wi-Fi lists in BCD dates) carry no place and are not kept.
 */
function decodeRfidPosition({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const { content } = frame
  if (content.length !== RFID_POSITION_BYTES || !hasDateAt(content, 0)) return { kind: 'other', protocol: frame.protocol, ack: null }
  const reader = new ByteReader(content, 'content')
  const gps = readGpsBlock(reader, options)
  const cell = readCellOf(reader, 1, 2, 3)
  const extra: Record<string, unknown> = {}
  const driverId = driverIdOf(reader.bytesOf(8))
  if (driverId !== null) extra.driver_unique_id = driverId
  return gpsReport(frame, uniqueId, gps, cell, extra)
}

/**
 * 0x24 starting with a GPS block (SR411 mini): GPS, 2G cell, ignition (1), external voltage
 * (2), battery voltage (2), hundredths of a volt. Other 0x24 packets (cell lists) keep nothing.
 */
function decodePowerPosition({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const { content } = frame
  if (content.length < GPS_BLOCK_BYTES + 13 || !hasDateAt(content, 0)) return { kind: 'other', protocol: frame.protocol, ack: null }
  const reader = new ByteReader(content, 'content')
  const gps = readGpsBlock(reader, options)
  const cell = readCellOf(reader, 1, 2, 3)
  const status: Gt06DeviceStatus = { ignition: reader.u8() > 0, external_voltage: reader.u16() / 100, battery_voltage: reader.u16() / 100 }
  return gpsReport(frame, uniqueId, gps, cell, { ...status }, status)
}

/**
 * 0x31 (SL4X): GPS, cell (MCC 2, MNC 2, LAC 2, cell ID 4), ignition (1), event (1), re-upload
 * (1), [odometer (4, metres)], altitude (2, metres, signed).
 */
function decodeAltitudePosition({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const reader = new ByteReader(frame.content, 'content')
  const gps = readGpsBlock(reader, options)
  const cell = readCellOf(reader, 2, 2, 4)
  const ignition = reader.u8() > 0
  const extra: Record<string, unknown> = { ignition, event: reader.u8(), reupload: reader.u8() > 0 }
  if (reader.remaining >= 6) extra.odometer = reader.u32()
  const altitude = reader.remaining >= 2 ? reader.i16() : null
  return gpsReport(frame, uniqueId, gps, cell, extra, { ignition }, null, altitude)
}

/**
 * 0x32. In a 0x7878 frame (SL4X): GPS, LBS length (1, not counting itself), cell (MCC 2, MNC 2,
 * LAC 2, cell ID 4), terminal info, level, GSM, alarm, language, and (when 2 bytes are left)
 * the altitude; the alarm byte is raised. In a 0x7979 frame (AZ735), and 0x33 (AZ735 alarm):
 * date, GPS length (0: no GPS) and the GPS block without its date; the rest (cells, Wi-Fi,
 * status) is not kept. The 0x7979 forms are answered in a 0x7979 frame.
 */
function decodeSl4xOrAz735(context: DecodeContext): Gt06Message {
  const { frame, uniqueId, options } = context
  const reader = new ByteReader(frame.content, 'content')
  if (frame.longFrame) {
    const ack = buildGt06LongAck(frame.protocol, frame.serial)
    const { timestamp, fromServer } = readDateTime(reader, options)
    if (reader.u8() === 0) return reportMessage(frame, { uniqueId, fixes: [], events: [] }, ack)
    return gpsReport(frame, uniqueId, readGpsAfterDate(reader, timestamp, fromServer, 'standard'), null, {}, {}, ack)
  }
  if (frame.protocol !== PROTOCOL.statusAltitude) return { kind: 'other', protocol: frame.protocol, ack: null }
  const gps = readGpsBlock(reader, options)
  const lbsLength = reader.u8()
  const start = reader.offset
  const cell = lbsLength >= 10 ? readCellOf(reader, 2, 2, 4) : null
  reader.skip(start + lbsLength - reader.offset)
  const tail = readStatusTail(reader)
  const extra: Record<string, unknown> = { ...tail.terminal, ...tail.level, gsm_signal: tail.gsmSignal }
  const altitude = reader.remaining >= 2 ? reader.i16() : null
  const alarmCode = tailAlarm(tail)
  const fix = toFix(gps, { ...gpsAttributes(gps, cell), ...extra })
  fix.altitude = altitude
  const events = alarmCode ? [eventAtFix(alarmCode, fix, eventCell(cell, tail.gsmSignal), tailContext(tail, cell))] : []
  return reportMessage(frame, { uniqueId, fixes: fixesOf(gps, fix), events }, null, tailStatus(tail), networkOf(cell ? [cell] : []))
}

/**
 * 0x34 with a GPS block after a 4-byte data/alarm word (X1): GPS, terminal info (2), odometer
 * (4, metres), cell (MCC 2, MNC 1, LAC 2, cell ID 4), driver ID (4, 0 none), two voltages (2
 * each, hundredths of a volt): the external one first, then the battery (a capture reads 14.28 V
 * then 4.19 V). SL4X sends a cell list under 0x34: no place.
 */
function decodeX1Position({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const { content } = frame
  if (!hasDateAt(content, 4)) return { kind: 'other', protocol: frame.protocol, ack: null }
  const reader = new ByteReader(content, 'content')
  reader.skip(4)
  const gps = readGpsBlock(reader, options)
  reader.skip(2)
  const extra: Record<string, unknown> = { odometer: reader.u32() }
  const cell = readCellOf(reader, 1, 2, 4)
  const driver = reader.u32()
  if (driver > 0) extra.driver_unique_id = String(driver)
  const status: Gt06DeviceStatus = { external_voltage: reader.u16() / 100, battery_voltage: reader.u16() / 100 }
  return gpsReport(frame, uniqueId, gps, cell, { ...extra, ...status }, status)
}

/** the TRX16I / VL103 0x36: GPS, cell (9), ignition, upload mode, re-upload, odometer (4), power (2), battery (1), hours (3), card (8) */
const RFID4_POSITION_BYTES = GPS_BLOCK_BYTES + 9 + 3 + 4 + 2 + 1 + 3 + 8

/**
 * 0x36 of 48 bytes starting with a GPS block (TRX16I, VL103 with a card reader): GPS, cell (MCC
 * 2, MNC 1, LAC 2, cell ID 4), ignition, upload mode, re-upload, odometer (4), external voltage
 * (2, hundredths), battery voltage (1, tenths), engine hours (3, minutes), RFID card (8). Shorter
 * 0x36 packets (Jimi IoT status modules) keep nothing.
 */
function decodeRfid4Position({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const { content } = frame
  if (content.length !== RFID4_POSITION_BYTES || !hasDateAt(content, 0)) return { kind: 'other', protocol: frame.protocol, ack: null }
  const reader = new ByteReader(content, 'content')
  const gps = readGpsBlock(reader, options)
  const cell = readCellOf(reader, 1, 2, 4)
  const ignition = reader.u8() > 0
  const extra: Record<string, unknown> = { ignition, upload_mode: reader.u8(), reupload: reader.u8() > 0, odometer: reader.u32() }
  const status: Gt06DeviceStatus = { ignition, external_voltage: reader.u16() / 100, battery_voltage: reader.u8() / 10 }
  extra.engine_hours_ms = reader.u24() * 60_000
  const driverId = driverIdOf(reader.bytesOf(8))
  if (driverId !== null) extra.driver_unique_id = driverId
  return gpsReport(frame, uniqueId, gps, cell, { ...extra, ...status }, status)
}

/**
 * 0x37: GPS, cell (MCC 2, MNC 1, LAC 2, cell ID 3), ignition, event, re-upload, then modules of
 * type (2), length (1), value: 0x2E odometer (4, metres) kept, others skipped.
 */
function decodeModulePosition({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const reader = new ByteReader(frame.content, 'content')
  const gps = readGpsBlock(reader, options)
  const cell = readCellOf(reader, 1, 2, 3)
  const ignition = reader.u8() > 0
  const extra: Record<string, unknown> = { ignition, event: reader.u8(), reupload: reader.u8() > 0 }
  while (reader.remaining >= 3) {
    const type = reader.u16()
    const length = reader.u8()
    if (type === 0x002e && length === 4) extra.odometer = reader.u32()
    else reader.skip(length)
  }
  return gpsReport(frame, uniqueId, gps, cell, extra, { ignition })
}

/**
 * 0x61 (iButton): IMEI (8), GPS, cell (MCC 2, MNC 1, LAC 2, cell ID 4), the driver's key (6, a
 * number).
 */
function decodeIbuttonPosition({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const reader = new ByteReader(frame.content, 'content')
  reader.skip(TERMINAL_ID_BYTES)
  const gps = readGpsBlock(reader, options)
  const cell = readCellOf(reader, 1, 2, 4)
  const key = reader.uint(6)
  return gpsReport(frame, uniqueId, gps, cell, key ? { driver_unique_id: String(key) } : {})
}

/** 0xA2 under this many bytes is the LW4G position, not the Wi-Fi list (7 cells alone take more) */
const WIFI_LIST_MIN_BYTES = 100

/**
 * 0xA2 of fewer than 100 bytes starting with a GPS block (LW4G): GPS, 4G cell (MCC 2, MNC 1 or
 * 2, LAC 4, cell ID 8), network type (1), terminal info, external voltage (2, hundredths),
 * battery level, GSM level, alarm, language, odometer (4), engine hours (4, seconds); the alarm
 * byte is raised. Else the 4G cell and Wi-Fi list of the VL03 documents.
 */
function decodeWifiOrLw4g(context: DecodeContext): Gt06Message {
  const { frame, uniqueId, options } = context
  const { content } = frame
  if (content.length >= WIFI_LIST_MIN_BYTES || !hasDateAt(content, 0)) return decodeCellList(context)
  const reader = new ByteReader(content, 'content')
  const gps = readGpsBlock(reader, options)
  const cell = readCell(reader, '4g')
  reader.skip(1) // network type
  const terminal = decodeTerminalInfo(reader.u8())
  const externalVoltage = reader.u16() / 100
  const tail: StatusTail = {
    terminal,
    level: levelAttributes(reader.u8()),
    externalVoltage,
    gsmSignal: reader.u8(),
    alarmByte: reader.u8(),
    language: reader.u8(),
  }
  const extra: Record<string, unknown> = { ...terminal, ...tail.level, gsm_signal: tail.gsmSignal, external_voltage: externalVoltage }
  if (reader.remaining >= 8) {
    extra.odometer = reader.u32()
    extra.engine_hours_ms = reader.u32() * 1000
  }
  const fix = toFix(gps, { ...gpsAttributes(gps, cell), ...extra })
  const alarmCode = tailAlarm(tail)
  const events = alarmCode ? [eventAtFix(alarmCode, fix, eventCell(cell, tail.gsmSignal), tailContext(tail, cell))] : []
  return reportMessage(frame, { uniqueId, fixes: fixesOf(gps, fix), events }, null, tailStatus(tail), networkOf([cell]))
}

/**
 * The NT series and XT40 0x22 / 0x25: location source (1), IMEI (8, BCD), the device's date (6),
 * then the GPS block, LBS length + cell (its ID 3 bytes, or 4 when the block has room for it), terminal info, external voltage (2, hundredths),
 * battery voltage (1, tenths), GSM level, alarm, language, odometer (3), engine hours (3,
 * minutes); 0x25 then the driver's card: length (1, with its type byte), type (1), ID (hex).
 * Told from the plain 0x22 by its content: no date at the start, but BCD after the first byte
 * and a date after the IMEI. The alarm byte is raised.
 */
function isNtForm(content: Uint8Array): boolean {
  // cheap tests first: a location source byte, then an IMEI's leading 0 digit (a date's month
  // byte is rarely under 0x0A together with a year byte under 0x10)
  return (
    content.length >= 15 + GPS_BLOCK_BYTES + 1 &&
    content[0] < 0x10 &&
    content[1] < 0x10 &&
    isBcd(content, 1, TERMINAL_ID_BYTES) &&
    !hasDateAt(content, 0) &&
    hasDateAt(content, 15)
  )
}

function decodeNtPosition({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const { content } = frame
  const reader = new ByteReader(content, 'content')
  reader.skip(1 + TERMINAL_ID_BYTES + 6)
  const gps = readGpsBlock(reader, options)
  // LBS length: counting itself in the 0x22 (9: a cell with a 3-byte ID), not in the 0x25 (10:
  // a cell with a 4-byte ID and one byte more), as the captures of both have it
  const lbsLength = reader.u8()
  const room = frame.protocol === PROTOCOL.locationDriver ? lbsLength : Math.max(0, lbsLength - 1)
  const start = reader.offset
  const cell = room >= 8 ? readCellOf(reader, 1, 2, room >= 9 ? 4 : 3) : null
  reader.skip(start + room - reader.offset)
  const terminal = decodeTerminalInfo(reader.u8())
  const externalVoltage = reader.u16() / 100
  const batteryVoltage = reader.u8() / 10
  const tail: StatusTail = { terminal, level: {}, externalVoltage, gsmSignal: reader.u8(), alarmByte: reader.u8(), language: reader.u8() }
  const extra: Record<string, unknown> = { ...terminal, gsm_signal: tail.gsmSignal, external_voltage: externalVoltage, battery_voltage: batteryVoltage }
  extra.odometer = reader.u24()
  extra.engine_hours_ms = reader.u24() * 60_000
  if (frame.protocol === PROTOCOL.locationDriver && reader.remaining >= 1) {
    const length = reader.u8()
    if (length > 1 && reader.remaining >= length) {
      reader.skip(1)
      const driverId = driverIdOf(reader.bytesOf(length - 1))
      if (driverId !== null) extra.driver_unique_id = driverId
    }
  }
  const fix = toFix(gps, { ...gpsAttributes(gps, cell), ...extra })
  const alarmCode = tailAlarm(tail)
  const events = alarmCode ? [eventAtFix(alarmCode, fix, eventCell(cell, tail.gsmSignal), tailContext(tail, cell))] : []
  const status: Gt06DeviceStatus = { ...tailStatus(tail), battery_voltage: batteryVoltage }
  return reportMessage(frame, { uniqueId, fixes: fixesOf(gps, fix), events }, null, status, networkOf(cell ? [cell] : []))
}

// ---------------------------------------------------------------------------------------------
// Decoding: alarms with a GPS block (0x16, 0x26, 0x27, 0xA4)
// ---------------------------------------------------------------------------------------------

/**
 * Does this 0x16 come without the LBS length byte? Its byte 18 is then the high byte of the MCC
 * (≤ 0x03, or 0x80..0x83 with the 2-byte-MNC bit; an LBS length is at least 8), the MCC is a
 * real one, and what lies between the GPS block and the 5-byte tail is exactly one cell.
 */
function lacksLbsLength(content: Uint8Array): boolean {
  if (content.length < GPS_BLOCK_BYTES + 2) return false
  const first = content[GPS_BLOCK_BYTES]
  if (!(first <= 0x03 || (first >= 0x80 && first <= 0x83))) return false
  const mccField = (first << 8) | content[GPS_BLOCK_BYTES + 1]
  if ((mccField & 0x7fff) === 0) return false
  const room = content.length - GPS_BLOCK_BYTES - STATUS_TAIL_BYTES
  return cellIdBytesFor(room, mncBytesOf(mccField), '2g') !== null
}

/**
 * The LBS block after its length byte. The length byte is unreliable in the field: most
 * firmware counts itself (9 for an 8-byte cell, GT06N doc), some does not (8, a real 0x26 in
 * Traccar's GT06 tests), and some widens the cell ID without changing it. So the packet length
 * decides first: when everything between the length byte and the status tail is exactly one
 * cell, that is the cell. Otherwise the length byte (counting itself, or not: TRX16I / VL103
 * firmware sends 8 for an 8-byte cell and puts a driver ID after the tail) bounds the block,
 * fields a firmware adds inside it are skipped, and bytes after the tail are extra fields.
 * Length 0: no cell at all, whatever fills its place (zeros, or leftovers: a real 0x16 in
 * Traccar's GT06 tests has one stray byte among 45).
 */
function readLbsBlock(reader: ByteReader, lbsLength: number, room: number, family: CellFamily): CellInfo | null {
  const content = reader.bytes
  const start = reader.offset
  if (room < 0) throw new MalformedContent(`${content.length} bytes are too few for an alarm packet`)
  if (lbsLength === 0) {
    reader.skip(room)
    return null
  }
  if (room >= 2) {
    const mncBytes = mncBytesOf((content[start] << 8) | content[start + 1])
    const exact = cellIdBytesFor(room, mncBytes, family)
    if (exact !== null) return readCell(reader, family, exact)
    const declared = lbsLength - 1
    if (lbsLength > 0 && declared <= room && declared >= cellBytes(family, mncBytes)) {
      const cell = readCell(reader, family)
      reader.skip(start + declared - reader.offset)
      return cell
    }
    if (lbsLength <= room && lbsLength === cellBytes(family, mncBytes)) return readCell(reader, family)
  }
  throw new MalformedContent(`LBS length ${lbsLength} does not fit the ${room} byte(s) before the status`)
}

/**
 * GPS block, LBS length (1) + cell, then terminal info, voltage level, GSM signal level, alarm
 * and language (GT06 / GT06N docs); 0x27 and 0xA4 add the fence number (VL03 doc: 0 = fence 1,
 * 0xFF none); 0xA4 has the 4G cell. Told apart by length: a 0x16 without the LBS length byte
 * (see `lacksLbsLength`), a widened cell ID, and 4 bytes after the tail, the mileage the VL03
 * doc's 0x26 table ends with. Acknowledged with the packet's own protocol number and serial
 * (VL03 doc: `78 78 05 26 ...`), or the device sends it again.
 */
function decodeGpsAlarm({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const { content, protocol } = frame
  const family: CellFamily = protocol === PROTOCOL.alarm4g ? '4g' : '2g'
  const hasFence = protocol === PROTOCOL.alarmFence || protocol === PROTOCOL.alarm4g
  const reader = new ByteReader(content, 'content')
  const gps = readGpsBlock(reader, options)
  let cell: CellInfo | null
  let tail: StatusTail
  if (protocol === PROTOCOL.alarm && lacksLbsLength(content)) {
    const room = content.length - GPS_BLOCK_BYTES - STATUS_TAIL_BYTES
    cell = readCell(reader, '2g', cellIdBytesFor(room, mncBytesOf((content[18] << 8) | content[19]), '2g') ?? 3)
    tail = readVoltageTail(reader)
  } else {
    const lbsLength = reader.u8()
    const room = content.length - reader.offset - STATUS_TAIL_BYTES - (hasFence ? 1 : 0)
    cell = readLbsBlock(reader, lbsLength, room, family)
    tail = readStatusTail(reader)
  }
  const fenceByte = hasFence ? reader.u8() : null
  const odometer = reader.remaining === 4 ? reader.u32() : null
  // language, then an 8-byte RFID card (TRX16I / VL103 with a card reader; zeros: no card)
  const driverId = reader.remaining === 8 ? driverIdOf(reader.bytesOf(8)) : null

  const alarmCode = tailAlarm(tail)
  const fixAttributes: Record<string, unknown> = {
    ...gpsAttributes(gps, cell),
    ...tail.terminal,
    ...tail.level,
    gsm_signal: tail.gsmSignal,
  }
  if (tail.externalVoltage !== null) fixAttributes.external_voltage = tail.externalVoltage
  if (odometer !== null) fixAttributes.odometer = odometer
  if (driverId !== null) fixAttributes.driver_unique_id = driverId
  const fenceNumber = fenceByte !== null && fenceByte !== 0xff ? fenceByte + 1 : null
  if (fenceNumber !== null) fixAttributes.fence_number = fenceNumber
  if (alarmCode) fixAttributes.alarm = alarmCode

  const fix = toFix(gps, fixAttributes)
  const events: DecodedEvent[] = []
  if (alarmCode) {
    const context = tailContext(tail, cell)
    if (fenceNumber !== null) context.fence_number = fenceNumber
    if (gps.timeFromServer) context.time_source = 'server'
    events.push(eventAtFix(alarmCode, fix, eventCell(cell, tail.gsmSignal), context))
  }
  const report = { uniqueId, fixes: gps.positioned ? [fix] : [], events }
  return reportMessage(frame, report, buildGt06Ack(protocol, frame.serial), tailStatus(tail), networkOf(cell ? [cell] : []))
}

// ---------------------------------------------------------------------------------------------
// Decoding: dashcam alarms and events (0x95)
// ---------------------------------------------------------------------------------------------

/**
 * Event byte of a dashcam's 0x95 → alarm code (JC400 / JC450 alarm list). 0x01 is SOS when the
 * packet has a place; the 7-byte form (date and event only) uses it for a general alarm.
 */
const DASHCAM_ALARM_CODES: Readonly<Record<number, string>> = {
  0x01: 'sos',
  0x0e: 'low_battery', // low external power
  0x80: 'vibration',
  0x87: 'overspeed',
  0x88: 'power_cut',
  0x90: 'harsh_acceleration',
  0x91: 'harsh_braking',
  0x92: 'harsh_cornering',
  0x93: 'collision',
}

/** the 0x95 of a JC400 / JC450 starts with this marker, then a version byte */
const DASHCAM_MARKER = 0xffff
/** date and event byte: the short 0x95 */
const DASHCAM_SHORT_BYTES = 7

/**
 * 0x95, three forms told apart by their content. 7 bytes: date (6) and event (1), no place.
 * Starting FF FF (JC400 / JC450): marker (2), version (1), the `dashcam` GPS block, external
 * voltage (2, tenths of a volt), event (1), event data (2), then the names of the video files
 * the event recorded (ASCII, comma-separated). Otherwise (JC100 family): the `bare` GPS block,
 * event, event data, file names. An event byte the table does not name is the generic alarm
 * with its byte. Acknowledged with its own protocol number and serial, or the camera sends it
 * again.
 */
function decodeDashcamAlarm({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const { content } = frame
  const reader = new ByteReader(content, 'content')
  const ack = buildGt06Ack(frame.protocol, frame.serial)
  if (content.length === DASHCAM_SHORT_BYTES) {
    const { timestamp, fromServer } = readDateTime(reader, options)
    const eventByte = reader.u8()
    const code = eventByte === 0x01 ? GENERIC_ALARM_CODE : dashcamAlarmCode(eventByte)
    const context: Record<string, unknown> = { event: eventByte }
    if (code === GENERIC_ALARM_CODE) context[RAW_ALARM_KEY] = `0x${hex2(eventByte)}`
    if (fromServer) context.time_source = 'server'
    const event = eventWithoutFix(code, timestamp, { mcc: null, mnc: null, dbm: null }, context)
    return reportMessage(frame, { uniqueId, fixes: [], events: [event] }, ack)
  }
  const jc400 = content.length >= 3 && ((content[0] << 8) | content[1]) === DASHCAM_MARKER
  if (jc400) reader.skip(3)
  const gps = readGpsBlock(reader, options, jc400 ? 'dashcam' : 'bare')
  const attributes = gpsAttributes(gps, null)
  const status: Gt06DeviceStatus = {}
  if (jc400) attributes.external_voltage = status.external_voltage = reader.u16() / 10
  const eventByte = reader.u8()
  attributes.event = eventByte
  attributes.event_data = reader.u16()
  if (reader.remaining > 0) attributes.event_files = asciiOf(reader.bytesOf(reader.remaining))
  const fix = toFix(gps, attributes)
  const code = dashcamAlarmCode(eventByte)
  const context: Record<string, unknown> = { event: eventByte }
  if (code === GENERIC_ALARM_CODE) context[RAW_ALARM_KEY] = `0x${hex2(eventByte)}`
  if (attributes.event_files) context.event_files = attributes.event_files
  const events = [eventAtFix(code, fix, { mcc: null, mnc: null, dbm: null }, context)]
  return reportMessage(frame, { uniqueId, fixes: gps.positioned ? [fix] : [], events }, ack, status)
}

function dashcamAlarmCode(eventByte: number): string {
  return DASHCAM_ALARM_CODES[eventByte] ?? GENERIC_ALARM_CODE
}

// ---------------------------------------------------------------------------------------------
// Decoding: modular information (0x70)
// ---------------------------------------------------------------------------------------------

/** Event byte of a 0x70 event module → alarm code (VL103 event list); other events are kept as the fix's `event` only. */
const MODULE_EVENT_CODES: Readonly<Record<number, string>> = {
  0x10: 'door',
  0x12: 'tamper', // removed from the vehicle
  0x14: 'geofence_enter',
  0x15: 'geofence_exit',
  0x1a: 'low_battery',
  0x1b: 'overspeed',
  0x1d: 'power_off',
  0x20: 'vibration',
  0x21: 'power_cut',
  0x23: 'tamper',
}

/** Module numbers of a 0x70 packet this decoder reads. */
const MODULE = {
  iccid: 0x0003,
  cell: 0x0011,
  batteryVoltage: 0x0018,
  position: 0x0033,
  event: 0x0034,
} as const

/** 2000-01-01 UTC, Unix seconds: the earliest time a position module may carry */
const MODULE_EARLIEST_TIME = 946_684_800

/** the position module: time (4), satellites (1), altitude (2), latitude (4), longitude (4), speed (1), course/status (2) */
const MODULE_POSITION_BYTES = 18

/**
 * 0x70 (VL103 / VL802 in 0x7979 frames): modules of type (2), length (2), value. Kept: 0x33 the
 * position (Unix time, satellites, altitude in metres, then coordinates, speed and course/status
 * as in the GPS block), 0x34 an event (event byte, time, text), 0x18 the battery voltage
 * (hundredths of a volt), 0x03 the ICCID, 0x11 the serving cell (MCC 2, MNC 2, LAC 2, cell ID 3,
 * signal 1). Other modules are skipped by their length. A position module of zeros is no place.
 * Answered with a 0x7878 frame of protocol 0x70 and the packet's serial, as the devices wait for.
 */
function decodeModular({ frame, uniqueId }: DecodeContext): Gt06Message {
  const { content } = frame
  const status: Gt06DeviceStatus = {}
  const attributes: Record<string, unknown> = {}
  let positionAt = -1
  let eventByte: number | null = null
  let cell: CellInfo | null = null
  for (let at = 0; at + 4 <= content.length; ) {
    const type = (content[at] << 8) | content[at + 1]
    const length = (content[at + 2] << 8) | content[at + 3]
    const value = at + 4
    if (value + length > content.length) throw new MalformedContent(`module 0x${hex4(type)} runs past the packet`)
    if (type === MODULE.position && length >= MODULE_POSITION_BYTES) positionAt = value
    else if (type === MODULE.event && length >= 1) eventByte = content[value]
    else if (type === MODULE.batteryVoltage && length >= 2) status.battery_voltage = ((content[value] << 8) | content[value + 1]) / 100
    else if (type === MODULE.iccid && length === 10) {
      const iccid = digitsOf(content.subarray(value, value + 10))
      if (iccid !== null) status.iccid = iccid
    } else if (type === MODULE.cell && length >= 9) {
      const reader = new ByteReader(content.subarray(value, value + 9), 'cell module')
      cell = { mcc: reader.u16(), mnc: reader.u16(), lac: reader.u16(), cellId: reader.u24() }
    }
    at = value + length
  }
  const fixes: DecodedFix[] = []
  const events: DecodedEvent[] = []
  let fix: DecodedFix | null = null
  if (positionAt >= 0) {
    const reader = new ByteReader(content.subarray(positionAt, positionAt + MODULE_POSITION_BYTES), 'position module')
    const timestamp = reader.u32()
    const satellites = reader.u8()
    const altitude = reader.i16()
    const latitudeRaw = reader.u32()
    const longitudeRaw = reader.u32()
    const speed = reader.u8()
    const courseStatus = reader.u16()
    const course = courseStatus & 0x03ff
    const positioned = (courseStatus & 0x1000) !== 0
    if (latitudeRaw > 90 * COORDINATE_SCALE || longitudeRaw > 180 * COORDINATE_SCALE || course > 360) {
      throw new MalformedContent('position module out of range')
    }
    // a time before 2000 is no time (zeros when the device has none yet)
    if (timestamp >= MODULE_EARLIEST_TIME && (positioned || latitudeRaw !== 0 || longitudeRaw !== 0)) {
      const fixAttributes: Record<string, unknown> = { ...attributes }
      if (cell && isRealCell(cell)) Object.assign(fixAttributes, { mcc: cell.mcc, mnc: cell.mnc, lac: cell.lac, cell_id: cell.cellId })
      if (eventByte !== null) fixAttributes.event = eventByte
      Object.assign(fixAttributes, status)
      fix = {
        timestamp,
        latitude: ((courseStatus & 0x0400) !== 0 ? 1 : -1) * (latitudeRaw / COORDINATE_SCALE),
        longitude: ((courseStatus & 0x0800) !== 0 ? -1 : 1) * (longitudeRaw / COORDINATE_SCALE),
        speed,
        course,
        altitude,
        satellites,
        valid: positioned,
        attributes: fixAttributes,
      }
      fixes.push(fix)
    }
  }
  // an event is raised at the packet's position (it is its time); without one it stays unraised
  const code = eventByte === null ? undefined : MODULE_EVENT_CODES[eventByte]
  if (code && fix) events.push(eventAtFix(code, fix, { mcc: cell?.mcc ?? null, mnc: cell?.mnc ?? null, dbm: null }, { event: eventByte }))
  const ack = buildGt06Ack(frame.protocol, frame.serial)
  return reportMessage(frame, { uniqueId, fixes, events }, ack, status, cell && isRealCell(cell) ? networkOf([cell]) : undefined)
}

// ---------------------------------------------------------------------------------------------
// Decoding: alarms without a fix (0x19, 0xA5)
// ---------------------------------------------------------------------------------------------

/**
 * 0x19 (GT03A/B doc, "LBS + status"): cell, then the status tail; 0xA5 the same with the 4G
 * cell. No date: the event is dated by the server's clock. Acknowledged like any alarm.
 */
function decodeCellAlarm({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const { content, protocol } = frame
  const family: CellFamily = protocol === PROTOCOL.lbsAlarm4g ? '4g' : '2g'
  if (content.length < 2) throw new MalformedContent('no cell')
  const room = content.length - STATUS_TAIL_BYTES
  const cellIdBytes = cellIdBytesFor(room, mncBytesOf((content[0] << 8) | content[1]), family)
  if (cellIdBytes === null) throw new MalformedContent(`${content.length} bytes are not a cell and a status`)
  const reader = new ByteReader(content, 'content')
  const cell = readCell(reader, family, cellIdBytes)
  const tail = readStatusTail(reader)
  if (options.now === undefined) throw new MalformedContent('an alarm without a date needs the server clock')
  const alarmCode = tailAlarm(tail)
  const events = alarmCode
    ? [eventWithoutFix(alarmCode, Math.floor(options.now), eventCell(cell, tail.gsmSignal), { ...tailContext(tail, cell), time_source: 'server' })]
    : []
  const network = networkOf([cell]) ?? { cells: [], wifi: [] }
  return reportMessage(frame, { uniqueId, fixes: [], events }, buildGt06Ack(protocol, frame.serial), tailStatus(tail), network)
}

// ---------------------------------------------------------------------------------------------
// Decoding: status (0x13, 0x23) and information (0x94)
// ---------------------------------------------------------------------------------------------

/**
 * 0x13: terminal info (1), voltage level (1, 0 none .. 6 very high), GSM signal level (1,
 * 0 none .. 4 strong), alarm/language (2). 0x23 (Concox heartbeat) has a 2-byte battery
 * voltage in hundredths of a volt instead of the level. Acknowledged (the device counts missed
 * answers and reconnects). A non-zero alarm byte is an event, dated by the server's clock; the
 * terminal info bits are only state here (every heartbeat repeats them).
 */
function decodeStatusPacket({ frame, uniqueId, options }: DecodeContext): Gt06Message {
  const { protocol } = frame
  const reader = new ByteReader(frame.content, 'content')
  const terminal = decodeTerminalInfo(reader.u8())
  const attributes: Record<string, unknown> = { ...terminal }
  const status = statusOfTerminal(terminal)
  if (protocol === PROTOCOL.heartbeat) {
    attributes.battery_voltage = status.battery_voltage = reader.u16() / 100
  } else {
    const level = reader.u8()
    attributes.voltage_level = level
    Object.assign(status, levelAttributes(level))
  }
  const gsmSignal = reader.u8()
  attributes.gsm_signal = status.gsm_signal = gsmSignal
  // alarm/language is optional in practice (some firmwares stop after the signal byte); bytes
  // after it are model-specific extensions
  let alarmByte = 0
  let language: number | null = null
  if (reader.remaining >= 2) {
    alarmByte = reader.u8()
    language = reader.u8()
    attributes.language = language
    if (alarmByte !== 0) attributes.alarm = gt06AlarmCode(alarmByte)
  }
  const events: DecodedEvent[] = []
  if (alarmByte !== 0 && options.now !== undefined) {
    const context: Record<string, unknown> = { alarm_byte: alarmByte, ...rawAlarmContext(alarmByte), ...terminal }
    if (status.voltage_level !== undefined) context.voltage_level = status.voltage_level
    if (status.battery_level !== undefined) context.battery_level = status.battery_level
    if (status.battery_voltage !== undefined) context.battery_voltage = status.battery_voltage
    Object.assign(context, { gsm_signal: gsmSignal, dbm_estimated: true })
    if (language !== null) context.language = language
    context.time_source = 'server'
    events.push(eventWithoutFix(gt06AlarmCode(alarmByte), Math.floor(options.now), eventCell(null, gsmSignal), context))
  }
  return {
    kind: 'status',
    protocol,
    uniqueId,
    attributes,
    ack: buildGt06Ack(protocol, frame.serial),
    report: { uniqueId, fixes: [], events },
    status,
    keepAlive: events.length === 0,
  }
}

/** Digits of a BCD or hex-padded identity (IMSI, ICCID): `f` padding dropped; null if not digits. */
function digitsOf(bytes: Uint8Array): string | null {
  const text = Array.from(bytes, hex2).join('').replace(/f+$/i, '')
  return /^\d+$/.test(text) ? text : null
}

function asciiOf(bytes: Uint8Array): string {
  let text = ''
  for (const byte of bytes) {
    if (byte < 0x20 || byte > 0x7e) break
    text += String.fromCharCode(byte)
  }
  return text
}

/**
 * Fuel sensor text (0x94 type 0x0D), after an optional 6-byte date: `!AIOIL,<address>,<output>,
 * <temperature °C>,<version>,<status>,<measured level>,<movement>,<excitations>,<checksum>`, as
 * two real captures in Traccar's GT06 tests carry it (`!AIOIL,02,008.290,029.600,...,008.430,...`).
 */
function readFuelSensor(data: Uint8Array, status: Gt06DeviceStatus): void {
  const text = asciiOf(data[0] === 0x21 || data.length <= 6 ? data : data.subarray(6))
  if (!text.startsWith('!AIOIL,')) return
  const fields = text.split(',')
  const temperature = Number(fields[3])
  const level = Number(fields[6])
  if (fields[3] && Number.isFinite(temperature)) status.temperature = temperature
  if (fields[6] && Number.isFinite(level)) status.fuel_level = level
}

/**
 * 0x94 information transmission (VL03 doc), in a 0x7979 frame: information type (1), data.
 * Kept: 0x00 external voltage (2 bytes, hundredths of a volt); 0x04 the status synchronisation
 * text (its `ICCID=`); 0x05 door (bit 0 of the last byte, "1 on": open; some firmware puts a
 * 6-byte date before it); 0x0A IMEI (8), IMSI (8), ICCID (10), BCD; 0x0D the fuel sensor
 * (temperature, level). Other types (self-check, satellites, RFID, ...) only keep the device
 * alive. A 0x7878 frame with 2 bytes of data is a bare external voltage (a real device in
 * Traccar's GT06 tests, `78780794 04eb` = 12.59 V). The documents ask for no response.
 */
function decodeInformation({ frame, uniqueId }: DecodeContext): Gt06Message {
  const { content } = frame
  const status: Gt06DeviceStatus = {}
  const attributes: Record<string, unknown> = {}
  const reader = new ByteReader(content, 'content')
  if (!frame.longFrame && content.length === 2) {
    status.external_voltage = reader.u16() / 100
  } else {
    const type = reader.u8()
    attributes.info_type = type
    const data = reader.bytesOf(reader.remaining)
    if (type === 0x00 && data.length >= 2) {
      status.external_voltage = ((data[0] << 8) | data[1]) / 100
    } else if (type === 0x04) {
      const iccid = /ICCID=([0-9A-Fa-f]{18,22})/.exec(asciiOf(data))
      const digits = iccid ? iccid[1].replace(/f+$/i, '') : ''
      if (/^\d{18,22}$/.test(digits)) status.iccid = digits
    } else if (type === 0x05 && data.length >= 1) {
      status.door = (data[data.length - 1] & 0x01) !== 0
    } else if (type === 0x0a && data.length >= 26) {
      const imsi = digitsOf(data.subarray(8, 16))
      const iccid = digitsOf(data.subarray(16, 26))
      if (imsi !== null) status.imsi = imsi.replace(/^0/, '')
      if (iccid !== null) status.iccid = iccid
    } else if (type === 0x0d) {
      readFuelSensor(data, status)
    }
  }
  Object.assign(attributes, status)
  return {
    kind: 'status',
    protocol: frame.protocol,
    uniqueId,
    attributes,
    ack: null,
    report: { uniqueId, fixes: [], events: [] },
    status,
    keepAlive: true,
  }
}

// ---------------------------------------------------------------------------------------------
// Decoding: cell and Wi-Fi packets (0x11, 0x28, 0x2C, 0xA1, 0xA2)
// ---------------------------------------------------------------------------------------------

/** How many cells (the serving one and 6 neighbours) a multi-cell packet always carries. */
const MULTI_CELL_COUNT = 7

function bssidOf(bytes: Uint8Array): string {
  return Array.from(bytes, hex2).join(':')
}

/**
 * 0x11 (GT03A/B doc): date (6), one 2G cell; bytes after it (language, extensions) ignored.
 * Keeps the device alive and names its cell; not acknowledged.
 */
function decodeSingleCell({ frame, uniqueId }: DecodeContext): Gt06Message {
  const reader = new ByteReader(frame.content, 'content')
  const timestamp = readOptionalDate(reader)
  const cell = readCell(reader, '2g')
  const network = networkOf([cell]) ?? { cells: [], wifi: [] }
  if (timestamp !== undefined) network.timestamp = timestamp
  return reportMessage(frame, { uniqueId, fixes: [], events: [] }, null, undefined, network)
}

/**
 * 0x28 (VL03 doc): date (6), MCC (2), MNC (1 or 2), 7 × (LAC, cell ID, signal), timing advance
 * (1), language (2). 0xA1 is the same with 4G cells (LAC 4, cell ID 8). 0x2C and 0xA2 put the
 * Wi-Fi access points after the timing advance instead of the language: count (1), then MAC (6)
 * and signal (1) each. Sent when there is no GPS fix; kept as network data, never as a place.
 * Not acknowledged: the documents ask for no response to 0x28 / 0xA1, and the Wi-Fi forms are
 * treated alike.
 */
function decodeCellList({ frame, uniqueId }: DecodeContext): Gt06Message {
  const { protocol } = frame
  const family: CellFamily = protocol === PROTOCOL.lbsMulti4g || protocol === PROTOCOL.lbsWifi4g ? '4g' : '2g'
  const withWifi = protocol === PROTOCOL.lbsWifi || protocol === PROTOCOL.lbsWifi4g
  const reader = new ByteReader(frame.content, 'content')
  const timestamp = readOptionalDate(reader)
  const mccField = reader.u16()
  const mcc = mccField & 0x7fff
  const mnc = mncBytesOf(mccField) === 2 ? reader.u16() : reader.u8()
  const cells: Gt06CellTower[] = []
  for (let i = 0; i < MULTI_CELL_COUNT; i++) {
    const lac = family === '4g' ? reader.u32() : reader.u16()
    const cell: CellInfo = { mcc, mnc, lac, cellId: reader.uint(standardCellIdBytes(family)) }
    const signal = reader.u8()
    if (isRealCell(cell)) cells.push(towerOf(cell, signal))
  }
  const network: Gt06Network = { cells, wifi: [] }
  if (timestamp !== undefined) network.timestamp = timestamp
  if (withWifi) {
    network.timing_advance = reader.u8()
    const count = reader.u8()
    for (let i = 0; i < count; i++) {
      const mac = reader.bytesOf(6)
      const signal = reader.u8()
      // an all-zero MAC is an empty slot, as a zero LAC and cell ID are for cells
      if (mac.some((byte) => byte !== 0)) network.wifi.push({ bssid: bssidOf(mac), signal })
    }
  } else {
    if (reader.remaining > 0) network.timing_advance = reader.u8()
    if (reader.remaining >= 2) reader.u16() // language
  }
  if (reader.remaining !== 0) throw new MalformedContent(`${reader.remaining} unexpected byte(s) after the cells`)
  return reportMessage(frame, { uniqueId, fixes: [], events: [] }, null, undefined, network)
}

const HANDLERS: Readonly<Record<number, Handler>> = {
  [PROTOCOL.lbs]: decodeLbsOrGps,
  [PROTOCOL.location]: decodePosition,
  [PROTOCOL.locationUtc]: decodePosition,
  [PROTOCOL.location4g]: decodePosition,
  [PROTOCOL.status]: decodeStatusPacket,
  [PROTOCOL.heartbeat]: decodeStatusPacket,
  [PROTOCOL.alarm]: decodeGpsAlarm,
  [PROTOCOL.alarmUtc]: decodeGpsAlarm,
  [PROTOCOL.alarmFence]: decodeGpsAlarm,
  [PROTOCOL.alarm4g]: decodeGpsAlarm,
  [PROTOCOL.lbsAlarm]: decodeCellAlarm,
  [PROTOCOL.lbsAlarm4g]: decodeCellAlarm,
  [PROTOCOL.lbsMulti]: decodeCellList,
  [PROTOCOL.lbsMulti4g]: decodeCellList,
  [PROTOCOL.lbsWifi]: decodeCellList,
  [PROTOCOL.lbsWifi4g]: decodeWifiOrLw4g,
  [PROTOCOL.information]: decodeInformation,
  [PROTOCOL.dashcamAlarm]: decodeDashcamAlarm,
  [PROTOCOL.modular]: decodeModular,
  [PROTOCOL.gps]: decodeGpsFirst,
  [PROTOCOL.locationCells]: decodeGpsFirst,
  [PROTOCOL.addressRequest]: decodeGpsFirst,
  [PROTOCOL.locationCellType]: decodeGpsFirst,
  [PROTOCOL.locationRfid]: decodeRfidPosition,
  [PROTOCOL.locationPower]: decodePowerPosition,
  [PROTOCOL.locationDriver]: (context) => (isNtForm(context.frame.content) ? decodeNtPosition(context) : { kind: 'other', protocol: context.frame.protocol, ack: null }),
  [PROTOCOL.locationAltitude]: decodeAltitudePosition,
  [PROTOCOL.statusAltitude]: decodeSl4xOrAz735,
  [PROTOCOL.alarmAz735]: decodeSl4xOrAz735,
  [PROTOCOL.locationX1]: decodeX1Position,
  [PROTOCOL.locationRfid4]: decodeRfid4Position,
  [PROTOCOL.locationModules]: decodeModulePosition,
  [PROTOCOL.locationIbutton]: decodeIbuttonPosition,
}

function hex2(value: number): string {
  return value.toString(16).padStart(2, '0')
}

function hex4(value: number): string {
  return value.toString(16).padStart(4, '0')
}
