/**
 * Teltonika TCP protocol (FMB/FMC/FMM… devices): IMEI handshake, AVL data packets in Codec 8,
 * Codec 8 Extended and Codec 16. Reference: Teltonika wiki, "Teltonika Data Sending Protocols"
 * and "Codec", and the FMB "Teltonika Data Sending Parameters ID" (AVL ID) tables.
 *
 * Session on the wire (integers big-endian):
 *
 *   device → server   00 0F "356307042441013"          2-byte length + ASCII IMEI
 *   server → device   01 (accept) or 00 (refuse)
 *   device → server   00 00 00 00 | data length (4) | codec id .. number of data 2 | CRC (4)
 *   server → device   number of accepted records (4 bytes)
 *
 * The CRC field is 4 bytes whose low 2 hold CRC-16/ARC ("CRC-16/IBM") over codec id ..
 * number of data 2. `createTeltonikaParser()` splits a byte stream into the IMEI and CRC-checked
 * packets; `decodeTeltonikaPacket()` turns one packet into a report and its acknowledgement,
 * to be sent *after* the records are durable. Pure: no I/O, no clock.
 */

import { eventAtFix } from './events'
import { appendBytes } from './bytes'
import type { DecodedEvent, DecodedFix, DecodedReport } from '../types'
import { crc16Arc } from './crc'

// ---------------------------------------------------------------------------------------------
// Handshake and acknowledgement helpers
// ---------------------------------------------------------------------------------------------

/** Server answer to the IMEI handshake: accept (0x01) or refuse (0x00) the device. */
export function teltonikaImeiResponse(accepted: boolean): Uint8Array {
  return Uint8Array.of(accepted ? 0x01 : 0x00)
}

/** Server answer to an AVL packet: the number of records accepted, as a 4-byte big-endian int. */
export function buildTeltonikaAck(recordCount: number): Uint8Array {
  const ack = new Uint8Array(4)
  new DataView(ack.buffer).setUint32(0, recordCount >>> 0)
  return ack
}

// ---------------------------------------------------------------------------------------------
// Framing
// ---------------------------------------------------------------------------------------------

/** Default cap on the data field length. A full FMB packet is a few KiB at most. */
export const TELTONIKA_DEFAULT_MAX_PACKET_BYTES = 64 * 1024
/** IMEIs are 15 digits; allow some room for other serials, but not a megabyte of "IMEI". */
const MAX_IMEI_LENGTH = 20
/** codec id + number of data 1 + number of data 2 */
const MIN_DATA_LENGTH = 3
/** preamble (4) + data field length (4) */
const HEADER_BYTES = 8
const CRC_BYTES = 4
/** How many later preambles a stalled or failed parse examines per push (bounds the work). */
const MAX_RESYNC_CANDIDATES = 16

/** One CRC-checked AVL packet. */
export interface TeltonikaPacket {
  codecId: number
  /** "number of data 1": how many records the packet announces (what the ACK echoes) */
  recordCount: number
  /** the data field: codec id .. number of data 2, as covered by the CRC */
  data: Uint8Array
}

export type TeltonikaStreamError =
  /** bytes outside any packet were discarded while looking for a 4-zero preamble */
  | { code: 'garbage'; fatal: false; skippedBytes: number; message: string }
  /** a complete packet whose CRC did not match: dropped and not acknowledged (the device resends) */
  | { code: 'bad_crc'; fatal: false; expected: number; received: number; message: string }
  /** the handshake is not a 2-byte length + ASCII digits: not a Teltonika device. Close. */
  | { code: 'bad_imei'; fatal: true; message: string }
  /** a data field longer than the cap: hostile or foreign client. Close. */
  | { code: 'packet_too_large'; fatal: true; declaredBytes: number; maxBytes: number; message: string }

export type TeltonikaStreamItem =
  | { kind: 'imei'; imei: string }
  | { kind: 'packet'; packet: TeltonikaPacket }
  | { kind: 'error'; error: TeltonikaStreamError }

export interface TeltonikaParser {
  /** Feed the next chunk from the socket; returns the IMEI, packets and errors, in order. */
  push(chunk: Uint8Array): TeltonikaStreamItem[]
  /** the IMEI from the handshake, once received */
  readonly imei: string | null
  /** bytes held back waiting for the rest of the handshake or a packet */
  readonly bufferedBytes: number
  /** true after a fatal error; every later push returns that error again */
  readonly failed: boolean
}

export interface TeltonikaParserOptions {
  maxPacketBytes?: number
}

function isPreamble(buffer: Uint8Array, at: number): boolean {
  return buffer[at] === 0 && buffer[at + 1] === 0 && buffer[at + 2] === 0 && buffer[at + 3] === 0
}

/**
 * Index of the next 4-zero preamble at or after `from`. When none is complete, returns where a
 * possible preamble starts in the trailing zeros (so they are kept), i.e. the discard boundary,
 * with `complete: false`.
 */
function findPreamble(buffer: Uint8Array, from: number): { at: number; complete: boolean } {
  let zeros = 0
  for (let i = from; i < buffer.length; i++) {
    zeros = buffer[i] === 0 ? zeros + 1 : 0
    if (zeros === 4) return { at: i - 3, complete: true }
  }
  return { at: buffer.length - zeros, complete: false }
}

function readUint32(buffer: Uint8Array, at: number): number {
  return buffer[at] * 0x1000000 + ((buffer[at + 1] << 16) | (buffer[at + 2] << 8) | buffer[at + 3])
}

/** Checks the packet at `start` (assumed complete): CRC received and expected. */
function packetCrc(buffer: Uint8Array, start: number, dataLength: number): { expected: number; received: number } {
  const dataStart = start + HEADER_BYTES
  const crcAt = dataStart + dataLength
  return {
    expected: crc16Arc(buffer, dataStart, crcAt),
    // the 4-byte field carries the CRC in its low 2 bytes
    received: (buffer[crcAt + 2] << 8) | buffer[crcAt + 3],
  }
}

/**
 * First preamble at or after `from` that begins a complete packet with a valid CRC, or -1.
 * Used to resynchronise past a false preamble (zeros in garbage) without losing the real
 * packet that follows it.
 */
function findValidPacket(buffer: Uint8Array, from: number, maxBytes: number): number {
  let position = from
  for (let tries = 0; tries < MAX_RESYNC_CANDIDATES; tries++) {
    const { at, complete } = findPreamble(buffer, position)
    if (!complete || buffer.length - at < HEADER_BYTES) return -1
    const dataLength = readUint32(buffer, at + 4)
    if (dataLength >= MIN_DATA_LENGTH && dataLength <= maxBytes && buffer.length - at >= HEADER_BYTES + dataLength + CRC_BYTES) {
      const { expected, received } = packetCrc(buffer, at, dataLength)
      if (expected === received) return at
    }
    position = at + 1
  }
  return -1
}

export function createTeltonikaParser(options: TeltonikaParserOptions = {}): TeltonikaParser {
  const maxBytes = options.maxPacketBytes ?? TELTONIKA_DEFAULT_MAX_PACKET_BYTES
  let pending: Uint8Array = new Uint8Array(0)
  let imei: string | null = null
  let fatalError: TeltonikaStreamError | null = null

  function fail(items: TeltonikaStreamItem[], error: TeltonikaStreamError): TeltonikaStreamItem[] {
    fatalError = error
    pending = new Uint8Array(0)
    items.push({ kind: 'error', error })
    return items
  }

  function push(chunk: Uint8Array): TeltonikaStreamItem[] {
    if (fatalError) return [{ kind: 'error', error: fatalError }]
    const items: TeltonikaStreamItem[] = []
    const buffer = appendBytes(pending, chunk)
    let position = 0

    if (imei === null) {
      if (buffer.length < 2) {
        pending = buffer.slice()
        return items
      }
      const length = (buffer[0] << 8) | buffer[1]
      if (length === 0 || length > MAX_IMEI_LENGTH) {
        return fail(items, { code: 'bad_imei', fatal: true, message: `IMEI length ${length} is not 1..${MAX_IMEI_LENGTH}` })
      }
      if (buffer.length < 2 + length) {
        pending = buffer.slice()
        return items
      }
      let text = ''
      for (let i = 2; i < 2 + length; i++) {
        const byte = buffer[i]
        if (byte < 0x30 || byte > 0x39) {
          return fail(items, { code: 'bad_imei', fatal: true, message: `IMEI byte 0x${byte.toString(16)} is not a digit` })
        }
        text += String.fromCharCode(byte)
      }
      imei = text
      items.push({ kind: 'imei', imei })
      position = 2 + length
    }

    let skipped = 0
    const flushSkipped = () => {
      if (skipped === 0) return
      items.push({
        kind: 'error',
        error: { code: 'garbage', fatal: false, skippedBytes: skipped, message: `discarded ${skipped} byte(s) outside any AVL packet` },
      })
      skipped = 0
    }

    while (position < buffer.length) {
      const { at, complete } = findPreamble(buffer, position)
      skipped += at - position
      position = at
      if (!complete || buffer.length - at < HEADER_BYTES) break // wait for preamble + length

      const dataLength = readUint32(buffer, at + 4)
      if (dataLength < MIN_DATA_LENGTH) {
        // zeros in garbage, not a packet: step past one byte and look again
        skipped += 1
        position = at + 1
        continue
      }
      if (dataLength > maxBytes) {
        flushSkipped()
        return fail(items, {
          code: 'packet_too_large',
          fatal: true,
          declaredBytes: dataLength,
          maxBytes,
          message: `AVL packet declares ${dataLength} data bytes, more than the ${maxBytes}-byte limit`,
        })
      }
      const end = at + HEADER_BYTES + dataLength + CRC_BYTES
      if (end > buffer.length) {
        // Waiting is right unless this preamble was zeros in garbage and a real packet
        // follows complete; then skip to it rather than stall.
        const later = findValidPacket(buffer, at + 1, maxBytes)
        if (later < 0) break
        skipped += later - at
        position = later
        continue
      }

      const { expected, received } = packetCrc(buffer, at, dataLength)
      if (expected !== received) {
        // A misframed candidate may hide a real packet; prefer that over dropping everything.
        const later = findValidPacket(buffer, at + 1, maxBytes)
        if (later >= 0 && later < end) {
          skipped += later - at
          position = later
          continue
        }
        flushSkipped()
        items.push({
          kind: 'error',
          error: {
            code: 'bad_crc',
            fatal: false,
            expected,
            received,
            message: `AVL packet dropped: CRC 0x${received.toString(16)}, expected 0x${expected.toString(16)}`,
          },
        })
        position = end
        continue
      }

      flushSkipped()
      const dataStart = at + HEADER_BYTES
      items.push({
        kind: 'packet',
        packet: {
          codecId: buffer[dataStart],
          recordCount: buffer[dataStart + 1],
          data: buffer.slice(dataStart, dataStart + dataLength),
        },
      })
      position = end
    }

    flushSkipped()
    pending = position >= buffer.length ? new Uint8Array(0) : buffer.slice(position)
    return items
  }

  return {
    push,
    get imei() {
      return imei
    },
    get bufferedBytes() {
      return pending.length
    },
    get failed() {
      return fatalError !== null
    },
  }
}

// ---------------------------------------------------------------------------------------------
// AVL data decoding
// ---------------------------------------------------------------------------------------------

export const CODEC_8 = 0x08
export const CODEC_8_EXTENDED = 0x8e
export const CODEC_16 = 0x10

/** A raw IO value: 1/2/4-byte values as numbers, 8-byte as bigint, NX (Codec 8E) as bytes. */
export type TeltonikaIoValue = number | bigint | Uint8Array

/** One AVL record as sent, before mapping to protocol-neutral names. */
export interface TeltonikaRecord {
  /** Unix milliseconds */
  timestampMs: number
  /** 0 low, 1 high, 2 panic */
  priority: number
  longitude: number
  latitude: number
  altitude: number
  angle: number
  satellites: number
  speed: number
  /** the IO id that caused this record, 0 for periodic records */
  eventIoId: number
  /** Codec 16 only: 0 on exit, 1 on entrance, 2 both, 4 hysteresis, 5 on change, 6 eventual, 7 periodical */
  generationType: number | null
  io: Map<number, TeltonikaIoValue>
}

export type TeltonikaDecodeResult =
  /** store `report`, then send `ack` (the record count) */
  | { kind: 'report'; codecId: number; records: TeltonikaRecord[]; report: DecodedReport; ack: Uint8Array }
  /**
   * nothing stored and no ACK: the device resends unacknowledged data. Codec 12/13/14 (GPRS
   * commands) and anything else unknown are `unsupported_codec`.
   */
  | { kind: 'invalid'; reason: 'unsupported_codec' | 'malformed'; codecId: number; message: string; ack: null }

class MalformedPacket extends Error {}

class PacketReader {
  offset = 0
  private readonly view: DataView
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }
  get remaining(): number {
    return this.bytes.length - this.offset
  }
  private need(count: number): number {
    if (this.offset + count > this.bytes.length) {
      throw new MalformedPacket(`data ends at byte ${this.bytes.length}, needed ${this.offset + count}`)
    }
    const at = this.offset
    this.offset += count
    return at
  }
  u8(): number {
    return this.view.getUint8(this.need(1))
  }
  u16(): number {
    return this.view.getUint16(this.need(2))
  }
  i16(): number {
    return this.view.getInt16(this.need(2))
  }
  u32(): number {
    return this.view.getUint32(this.need(4))
  }
  i32(): number {
    return this.view.getInt32(this.need(4))
  }
  u64(): bigint {
    return this.view.getBigUint64(this.need(8))
  }
  bytesOf(count: number): Uint8Array {
    const at = this.need(count)
    return this.bytes.slice(at, at + count)
  }
}

/** Field widths that differ between codecs. */
interface IoLayout {
  eventIdBytes: 1 | 2
  countBytes: 1 | 2
  idBytes: 1 | 2
  hasGenerationType: boolean
  hasVariableLength: boolean
}

const IO_LAYOUTS: Readonly<Record<number, IoLayout>> = {
  [CODEC_8]: { eventIdBytes: 1, countBytes: 1, idBytes: 1, hasGenerationType: false, hasVariableLength: false },
  [CODEC_8_EXTENDED]: { eventIdBytes: 2, countBytes: 2, idBytes: 2, hasGenerationType: false, hasVariableLength: true },
  [CODEC_16]: { eventIdBytes: 2, countBytes: 1, idBytes: 2, hasGenerationType: true, hasVariableLength: false },
}

function readRecord(reader: PacketReader, layout: IoLayout): TeltonikaRecord {
  const timestampMs = Number(reader.u64())
  const priority = reader.u8()
  // Coordinates are signed (two's complement) degrees × 10^7.
  const longitude = reader.i32() / 1e7
  const latitude = reader.i32() / 1e7
  const altitude = reader.i16()
  const angle = reader.u16()
  const satellites = reader.u8()
  const speed = reader.u16()

  const eventIoId = layout.eventIdBytes === 2 ? reader.u16() : reader.u8()
  const generationType = layout.hasGenerationType ? reader.u8() : null
  const readCount = () => (layout.countBytes === 2 ? reader.u16() : reader.u8())
  const readId = () => (layout.idBytes === 2 ? reader.u16() : reader.u8())
  readCount() // total IO count: redundant with the per-width counts, which are what we trust

  const io = new Map<number, TeltonikaIoValue>()
  for (const width of [1, 2, 4, 8] as const) {
    const count = readCount()
    for (let i = 0; i < count; i++) {
      const id = readId()
      io.set(id, width === 1 ? reader.u8() : width === 2 ? reader.u16() : width === 4 ? reader.u32() : reader.u64())
    }
  }
  if (layout.hasVariableLength) {
    const count = reader.u16()
    for (let i = 0; i < count; i++) {
      const id = reader.u16()
      io.set(id, reader.bytesOf(reader.u16()))
    }
  }
  return { timestampMs, priority, longitude, latitude, altitude, angle, satellites, speed, eventIoId, generationType, io }
}

/** Decode the data field of one packet (codec id .. number of data 2), as the splitter yields it. */
export function decodeTeltonikaPacket(data: Uint8Array, imei: string): TeltonikaDecodeResult {
  const codecId = data.length > 0 ? data[0] : -1
  const layout = IO_LAYOUTS[codecId]
  if (!layout) {
    return {
      kind: 'invalid',
      reason: 'unsupported_codec',
      codecId,
      message: `Teltonika codec 0x${codecId.toString(16)} is not supported (8, 8E and 16 are)`,
      ack: null,
    }
  }
  try {
    const reader = new PacketReader(data)
    reader.u8() // codec id
    const announced = reader.u8()
    const records: TeltonikaRecord[] = []
    for (let i = 0; i < announced; i++) records.push(readRecord(reader, layout))
    const trailing = reader.u8()
    if (trailing !== announced) throw new MalformedPacket(`number of data 1 (${announced}) ≠ number of data 2 (${trailing})`)
    if (reader.remaining !== 0) throw new MalformedPacket(`${reader.remaining} unexpected byte(s) after the records`)

    const fixes: DecodedFix[] = []
    const events: DecodedEvent[] = []
    for (const record of records) {
      const fix = recordToFix(record)
      fixes.push(fix)
      const event = recordToEvent(record, fix)
      if (event) events.push(event)
    }
    return { kind: 'report', codecId, records, report: { uniqueId: imei, fixes, events }, ack: buildTeltonikaAck(announced) }
  } catch (error) {
    if (!(error instanceof MalformedPacket)) throw error
    return { kind: 'invalid', reason: 'malformed', codecId, message: `Teltonika codec 0x${codecId.toString(16)}: ${error.message}`, ack: null }
  }
}

// ---------------------------------------------------------------------------------------------
// IO elements → attributes and events
// ---------------------------------------------------------------------------------------------

interface IoMapping {
  name: string
  convert?: (value: number) => unknown
}

const asBoolean = (value: number) => value !== 0
const milli = (value: number) => value / 1000
const tenth = (value: number) => value / 10

/**
 * Named AVL IDs (FMB "Teltonika Data Sending Parameters ID" tables). Units after conversion:
 * voltages in V, current in A, distances in metres, speed in km/h. Every other ID is kept as
 * `io<ID>` with its raw value.
 */
export const TELTONIKA_IO_NAMES: Readonly<Record<number, IoMapping>> = {
  1: { name: 'din1', convert: asBoolean },
  2: { name: 'din2', convert: asBoolean },
  3: { name: 'din3', convert: asBoolean },
  16: { name: 'odometer' }, // Total Odometer, m
  21: { name: 'gsm_signal' }, // 0..5
  24: { name: 'gnss_speed' }, // km/h (fix.speed holds the GPS element speed)
  66: { name: 'external_voltage', convert: milli }, // mV → V
  67: { name: 'battery_voltage', convert: milli }, // mV → V
  68: { name: 'battery_current', convert: milli }, // mA → A
  69: { name: 'gnss_status' }, // 0 off, 1 on with fix, 2 on without fix, 3 sleep
  80: { name: 'data_mode' }, // 0..5 home/roaming/unknown on stop/moving
  113: { name: 'battery_level' }, // %
  179: { name: 'dout1', convert: asBoolean },
  180: { name: 'dout2', convert: asBoolean },
  181: { name: 'pdop', convert: tenth },
  182: { name: 'hdop', convert: tenth },
  199: { name: 'trip_odometer' }, // m
  200: { name: 'sleep_mode' }, // 0 none, 1 GPS sleep, 2 deep, 3 online deep, 4 ultra deep
  205: { name: 'cell_id' },
  206: { name: 'lac' },
  239: { name: 'ignition', convert: asBoolean },
  240: { name: 'movement', convert: asBoolean },
  241: { name: 'operator' }, // MCC and MNC as one number, e.g. 24602
  246: { name: 'towing' }, // 1 towing
  247: { name: 'crash_detection' }, // 1 crash, 2..6 crash traces
  249: { name: 'jamming' }, // GSM jamming: 1 started
  252: { name: 'unplug' }, // 1 battery unplugged
  253: { name: 'green_driving_type' }, // 1 acceleration, 2 braking, 3 cornering
  254: { name: 'green_driving_value' },
  318: { name: 'gnss_jamming' }, // 0 none, 1 warning, 2 critical
}

/**
 * Alarm IOs that become events, only on the record the IO itself triggered (eventIoId), so the
 * periodic records that repeat the value do not raise the alarm again.
 */
const ALARM_IOS: Readonly<Record<number, (value: number) => string | null>> = {
  246: (value) => (value === 1 ? 'towing' : null),
  247: (value) => (value > 0 ? 'crash' : null),
  249: (value) => (value === 1 ? 'jamming' : null),
  252: (value) => (value === 1 ? 'power_cut' : null),
  253: (value) => ({ 1: 'harsh_acceleration', 2: 'harsh_braking', 3: 'harsh_cornering' })[value] ?? null,
  318: (value) => (value > 0 ? 'gnss_jamming' : null),
}

/** Teltonika GSM signal scale 0..5 → an ESTIMATED dBm (the device does not send dBm). */
export const TELTONIKA_GSM_LEVEL_DBM: readonly number[] = [-113, -107, -101, -95, -87, -75]

/** JSON-safe attribute value for a raw IO value without a mapping. */
function rawValue(value: TeltonikaIoValue): number | string {
  if (typeof value === 'number') return value
  if (typeof value === 'bigint') {
    return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : `0x${value.toString(16)}`
  }
  return Array.from(value, (b) => b.toString(16).padStart(2, '0')).join('')
}

function ioAttributes(record: TeltonikaRecord): Record<string, unknown> {
  const attributes: Record<string, unknown> = { priority: record.priority }
  if (record.eventIoId !== 0) attributes.event_io = record.eventIoId
  if (record.generationType !== null) attributes.generation_type = record.generationType
  for (const [id, value] of record.io) {
    const mapping = TELTONIKA_IO_NAMES[id]
    const raw = rawValue(value)
    if (mapping && typeof raw === 'number') attributes[mapping.name] = mapping.convert ? mapping.convert(raw) : raw
    else attributes[`io${id}`] = raw
  }
  return attributes
}

function recordToFix(record: TeltonikaRecord): DecodedFix {
  return {
    timestamp: Math.floor(record.timestampMs / 1000),
    latitude: record.latitude,
    longitude: record.longitude,
    speed: record.speed,
    course: record.angle,
    altitude: record.altitude,
    satellites: record.satellites,
    // The device zeroes the GPS element without a fix; zero satellites is the documented tell.
    valid: record.satellites > 0,
    attributes: ioAttributes(record),
  }
}

/** MCC is the first 3 digits of the operator code, MNC the rest (2 or 3 digits). */
function splitOperator(code: unknown): { mcc: number | null; mnc: number | null } {
  if (typeof code !== 'number' || code < 10000) return { mcc: null, mnc: null }
  const digits = String(code)
  return { mcc: Number(digits.slice(0, 3)), mnc: Number(digits.slice(3)) }
}

function recordToEvent(record: TeltonikaRecord, fix: DecodedFix): DecodedEvent | null {
  const toAlarm = ALARM_IOS[record.eventIoId]
  const value = record.io.get(record.eventIoId)
  if (!toAlarm || typeof value !== 'number') return null
  const alarmCode = toAlarm(value)
  if (!alarmCode) return null
  const { mcc, mnc } = splitOperator(fix.attributes.operator)
  const gsmSignal = fix.attributes.gsm_signal
  const dbm = typeof gsmSignal === 'number' ? (TELTONIKA_GSM_LEVEL_DBM[gsmSignal] ?? null) : null
  return eventAtFix(alarmCode, fix, { mcc, mnc, dbm }, {
    io_id: record.eventIoId,
    io_value: value,
    priority: record.priority,
    ...(typeof gsmSignal === 'number' ? { gsm_signal: gsmSignal, dbm_estimated: true } : {}),
    ...(fix.attributes.green_driving_value !== undefined ? { green_driving_value: fix.attributes.green_driving_value } : {}),
  })
}
