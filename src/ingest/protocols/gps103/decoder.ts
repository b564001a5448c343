/**
 * GPS103 decoder (Coban TK103/TK303, Xexun TK102/TK103 and the GPS103 clones): one frame from
 * `gps103FrameReader` in, one message out. Pure: no I/O, no clock (the caller passes `now`).
 *
 * Frames (TK102/TK103 "GPRS Data Protocol" document; frames devices sent, test/fixtures/gps103):
 *
 *   ##,imei:<IMEI>,A                       log on: answered LOAD
 *   <IMEI>                                 heartbeat: answered ON
 *   imei:<IMEI>,<keyword>,<local time>,<phone or RFID>,F,<hhmmss.sss UTC>,A|V,<ddmm.mmmm>,N|S,<dddmm.mmmm>,E|W,<speed knots>,<course>[,<altitude>,<ignition>,<door>,<fuel 1 %>,<fuel 2 %>,<temperature>]
 *                                          a position (F: GPS); the keyword is `tracker` or an alarm
 *   imei:<IMEI>,<keyword>,<local time>,<…>,L,,,<lac hex>,,<cell id hex>,…
 *                                          no GPS (L: the serving cell only): no fix
 *   imei:<IMEI>,OBD,<yyMMddHHmmss>,<odometer>,<fuel instant>,<fuel average>,<hours>,<speed>,<load %>,<coolant>,<throttle %>,<rpm>,<battery V>,<DTCs…>
 *                                          OBD values (TK303 with an OBD cable): no fix
 *   imei:<IMEI>,<name>,<event>,<sensor>,<voltage>,<hhmmss>,<ddmmyy>,<rssi>,<fix 0|1>,<lat>,<lon>,<speed km/h>,<course>,<altitude>,<hdop>,<satellites>,<ignition>,<charge>,<error>
 *                                          a variant ending in `*` (its own layout, decimal degrees)
 *
 * The time: the local time field (yyMMddHHmm[ss], or `yy/MM/dd HH:mm`) is the device's clock in
 * its configured time zone; the GPS time (hhmmss.sss) is UTC but has no date. The fix is dated
 * with the local date, moved by the zone offset that the two clocks' hours and minutes show
 * (within ±12 h), so a fix just before or after midnight UTC gets its UTC date. A frame without
 * a GPS time keeps the local time as it is (the device says nothing of its zone).
 */
import type { DecodedEvent, DecodedFix, DecodedReport } from '../../types'
import { deviceAlarm, eventAtFix, eventWithoutFix } from '../events'

export const KNOTS_TO_KMH = 1.852

export type Gps103Message =
  /** `##,imei:…,A`: the device logs on; answer LOAD */
  | { kind: 'login'; uniqueId: string; reply: string }
  /** the bare IMEI: a heartbeat; answer ON */
  | { kind: 'heartbeat'; uniqueId: string; reply: string }
  /** something to store (fixes and events may be empty); `reply` when the device waits for one */
  | { kind: 'report'; keyword: string; report: DecodedReport; reply: string | null }
  /** a frame that does not decode, or one kept for nothing (a photo packet) */
  | { kind: 'invalid'; reason: string }

/** What a keyword raises: our alarm code, or null when it is no alarm. */
const ALARM_KEYWORDS: Readonly<Record<string, string>> = {
  'help me': 'sos',
  'low battery': 'low_battery',
  stockade: 'geofence',
  move: 'movement',
  speed: 'overspeed',
  'door alarm': 'door',
  'ac alarm': 'power_cut',
  'accident alarm': 'collision',
  'sensor alarm': 'vibration',
  'acc on': 'ignition_on',
  'acc off': 'ignition_off',
}

/** The keywords of a plain position (the device's name for the report, or a firmware's sequence number). */
function isAlarmKeyword(keyword: string): boolean {
  return keyword in ALARM_KEYWORDS || / alarm$/.test(keyword)
}

const IMEI = /^\d{8,20}$/
const LOGIN = /^##,imei:(\d{8,20}),A$/
const HEARTBEAT = /^(\d{8,20})(imei:.*)?$/
const NUMBER = /^-?\d+(\.\d+)?$/
const COORDINATE = /^(\d{1,3})(\d\d\.\d+)$/

class Malformed extends Error {}

function fail(why: string): never {
  throw new Malformed(why)
}

function numberOr(text: string | undefined, fallback: number | null): number | null {
  if (text === undefined || text === '') return fallback
  if (!NUMBER.test(text)) fail(`not a number: ${text}`)
  return Number(text)
}

/** ddmm.mmmm or dddmm.mmmm to degrees, signed by its hemisphere. */
function coordinate(text: string, hemisphere: string, max: number): number {
  const match = COORDINATE.exec(text)
  if (!match) fail(`not a coordinate: ${text}`)
  const minutes = Number(match[2])
  if (minutes >= 60) fail(`minutes past 60: ${text}`)
  const degrees = Number(match[1]) + minutes / 60
  if (degrees > max) fail(`coordinate out of range: ${text}`)
  return hemisphere === 'S' || hemisphere === 'W' ? -degrees : degrees
}

/** A UTC Unix time from its parts, or a failure when they name no real moment. */
function utcSeconds(year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) fail('not a date')
  const ms = Date.UTC(year, month - 1, day, hour, minute, second)
  if (new Date(ms).getUTCDate() !== day) fail('not a date')
  return ms / 1000
}

interface LocalTime {
  year: number
  month: number
  day: number
  hour: number
  minute: number
  second: number
}

/** The local time field: yyMMddHHmm, yyMMddHHmmss or `yy/MM/dd HH:mm`; null when absent or zero. */
function localTime(text: string): LocalTime | null {
  const match = /^(\d\d)\/?(\d\d)\/?(\d\d) ?(\d\d):?(\d\d)(\d\d)?$/.exec(text)
  if (!match) return null
  const [year, month, day, hour, minute] = match.slice(1, 6).map(Number)
  if (month === 0 || day === 0) return null
  return { year: 2000 + year, month, day, hour, minute, second: match[6] === undefined ? 0 : Number(match[6]) }
}

/** The fix time: the local date and clock moved to UTC by the offset the GPS clock shows (module comment). */
function fixTime(local: LocalTime, gpsTime: string): number {
  const gps = /^(\d\d)(\d\d)(\d\d)(\.\d+)?$/.exec(gpsTime)
  if (!gps) return utcSeconds(local.year, local.month, local.day, local.hour, local.minute, local.second)
  const [utcHour, utcMinute, utcSecond] = gps.slice(1, 4).map(Number)
  if (utcHour > 23 || utcMinute > 59 || utcSecond > 59) fail(`not a time: ${gpsTime}`)
  let offsetMinutes = (local.hour - utcHour) * 60 + (local.minute - utcMinute)
  if (offsetMinutes <= -12 * 60) offsetMinutes += 24 * 60
  else if (offsetMinutes > 12 * 60) offsetMinutes -= 24 * 60
  return utcSeconds(local.year, local.month, local.day, local.hour, local.minute, utcSecond) - offsetMinutes * 60
}

const NO_CELL = { mcc: null, mnc: null, dbm: null }

/** The events a keyword raises at a fix, or without one. */
function alarmEvents(keyword: string, fix: DecodedFix | null, timestamp: number | null): DecodedEvent[] {
  if (!isAlarmKeyword(keyword)) return []
  const { alarmCode, context } = deviceAlarm(ALARM_KEYWORDS[keyword] ?? keyword, keyword)
  if (fix) return [eventAtFix(alarmCode, fix, NO_CELL, context)]
  if (timestamp === null) return []
  return [eventWithoutFix(alarmCode, timestamp, NO_CELL, context)]
}

/** What the keyword says beyond an alarm: ignition, a temperature, a fuel level, a driver's card. */
function keywordAttributes(keyword: string, fields: readonly string[]): Record<string, unknown> {
  if (keyword === 'acc on') return { ignition: true }
  if (keyword === 'acc off') return { ignition: false }
  const temperature = /^T:([-+]?\d+(\.\d+)?)$/.exec(keyword)
  if (temperature) return { temperature: Number(temperature[1]) }
  const fuel = /^oil (\d+(\.\d+)?)$/.exec(keyword)
  if (fuel) return { fuel_level: Number(fuel[1]) }
  if (keyword === 'rfid' && fields[3]) return { driver_unique_id: fields[3] }
  return {}
}

function regular(uniqueId: string, keyword: string, fields: string[], now: number | undefined): Gps103Message {
  const local = localTime(fields[2] ?? '')
  const source = fields[4]
  const attributes = keywordAttributes(keyword, fields)
  const reply = keyword === 'help me' ? `**,imei:${uniqueId},E;` : null
  if (source !== 'F') {
    // L (or nothing): no GPS, the serving cell when sent (lac and cell id in hex)
    const status: Record<string, unknown> = { ...attributes }
    const lac = fields[7]
    const cellId = fields[9]
    if (lac && cellId && /^[0-9A-Fa-f]{1,8}$/.test(lac) && /^[0-9A-Fa-f]{1,8}$/.test(cellId)) {
      status.cells = [{ lac: Number.parseInt(lac, 16), cell_id: Number.parseInt(cellId, 16) }]
    }
    // the server's time: the device's clock runs in a zone it does not name, and without GPS it has no UTC to show it
    let timestamp: number | null = now ?? null
    if (timestamp === null && local) {
      try {
        timestamp = utcSeconds(local.year, local.month, local.day, local.hour, local.minute, local.second)
      } catch {
        // a clock the device has not set: no time for the alarm
      }
    }
    const report: DecodedReport = { uniqueId, fixes: [], events: alarmEvents(keyword, null, timestamp) }
    if (Object.keys(status).length > 0) report.status = status
    return { kind: 'report', keyword, report, reply }
  }
  if (!local) fail('a position without a date')
  // some firmware puts the hemisphere before the number, and some leaves it empty
  let at = 6
  const validity = fields[at++]
  if (validity !== 'A' && validity !== 'V') fail(`validity ${validity}`)
  let latitudeHemisphere = 'N'
  if (fields[at] === 'N' || fields[at] === 'S') latitudeHemisphere = fields[at++]
  const latitudeText = fields[at++] ?? ''
  if (fields[at] === 'N' || fields[at] === 'S') latitudeHemisphere = fields[at++]
  let longitudeHemisphere = 'E'
  if (fields[at] === 'E' || fields[at] === 'W') longitudeHemisphere = fields[at++]
  const longitudeText = fields[at++] ?? ''
  if (fields[at] === 'E' || fields[at] === 'W' || fields[at] === '') longitudeHemisphere = fields[at++] || longitudeHemisphere
  const latitude = coordinate(latitudeText, latitudeHemisphere, 90)
  const longitude = coordinate(longitudeText, longitudeHemisphere, 180)
  const knots = numberOr(fields[at++], null)
  const course = numberOr(fields[at++], null)
  const altitude = numberOr(fields[at++], null)
  const ignition = fields[at++]
  const door = fields[at++]
  const fuel1 = /^(\d+(\.\d+)?)%$/.exec(fields[at++] ?? '')
  const fuel2 = /^(\d+(\.\d+)?)%$/.exec(fields[at++] ?? '')
  const temperature = /^[-+]?\d+$/.exec(fields[at++] ?? '')
  if (ignition === '0' || ignition === '1') attributes.ignition = ignition === '1'
  if (door === '0' || door === '1') attributes.door = door === '1'
  if (fuel1) attributes.fuel_level = Number(fuel1[1])
  if (fuel2) attributes.fuel_level_2 = Number(fuel2[1])
  if (temperature) attributes.temperature = Number(temperature[0])
  const fix: DecodedFix = {
    timestamp: fixTime(local, fields[5]),
    latitude,
    longitude,
    speed: knots === null ? null : knots * KNOTS_TO_KMH,
    course: course === null ? null : course % 360,
    altitude,
    satellites: null,
    valid: validity === 'A',
    attributes,
  }
  return { kind: 'report', keyword, report: { uniqueId, fixes: [fix], events: alarmEvents(keyword, fix, null) }, reply }
}

/** The OBD report: engine values as the device's status, no fix. */
function obd(uniqueId: string, fields: string[]): Gps103Message {
  const time = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)$/.exec(fields[2] ?? '')
  if (!time || fields.length < 14) fail('an OBD frame of another shape')
  const status: Record<string, unknown> = {}
  const put = (key: string, text: string | undefined, pattern: RegExp) => {
    const match = pattern.exec(text ?? '')
    if (match) status[key] = Number(match[1])
  }
  put('odometer_km', fields[3], /^(\d+)$/)
  put('fuel_consumption', fields[5], /^(\d+\.\d+)$/)
  put('engine_hours', fields[6], /^(\d+)$/)
  put('obd_speed', fields[7], /^(\d+)$/)
  put('engine_load', fields[8], /^(\d+(\.\d+)?)%$/)
  put('coolant_temperature', fields[9], /^([-+]?\d+)$/)
  put('throttle', fields[10], /^(\d+(\.\d+)?)%$/)
  put('rpm', fields[11], /^(\d+)$/)
  put('battery_voltage', fields[12], /^(\d+\.\d+)$/)
  const dtcs = fields.slice(13).filter((code) => /^[PCBU][0-9A-F]{4}$/.test(code))
  if (dtcs.length > 0) status.dtcs = dtcs
  const report: DecodedReport = { uniqueId, fixes: [], events: [] }
  if (Object.keys(status).length > 0) report.status = status
  return { kind: 'report', keyword: 'OBD', report, reply: null }
}

/** The `*`-ended variant: decimal degrees, a date, satellites. */
function alternative(uniqueId: string, fields: string[]): Gps103Message {
  const time = /^(\d\d)(\d\d)(\d\d)$/.exec(fields[5])
  const date = /^(\d\d)(\d\d)(\d\d)$/.exec(fields[6])
  if (!time || !date) fail('a variant frame without its time')
  const latitude = numberOr(fields[9], null)
  const longitude = numberOr(fields[10], null)
  if (latitude === null || longitude === null || Math.abs(latitude) > 90 || Math.abs(longitude) > 180) fail('a variant frame without its place')
  const satellites = numberOr(fields[15], null)
  const ignition = fields[16]
  const fix: DecodedFix = {
    timestamp: utcSeconds(2000 + Number(date[3]), Number(date[2]), Number(date[1]), Number(time[1]), Number(time[2]), Number(time[3])),
    latitude,
    longitude,
    speed: numberOr(fields[11], null),
    course: numberOr(fields[12], null),
    altitude: numberOr(fields[13], null),
    satellites,
    valid: fields[8] !== '0',
    attributes: {
      ...(numberOr(fields[14], null) !== null ? { hdop: Number(fields[14]) } : {}),
      ...(ignition === '0' || ignition === '1' ? { ignition: ignition === '1' } : {}),
      ...(fields[7] && /^\d+$/.test(fields[7]) ? { gsm_signal: Number(fields[7]) } : {}),
    },
  }
  return { kind: 'report', keyword: fields[1], report: { uniqueId, fixes: [fix], events: [] }, reply: null }
}

export interface Gps103DecodeOptions {
  /** the server's clock, Unix seconds: the time of an alarm in a frame without a fix nor a set clock */
  now?: number
}

export function decodeGps103Frame(text: string, options: Gps103DecodeOptions = {}): Gps103Message {
  try {
    const login = LOGIN.exec(text)
    if (login) return { kind: 'login', uniqueId: login[1], reply: 'LOAD' }
    const heartbeat = HEARTBEAT.exec(text)
    let sentence = text
    let reply: string | null = null
    if (heartbeat) {
      if (heartbeat[2] === undefined) return { kind: 'heartbeat', uniqueId: heartbeat[1], reply: 'ON' }
      // a heartbeat glued to a report: ON, and the report
      sentence = heartbeat[2]
      reply = 'ON'
    }
    if (!sentence.startsWith('imei:')) fail('not a GPS103 frame')
    const fields = sentence.slice(5).split(',')
    const uniqueId = fields[0]
    if (!IMEI.test(uniqueId)) fail('no IMEI')
    const keyword = fields[1] ?? ''
    if (fields.length < 3) fail('a frame of two fields')
    if (keyword.startsWith('vr')) return { kind: 'invalid', reason: 'photo packets are not kept' }
    let message: Gps103Message
    if (keyword === 'OBD') message = obd(uniqueId, fields)
    else if (fields.length >= 19 && /^\d{6}$/.test(fields[5]) && /^\d{6}$/.test(fields[6]) && fields[4] !== 'F' && fields[4] !== 'L') message = alternative(uniqueId, fields)
    else message = regular(uniqueId, keyword, fields, options.now)
    if (reply && message.kind === 'report') return { ...message, reply: message.reply ?? reply }
    return message
  } catch (error) {
    if (error instanceof Malformed) return { kind: 'invalid', reason: error.message }
    throw error
  }
}
