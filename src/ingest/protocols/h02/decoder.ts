/**
 * H02 decoder (Sinotrack, Coban and their clones): one frame from `splitH02Frames` in, one
 * message out. Pure: no I/O, no clock (the caller passes `now`), no state (the caller passes the
 * device's previous status word).
 *
 * Text frames, `*<maker>,<id>,<type>,…#` (H02 protocol document, "The feedback message structure
 * of Vehicle Tracker"; LKGPS protocol document, section 1):
 *
 *   V1    hhmmss,A|V,ddmm.mmmm,N|S,dddmm.mmmm,E|W,speed(knots),course,ddmmyy,status[,…]
 *         the position report. Devices vary: 5 decimals, no decimal point (ddmmmmmm), the
 *         `-dd-mm.mmmm` form, an empty speed or course (0, says the LKGPS document), a battery
 *         field between course and date, and the serving cell after the status (below).
 *   V4    <command>,<answer…>,<hhmmss of the command>,<a V1 body>: the answer to a command
 *   NBR   hhmmss,mcc,mnc,<delay>,<count>,(lac,cell id,signal)×count,ddmmyy,status[,…]: cell towers,
 *         no position (the device is alive; nothing is stored as a fix)
 *   LINK  hhmmss,signal,satellites,battery %,steps,turnovers,ddmmyy,status: heartbeat
 *   other types (XT, HTBT, V3, …): identify the device and keep it alive; nothing decoded
 *
 * The binary form (layout in framing.ts) carries the same position in BCD. Speeds are knots in
 * both forms and become km/h here; times are UTC ("standard time", says the document).
 *
 * The device is named by its id, a 10-digit serial or the 15-digit IMEI: `uniqueId` is that id
 * as sent (the IMEI without its pad digit in the binary form), which the pipeline looks up as
 * either.
 */
import type { DecodedEvent, DecodedFix, DecodedReport } from '../../types'
import { checkH02BinaryHeader, type H02Frame } from './framing'
import { buildH02Confirmation } from './replies'
import { decodeH02Status, h02StatusAttributes, newlyActiveAlarms, parseH02StatusWord, type H02Status } from './status'

export const KNOTS_TO_KMH = 1.852

export interface H02CellTower {
  lac: number
  cellId: number
  /** as the device reports it (its scale differs between firmwares); null when not sent */
  signal: number | null
}

export interface H02Network {
  mcc: number
  mnc: number
  cells: H02CellTower[]
}

/** A V4 frame: the device's answer to a command the server sent. */
export interface H02CommandAnswer {
  /** the command answered: S20, S71, R8, … */
  command: string
  /** the answer's fields as sent, between the command and the position */
  fields: string[]
}

export type H02Message =
  | {
      /** the device spoke: store `report` (fixes and events may be empty: a keep-alive), then send `reply` if not null */
      kind: 'report'
      /** V1, V4, NBR, LINK, binary, or the type of a frame kept only as a keep-alive */
      type: string
      uniqueId: string
      report: DecodedReport
      /** the status word, decoded; pass `status.value` as `previousStatusWord` with the next frame of this device */
      status: H02Status | null
      /** cell towers the frame names (NBR, and the serving cell of some V1 and binary frames) */
      network: H02Network | null
      answer: H02CommandAnswer | null
      /** what the frame said about the device beyond its fixes (status, battery, signal, …) */
      attributes: Record<string, unknown>
      reply: Uint8Array | null
    }
  /** an unusable frame: nothing to store, nothing to answer */
  | { kind: 'invalid'; reason: 'malformed'; message: string; reply: null }

export interface H02DecodeOptions {
  /**
   * The server's clock, Unix seconds: the time of a reply, and of an alarm in a frame that has
   * no valid time of its own. Without it such alarms are dropped and no reply is built.
   */
  now?: number
  /** The status word of this device's previous frame: alarms are raised only when their bit turns on. */
  previousStatusWord?: number | null
  /** Answer V1 and NBR frames with `*<maker>,<id>,V4,<type>,<yyyyMMddHHmmss>#` (see replies.ts); off by default. */
  acknowledgeReports?: boolean
}

class Malformed extends Error {}

export function decodeH02Frame(frame: H02Frame, options: H02DecodeOptions = {}): H02Message {
  try {
    return frame.kind === 'text' ? decodeText(frame.text, options) : decodeBinary(frame.bytes, options)
  } catch (error) {
    if (!(error instanceof Malformed)) throw error
    return { kind: 'invalid', reason: 'malformed', message: `H02 ${frame.kind} frame: ${error.message}`, reply: null }
  }
}

// ---------------------------------------------------------------------------------------------
// Fields
// ---------------------------------------------------------------------------------------------

interface ClockTime {
  hours: number
  minutes: number
  seconds: number
}

interface CalendarDate {
  day: number
  month: number
  year: number
}

function clockOf(hours: number, minutes: number, seconds: number): ClockTime | null {
  return hours <= 23 && minutes <= 59 && seconds <= 59 ? { hours, minutes, seconds } : null
}

function dateOf(day: number, month: number, yearOfCentury: number): CalendarDate | null {
  if (day < 1 || month < 1 || month > 12) return null
  const year = 2000 + yearOfCentury
  // Date.UTC rolls 31 February over into March; a date that does not survive is not a date
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return null
  return { day, month, year }
}

/** hhmmss */
function parseClock(text: string): ClockTime | null {
  if (!/^\d{6}$/.test(text)) return null
  return clockOf(Number(text.slice(0, 2)), Number(text.slice(2, 4)), Number(text.slice(4, 6)))
}

/** ddmmyy */
function parseDate(text: string): CalendarDate | null {
  if (!/^\d{6}$/.test(text)) return null
  return dateOf(Number(text.slice(0, 2)), Number(text.slice(2, 4)), Number(text.slice(4, 6)))
}

function unixSecondsOf(date: CalendarDate, time: ClockTime): number {
  return Date.UTC(date.year, date.month - 1, date.day, time.hours, time.minutes, time.seconds) / 1000
}

/** A non-negative decimal, spaces around it allowed (some firmware pads the speed); empty is `empty`. */
function parseDecimal(text: string, empty: number | null): number | null {
  const trimmed = text.trim()
  if (trimmed === '') return empty
  return /^\d{1,6}(\.\d{1,6})?$/.test(trimmed) ? Number(trimmed) : null
}

function parseInteger(text: string): number | null {
  const trimmed = text.trim()
  return /^-?\d{1,10}$/.test(trimmed) ? Number(trimmed) : null
}

/**
 * Degrees and minutes as H02 devices print them: `ddmm.mmmm` (any number of decimals),
 * `ddmmmmmm` (no decimal point, 4 decimals implied) or `-dd-mm.mmmm`; the sign comes from the
 * hemisphere letter.
 */
function parseCoordinate(text: string, hemisphere: string, axis: 'latitude' | 'longitude'): number | null {
  const [positive, negative, maxDegrees] = axis === 'latitude' ? ['N', 'S', 90] : ['E', 'W', 180]
  if (hemisphere !== positive && hemisphere !== negative) return null
  let degrees: number
  let minutes: number
  let match = /^(\d{1,3})(\d{2}\.\d{1,6})$/.exec(text)
  if (match) {
    degrees = Number(match[1])
    minutes = Number(match[2])
  } else if ((match = /^(\d{1,3})(\d{2})(\d{4})$/.exec(text))) {
    degrees = Number(match[1])
    minutes = Number(`${match[2]}.${match[3]}`)
  } else if ((match = /^-(\d{1,3})-(\d{1,2}\.\d{1,6})$/.exec(text))) {
    degrees = Number(match[1])
    minutes = Number(match[2])
  } else {
    return null
  }
  const value = degrees + minutes / 60
  if (minutes >= 60 || value > maxDegrees) return null
  return hemisphere === negative ? -value : value
}

function knotsToKmh(knots: number): number {
  return Math.round(knots * KNOTS_TO_KMH * 100) / 100
}

/** ITU-T E.212: mobile country codes run from 200 to 799 (001 is a test network). */
function isCountryCode(value: number): boolean {
  return value >= 200 && value <= 799
}

// ---------------------------------------------------------------------------------------------
// Text frames
// ---------------------------------------------------------------------------------------------

interface TextFrame {
  maker: string
  id: string
  type: string
  /** the fields after the type */
  body: string[]
}

function splitText(text: string): TextFrame {
  if (!text.startsWith('*') || !text.endsWith('#')) throw new Malformed('not a `*…#` frame')
  const fields = text.slice(1, -1).split(',')
  const [maker = '', id = '', type = ''] = fields
  if (!/^[A-Za-z0-9]{1,4}$/.test(maker)) throw new Malformed(`maker ${JSON.stringify(maker.slice(0, 8))} is not 1-4 letters`)
  if (!/^\d{1,20}$/.test(id)) throw new Malformed('the device id is not 1-20 digits')
  if (!/^[A-Za-z0-9]{1,8}$/.test(type)) throw new Malformed('no frame type')
  return { maker, id, type: type.toUpperCase(), body: fields.slice(3) }
}

interface PositionBody {
  fix: DecodedFix
  status: number | null
  /** a battery field some firmware puts between course and date */
  battery: number | null
  /** fields after the status word */
  rest: string[]
}

type PositionParse =
  | { kind: 'position'; position: PositionBody }
  /** a device without a position yet: validity not A and no date (`000000` or empty) */
  | { kind: 'none'; status: number | null; rest: string[] }

/**
 * A V1 body: hhmmss, validity, latitude, N/S, longitude, E/W, speed, course, [battery,] ddmmyy,
 * status, rest. Anything out of shape throws: a frame half understood is not stored.
 */
function parsePositionBody(body: string[]): PositionParse {
  if (body.length < 9) throw new Malformed(`a position needs 10 fields, got ${body.length}`)
  const [time, validity, latitudeText, latitudeHemisphere, longitudeText, longitudeHemisphere, speedText, courseText] = body

  let dateIndex = 8
  let battery: number | null = null
  if (!/^\d{6}$/.test(body[8]) && /^\d{1,3}$/.test(body[8]) && /^\d{6}$/.test(body[9] ?? '')) {
    battery = Number(body[8])
    dateIndex = 9
  }
  const dateText = body[dateIndex]
  if (validity !== 'A' && (dateText === '' || dateText === '000000')) {
    const statusText = body[dateIndex + 1]
    return { kind: 'none', status: statusText === undefined ? null : parseH02StatusWord(statusText), rest: body.slice(dateIndex + 2) }
  }

  const clock = parseClock(time)
  if (!clock) throw new Malformed(`time ${JSON.stringify(time.slice(0, 12))} is not hhmmss`)
  if (validity !== 'A' && validity !== 'V' && validity !== '') throw new Malformed('validity is not A or V')
  const latitude = parseCoordinate(latitudeText, latitudeHemisphere, 'latitude')
  if (latitude === null) throw new Malformed('latitude out of shape or range')
  const longitude = parseCoordinate(longitudeText, longitudeHemisphere, 'longitude')
  if (longitude === null) throw new Malformed('longitude out of shape or range')
  const knots = parseDecimal(speedText, 0)
  if (knots === null) throw new Malformed('speed is not a number')
  const course = parseDecimal(courseText, 0)
  if (course === null || course > 360) throw new Malformed('course is not 0-360')
  const date = parseDate(dateText)
  if (!date) throw new Malformed(`date ${JSON.stringify(dateText.slice(0, 12))} is not ddmmyy`)
  const statusText = body[dateIndex + 1]
  const status = statusText === undefined ? null : parseH02StatusWord(statusText)
  if (statusText !== undefined && status === null) throw new Malformed('status is not 8 hex digits')

  return {
    kind: 'position',
    position: {
      fix: {
        timestamp: unixSecondsOf(date, clock),
        latitude,
        longitude,
        speed: knotsToKmh(knots),
        course,
        altitude: null,
        satellites: null,
        valid: validity === 'A',
        attributes: {},
      },
      status,
      battery,
      rest: body.slice(dateIndex + 2),
    },
  }
}

/**
 * The serving cell some firmware appends to V1: mcc, mnc, lac, cell id[, signal], in decimal on
 * some devices and in hex on others. Only a mobile country code in range (200-799) is believed:
 * decimal first, then hex; in every captured frame exactly one reading gives the country the fix
 * is in. Anything else (odometer and fuel, an ICCID, …) is kept as `extra_fields`.
 */
function parseTrailingCell(rest: string[]): H02Network | null {
  if (rest.length !== 4 && rest.length !== 5) return null
  const fields = rest.map((field) => field.trim())
  const [mcc, mnc, lac, cellId] = fields
  const signal = fields.length === 5 && /^\d{1,3}$/.test(fields[4]) ? Number(fields[4]) : null
  if (fields.slice(0, 4).every((field) => /^\d{1,9}$/.test(field)) && isCountryCode(Number(mcc))) {
    return { mcc: Number(mcc), mnc: Number(mnc), cells: [{ lac: Number(lac), cellId: Number(cellId), signal }] }
  }
  if (fields.slice(0, 4).every((field) => /^[0-9A-Fa-f]{1,8}$/.test(field)) && isCountryCode(Number.parseInt(mcc, 16))) {
    const hex = (field: string) => Number.parseInt(field, 16)
    return { mcc: hex(mcc), mnc: hex(mnc), cells: [{ lac: hex(lac), cellId: hex(cellId), signal }] }
  }
  return null
}

function decodeText(text: string, options: H02DecodeOptions): H02Message {
  const frame = splitText(text)
  switch (frame.type) {
    case 'V1':
      return decodeV1(frame, options)
    case 'V4':
      return decodeV4(frame, options)
    case 'NBR':
      return decodeNbr(frame, options)
    case 'LINK':
      return decodeLink(frame, options)
    default:
      // XT, HTBT, V3, VP1, …: the device is there; what it says is not decoded
      return reportOf(frame.type, frame.id, { fixes: [], status: null, network: null, answer: null, attributes: { maker: frame.maker } }, options, null)
  }
}

function decodeV1(frame: TextFrame, options: H02DecodeOptions): H02Message {
  const parsed = parsePositionBody(frame.body)
  const rest = parsed.kind === 'position' ? parsed.position.rest : parsed.rest
  const status = parsed.kind === 'position' ? parsed.position.status : parsed.status
  const network = parseTrailingCell(rest)
  const attributes: Record<string, unknown> = { maker: frame.maker, ...cellAttributes(network) }
  if (parsed.kind === 'position' && parsed.position.battery !== null) attributes.battery_level = parsed.position.battery
  if (!network && rest.length > 0) attributes.extra_fields = rest.join(',')
  const fixes = parsed.kind === 'position' ? [parsed.position.fix] : []
  const reply = confirmation(frame, options)
  return reportOf('V1', frame.id, { fixes, status, network, answer: null, attributes }, options, reply)
}

function decodeV4(frame: TextFrame, options: H02DecodeOptions): H02Message {
  const [command = '', ...fields] = frame.body
  if (!/^[A-Za-z0-9_]{1,12}$/.test(command)) throw new Malformed('V4 without the command it answers')
  let answerFields = fields
  let fixes: DecodedFix[] = []
  let status: number | null = null
  // the answer ends with the command's time and a V1 body (10 fields) when the device sends its position
  if (fields.length >= 11) {
    try {
      const parsed = parsePositionBody(fields.slice(-10))
      if (parsed.kind === 'position') {
        fixes = [parsed.position.fix]
        status = parsed.position.status
        answerFields = fields.slice(0, -10)
      }
    } catch (error) {
      if (!(error instanceof Malformed)) throw error
      // not a position after all: the whole answer is text
    }
  }
  const answer: H02CommandAnswer = { command: command.toUpperCase(), fields: answerFields }
  return reportOf('V4', frame.id, { fixes, status, network: null, answer, attributes: { maker: frame.maker } }, options, null)
}

/** Frame time from hhmmss and ddmmyy fields, or null when either is not valid (some devices send 60+ seconds). */
function frameTime(timeText: string, dateText: string): number | null {
  const clock = parseClock(timeText)
  const date = parseDate(dateText)
  return clock && date ? unixSecondsOf(date, clock) : null
}

function requireStatus(text: string | undefined): number {
  const status = text === undefined ? null : parseH02StatusWord(text)
  if (status === null) throw new Malformed('status is not 8 hex digits')
  return status
}

function requireDigits(text: string, what: string): number {
  if (!/^\d{1,9}$/.test(text)) throw new Malformed(`${what} is not a number`)
  return Number(text)
}

function requireSixDigits(text: string, what: string): string {
  if (!/^\d{6}$/.test(text)) throw new Malformed(`${what} is not 6 digits`)
  return text
}

function decodeNbr(frame: TextFrame, options: H02DecodeOptions): H02Message {
  const body = frame.body
  if (body.length < 7) throw new Malformed(`NBR needs at least 7 fields, got ${body.length}`)
  const time = requireSixDigits(body[0], 'NBR time')
  const mcc = requireDigits(body[1], 'NBR mcc')
  const mnc = requireDigits(body[2], 'NBR mnc')
  requireDigits(body[3], 'NBR delay')
  const count = requireDigits(body[4], 'NBR cell count')
  const cellsEnd = 5 + count * 3
  if (count > 32 || body.length < cellsEnd + 2) throw new Malformed(`NBR announces ${count} cells, the frame has room for fewer`)
  const cells: H02CellTower[] = []
  for (let at = 5; at < cellsEnd; at += 3) {
    const signal = parseInteger(body[at + 2])
    if (signal === null) throw new Malformed('NBR cell signal is not a number')
    cells.push({ lac: requireDigits(body[at], 'NBR lac'), cellId: requireDigits(body[at + 1], 'NBR cell id'), signal })
  }
  const date = requireSixDigits(body[cellsEnd], 'NBR date')
  const status = requireStatus(body[cellsEnd + 1])
  const network: H02Network = { mcc, mnc, cells }
  const attributes: Record<string, unknown> = { maker: frame.maker, ...cellAttributes(network) }
  const trailing = body.slice(cellsEnd + 2)
  if (trailing.length > 0) attributes.extra_fields = trailing.join(',')
  return reportOf('NBR', frame.id, { fixes: [], status, network, answer: null, attributes, time: frameTime(time, date) }, options, confirmation(frame, options))
}

function decodeLink(frame: TextFrame, options: H02DecodeOptions): H02Message {
  const body = frame.body
  if (body.length < 8) throw new Malformed(`LINK needs 8 fields, got ${body.length}`)
  const time = requireSixDigits(body[0], 'LINK time')
  const attributes: Record<string, unknown> = {
    maker: frame.maker,
    gsm_signal: requireDigits(body[1], 'LINK signal'),
    satellites: requireDigits(body[2], 'LINK satellites'),
    battery_level: requireDigits(body[3], 'LINK battery'),
    steps: requireDigits(body[4], 'LINK steps'),
    turnovers: requireDigits(body[5], 'LINK turnovers'),
  }
  const date = requireSixDigits(body[6], 'LINK date')
  const status = requireStatus(body[7])
  return reportOf('LINK', frame.id, { fixes: [], status, network: null, answer: null, attributes, time: frameTime(time, date) }, options, null)
}

function confirmation(frame: TextFrame, options: H02DecodeOptions): Uint8Array | null {
  if (!options.acknowledgeReports || options.now === undefined) return null
  return buildH02Confirmation(frame.maker, frame.id, frame.type, options.now)
}

function cellAttributes(network: H02Network | null): Record<string, unknown> {
  if (!network) return {}
  const serving = network.cells[0]
  return serving
    ? { mcc: network.mcc, mnc: network.mnc, lac: serving.lac, cell_id: serving.cellId }
    : { mcc: network.mcc, mnc: network.mnc }
}

// ---------------------------------------------------------------------------------------------
// Binary frames
// ---------------------------------------------------------------------------------------------

function bcdDigits(bytes: Uint8Array, start: number, count: number): string {
  let digits = ''
  for (let i = start; i < start + count; i++) digits += (bytes[i] >> 4).toString(16) + (bytes[i] & 0x0f).toString(16)
  return digits
}

function hexOf(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')
}

/** Length of the 45-byte form, whose tail carries the serving cell. */
const CELL_FRAME_BYTES = 45

function decodeBinary(bytes: Uint8Array, options: H02DecodeOptions): H02Message {
  if (bytes[0] !== 0x24) throw new Malformed('does not start with $')
  // The 5-byte id is the common form; the 8-byte id (an IMEI) comes in 42-byte frames.
  let idBytes: 5 | 8
  if (checkH02BinaryHeader(bytes, 0, 5) === 'valid' && !(bytes.length === 42 && checkH02BinaryHeader(bytes, 0, 8) === 'valid')) idBytes = 5
  else if (checkH02BinaryHeader(bytes, 0, 8) === 'valid') idBytes = 8
  else throw new Malformed(`${bytes.length} bytes that are not a binary position`)

  const idDigits = bcdDigits(bytes, 1, idBytes)
  const uniqueId = idBytes === 8 ? idDigits.slice(0, 15) : idDigits
  let at = 1 + idBytes
  const digits = (count: number) => {
    const text = bcdDigits(bytes, at, count)
    at += count
    return text
  }
  const timeText = digits(3)
  const dateText = digits(3)
  const latitudeDigits = digits(4) // ddmmmmmm
  const batteryByte = bytes[at++]
  const longitudeDigits = digits(5) // dddmmmmmm + flags nibble
  const flags = bytes[at - 1] & 0x0f
  const speedCourse = digits(3) // sss ccc
  const statusWord = ((bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3]) >>> 0
  at += 4
  const tail = bytes.subarray(at)

  const course = Number(speedCourse.slice(3, 6))
  if (course > 360) throw new Malformed(`course ${course} is not 0-360`)
  // flags: bit 1 the fix is valid (A), bit 2 north, bit 3 east. Read against text frames of the
  // same devices sent seconds apart (serial 2705171109: the same place, A, N, E; flags 0xE).
  const valid = (flags & 0x02) !== 0
  const latitude = (Number(latitudeDigits.slice(0, 2)) + Number(`${latitudeDigits.slice(2, 4)}.${latitudeDigits.slice(4)}`) / 60) * ((flags & 0x04) !== 0 ? 1 : -1)
  const longitude = (Number(longitudeDigits.slice(0, 3)) + Number(`${longitudeDigits.slice(3, 5)}.${longitudeDigits.slice(5, 9)}`) / 60) * ((flags & 0x08) !== 0 ? 1 : -1)
  if (Math.abs(latitude) > 90 || Math.abs(longitude) > 180) throw new Malformed('position out of range')

  const attributes: Record<string, unknown> = {
    // 0-6 levels on some firmware, a percentage on others: kept as sent
    battery_byte: batteryByte,
  }
  let network: H02Network | null = null
  if (idBytes === 5 && bytes.length === CELL_FRAME_BYTES) {
    // The 45-byte tail: 8 bytes not decoded, mcc (2), mnc (1), lac (2), cell id (2), 1 byte. The
    // MCC is the country of the fix in every captured frame (732 Bogotá, 262 Germany, 460
    // Shenzhen, 234/30 England, 470/01 Dhaka, 374 Trinidad).
    const view = new DataView(tail.buffer, tail.byteOffset, tail.byteLength)
    const mcc = view.getUint16(8)
    if (isCountryCode(mcc)) network = { mcc, mnc: view.getUint8(10), cells: [{ lac: view.getUint16(11), cellId: view.getUint16(13), signal: null }] }
  }
  Object.assign(attributes, cellAttributes(network))
  if (tail.length > 0) attributes.tail_hex = hexOf(tail)

  const clock = parseClock(timeText)
  const date = parseDate(dateText)
  const fixes: DecodedFix[] = []
  if (clock && date) {
    fixes.push({
      timestamp: unixSecondsOf(date, clock),
      latitude,
      longitude,
      speed: knotsToKmh(Number(speedCourse.slice(0, 3))),
      course,
      altitude: null,
      satellites: null,
      valid,
      attributes: {},
    })
  }
  // binary frames are answered by no one: the protocol defines no reply
  return reportOf('binary', uniqueId, { fixes, status: statusWord, network, answer: null, attributes }, options, null)
}

// ---------------------------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------------------------

interface Decoded {
  fixes: DecodedFix[]
  status: number | null
  network: H02Network | null
  answer: H02CommandAnswer | null
  attributes: Record<string, unknown>
  /** the frame's own time when it has no fix (NBR, LINK), for its alarms */
  time?: number | null
}

function reportOf(type: string, uniqueId: string, decoded: Decoded, options: H02DecodeOptions, reply: Uint8Array | null): H02Message {
  const status = decoded.status === null ? null : decodeH02Status(decoded.status)
  const attributes = status ? { ...decoded.attributes, ...h02StatusAttributes(status) } : decoded.attributes
  for (const fix of decoded.fixes) fix.attributes = { ...attributes }

  const events: DecodedEvent[] = []
  if (status) {
    const fix = decoded.fixes[0] ?? null
    const timestamp = fix?.timestamp ?? decoded.time ?? options.now ?? null
    const mcc = decoded.network?.mcc ?? null
    const mnc = decoded.network?.mnc ?? null
    for (const { bit, alarmCode } of newlyActiveAlarms(status.value, options.previousStatusWord ?? null)) {
      // an alarm needs a time; a frame without one, decoded without a clock, cannot place it
      if (timestamp === null) continue
      events.push({
        timestamp,
        alarmCode,
        // without a lock the coordinates are stale or zero, not a place worth showing
        latitude: fix?.valid ? fix.latitude : null,
        longitude: fix?.valid ? fix.longitude : null,
        speed: fix?.speed ?? null,
        satellites: null,
        mcc,
        mnc,
        dbm: null,
        context: {
          status_word: status.hex,
          status_bit: bit,
          gps_valid: fix?.valid ?? false,
          ...(fix ? { course: fix.course } : {}),
          ...(fix ? {} : { time_source: decoded.time != null ? 'device' : 'server' }),
        },
      })
    }
  }
  return {
    kind: 'report',
    type,
    uniqueId,
    report: { uniqueId, fixes: decoded.fixes, events },
    status,
    network: decoded.network,
    answer: decoded.answer,
    attributes,
    reply,
  }
}
