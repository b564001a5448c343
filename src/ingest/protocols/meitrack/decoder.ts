/**
 * Meitrack decoder: one frame from the framing (framing.ts) in, one message out. Pure: no I/O, no
 * clock, no state (the caller passes `now`).
 *
 * What a device sends after `$$<flag><length>,<IMEI>,` (Meitrack GPRS protocol documents for
 * MVT/T1/T3, T333, T366 and T622, "Tracker command format"):
 *
 *   AAA  a report, text: event code, latitude, longitude (signed decimal degrees), yymmddHHMMSS
 *        (UTC), A|V, satellites, GSM signal (0-31), speed (km/h), course, HDOP, altitude (m),
 *        mileage (m), run time (s), base station `mcc|mnc|lac|ci` (lac and ci in hex), I/O
 *        status (4 hex digits: inputs, then outputs), analog inputs, then fields that vary by
 *        model (below)
 *   AFF  the same report behind a number, from a device set to wait for the server's
 *        confirmation of each event (C03,1): answered `AFF,<number>`
 *   CCC  a batch of cached reports, binary (little-endian, fixed 52-byte records): answered
 *        `CCC,<count>` so the device deletes them
 *   CCE  the newer batch, binary (little-endian): records of tagged parameters; answered
 *        `CCE,<count>` the same way
 *   AAC  answered `AAC,<its number>` (another open server answers it so; the documents we read
 *        do not describe it)
 *   D00  a picture packet: not kept (the product stores no media), not asked for again
 *   any other type: the device's answer to a command the server sent (`C01,OK`, `D82,0`)
 *
 * How the AAA fields that vary by model are told apart: the first 16 are the same on every model;
 * the analog field is `ad1|ad2|ad3|battery|power` in hex, or decimal volts with a point
 * (`4.33|12.96|…`, some firmware); after it come the event's own data, a reserved field, the
 * protocol version (1, 3, 108, …), fuel (4 hex) and temperatures. The battery and power ADCs are
 * volts ×100 from protocol version 3 on; below that their scale depends on the model (the MVT/T1
 * document gives one formula per model), which no frame names, so the raw values are kept.
 */
import type { DecodedEvent, DecodedFix, DecodedReport } from '../../types'
import { eventAtFix, eventWithoutFix } from '../events'
import { externalPowerOf, meitrackAlarm, POSITION_ASKED_EVENT } from './alarms'
import type { MeitrackFrame } from './framing'
import { buildMeitrackFrame } from './replies'

/** Seconds from the Unix epoch to 2000-01-01, where binary batches count from. */
const EPOCH_2000 = 946_684_800
/** Fixed size of a CCC record (the documents' compression version 0x0102 and 0x0201). */
const CCC_RECORD_BYTES = 52

export type MeitrackMessage =
  | {
      kind: 'report'
      /** AAA, AFF, CCC, CCE, or the type of an answer */
      type: string
      uniqueId: string
      report: DecodedReport
      /** what the frame said about the device beyond its fixes */
      status: Record<string, unknown>
      /** the device's answer to a command: the frame's type and data, and its flag */
      answer: { text: string; flag: string } | null
      reply: Uint8Array | null
    }
  | { kind: 'invalid'; message: string }

class Malformed extends Error {}

export interface MeitrackDecodeOptions {
  /** the server's clock, Unix seconds: a fix more than a day ahead of it is refused */
  now?: number
}

export function decodeMeitrackFrame(frame: MeitrackFrame, options: MeitrackDecodeOptions = {}): MeitrackMessage {
  try {
    return decode(frame, options)
  } catch (error) {
    if (!(error instanceof Malformed)) throw error
    return { kind: 'invalid', message: `Meitrack frame: ${error.message}` }
  }
}

// ---------------------------------------------------------------------------------------------
// The envelope
// ---------------------------------------------------------------------------------------------

function latin1(bytes: Uint8Array, from: number, to: number): string {
  let text = ''
  for (let i = from; i < to; i++) text += String.fromCharCode(bytes[i])
  return text
}

function decode(frame: MeitrackFrame, options: MeitrackDecodeOptions): MeitrackMessage {
  const { bytes, bodyStart, flag } = frame
  // the data ends before `*`, two hex digits and CR LF (the framing checked they are there)
  const dataEnd = bytes.length - 5
  if (bodyStart >= dataEnd || bytes[dataEnd] !== 0x2a) throw new Malformed('no `*` before the checksum')
  const imeiEnd = bytes.indexOf(0x2c, bodyStart)
  if (imeiEnd < 0 || imeiEnd > dataEnd) throw new Malformed('no command type')
  const uniqueId = latin1(bytes, bodyStart, imeiEnd)
  if (!/^\d{1,20}$/.test(uniqueId)) throw new Malformed('the IMEI is not 1-20 digits')
  const typeEnd = imeiEnd + 4
  const type = latin1(bytes, imeiEnd + 1, Math.min(typeEnd, dataEnd))
  if (!/^[A-Z0-9]{3}$/.test(type) || (typeEnd !== dataEnd && bytes[typeEnd] !== 0x2c)) throw new Malformed('no command type')
  const dataStart = Math.min(typeEnd + 1, dataEnd)

  switch (type) {
    case 'AAA':
      return textReport(uniqueId, type, flag, latin1(bytes, dataStart, dataEnd).split(','), options, null)
    case 'AFF': {
      const fields = latin1(bytes, dataStart, dataEnd).split(',')
      const number = fields[0] ?? ''
      if (!/^[0-9A-Fa-f]{1,8}$/.test(number)) throw new Malformed('AFF without its number')
      return textReport(uniqueId, type, flag, fields.slice(1), options, buildMeitrackFrame(flag, uniqueId, `AFF,${number}`))
    }
    case 'CCC':
      return batchReport(uniqueId, type, decodeCcc(bytes.subarray(dataStart, dataEnd), options), flag)
    case 'CCE':
      return batchReport(uniqueId, type, decodeCce(bytes.subarray(dataStart, dataEnd), options), flag)
    case 'AAC': {
      const number = latin1(bytes, dataStart, dataEnd)
      if (!/^\d{1,4}$/.test(number)) throw new Malformed('AAC without its number')
      return message(uniqueId, type, [], [], {}, null, buildMeitrackFrame(flag, uniqueId, `AAC,${number}`))
    }
    case 'D00':
      // picture packets: the product keeps no media; the device sends the rest only when asked
      return message(uniqueId, type, [], [], {}, null, null)
    default: {
      const data = latin1(bytes, dataStart, dataEnd)
      if (!/^[\x20-\x7e]*$/.test(data)) throw new Malformed(`${type} answer is not text`)
      return message(uniqueId, type, [], [], {}, { text: dataStart === dataEnd ? type : `${type},${data}`, flag }, null)
    }
  }
}

function message(
  uniqueId: string,
  type: string,
  fixes: DecodedFix[],
  events: DecodedEvent[],
  status: Record<string, unknown>,
  answer: { text: string; flag: string } | null,
  reply: Uint8Array | null,
): MeitrackMessage {
  return { kind: 'report', type, uniqueId, report: { uniqueId, fixes, events }, status, answer, reply }
}

// ---------------------------------------------------------------------------------------------
// AAA reports (and AFF, the same behind a number)
// ---------------------------------------------------------------------------------------------

function integer(text: string, what: string, min = 0, max = 0xffffffff): number {
  if (!/^-?\d{1,10}$/.test(text)) throw new Malformed(`${what} is not a whole number`)
  const value = Number(text)
  if (value < min || value > max) throw new Malformed(`${what} out of range`)
  return value
}

function decimal(text: string, what: string): number {
  if (!/^-?\d{1,10}(\.\d{1,8})?$/.test(text)) throw new Malformed(`${what} is not a number`)
  return Number(text)
}

/** yymmddHHMMSS, UTC */
function dateTime(text: string): number {
  const match = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)$/.exec(text)
  if (!match) throw new Malformed('time is not yymmddHHMMSS')
  const [year, month, day, hours, minutes, seconds] = match.slice(1).map(Number)
  if (month < 1 || month > 12 || day < 1 || hours > 23 || minutes > 59 || seconds > 59) throw new Malformed('time out of range')
  const ms = Date.UTC(2000 + year, month - 1, day, hours, minutes, seconds)
  if (new Date(ms).getUTCDate() !== day) throw new Malformed('no such date')
  return ms / 1000
}

function checkTime(timestamp: number, options: MeitrackDecodeOptions): void {
  if (options.now !== undefined && timestamp > options.now + 86_400) throw new Malformed('time more than a day ahead')
}

interface Cell {
  mcc: number
  mnc: number
  lac: number
  cellId: number
}

/** `mcc|mnc|lac|ci`, lac and ci in hex; empty parts read as 0; null when no network is named */
function baseStation(text: string): Cell | null {
  const parts = text.split('|')
  if (parts.length !== 4) return null
  const [mcc, mnc] = parts.slice(0, 2).map((part) => (/^\d{1,4}$/.test(part) ? Number(part) : part === '' ? 0 : -1))
  const [lac, cellId] = parts.slice(2).map((part) => (/^[0-9A-Fa-f]{1,8}$/.test(part) ? Number.parseInt(part, 16) : part === '' ? 0 : -1))
  if (mcc <= 0 || mnc < 0 || lac < 0 || cellId < 0) return null
  return { mcc, mnc, lac, cellId }
}

function hexOrNull(text: string | undefined): number | null {
  return text !== undefined && /^[0-9A-Fa-f]{1,8}$/.test(text) ? Number.parseInt(text, 16) : null
}

/** The analog field: hex ADCs `ad1|ad2|ad3|battery|power`, or decimal volts `battery|power|rtc|mcu|gps`. */
function analogAttributes(text: string, protocolVersion: number | null, attributes: Record<string, unknown>): void {
  const parts = text.split('|')
  if (parts.length >= 2 && parts.slice(0, 2).every((part) => /^\d{1,3}\.\d{1,3}$/.test(part))) {
    attributes.battery_voltage = Number(parts[0])
    attributes.power_voltage = Number(parts[1])
    return
  }
  if (parts.length !== 5) return
  for (let i = 0; i < 3; i++) {
    const value = hexOrNull(parts[i])
    if (value !== null) attributes[`adc${i + 1}`] = value
  }
  const battery = hexOrNull(parts[3])
  const power = hexOrNull(parts[4])
  if (protocolVersion !== null && protocolVersion >= 3) {
    if (battery !== null) attributes.battery_voltage = battery / 100
    if (power !== null) attributes.power_voltage = power / 100
  } else {
    if (battery !== null) attributes.battery_adc = battery
    if (power !== null) attributes.power_adc = power
  }
}

/** Temperatures `SSVVVV|…`: sensor number, then (protocol ≥ 3) a signed value ×100 °C. */
function temperatures(text: string, protocolVersion: number | null, attributes: Record<string, unknown>): void {
  for (const part of text.split('|')) {
    if (!/^[0-9A-Fa-f]{6}$/.test(part) || protocolVersion === null || protocolVersion < 3) continue
    const sensor = Number.parseInt(part.slice(0, 2), 16)
    const raw = Number.parseInt(part.slice(2), 16)
    attributes[`temperature_${sensor}`] = (raw >= 0x8000 ? raw - 0x10000 : raw) / 100
  }
}

function textReport(
  uniqueId: string,
  type: string,
  flag: string,
  fields: string[],
  options: MeitrackDecodeOptions,
  reply: Uint8Array | null,
): MeitrackMessage {
  if (fields.length < 16) throw new Malformed(`a report needs 16 fields, got ${fields.length}`)
  const eventCode = integer(fields[0], 'event code', 0, 65535)
  const latitude = decimal(fields[1], 'latitude')
  const longitude = decimal(fields[2], 'longitude')
  if (Math.abs(latitude) > 90 || Math.abs(longitude) > 180) throw new Malformed('position out of range')
  const timestamp = dateTime(fields[3])
  checkTime(timestamp, options)
  if (fields[4] !== 'A' && fields[4] !== 'V') throw new Malformed('validity is not A or V')
  const satellites = integer(fields[5], 'satellites', 0, 99)
  const gsmSignal = integer(fields[6], 'GSM signal', 0, 99)
  const speed = decimal(fields[7], 'speed')
  const course = decimal(fields[8], 'course')
  if (speed < 0 || speed > 1000 || course < 0 || course > 360) throw new Malformed('speed or course out of range')
  const hdop = decimal(fields[9], 'HDOP')
  const altitude = decimal(fields[10], 'altitude')
  const odometer = integer(fields[11], 'mileage')
  const runTime = integer(fields[12], 'run time')

  const attributes: Record<string, unknown> = { event: eventCode, hdop, odometer, run_time_seconds: runTime, gsm_signal: gsmSignal }
  const cell = baseStation(fields[13])
  if (cell) Object.assign(attributes, { mcc: cell.mcc, mnc: cell.mnc, lac: cell.lac, cell_id: cell.cellId })
  if (/^[0-9A-Fa-f]{4}$/.test(fields[14])) {
    attributes.inputs = Number.parseInt(fields[14].slice(0, 2), 16)
    attributes.outputs = Number.parseInt(fields[14].slice(2), 16)
  }
  // the tail after the analog field: event data, reserved, protocol version, fuel, temperatures
  const eventData = fields[16] ?? ''
  const protocolVersion = fields[18] !== undefined && /^\d{1,4}$/.test(fields[18]) ? Number(fields[18]) : null
  analogAttributes(fields[15], protocolVersion, attributes)
  if (eventData !== '') attributes.event_data = eventData.slice(0, 64)
  if (protocolVersion !== null) attributes.protocol_version = protocolVersion
  const fuel = fields[19]
  if (fuel !== undefined && /^[0-9A-Fa-f]{4}$/.test(fuel) && fuel !== '0000') attributes.fuel_percent = Number.parseInt(fuel.slice(0, 2), 16) + Number.parseInt(fuel.slice(2), 16) / 100
  if (fields[20] !== undefined) temperatures(fields[20], protocolVersion, attributes)

  const fix: DecodedFix = {
    timestamp,
    latitude,
    longitude,
    speed,
    course,
    altitude,
    satellites,
    valid: fields[4] === 'A',
    attributes,
  }
  // a device that never had a position sends 0,0: no place, but its alarm and status still count
  const positioned = !isNullIsland(latitude, longitude)
  const events = alarmEvents(eventCode, positioned ? fix : null, timestamp, cell)
  const status = deviceStatus(eventCode, attributes)
  const answer = eventCode === POSITION_ASKED_EVENT && type === 'AAA' ? { text: `AAA,${fields.join(',')}`, flag } : null
  return message(uniqueId, type, positioned ? [fix] : [], events, status, answer, reply)
}

/** Coordinates of exactly 0,0: what a device sends before its first position, never a place. */
function isNullIsland(latitude: number, longitude: number): boolean {
  return latitude === 0 && longitude === 0
}

function alarmEvents(eventCode: number, fix: DecodedFix | null, timestamp: number, cell: Cell | null): DecodedEvent[] {
  const alarm = meitrackAlarm(eventCode)
  if (!alarm) return []
  const network = { mcc: cell?.mcc ?? null, mnc: cell?.mnc ?? null, dbm: null }
  return [fix ? eventAtFix(alarm, fix, network, { event_code: eventCode }) : eventWithoutFix(alarm, timestamp, network, { event_code: eventCode, time_source: 'device' })]
}

/** attributes of a report that describe the device rather than the fix */
const STATUS_KEYS = ['gsm_signal', 'inputs', 'outputs', 'battery_voltage', 'power_voltage', 'battery_level', 'odometer', 'run_time_seconds'] as const

function deviceStatus(eventCode: number | null, attributes: Record<string, unknown>): Record<string, unknown> {
  const status: Record<string, unknown> = {}
  for (const key of STATUS_KEYS) if (attributes[key] !== undefined) status[key] = attributes[key]
  const externalPower = eventCode === null ? null : externalPowerOf(eventCode)
  if (externalPower !== null) status.external_power = externalPower
  return status
}

// ---------------------------------------------------------------------------------------------
// Binary batches (CCC, CCE): little-endian
// ---------------------------------------------------------------------------------------------

class LittleEndian {
  offset = 0
  constructor(private readonly bytes: Uint8Array) {}
  get remaining(): number {
    return this.bytes.length - this.offset
  }
  private take(count: number): number {
    if (this.offset + count > this.bytes.length) throw new Malformed(`a batch that ends at byte ${this.bytes.length}, needed ${this.offset + count}`)
    const at = this.offset
    this.offset += count
    return at
  }
  u8(): number {
    return this.bytes[this.take(1)]
  }
  peek(): number {
    if (this.offset >= this.bytes.length) throw new Malformed('a batch that ends inside a record')
    return this.bytes[this.offset]
  }
  u16(): number {
    const at = this.take(2)
    return this.bytes[at] | (this.bytes[at + 1] << 8)
  }
  i16(): number {
    const value = this.u16()
    return value >= 0x8000 ? value - 0x10000 : value
  }
  u32(): number {
    const at = this.take(4)
    return (this.bytes[at] | (this.bytes[at + 1] << 8) | (this.bytes[at + 2] << 16) | (this.bytes[at + 3] << 24)) >>> 0
  }
  i32(): number {
    return this.u32() | 0
  }
  skip(count: number): void {
    this.take(count)
  }
}

interface Batch {
  fixes: DecodedFix[]
  events: DecodedEvent[]
  status: Record<string, unknown>
  /** records in the batch (with or without a position): what the confirmation names */
  count: number
}

function batchReport(uniqueId: string, type: 'CCC' | 'CCE', batch: Batch, flag: string): MeitrackMessage {
  return message(uniqueId, type, batch.fixes, batch.events, batch.status, null, buildMeitrackFrame(flag, uniqueId, `${type},${batch.count}`))
}

/** A fix in range, or none (a record without a position, or with coordinates out of range). */
function binaryFix(latitude: number | null, longitude: number | null, time: number | null, options: MeitrackDecodeOptions): boolean {
  if (latitude === null || longitude === null || time === null) return false
  if (Math.abs(latitude) > 90 || Math.abs(longitude) > 180) throw new Malformed('position out of range')
  checkTime(time, options)
  return true
}

/**
 * CCC: compression version (2), record length (2), records still cached (4), then records of the
 * declared length (52 bytes read): event, latitude and longitude (×10⁶, signed), time (s since
 * 2000), valid, satellites, GSM signal, speed (km/h), course, HDOP ×10, altitude, mileage, run
 * time, mcc, mnc, lac, ci, I/O status, AD1, battery (V ×100), power, geofence.
 */
function decodeCcc(data: Uint8Array, options: MeitrackDecodeOptions): Batch {
  const reader = new LittleEndian(data)
  reader.u16() // compression version
  const recordBytes = reader.u16()
  if (recordBytes < CCC_RECORD_BYTES || recordBytes > 512) throw new Malformed(`CCC records of ${recordBytes} bytes`)
  reader.u32() // still cached
  if (reader.remaining % recordBytes !== 0) throw new Malformed('CCC records do not fill the batch')
  const batch: Batch = { fixes: [], events: [], status: {}, count: 0 }
  while (reader.remaining > 0) {
    const start = reader.offset
    const eventCode = reader.u8()
    const latitude = reader.i32() / 1e6
    const longitude = reader.i32() / 1e6
    const timestamp = EPOCH_2000 + reader.u32()
    const valid = reader.u8() === 1
    const satellites = reader.u8()
    const gsmSignal = reader.u8()
    const speed = reader.u16()
    const course = reader.u16()
    const hdop = reader.u16() / 10
    const altitude = reader.i16()
    const odometer = reader.u32()
    const runTime = reader.u32()
    const cell = { mcc: reader.u16(), mnc: reader.u16(), lac: reader.u16(), cellId: reader.u16() }
    const io = reader.u16()
    const adc1 = reader.u16()
    const battery = reader.u16()
    const power = reader.u16()
    reader.skip(recordBytes - (reader.offset - start))
    batch.count++
    if (isNullIsland(latitude, longitude)) {
      if (timestamp !== EPOCH_2000) batch.events.push(...alarmEvents(eventCode, null, timestamp, cell.mcc > 0 ? cell : null))
      continue
    }
    binaryFix(latitude, longitude, timestamp, options)
    if (course > 360) throw new Malformed('course out of range')
    const attributes: Record<string, unknown> = {
      event: eventCode,
      hdop,
      odometer,
      run_time_seconds: runTime,
      gsm_signal: gsmSignal,
      io_status: io,
      adc1,
      battery_voltage: battery / 100,
      power_adc: power,
      ...(cell.mcc > 0 ? { mcc: cell.mcc, mnc: cell.mnc, lac: cell.lac, cell_id: cell.cellId } : {}),
    }
    const fix: DecodedFix = { timestamp, latitude, longitude, speed, course, altitude, satellites, valid, attributes }
    batch.fixes.push(fix)
    batch.events.push(...alarmEvents(eventCode, fix, timestamp, cell.mcc > 0 ? cell : null))
    Object.assign(batch.status, deviceStatus(eventCode, attributes))
  }
  return batch
}

/**
 * CCE: records still cached (4), record count (2), then each record: its length (2), its index
 * (2), and four groups of tagged parameters, each group a count (1) then entries whose tag is one
 * byte, or two when the first is 0xFE: values of 1 byte, of 2, of 4, and of a length given
 * before each value. The tags read here (T366/T333 documents, "CCE"): 1-byte 0x01 event, 0x05
 * valid, 0x06 satellites, 0x07 GSM signal, 0x14 outputs, 0x15 inputs, 0xFE69 battery %; 2-byte
 * 0x08 speed, 0x09 course, 0x0A HDOP ×10, 0x0B altitude (signed), 0x19 battery V ×100, 0x1A power
 * V ×100, 0x40 event; 4-byte 0x02 latitude, 0x03 longitude (×10⁶, signed), 0x04 time (s since
 * 2000), 0x0C mileage, 0x0D run time; variable 0x0E the serving cell (mcc 2, mnc 2, lac 2, ci 4,
 * signal 2). The rest is skipped by its size; a record whose groups overrun its length is refused.
 */
function decodeCce(data: Uint8Array, options: MeitrackDecodeOptions): Batch {
  const reader = new LittleEndian(data)
  reader.u32() // still cached
  const count = reader.u16()
  const batch: Batch = { fixes: [], events: [], status: {}, count }
  for (let record = 0; record < count; record++) {
    const length = reader.u16()
    const end = reader.offset + length
    if (end > data.length) throw new Malformed('a CCE record longer than its batch')
    reader.u16() // index
    const values = new Map<number, number>()
    let cell: Cell | null = null
    // a tag is one byte, or two (big-endian, as written in the documents: 0xFE69) after 0xFE
    const tag = () => (reader.peek() === 0xfe ? (reader.u8() << 8) | reader.u8() : reader.u8())
    for (const width of [1, 2, 4] as const) {
      const entries = reader.u8()
      for (let i = 0; i < entries; i++) {
        const id = tag()
        const value = width === 1 ? reader.u8() : width === 2 ? (id === 0x0b ? reader.i16() : reader.u16()) : id === 0x02 || id === 0x03 ? reader.i32() : reader.u32()
        values.set(id, value)
      }
    }
    const variable = reader.u8()
    for (let i = 0; i < variable; i++) {
      const id = tag()
      const size = reader.u8()
      const start = reader.offset
      if (id === 0x0e && size >= 12) {
        const mcc = reader.u16()
        const mnc = reader.u16()
        const lac = reader.u16()
        const cellId = reader.u32()
        if (mcc > 0) cell = { mcc, mnc, lac, cellId }
      }
      reader.offset = start
      reader.skip(size)
    }
    if (reader.offset > end) throw new Malformed('a CCE record whose parameters overrun it')
    reader.offset = end

    const eventCode = values.get(0x40) ?? values.get(0x01) ?? null
    const attributes: Record<string, unknown> = {}
    if (eventCode !== null) attributes.event = eventCode
    const copy = (id: number, key: string, scale = 1) => {
      const value = values.get(id)
      if (value !== undefined) attributes[key] = scale === 1 ? value : value / scale
    }
    copy(0x07, 'gsm_signal')
    copy(0x15, 'inputs')
    copy(0x14, 'outputs')
    copy(0xfe69, 'battery_level')
    copy(0x0a, 'hdop', 10)
    copy(0x19, 'battery_voltage', 100)
    copy(0x1a, 'power_voltage', 100)
    copy(0x0c, 'odometer')
    copy(0x0d, 'run_time_seconds')
    if (cell) Object.assign(attributes, { mcc: cell.mcc, mnc: cell.mnc, lac: cell.lac, cell_id: cell.cellId })
    Object.assign(batch.status, deviceStatus(eventCode, attributes))

    const latitude = values.has(0x02) ? values.get(0x02)! / 1e6 : null
    const longitude = values.has(0x03) ? values.get(0x03)! / 1e6 : null
    const time = values.has(0x04) ? EPOCH_2000 + values.get(0x04)! : null
    if ((latitude === 0 && longitude === 0) || !binaryFix(latitude, longitude, time, options)) {
      if (eventCode !== null && time !== null && time > EPOCH_2000 && (options.now === undefined || time <= options.now + 86_400)) batch.events.push(...alarmEvents(eventCode, null, time, cell))
      continue
    }
    const course = values.get(0x09) ?? null
    if (course !== null && course > 360) throw new Malformed('course out of range')
    const fix: DecodedFix = {
      timestamp: time!,
      latitude: latitude!,
      longitude: longitude!,
      speed: values.get(0x08) ?? null,
      course,
      altitude: values.get(0x0b) ?? null,
      satellites: values.get(0x06) ?? null,
      valid: (values.get(0x05) ?? 0) > 0,
      attributes,
    }
    batch.fixes.push(fix)
    if (eventCode !== null) batch.events.push(...alarmEvents(eventCode, fix, fix.timestamp, cell))
  }
  return batch
}
