/**
 * Queclink @Track text decoder (GV300, GV350, GV55, GV500, GL300, GL500, GB100, CV100, …): one
 * frame from the framing in, one message out. Pure: no I/O, no clock (the caller passes `now`).
 *
 * A frame is `<head>:<type>,<fields…>$` (Queclink "@Track Air Interface Protocol" documents):
 *
 *   +RESP:GTxxx   a report sent as it happens
 *   +BUFF:GTxxx   the same report, kept while the device had no network and sent later
 *   +ACK:GTxxx    the device's answer to a command (AT+GTxxx=…), or, for GTHBD, its heartbeat
 *
 * Every report starts `<protocol version>,<IMEI>,<device name>,…` (a handful of old GL200/GTTRI
 * firmwares leave the version out) and ends `…,<send time>,<count number>`. What lies between
 * differs by message and by model and firmware (the protocol version, 6 or 10 hex digits, names
 * the model and its revision): GTFRI of a GV300 carries external power and a report id before its
 * positions, of a GV500 the VIN, of a GL300 nothing; GTERI adds a digital-fuel or CAN mask;
 * GTCAN a hundred CAN fields before its one position. What does not differ is the position block,
 * in every message that has one and in this order:
 *
 *   <GPS accuracy>,<speed km/h>,<azimuth>,<altitude m>,<longitude>,<latitude>,<GPS UTC time yyyyMMddHHmmss>,<mcc>,<mnc>,<lac hex>,<cell id hex>,…
 *
 * so positions are found by that block rather than by counting fields per model: a longitude and
 * a latitude (decimal degrees with a point, in range) followed by a valid UTC date and time.
 * GTFRI may carry several blocks (`<number>` positions in one report): each is a fix. A block with
 * empty coordinates (no fix yet) is none. GPS accuracy 0 means "no fix now, the last known one":
 * the fix is kept, marked not valid.
 *
 * The send time at the end is the device's clock and may be local time (devices configured with a
 * time adjustment): it is never used as a fix's time; an alarm without a position takes the
 * server's time.
 */
import type { DecodedEvent, DecodedFix, DecodedReport } from '../../types'
import { deviceAlarm, eventAtFix, eventWithoutFix } from '../events'
import { buildGl200HeartbeatAnswer } from './replies'

export type Gl200Head = 'RESP' | 'BUFF' | 'ACK'

/** The answer to a command the server sent: `+ACK:GTRTO,…` */
export interface Gl200CommandAck {
  /** GTRTO, GTOUT, … */
  command: string
  /** the fields after the device name, without the send time and count */
  fields: string[]
}

export type Gl200Message =
  | {
      /** store `report` (its fixes may be none: a keep-alive), then send `reply` when not null */
      kind: 'report'
      head: Gl200Head
      /** GTFRI, GTIGN, GTHBD, … */
      type: string
      uniqueId: string
      report: DecodedReport
      /** what the frame says of the device beyond its fixes (ignition), for its status */
      status: Record<string, unknown>
      ack: Gl200CommandAck | null
      reply: Uint8Array | null
    }
  | { kind: 'invalid'; message: string }

export interface Gl200DecodeOptions {
  /** the server's clock, Unix seconds: the time of an alarm from a report without a position */
  now: number
}

class Malformed extends Error {}

/** The largest frame decoded; the framing never passes a longer one. */
export const GL200_MAX_FRAME_CHARS = 4096

export function decodeGl200Frame(text: string, options: Gl200DecodeOptions): Gl200Message {
  try {
    return decode(text, options)
  } catch (error) {
    if (!(error instanceof Malformed)) throw error
    return { kind: 'invalid', message: `@Track frame: ${error.message}` }
  }
}

// ---------------------------------------------------------------------------------------------
// Fields
// ---------------------------------------------------------------------------------------------

/** decimal degrees as @Track prints them: a sign, 1-3 digits, a point, 1-8 decimals */
const DEGREES = /^-?\d{1,3}\.\d{1,8}$/
const DATE_TIME = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/
const DECIMAL = /^-?\d{1,7}(\.\d{1,3})?$/
/** an IMEI (15 digits) or, on CDMA units, a MEID (14 hex digits) */
const IDENTIFIER = /^(\d{15}|[0-9A-Fa-f]{14})$/
/** the protocol version: model (2 hex digits, or 6 on newer units), major, minor */
const PROTOCOL_VERSION = /^([0-9A-Fa-f]{6}|[0-9A-Fa-f]{10})$/
const COUNT_NUMBER = /^[0-9A-Fa-f]{4}$/
const TYPE = /^GT[A-Z0-9]{3}$/

/** Unix seconds of a UTC `yyyyMMddHHmmss`, or null when it is not a real date and time from 2000 on. */
export function gl200Time(text: string | undefined): number | null {
  const match = text === undefined ? null : DATE_TIME.exec(text)
  if (!match) return null
  const [year, month, day, hours, minutes, seconds] = match.slice(1).map(Number)
  if (year < 2000 || month < 1 || month > 12 || day < 1 || hours > 23 || minutes > 59 || seconds > 59) return null
  const ms = Date.UTC(year, month - 1, day, hours, minutes, seconds)
  // Date.UTC rolls 31 February over into March; a date that does not survive is not a date
  return new Date(ms).getUTCDate() === day ? ms / 1000 : null
}

function decimalOf(text: string | undefined): number | null {
  return text !== undefined && DECIMAL.test(text) ? Number(text) : null
}

/** The position block whose longitude is at `at`, or null when there is none there. */
function fixAt(fields: readonly string[], at: number, buffered: boolean, type: string): DecodedFix | null {
  const longitudeText = fields[at]
  const latitudeText = fields[at + 1]
  if (!DEGREES.test(longitudeText) || latitudeText === undefined || !DEGREES.test(latitudeText)) return null
  const longitude = Number(longitudeText)
  const latitude = Number(latitudeText)
  if (Math.abs(longitude) > 180 || Math.abs(latitude) > 90) return null
  const timestamp = gl200Time(fields[at + 2])
  if (timestamp === null) return null
  const accuracy = decimalOf(fields[at - 4])
  const speed = decimalOf(fields[at - 3])
  const course = decimalOf(fields[at - 2])
  const attributes: Record<string, unknown> = { message: type }
  if (buffered) attributes.buffered = true
  if (accuracy !== null) attributes.gps_accuracy = accuracy
  const mcc = fields[at + 3]
  const mnc = fields[at + 4]
  if (mcc && mnc && /^\d{3,4}$/.test(mcc) && /^\d{1,4}$/.test(mnc) && Number(mcc) >= 200 && Number(mcc) <= 799) {
    attributes.mcc = Number(mcc)
    attributes.mnc = Number(mnc)
    const lac = fields[at + 5]
    const cellId = fields[at + 6]
    if (lac && cellId && /^[0-9A-Fa-f]{1,8}$/.test(lac) && /^[0-9A-Fa-f]{1,8}$/.test(cellId)) {
      attributes.lac = Number.parseInt(lac, 16)
      attributes.cell_id = Number.parseInt(cellId, 16)
    }
  }
  return {
    timestamp,
    latitude,
    longitude,
    speed: speed !== null && speed >= 0 && speed < 2000 ? speed : null,
    course: course !== null && course >= 0 && course <= 360 ? course : null,
    altitude: decimalOf(fields[at - 1]),
    satellites: null,
    // accuracy 0: no fix now, the position is the last known one
    valid: accuracy === null ? true : accuracy > 0,
    attributes,
  }
}

/** Every position block of a report, in order; the longitude index of each. */
function fixesOf(fields: readonly string[], from: number, buffered: boolean, type: string): { fix: DecodedFix; at: number }[] {
  const found: { fix: DecodedFix; at: number }[] = []
  // a block needs its accuracy, speed, course and altitude before the longitude, its time after
  for (let at = Math.max(from, 4); at + 2 < fields.length; at++) {
    const fix = fixAt(fields, at, buffered, type)
    if (fix) {
      found.push({ fix, at })
      at += 2
    }
  }
  return found
}

// ---------------------------------------------------------------------------------------------
// Alarms
// ---------------------------------------------------------------------------------------------

/** Reports that are an alarm whatever they carry, and the code each becomes (events.ts). */
const ALARMS: Readonly<Record<string, string>> = {
  GTSOS: 'sos',
  GTSPD: 'overspeed',
  GTPFA: 'power_off',
  GTMPF: 'power_cut',
  GTEPF: 'power_cut',
  GTBPL: 'low_battery',
  GTIGN: 'ignition_on',
  GTIGF: 'ignition_off',
  GTVGN: 'ignition_on',
  GTVGF: 'ignition_off',
  GTJDR: 'jamming',
  GTCRA: 'crash',
  GTTOW: 'towing',
  GTIDN: 'idling',
  GTGIN: 'geofence_enter',
  GTGOT: 'geofence_exit',
  // power on (GTPNA) and main power back (GTMPN) have no code of ours: kept as `alarm` with the report's name
  GTPNA: 'GTPNA',
  GTMPN: 'GTMPN',
}

/** GTHBM's report type (the second digit of `<report id><report type>`): harsh driving of which kind. */
const HARSH_BEHAVIOUR: Readonly<Record<string, string>> = { '0': 'harsh_braking', '1': 'harsh_acceleration', '2': 'harsh_cornering' }

/** The alarm a report raises, given the longitude index of its first position (the report id/type field sits six before it). */
function alarmOf(type: string, fields: readonly string[], firstAt: number | null): string | null {
  const idType = firstAt !== null ? fields[firstAt - 6] : undefined
  const reportType = idType !== undefined && /^[0-9A-Fa-f]{2}$/.test(idType) ? idType[1] : null
  switch (type) {
    case 'GTHBM':
      return reportType === null ? null : (HARSH_BEHAVIOUR[reportType] ?? null)
    case 'GTGEO':
    case 'GTGCR':
      // report type 1 enters the fence, 0 leaves it
      return reportType === '1' ? 'geofence_enter' : reportType === '0' ? 'geofence_exit' : 'geofence'
    case 'GTSPD':
      // report type 1: the speed is back within the range
      return reportType === '1' ? null : 'overspeed'
    default:
      return ALARMS[type] ?? null
  }
}

// ---------------------------------------------------------------------------------------------
// The frame
// ---------------------------------------------------------------------------------------------

function decode(frameText: string, { now }: Gl200DecodeOptions): Gl200Message {
  if (frameText.length > GL200_MAX_FRAME_CHARS) throw new Malformed(`${frameText.length} characters, more than ${GL200_MAX_FRAME_CHARS}`)
  // the `$` that ends a frame (the framing keeps it), and the CR LF or NUL some firmware adds
  const text = frameText.replace(/[$\r\n\0]+$/, '')
  const colon = text.indexOf(':')
  const head = text.slice(1, colon)
  if (text[0] !== '+' || (head !== 'RESP' && head !== 'BUFF' && head !== 'ACK')) throw new Malformed('not a +RESP:, +BUFF: or +ACK: frame')
  const fields = text.slice(colon + 1).split(',')
  const type = fields[0]
  if (!TYPE.test(type)) throw new Malformed(`type ${JSON.stringify(type.slice(0, 8))} is not GTxxx`)

  // <version>,<IMEI>,… ; a few old firmwares send <IMEI> right after the type
  let idAt: number
  if (PROTOCOL_VERSION.test(fields[1] ?? '') && IDENTIFIER.test(fields[2] ?? '')) idAt = 2
  else if (IDENTIFIER.test(fields[1] ?? '')) idAt = 1
  else throw new Malformed('no IMEI after the type and protocol version')
  const uniqueId = fields[idAt]
  const version = idAt === 2 ? fields[1] : null
  const count = fields.length > idAt + 2 && COUNT_NUMBER.test(fields[fields.length - 1]) ? fields[fields.length - 1] : null

  if (head === 'ACK') {
    if (type === 'GTHBD') {
      // the heartbeat: the device waits for +SACK:GTHBD,<version>,<count>$ and reconnects without it
      const reply = version !== null && count !== null ? buildGl200HeartbeatAnswer(version, count) : null
      return { kind: 'report', head, type, uniqueId, report: { uniqueId, fixes: [], events: [] }, status: {}, ack: null, reply }
    }
    // <version>,<IMEI>,<device name>,<answer fields…>,<send time>,<count>
    const end = count !== null && gl200Time(fields[fields.length - 2]) !== null ? fields.length - 2 : fields.length
    const ack: Gl200CommandAck = { command: type, fields: fields.slice(idAt + 2, end) }
    return { kind: 'report', head, type, uniqueId, report: { uniqueId, fixes: [], events: [] }, status: {}, ack, reply: null }
  }

  const buffered = head === 'BUFF'
  const found = fixesOf(fields, idAt + 1, buffered, type)
  const fixes = found.map(({ fix }) => fix)
  const status: Record<string, unknown> = {}
  if (type === 'GTIGN' || type === 'GTVGN') status.ignition = true
  if (type === 'GTIGF' || type === 'GTVGF') status.ignition = false
  if ('ignition' in status) for (const fix of fixes) fix.attributes.ignition = status.ignition

  const events: DecodedEvent[] = []
  const alarm = alarmOf(type, fields, found[0]?.at ?? null)
  if (alarm !== null) {
    const cell = { mcc: (fixes[0]?.attributes.mcc as number | undefined) ?? null, mnc: (fixes[0]?.attributes.mnc as number | undefined) ?? null, dbm: null }
    const { alarmCode, context: raw } = deviceAlarm(alarm)
    const context = { message: type, ...(buffered ? { buffered: true } : {}), ...raw }
    // the device's send time may be local time: an alarm without a position is placed at the server's
    events.push(fixes[0] ? eventAtFix(alarmCode, fixes[0], cell, context) : eventWithoutFix(alarmCode, now, cell, { ...context, time_source: 'server' }))
  }
  return { kind: 'report', head, type, uniqueId, report: { uniqueId, fixes, events }, status, ack: null, reply: null }
}
