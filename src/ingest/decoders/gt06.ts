/**
 * GT06 / Concox binary protocol: a streaming frame splitter and a frame decoder.
 *
 * Wire format (all integers big-endian):
 *
 *   start   length      protocol  content  serial  crc  stop
 *   78 78   1 byte      1 byte    N bytes  2       2    0D 0A     length = 5 + N
 *   79 79   2 bytes     1 byte    N bytes  2       2    0D 0A     (long frames, same meaning)
 *
 * The CRC is CRC-16/X.25 ("CRC-ITU" in the documents) over the length field(s) through the
 * serial number. References: "GT06 GPS Tracker Communication Protocol" (Concox, V1.x) for
 * 0x01 / 0x12 / 0x13 / 0x16, and the later Concox documents (GT06N / JM-VL01 family) for
 * 0x22 / 0x26 / 0x23 / 0x8A.
 *
 * Split of responsibilities: `createGt06Parser()` turns arbitrary TCP chunks into CRC-checked
 * frames (or errors the listener can log or close on); `decodeGt06Frame()` turns one frame into
 * a login, a report, a status, or "nothing to store", each with the acknowledgement to send
 * *after* the data is durable. Both are pure: no I/O, no clock (the caller passes `now`).
 */

import { eventAtFix } from './events'
import { appendBytes } from './bytes'
import type { DecodedEvent, DecodedFix, DecodedReport } from '../types'
import { crc16X25 } from './crc'

// ---------------------------------------------------------------------------------------------
// Framing
// ---------------------------------------------------------------------------------------------

const SHORT_START = 0x78
const LONG_START = 0x79
const STOP_1 = 0x0d
const STOP_2 = 0x0a
/** protocol number (1) + serial (2) + CRC (2): the smallest legal length field */
const MIN_LENGTH_FIELD = 5

/** Default cap on buffered bytes; also the largest frame accepted. Real GT06 frames are < 1 KiB. */
export const GT06_DEFAULT_MAX_BUFFERED_BYTES = 4096

/** One CRC-checked frame, stripped of its envelope. */
export interface Gt06Frame {
  /** true for a 0x7979 frame (2-byte length field) */
  longFrame: boolean
  protocol: number
  /** the information content: the bytes between the protocol number and the serial number */
  content: Uint8Array
  /** information serial number, echoed in the acknowledgement */
  serial: number
}

export type Gt06StreamError =
  /** bytes that were not part of any frame were discarded while looking for a start marker */
  | { code: 'garbage'; fatal: false; skippedBytes: number; message: string }
  /** a complete, well-delimited frame whose CRC did not match: it is dropped, not acknowledged */
  | { code: 'bad_crc'; fatal: false; protocol: number; expected: number; received: number; message: string }
  /**
   * a frame declared longer than the buffer cap. The stream cannot be trusted any more (a
   * hostile or foreign client): the listener should close the connection. The parser stays
   * failed and buffers nothing more.
   */
  | { code: 'frame_too_large'; fatal: true; declaredBytes: number; maxBytes: number; message: string }

export type Gt06StreamItem =
  | { kind: 'frame'; frame: Gt06Frame }
  | { kind: 'error'; error: Gt06StreamError }

export interface Gt06Parser {
  /** Feed the next chunk from the socket; returns every complete frame and error, in order. */
  push(chunk: Uint8Array): Gt06StreamItem[]
  /** bytes held back waiting for the rest of a frame (never more than the cap) */
  readonly bufferedBytes: number
  /** true after a fatal error; every later push returns that error again */
  readonly failed: boolean
}

export interface Gt06ParserOptions {
  maxBufferedBytes?: number
}

function isStartByte(byte: number): boolean {
  return byte === SHORT_START || byte === LONG_START
}

/** Index of the next 0x7878 or 0x7979 at or after `from`, or -1. */
function findStartMarker(buffer: Uint8Array, from: number): number {
  for (let i = from; i + 1 < buffer.length; i++) {
    const byte = buffer[i]
    if (isStartByte(byte) && buffer[i + 1] === byte) return i
  }
  return -1
}

/** How many later markers a stalled parse examines per push: bounds the work a client can cause. */
const MAX_RESYNC_CANDIDATES = 16

/**
 * Index of the first start marker at or after `from` that begins a complete frame with valid
 * stop bits and CRC, or -1. Only used while an earlier candidate is incomplete.
 */
function findCompleteFrame(buffer: Uint8Array, from: number, maxBytes: number): number {
  let candidate = findStartMarker(buffer, from)
  for (let tries = 0; candidate >= 0 && tries < MAX_RESYNC_CANDIDATES; tries++) {
    const longFrame = buffer[candidate] === LONG_START
    const headerBytes = longFrame ? 4 : 3
    if (buffer.length - candidate < headerBytes) return -1
    const lengthField = longFrame ? (buffer[candidate + 2] << 8) | buffer[candidate + 3] : buffer[candidate + 2]
    const end = candidate + headerBytes + lengthField + 2
    if (
      lengthField >= MIN_LENGTH_FIELD &&
      end - candidate <= maxBytes &&
      end <= buffer.length &&
      buffer[end - 2] === STOP_1 &&
      buffer[end - 1] === STOP_2 &&
      crc16X25(buffer, candidate + 2, end - 4) === ((buffer[end - 4] << 8) | buffer[end - 3])
    ) {
      return candidate
    }
    candidate = findStartMarker(buffer, candidate + 1)
  }
  return -1
}

export function createGt06Parser(options: Gt06ParserOptions = {}): Gt06Parser {
  const maxBytes = options.maxBufferedBytes ?? GT06_DEFAULT_MAX_BUFFERED_BYTES
  let pending: Uint8Array = new Uint8Array(0)
  let fatalError: Gt06StreamError | null = null

  function push(chunk: Uint8Array): Gt06StreamItem[] {
    if (fatalError) return [{ kind: 'error', error: fatalError }]
    const items: Gt06StreamItem[] = []
    const buffer = appendBytes(pending, chunk)

    let position = 0
    let skipped = 0
    const flushSkipped = () => {
      if (skipped === 0) return
      items.push({
        kind: 'error',
        error: {
          code: 'garbage',
          fatal: false,
          skippedBytes: skipped,
          message: `discarded ${skipped} byte(s) outside any GT06 frame`,
        },
      })
      skipped = 0
    }

    while (position < buffer.length) {
      const start = findStartMarker(buffer, position)
      if (start < 0) {
        // No marker: drop everything except a trailing first half of a possible marker.
        const keepFrom = isStartByte(buffer[buffer.length - 1]) ? buffer.length - 1 : buffer.length
        skipped += keepFrom - position
        position = keepFrom
        break
      }
      skipped += start - position
      position = start

      const longFrame = buffer[start] === LONG_START
      const headerBytes = longFrame ? 4 : 3
      if (buffer.length - start < headerBytes) break // wait for the length field
      const lengthField = longFrame ? (buffer[start + 2] << 8) | buffer[start + 3] : buffer[start + 2]
      if (lengthField < MIN_LENGTH_FIELD) {
        // Cannot be a real frame: the marker was data. Step past its first byte and rescan.
        skipped += 1
        position = start + 1
        continue
      }
      const frameBytes = headerBytes + lengthField + 2
      if (frameBytes > maxBytes) {
        flushSkipped()
        fatalError = {
          code: 'frame_too_large',
          fatal: true,
          declaredBytes: frameBytes,
          maxBytes,
          message: `GT06 frame declares ${frameBytes} bytes, more than the ${maxBytes}-byte limit`,
        }
        items.push({ kind: 'error', error: fatalError })
        pending = new Uint8Array(0)
        return items
      }
      if (buffer.length - start < frameBytes) {
        // Before waiting for the rest, make sure this is not a false marker hiding a complete
        // frame further on (e.g. garbage ending in 0x78 right before a real 78 78 ...).
        const later = findCompleteFrame(buffer, start + 1, maxBytes)
        if (later < 0) break // wait for the rest of the frame
        skipped += later - start
        position = later
        continue
      }
      const end = start + frameBytes
      if (buffer[end - 2] !== STOP_1 || buffer[end - 1] !== STOP_2) {
        // Misframed: the "marker" was inside garbage. Resynchronise one byte further on.
        skipped += 1
        position = start + 1
        continue
      }

      flushSkipped()
      const crcOffset = end - 4
      const received = (buffer[crcOffset] << 8) | buffer[crcOffset + 1]
      const expected = crc16X25(buffer, start + 2, crcOffset)
      const protocol = buffer[start + headerBytes]
      if (received !== expected) {
        items.push({
          kind: 'error',
          error: {
            code: 'bad_crc',
            fatal: false,
            protocol,
            expected,
            received,
            message: `GT06 frame (protocol 0x${hex2(protocol)}) dropped: CRC 0x${hex4(received)}, expected 0x${hex4(expected)}`,
          },
        })
      } else {
        const serialOffset = crcOffset - 2
        items.push({
          kind: 'frame',
          frame: {
            longFrame,
            protocol,
            // slice() copies: a frame must not pin the (possibly large) chunk it came from
            content: buffer.slice(start + headerBytes + 1, serialOffset),
            serial: (buffer[serialOffset] << 8) | buffer[serialOffset + 1],
          },
        })
      }
      position = end
    }

    flushSkipped()
    pending = position >= buffer.length ? new Uint8Array(0) : buffer.slice(position)
    return items
  }

  return {
    push,
    get bufferedBytes() {
      return pending.length
    },
    get failed() {
      return fatalError !== null
    },
  }
}

// ---------------------------------------------------------------------------------------------
// Building frames (acknowledgements and other server → device replies)
// ---------------------------------------------------------------------------------------------

/** A complete 0x7878 frame: start, length, protocol, content, serial, CRC, stop. */
export function buildGt06Frame(protocol: number, content: Uint8Array, serial: number): Uint8Array {
  const lengthField = MIN_LENGTH_FIELD + content.length
  if (lengthField > 0xff) throw new RangeError('content too long for a 0x7878 frame')
  const frame = new Uint8Array(lengthField + 5)
  frame[0] = SHORT_START
  frame[1] = SHORT_START
  frame[2] = lengthField
  frame[3] = protocol
  frame.set(content, 4)
  const serialOffset = 4 + content.length
  frame[serialOffset] = (serial >> 8) & 0xff
  frame[serialOffset + 1] = serial & 0xff
  const crc = crc16X25(frame, 2, serialOffset + 2)
  frame[serialOffset + 2] = crc >> 8
  frame[serialOffset + 3] = crc & 0xff
  frame[serialOffset + 4] = STOP_1
  frame[serialOffset + 5] = STOP_2
  return frame
}

/**
 * The standard server response: `78 78 05 <protocol> <serial> <crc> 0D 0A`. For the login of
 * serial 1 this is `78 78 05 01 00 01 D9 DC 0D 0A`, as in the GT06 document.
 */
export function buildGt06Ack(protocol: number, serial: number): Uint8Array {
  return buildGt06Frame(protocol, new Uint8Array(0), serial)
}

/** Response to a time calibration request (0x8A): the server's UTC time, YY MM DD hh mm ss. */
export function buildGt06TimeResponse(serial: number, unixSeconds: number): Uint8Array {
  const date = new Date(unixSeconds * 1000)
  const content = new Uint8Array([
    date.getUTCFullYear() % 100,
    date.getUTCMonth() + 1,
    date.getUTCDate(),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
  ])
  return buildGt06Frame(PROTOCOL.timeRequest, content, serial)
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/** Protocol numbers this decoder knows. */
export const PROTOCOL = {
  login: 0x01,
  location: 0x12,
  status: 0x13,
  alarm: 0x16,
  locationUtc: 0x22,
  heartbeat: 0x23,
  alarmUtc: 0x26,
  timeRequest: 0x8a,
} as const

/**
 * Alarm byte ("alarm/language", former byte) → alarm code. 0x00 is "normal" (no alarm).
 * 0x01..0x05 are in the original GT06 document; the rest come from the later Concox tables
 * (GT06N / JM-VL01: 0x06 over speed, 0x09 displacement/moving since V14, 0x0E external power
 * low, 0x0F external battery low-voltage protection, 0x13 disassembly, 0x29/0x30 harsh
 * acceleration/braking, 0x2C collision, 0xFE/0xFF ACC on/off). Anything else becomes
 * `alarm_0xNN` so nothing a device reports is lost.
 */
export const GT06_ALARM_CODES: Readonly<Record<number, string>> = {
  0x01: 'sos',
  0x02: 'power_cut',
  0x03: 'vibration',
  0x04: 'geofence_enter',
  0x05: 'geofence_exit',
  0x06: 'overspeed',
  0x09: 'movement',
  0x0e: 'low_battery',
  0x0f: 'low_battery',
  0x13: 'tamper',
  0x29: 'harsh_acceleration',
  0x2c: 'collision',
  0x30: 'harsh_braking',
  0xfe: 'ignition_on',
  0xff: 'ignition_off',
}

export function gt06AlarmCode(alarmByte: number): string {
  return GT06_ALARM_CODES[alarmByte] ?? `alarm_0x${hex2(alarmByte)}`
}

/**
 * Terminal information bits 5..3 (status and alarm packets): the alarm state the terminal is in.
 * 0b000 is normal.
 */
const TERMINAL_ALARM_CODES: Readonly<Record<number, string>> = {
  0b001: 'vibration',
  0b010: 'power_cut',
  0b011: 'low_battery',
  0b100: 'sos',
}

/**
 * GSM signal level (0 no signal .. 4 strong) → an ESTIMATED dBm. The protocol only sends the
 * level; these are the middles of the usual GSM bar thresholds (≤ -107, -107..-101, -101..-93,
 * -93..-83, ≥ -83 dBm), good enough to rank signal quality, not a measurement.
 */
export const GT06_GSM_LEVEL_DBM: readonly number[] = [-113, -104, -97, -88, -75]

export interface Gt06Session {
  /** the IMEI from an accepted login on this connection, or null before login */
  imei: string | null
}

export interface Gt06DecodeOptions {
  /**
   * The server's clock (Unix seconds). Used to answer time calibration requests and as the
   * timestamp of a report whose own date is invalid (devices without a GPS time send zeros);
   * such fixes carry `time_source: 'server'`. Without it those cases are reported invalid.
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

export type Gt06Message =
  /** 0x01. Check the IMEI, then set `session.imei` and send `ack`; refuse by closing. */
  | { kind: 'login'; protocol: number; imei: string; ack: Uint8Array }
  /** 0x12 / 0x22 / 0x16 / 0x26: fixes and events to store, then send `ack` (null: none due) */
  | { kind: 'report'; protocol: number; report: DecodedReport; ack: Uint8Array | null }
  /** 0x13 / 0x23: terminal state without a position (keep-alive); send `ack` */
  | { kind: 'status'; protocol: number; uniqueId: string; attributes: Record<string, unknown>; ack: Uint8Array }
  /** nothing to store; send `ack` when non-null (time calibration) */
  | { kind: 'other'; protocol: number; ack: Uint8Array | null }
  /** unusable frame: data before login, or content too short / out of range. Nothing to ack. */
  | { kind: 'invalid'; protocol: number; reason: 'not_logged_in' | 'malformed'; message: string; ack: null }

class MalformedContent extends Error {}

/** Bounds-checked big-endian reads over the content of one frame. */
class ContentReader {
  offset = 0
  constructor(readonly bytes: Uint8Array) {}

  get remaining(): number {
    return this.bytes.length - this.offset
  }
  private need(count: number): void {
    if (this.offset + count > this.bytes.length) {
      throw new MalformedContent(`content ends at byte ${this.bytes.length}, needed ${this.offset + count}`)
    }
  }
  u8(): number {
    this.need(1)
    return this.bytes[this.offset++]
  }
  u16(): number {
    this.need(2)
    const value = (this.bytes[this.offset] << 8) | this.bytes[this.offset + 1]
    this.offset += 2
    return value
  }
  u24(): number {
    this.need(3)
    const b = this.bytes
    const value = (b[this.offset] << 16) | (b[this.offset + 1] << 8) | b[this.offset + 2]
    this.offset += 3
    return value
  }
  u32(): number {
    this.need(4)
    const b = this.bytes
    const value = b[this.offset] * 0x1000000 + ((b[this.offset + 1] << 16) | (b[this.offset + 2] << 8) | b[this.offset + 3])
    this.offset += 4
    return value
  }
  skip(count: number): void {
    this.need(count)
    this.offset += count
  }
}

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
    if (protocol === PROTOCOL.login) {
      return { kind: 'login', protocol, imei: decodeImei(frame.content), ack: buildGt06Ack(protocol, serial) }
    }
    if (protocol === PROTOCOL.timeRequest) {
      const ack = options.now === undefined ? null : buildGt06TimeResponse(serial, options.now)
      return { kind: 'other', protocol, ack }
    }
    const handled =
      protocol === PROTOCOL.location ||
      protocol === PROTOCOL.locationUtc ||
      protocol === PROTOCOL.alarm ||
      protocol === PROTOCOL.alarmUtc ||
      protocol === PROTOCOL.status ||
      protocol === PROTOCOL.heartbeat
    // Other protocol numbers (0x15 command replies, 0x1A/0x2A address requests, 0x94
    // information transmission, ...) carry nothing we store and expect no reply.
    if (!handled) return { kind: 'other', protocol, ack: null }

    const uniqueId = session.imei
    if (uniqueId === null) {
      return {
        kind: 'invalid',
        protocol,
        reason: 'not_logged_in',
        message: `GT06 protocol 0x${hex2(protocol)} received before a login`,
        ack: null,
      }
    }
    const reader = new ContentReader(frame.content)
    switch (protocol) {
      case PROTOCOL.location:
      case PROTOCOL.locationUtc: {
        const fix = decodeLocation(reader, protocol === PROTOCOL.locationUtc, options)
        return { kind: 'report', protocol, report: { uniqueId, fixes: [fix], events: [] }, ack: null }
      }
      case PROTOCOL.alarm:
      case PROTOCOL.alarmUtc: {
        const report = decodeAlarm(reader, uniqueId, options)
        return { kind: 'report', protocol, report, ack: buildGt06Ack(protocol, serial) }
      }
      default: {
        const attributes = decodeStatus(reader, protocol === PROTOCOL.heartbeat)
        return { kind: 'status', protocol, uniqueId, attributes, ack: buildGt06Ack(protocol, serial) }
      }
    }
  } catch (error) {
    if (!(error instanceof MalformedContent)) throw error
    return {
      kind: 'invalid',
      protocol,
      reason: 'malformed',
      message: `GT06 protocol 0x${hex2(protocol)}: ${error.message}`,
      ack: null,
    }
  }
}

/** Terminal ID: 8 bytes BCD, the 15-digit IMEI with a leading 0. */
function decodeImei(content: Uint8Array): string {
  if (content.length < 8) throw new MalformedContent(`login needs 8 bytes of terminal ID, got ${content.length}`)
  let digits = ''
  for (let i = 0; i < 8; i++) {
    const high = content[i] >> 4
    const low = content[i] & 0x0f
    if (high > 9 || low > 9) throw new MalformedContent(`terminal ID is not BCD (byte ${i} = 0x${hex2(content[i])})`)
    digits += String(high) + String(low)
  }
  return digits.startsWith('0') ? digits.slice(1) : digits
}

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
}

function readDateTime(reader: ContentReader, options: Gt06DecodeOptions): { timestamp: number; fromServer: boolean } {
  const year = reader.u8()
  const month = reader.u8()
  const day = reader.u8()
  const hour = reader.u8()
  const minute = reader.u8()
  const second = reader.u8()
  const valid = month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour < 24 && minute < 60 && second < 60
  if (valid) {
    const millis = Date.UTC(2000 + year, month - 1, day, hour, minute, second)
    // Date.UTC rolls 31 February over into March; a date that does not survive is invalid.
    if (new Date(millis).getUTCDate() === day) return { timestamp: millis / 1000, fromServer: false }
  }
  if (options.now !== undefined) return { timestamp: Math.floor(options.now), fromServer: true }
  throw new MalformedContent(
    `invalid date/time ${[year, month, day, hour, minute, second].map(hex2).join(' ')} and no server clock given`,
  )
}

/**
 * Date/time (6), GPS info length + satellites (1), latitude (4), longitude (4), speed (1),
 * course/status (2). Coordinates are minutes × 30000, i.e. degrees × 1,800,000.
 * Course/status word: bit 13 differential (1) / real-time (0) GPS, bit 12 positioned,
 * bit 11 west longitude (1) / east (0), bit 10 north latitude (1) / south (0), bits 9..0 course.
 */
function readGpsBlock(reader: ContentReader, options: Gt06DecodeOptions): GpsBlock {
  const { timestamp, fromServer } = readDateTime(reader, options)
  const gpsInfo = reader.u8()
  const latitudeRaw = reader.u32()
  const longitudeRaw = reader.u32()
  const speed = reader.u8()
  const courseStatus = reader.u16()
  const north = (courseStatus & 0x0400) !== 0
  const west = (courseStatus & 0x0800) !== 0
  return {
    timestamp,
    timeFromServer: fromServer,
    satellites: gpsInfo & 0x0f,
    latitude: (north ? 1 : -1) * (latitudeRaw / 1_800_000),
    longitude: (west ? -1 : 1) * (longitudeRaw / 1_800_000),
    speed,
    course: courseStatus & 0x03ff,
    positioned: (courseStatus & 0x1000) !== 0,
    differential: (courseStatus & 0x2000) !== 0,
  }
}

interface CellInfo {
  mcc: number
  mnc: number
  lac: number
  cellId: number
}

/** MCC (2), MNC (1, or 2 when MCC bit 15 is set: Concox extension), LAC (2), cell ID (3). */
function readCell(reader: ContentReader): CellInfo {
  const mccField = reader.u16()
  const twoByteMnc = (mccField & 0x8000) !== 0
  const mnc = twoByteMnc ? reader.u16() : reader.u8()
  return { mcc: mccField & 0x7fff, mnc, lac: reader.u16(), cellId: reader.u24() }
}

function gpsAttributes(gps: GpsBlock, cell: CellInfo): Record<string, unknown> {
  const attributes: Record<string, unknown> = {
    mcc: cell.mcc,
    mnc: cell.mnc,
    lac: cell.lac,
    cell_id: cell.cellId,
    gps_differential: gps.differential,
  }
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

/**
 * 0x12: GPS block + cell. 0x22 adds ACC (1), data upload mode (1), real-time/re-upload (1) and
 * an optional 4-byte mileage (metres, per the Concox JM-VL01 document; not verified on hardware).
 */
function decodeLocation(reader: ContentReader, extended: boolean, options: Gt06DecodeOptions): DecodedFix {
  const gps = readGpsBlock(reader, options)
  const cell = readCell(reader)
  const attributes = gpsAttributes(gps, cell)
  if (extended) {
    attributes.ignition = reader.u8() === 0x01
    attributes.upload_mode = reader.u8()
    attributes.reupload = reader.u8() === 0x01
    if (reader.remaining >= 4) attributes.odometer = reader.u32()
  }
  return toFix(gps, attributes)
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

/**
 * 0x13: terminal info (1), voltage level (1, 0 none .. 6 very high), GSM signal level (1,
 * 0 none .. 4 strong), alarm/language (2). 0x23 (Concox heartbeat) has a 2-byte battery
 * voltage in hundredths of a volt instead of the level.
 */
function decodeStatus(reader: ContentReader, voltageInCentivolts: boolean): Record<string, unknown> {
  const attributes: Record<string, unknown> = { ...decodeTerminalInfo(reader.u8()) }
  if (voltageInCentivolts) attributes.battery_voltage = reader.u16() / 100
  else attributes.voltage_level = reader.u8()
  attributes.gsm_signal = reader.u8()
  // alarm/language is optional in practice (some firmwares stop after the signal byte)
  if (reader.remaining >= 2) {
    const alarmByte = reader.u8()
    attributes.language = reader.u8()
    if (alarmByte !== 0) attributes.alarm = gt06AlarmCode(alarmByte)
  }
  return attributes
}

/**
 * 0x16 / 0x26: GPS block, LBS length (1) + cell, terminal info (1), voltage level (1), GSM
 * signal level (1), alarm (1), language (1). The LBS length byte counts itself, so cell fields
 * a firmware adds are skipped by it rather than misread.
 */
function decodeAlarm(reader: ContentReader, uniqueId: string, options: Gt06DecodeOptions): DecodedReport {
  const gps = readGpsBlock(reader, options)
  const lbsStart = reader.offset
  const lbsLength = reader.u8()
  const cell = readCell(reader)
  if (lbsLength > reader.offset - lbsStart) reader.skip(lbsLength - (reader.offset - lbsStart))
  const status = decodeTerminalInfo(reader.u8())
  const voltageLevel = reader.u8()
  const gsmSignal = reader.u8()
  const alarmByte = reader.u8()
  const language = reader.remaining > 0 ? reader.u8() : null

  const alarmCode = alarmByte !== 0 ? gt06AlarmCode(alarmByte) : status.terminal_alarm
  const fixAttributes: Record<string, unknown> = {
    ...gpsAttributes(gps, cell),
    ...status,
    voltage_level: voltageLevel,
    gsm_signal: gsmSignal,
  }
  if (alarmCode) fixAttributes.alarm = alarmCode

  const fix = toFix(gps, fixAttributes)
  const fixes = gps.positioned ? [fix] : []
  const events: DecodedEvent[] = []
  if (alarmCode) {
    events.push(
      eventAtFix(alarmCode, fix, { mcc: cell.mcc, mnc: cell.mnc, dbm: GT06_GSM_LEVEL_DBM[gsmSignal] ?? null }, {
        alarm_byte: alarmByte,
        lac: cell.lac,
        cell_id: cell.cellId,
        ...status,
        voltage_level: voltageLevel,
        gsm_signal: gsmSignal,
        dbm_estimated: true,
        ...(language !== null ? { language } : {}),
        ...(gps.timeFromServer ? { time_source: 'server' } : {}),
      }),
    )
  }
  return { uniqueId, fixes, events }
}

function hex2(value: number): string {
  return value.toString(16).padStart(2, '0')
}

function hex4(value: number): string {
  return value.toString(16).padStart(4, '0')
}
