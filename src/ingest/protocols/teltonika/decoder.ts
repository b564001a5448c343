/**
 * Teltonika TCP protocol (FMB/FMC/FMM… devices): IMEI handshake, AVL data packets in Codec 8,
 * Codec 8 Extended and Codec 16, GH3000 personal trackers' Codec 7, and the devices' answers to
 * GPRS commands in Codec 12, 13 and 14. Reference: Teltonika wiki, "Teltonika Data Sending
 * Protocols" (formerly "Codec"), the "FMB120 Teltonika Data Sending Parameters ID" (AVL ID) table
 * of the FMB1xx family, and Teltonika's "GH3000 TCP-IP/UDP-IP Data Protocols" (v1.08) for Codec 7.
 *
 * Session on the wire (integers big-endian):
 *
 *   device → server   [FF …] 00 0F "356307042441013"    keep-alive bytes, 2-byte length + ASCII IMEI
 *   server → device   01 (accept) or 00 (refuse)
 *   device → server   00 00 00 00 | data length (4) | codec id .. number of data 2 | CRC (4)
 *   server → device   number of accepted records (4 bytes); nothing for a command answer
 *   device → server   FF                               keep-alive, at any packet boundary
 *
 * The CRC field is 4 bytes whose low 2 hold CRC-16/ARC ("CRC-16/IBM") over codec id ..
 * number of data 2. framing.ts splits a byte stream into the IMEI and CRC-checked packets;
 * `decodeTeltonikaPacket()` here turns one packet into a report and its acknowledgement
 * (replies.ts), to be sent *after* the records are durable. Pure: no I/O, no clock.
 */

import type { DecodedEvent, DecodedFix, DecodedReport } from '../../types'
import { ByteReader, OutOfBytes } from '../bytes'
import { eventAtFix, eventWithoutFix } from '../events'
import { buildTeltonikaAck } from './replies'

// ---------------------------------------------------------------------------------------------
// Decoding a packet: AVL data (Codec 8, 8E, 16) and command answers (Codec 12, 13, 14)
// ---------------------------------------------------------------------------------------------

/** GH3000 personal trackers: records of their own layout (see `readGh3000Record`) */
export const CODEC_7 = 0x07
export const CODEC_8 = 0x08
export const CODEC_8_EXTENDED = 0x8e
export const CODEC_16 = 0x10
export const CODEC_12 = 0x0c
export const CODEC_13 = 0x0d
export const CODEC_14 = 0x0e

/** Message types of Codec 12/13/14 ("Teltonika Data Sending Protocols", Codec 12 and 14). */
export const MESSAGE_COMMAND = 0x05
export const MESSAGE_RESPONSE = 0x06
/** Codec 14 only: the command named another IMEI, so the device did not execute it. */
export const MESSAGE_NACK = 0x11

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
  /** every IO element as sent (signed where the AVL ID table says so, unscaled) */
  io: Map<number, TeltonikaIoValue>
  /**
   * Codec 7 only: the record's GPS element mask (which of coordinates, altitude, angle, speed,
   * satellites, cell, signal, operator it carries; 0 when it has no GPS element). Null in the
   * other codecs, whose GPS element always has every field.
   */
  gpsMask: number | null
}

/**
 * What a device reported about itself in one record, under protocol-neutral names and units
 * (the subset of the fix's attributes that describes the device rather than the fix: power,
 * signal, ignition, inputs and outputs, odometer, temperatures, SIM). Keys appear only when the
 * record carried the IO element.
 */
export interface TeltonikaStatus {
  /** the record's time, Unix seconds */
  timestamp: number
  attributes: Record<string, unknown>
}

/** A device's answer to a GPRS command, or a message it forwards (Codec 12, 13, 14). */
export interface TeltonikaCommandAnswer {
  codecId: typeof CODEC_12 | typeof CODEC_13 | typeof CODEC_14
  /** MESSAGE_RESPONSE, MESSAGE_NACK (Codec 14) or, from some Codec 13 firmware, MESSAGE_COMMAND */
  messageType: number
  /** the answer as text (UTF-8; bytes that are not are replaced by U+FFFD) */
  text: string
  /** the answer's bytes in hex when they are not printable text (RS232 binary data), else null */
  hex: string | null
  /** Codec 13: when the device sent it, Unix seconds; else null */
  timestamp: number | null
  /** Codec 14: the IMEI the answer carries; else null */
  imei: string | null
  /** false only for a Codec 14 nACK: the command was for another IMEI and was not executed */
  executed: boolean
}

export type TeltonikaDecodeResult =
  /**
   * store `report`, then send `ack` (the record count). `statuses[i]` is what record i says
   * about the device (same order as `records`); `report.fixes` follows the same order, one a
   * record, except that a Codec 7 record without coordinates gives none.
   */
  | {
      kind: 'report'
      codecId: number
      records: TeltonikaRecord[]
      report: DecodedReport
      statuses: TeltonikaStatus[]
      ack: Uint8Array
    }
  /**
   * a device's answer (Codec 12 response, Codec 13 message, Codec 14 ACK/nACK). Nothing is sent
   * back: in Teltonika's documents the answer ends the exchange the server's command began, and
   * Codec 13 is one-way, device to server.
   */
  | { kind: 'command_answer'; codecId: number; commandAnswer: TeltonikaCommandAnswer; ack: null }
  /**
   * nothing stored and no ACK: the device resends unacknowledged data. `unsupported_codec`: a
   * codec this decoder does not read; `unsupported_message`: a Codec 12/13/14 message type a
   * device does not send (a command, a camera transfer…); `malformed`: the fields do not add up.
   */
  | {
      kind: 'invalid'
      reason: 'unsupported_codec' | 'unsupported_message' | 'malformed'
      codecId: number
      message: string
      ack: null
    }

class MalformedPacket extends Error {}

/** Field widths that differ between codecs. */
interface IoLayout {
  eventIdBytes: 1 | 2
  countBytes: 1 | 2
  idBytes: 1 | 2
  hasGenerationType: boolean
  hasVariableLength: boolean
  /**
   * A 16-byte IO section after the 8-byte one. Some FM firmware (records of FMB130-era devices,
   * published in Traccar's tests under its "extended" setting) sends it; nothing in the packet
   * says so, so a packet is read with it only when it does not add up without it.
   */
  hasSixteenByteSection: boolean
}

const IO_LAYOUTS: Readonly<Record<number, IoLayout>> = {
  [CODEC_8]: { eventIdBytes: 1, countBytes: 1, idBytes: 1, hasGenerationType: false, hasVariableLength: false, hasSixteenByteSection: false },
  [CODEC_8_EXTENDED]: { eventIdBytes: 2, countBytes: 2, idBytes: 2, hasGenerationType: false, hasVariableLength: true, hasSixteenByteSection: false },
  [CODEC_16]: { eventIdBytes: 2, countBytes: 1, idBytes: 2, hasGenerationType: true, hasVariableLength: false, hasSixteenByteSection: false },
}
const WITH_SIXTEEN_BYTE_SECTION: Readonly<Record<number, IoLayout>> = Object.fromEntries(
  Object.entries(IO_LAYOUTS).map(([codec, layout]) => [codec, { ...layout, hasSixteenByteSection: true }]),
)
const SIXTEEN_BYTES = 16

function readIoValue(reader: ByteReader, width: 1 | 2 | 4 | 8, signed: boolean): number | bigint {
  if (signed) return width === 1 ? reader.i8() : width === 2 ? reader.i16() : width === 4 ? reader.i32() : reader.i64()
  return width === 1 ? reader.u8() : width === 2 ? reader.u16() : width === 4 ? reader.u32() : reader.u64()
}

function readRecord(reader: ByteReader, layout: IoLayout): TeltonikaRecord {
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
      io.set(id, readIoValue(reader, width, SIGNED_IO_IDS.has(id)))
    }
  }
  if (layout.hasSixteenByteSection) {
    const count = readCount()
    for (let i = 0; i < count; i++) {
      const id = readId()
      io.set(id, reader.copyOf(SIXTEEN_BYTES))
    }
  }
  if (layout.hasVariableLength) {
    const count = reader.u16()
    for (let i = 0; i < count; i++) {
      const id = reader.u16()
      io.set(id, reader.copyOf(reader.u16()))
    }
  }
  return { timestampMs, priority, longitude, latitude, altitude, angle, satellites, speed, eventIoId, generationType, io, gpsMask: null }
}

// ---------------------------------------------------------------------------------------------
// Codec 7: GH3000 personal trackers ("GH3000 TCP-IP/UDP-IP Data Protocols"). A record:
//
//   time (4)        low 30 bits: seconds since 2007-01-01 00:00 UTC; high 2 bits: priority
//   global mask (1) bit 0 GPS element, bit 1 IO of 1 byte, bit 2 of 2 bytes, bit 3 of 4 bytes
//   GPS element     its mask (1), then each field whose bit is set, in bit order:
//                   0 latitude, longitude (IEEE 754 floats, degrees)  1 altitude (2, m)
//                   2 angle (1, 360/256 degrees)  3 speed (1, km/h)  4 satellites (1)
//                   5 LAC (2) and cell id (2)  6 signal quality (1)  7 operator code (4)
//   IO sections     for each of 1, 2, 4 bytes whose bit is set: count (1), then id (1) + value
//
// There is no 8-byte section and no event IO id. A record without a GPS element, or whose GPS
// element has no coordinates, is no fix: its time and IO are kept as the device's status.
// ---------------------------------------------------------------------------------------------

const GH3000_EPOCH_S = 1_167_609_600 // 2007-01-01T00:00:00Z
const GH3000_SECONDS_MASK = 0x3fffffff
export const GH3000_GPS = { coordinates: 0x01, altitude: 0x02, angle: 0x04, speed: 0x08, satellites: 0x10, cell: 0x20, signal: 0x40, operator: 0x80 } as const
const GH3000_GLOBAL_GPS = 0x01
const GH3000_IO_SECTIONS = [
  [0x02, 1],
  [0x04, 2],
  [0x08, 4],
] as const

/** What a GH3000 record's GPS element says beyond the fix itself (cell, signal, operator). */
type Gh3000Extras = Map<number, TeltonikaIoValue>
/** Keys of those extras in `records[].io`: outside the GH3000 IO ids (one byte), so never confused with them. */
export const GH3000_EXTRA_IO = { lac: 0x1_0001, cellId: 0x1_0002, signal: 0x1_0003, operator: 0x1_0004 } as const

/** Scratch for reinterpreting 32 bits as an IEEE 754 float (module-level: no allocation a record). */
const FLOAT_SCRATCH = new DataView(new ArrayBuffer(4))
function float32(bits: number): number {
  FLOAT_SCRATCH.setUint32(0, bits)
  return FLOAT_SCRATCH.getFloat32(0)
}

function readGh3000Record(reader: ByteReader): TeltonikaRecord {
  const packed = reader.u32()
  const timestampMs = ((packed & GH3000_SECONDS_MASK) + GH3000_EPOCH_S) * 1000
  const priority = packed >>> 30
  const globalMask = reader.u8()
  const io: Gh3000Extras = new Map()
  let latitude = 0
  let longitude = 0
  let altitude = 0
  let angle = 0
  let speed = 0
  let satellites = 0
  let gpsMask = 0
  if (globalMask & GH3000_GLOBAL_GPS) {
    gpsMask = reader.u8()
    if (gpsMask & GH3000_GPS.coordinates) {
      latitude = float32(reader.u32())
      longitude = float32(reader.u32())
    }
    if (gpsMask & GH3000_GPS.altitude) altitude = reader.u16()
    if (gpsMask & GH3000_GPS.angle) angle = (reader.u8() * 360) / 256
    if (gpsMask & GH3000_GPS.speed) speed = reader.u8()
    if (gpsMask & GH3000_GPS.satellites) satellites = reader.u8()
    if (gpsMask & GH3000_GPS.cell) {
      io.set(GH3000_EXTRA_IO.lac, reader.u16())
      io.set(GH3000_EXTRA_IO.cellId, reader.u16())
    }
    if (gpsMask & GH3000_GPS.signal) io.set(GH3000_EXTRA_IO.signal, reader.u8())
    if (gpsMask & GH3000_GPS.operator) io.set(GH3000_EXTRA_IO.operator, reader.u32())
  }
  for (const [bit, width] of GH3000_IO_SECTIONS) {
    if (!(globalMask & bit)) continue
    const count = reader.u8()
    for (let i = 0; i < count; i++) {
      const id = reader.u8()
      io.set(id, width === 1 ? reader.u8() : width === 2 ? reader.u16() : reader.u32())
    }
  }
  return { timestampMs, priority, longitude, latitude, altitude, angle, satellites, speed, eventIoId: 0, generationType: null, io, gpsMask }
}

/** Decode the data field of one packet (codec id .. number of data 2), as the splitter yields it. */
export function decodeTeltonikaPacket(data: Uint8Array, imei: string): TeltonikaDecodeResult {
  const codecId = data.length > 0 ? data[0] : -1
  try {
    if (codecId === CODEC_12 || codecId === CODEC_13 || codecId === CODEC_14) return decodeCommandAnswer(data, codecId)
    if (codecId === CODEC_7) return decodeAvlPacket(data, codecId, null, imei)
    const layout = IO_LAYOUTS[codecId]
    if (!layout) {
      return {
        kind: 'invalid',
        reason: 'unsupported_codec',
        codecId,
        message: `Teltonika codec 0x${codecId.toString(16)} is not supported (7, 8, 8E, 16 and the answers in 12, 13, 14 are)`,
        ack: null,
      }
    }
    try {
      return decodeAvlPacket(data, codecId, layout, imei)
    } catch (error) {
      // the records may carry a 16-byte IO section (IoLayout): read again with it, and if that
      // does not add up either, the packet is malformed as first read
      if (!(error instanceof MalformedPacket || error instanceof OutOfBytes)) throw error
      try {
        return decodeAvlPacket(data, codecId, WITH_SIXTEEN_BYTE_SECTION[codecId], imei)
      } catch {
        throw error
      }
    }
  } catch (error) {
    if (!(error instanceof MalformedPacket || error instanceof OutOfBytes)) throw error
    return { kind: 'invalid', reason: 'malformed', codecId, message: `Teltonika codec 0x${codecId.toString(16)}: ${error.message}`, ack: null }
  }
}

/** `layout` null: Codec 7 (GH3000), whose records have a layout of their own. */
function decodeAvlPacket(data: Uint8Array, codecId: number, layout: IoLayout | null, imei: string): TeltonikaDecodeResult {
  const reader = new ByteReader(data)
  reader.u8() // codec id
  const announced = reader.u8()
  const records: TeltonikaRecord[] = []
  for (let i = 0; i < announced; i++) records.push(layout ? readRecord(reader, layout) : readGh3000Record(reader))
  const trailing = reader.u8()
  if (trailing !== announced) throw new MalformedPacket(`number of data 1 (${announced}) ≠ number of data 2 (${trailing})`)
  if (reader.remaining !== 0) throw new MalformedPacket(`${reader.remaining} unexpected byte(s) after the records`)

  const fixes: DecodedFix[] = []
  const events: DecodedEvent[] = []
  const statuses: TeltonikaStatus[] = []
  for (const record of records) {
    const timestamp = Math.floor(record.timestampMs / 1000)
    if (record.gpsMask !== null) {
      gh3000Record(record, timestamp, fixes, events, statuses)
      continue
    }
    const { attributes, status } = ioAttributes(record)
    const fix = recordToFix(record, timestamp, attributes)
    fixes.push(fix)
    statuses.push({ timestamp, attributes: status })
    const event = recordToEvent(record, fix)
    if (event) events.push(event)
  }
  return { kind: 'report', codecId, records, report: { uniqueId: imei, fixes, events }, statuses, ack: buildTeltonikaAck(announced) }
}

// ---------------------------------------------------------------------------------------------
// Command answers: Codec 12, 13 and 14 ("Teltonika Data Sending Protocols", sections Codec 12,
// Codec 13, Codec 14). All three share one frame:
//
//   codec id (1) | quantity 1 (1) | message type (1) | size (4) | body (size) | quantity 2 (1)
//
//   Codec 12  type 0x06 response: body = the answer text
//   Codec 13  type 0x06 (0x05 from some firmware): body = timestamp (4, Unix s) + text; one-way
//   Codec 14  type 0x06 ACK / 0x11 nACK: body = IMEI (8 bytes, its digits as hex nibbles,
//             padded with one 0) + the answer text (none in a nACK)
//
// The quantities are "ignored when parsing" (the wiki): one answer a packet is what devices send.
// ---------------------------------------------------------------------------------------------

/** codec id + quantity 1 + message type + size (4) before the body, quantity 2 after it */
const ANSWER_OVERHEAD_BYTES = 8
const CODEC_13_TIMESTAMP_BYTES = 4
const CODEC_13_LEGACY_TIMESTAMP_BYTES = 8
const EPOCH_2000_S = 946_684_800
const EPOCH_2100_S = 4_102_444_800
const CODEC_14_IMEI_BYTES = 8

function decodeCommandAnswer(data: Uint8Array, codecId: typeof CODEC_12 | typeof CODEC_13 | typeof CODEC_14): TeltonikaDecodeResult {
  const reader = new ByteReader(data)
  reader.u8() // codec id
  reader.u8() // quantity 1
  const messageType = reader.u8()
  const size = reader.u32()
  const bodyBytes = data.length - ANSWER_OVERHEAD_BYTES
  const unsupported = (what: string): TeltonikaDecodeResult => ({
    kind: 'invalid',
    reason: 'unsupported_message',
    codecId,
    message: `Teltonika codec 0x${codecId.toString(16)} message type 0x${messageType.toString(16)}: ${what}`,
    ack: null,
  })

  if (codecId === CODEC_12) {
    if (messageType !== MESSAGE_RESPONSE) return unsupported('not a response (0x06), which is all a device sends in Codec 12')
    if (size !== bodyBytes) throw new MalformedPacket(`response size ${size} ≠ the ${bodyBytes} byte(s) the packet holds`)
    return answer(codecId, messageType, reader.copyOf(size), null, null, true)
  }

  if (codecId === CODEC_13) {
    if (messageType !== MESSAGE_RESPONSE && messageType !== MESSAGE_COMMAND) return unsupported('not a device message (0x05 or 0x06)')
    // The wiki counts the 4-byte timestamp in the size; an FM device captured in Traccar's tests
    // counts the text only. Either is read; any other size is malformed.
    if (bodyBytes < CODEC_13_TIMESTAMP_BYTES || (size !== bodyBytes && size !== bodyBytes - CODEC_13_TIMESTAMP_BYTES)) {
      throw new MalformedPacket(`message size ${size} fits neither layout of the ${bodyBytes} byte(s) the packet holds`)
    }
    let timestamp = reader.u32()
    let timestampBytes = CODEC_13_TIMESTAMP_BYTES
    // Until 2021 the wiki gave the timestamp 8 bytes (milliseconds), and a published frame (a
    // "getinfo" of 2019-07-19 in Traccar's tests) is so. Its first 4 bytes read as seconds fall
    // in 1970: such a time is read as the older layout when the 8 bytes make a plausible time.
    if (timestamp < EPOCH_2000_S && bodyBytes >= CODEC_13_LEGACY_TIMESTAMP_BYTES) {
      const milliseconds = timestamp * 0x1_0000_0000 + reader.u32()
      if (milliseconds >= EPOCH_2000_S * 1000 && milliseconds < EPOCH_2100_S * 1000) {
        timestamp = Math.floor(milliseconds / 1000)
        timestampBytes = CODEC_13_LEGACY_TIMESTAMP_BYTES
      } else {
        reader.offset -= 4
      }
    }
    return answer(codecId, messageType, reader.copyOf(bodyBytes - timestampBytes), timestamp, null, true)
  }

  if (messageType !== MESSAGE_RESPONSE && messageType !== MESSAGE_NACK) return unsupported('not an ACK (0x06) or nACK (0x11)')
  if (size !== bodyBytes || size < CODEC_14_IMEI_BYTES) {
    throw new MalformedPacket(`answer size ${size} ≠ the ${bodyBytes} byte(s) the packet holds, or shorter than its IMEI`)
  }
  const imei = imeiFromNibbles(reader.copyOf(CODEC_14_IMEI_BYTES))
  return answer(codecId, messageType, reader.copyOf(size - CODEC_14_IMEI_BYTES), null, imei, messageType === MESSAGE_RESPONSE)
}

function answer(
  codecId: typeof CODEC_12 | typeof CODEC_13 | typeof CODEC_14,
  messageType: number,
  body: Uint8Array,
  timestamp: number | null,
  imei: string | null,
  executed: boolean,
): TeltonikaDecodeResult {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(body)
  // \t \n \r are part of answers (RS232 lines end in \r\n); any other control byte means binary
  const binary = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufffd]/.test(text)
  return {
    kind: 'command_answer',
    codecId,
    commandAnswer: { codecId, messageType, text, hex: binary ? hexOf(body) : null, timestamp, imei, executed },
    ack: null,
  }
}

/** The IMEI of Codec 14: 8 bytes whose hex digits are the IMEI's decimal digits, 0-padded to 16. */
function imeiFromNibbles(bytes: Uint8Array): string {
  const digits = hexOf(bytes)
  if (!/^[0-9]{16}$/.test(digits)) throw new MalformedPacket(`IMEI field ${digits} is not 16 decimal digits`)
  // exactly one pad digit: an IMEI may itself begin with 0 (reporting body identifiers 01…)
  return digits.startsWith('0') ? digits.slice(1) : digits
}

function hexOf(bytes: Uint8Array): string {
  let out = ''
  for (const byte of bytes) out += byte.toString(16).padStart(2, '0')
  return out
}

// ---------------------------------------------------------------------------------------------
// IO elements → attributes, status and events
//
// Source: Teltonika wiki, "FMB120 Teltonika Data Sending Parameters ID" (the FMB1xx family's AVL
// ID table, firmware 03.28/03.29; https://wiki.teltonika-gps.com/view/FMB120_Teltonika_Data_Sending_Parameters_ID).
// Units after conversion: V, A, m, km/h, °C, g. A named value is the sent value times the table's
// multiplier, so nothing is lost; an IO element without a name, or with a value the table does not
// give that name to (a flag that is not 0/1, a temperature error code, an 8-byte element sent in
// fewer bytes), is kept raw as `io<ID>`. Every record's raw elements stay in `records[].io`.
// ---------------------------------------------------------------------------------------------

interface IoName {
  name: string
  /** the value is divided by this (the table's multiplier is its inverse: 0.001 → 1000) */
  divisor?: number
  /** the table's largest value: a larger one is another device family's element, kept raw */
  max?: number
  /** a 0/1 element: true/false */
  flag?: true
  /** also part of the device's status (`statuses`) */
  status?: true
  /** an 8-byte element shown as 16 hex digits (identifiers) */
  hex8?: true
}

/** AVL IDs the table documents as signed; read as two's complement of their width. */
const SIGNED_IO_IDS: ReadonlySet<number> = new Set([17, 18, 19, 72, 73, 74, 75, 10800, 10801, 10802, 10803])

/**
 * Dallas temperature error codes (the table's description of IDs 72–75): 850 sensor not ready,
 * 2000 value read error, 3000 not connected, 4000 ID failed, 5000 same ID as sensor 1. These are
 * kept raw (`io72`…), never shown as a temperature.
 */
const DALLAS_ERROR_CODES: ReadonlySet<number> = new Set([850, 2000, 3000, 4000, 5000])
const DALLAS_IDS: ReadonlySet<number> = new Set([72, 73, 74, 75])

/** ICCID1 (11) and ICCID2 (14): the SIM's ICCID in two 8-byte numbers (see `iccidOf`). */
const ICCID1_ID = 11
const ICCID2_ID = 14

export const TELTONIKA_IO_NAMES: Readonly<Record<number, IoName>> = {
  // --- permanent I/O elements (in every record that has them enabled) ---
  239: { name: 'ignition', flag: true, status: true },
  240: { name: 'movement', flag: true, status: true },
  80: { name: 'data_mode', status: true, max: 5 }, // 0 home on stop, 1 home moving, 2 roaming stop, 3 roaming moving, 4/5 unknown
  21: { name: 'gsm_signal', status: true, max: 5 }, // 0..5
  200: { name: 'sleep_mode', status: true }, // 0 none, 1 GPS sleep, 2 deep, 3 online deep, 4 ultra deep
  69: { name: 'gnss_status', status: true }, // 0 off, 1 on with fix, 2 on without fix, 3 sleep
  181: { name: 'pdop', divisor: 10 },
  182: { name: 'hdop', divisor: 10 },
  66: { name: 'external_voltage', divisor: 1000, status: true }, // mV → V
  24: { name: 'gnss_speed' }, // km/h (fix.speed holds the GPS element's speed)
  205: { name: 'cell_id', status: true },
  206: { name: 'lac', status: true },
  67: { name: 'battery_voltage', divisor: 1000, status: true }, // mV → V
  68: { name: 'battery_current', divisor: 1000, status: true }, // mA → A
  241: { name: 'operator', status: true }, // MCC and MNC as one number, e.g. 24602
  199: { name: 'trip_odometer', status: true }, // m
  16: { name: 'odometer', status: true }, // total odometer, m
  1: { name: 'din1', flag: true, status: true },
  2: { name: 'din2', flag: true, status: true },
  3: { name: 'din3', flag: true, status: true },
  9: { name: 'ain1', divisor: 1000, status: true }, // mV → V
  6: { name: 'ain2', divisor: 1000, status: true }, // mV → V
  179: { name: 'dout1', flag: true, status: true },
  180: { name: 'dout2', flag: true, status: true },
  113: { name: 'battery_level', status: true, max: 100 }, // %
  237: { name: 'network_type', status: true }, // 0 3G, 1 GSM, 2 4G, 3 LTE Cat M1, 4 NB-IoT, 99 unknown
  17: { name: 'axis_x' }, // mG, signed
  18: { name: 'axis_y' },
  19: { name: 'axis_z' },
  303: { name: 'instant_movement', flag: true },
  72: { name: 'temperature1', divisor: 10, status: true }, // °C, signed
  73: { name: 'temperature2', divisor: 10, status: true },
  74: { name: 'temperature3', divisor: 10, status: true },
  75: { name: 'temperature4', divisor: 10, status: true },
  78: { name: 'ibutton', hex8: true, status: true }, // the attached iButton's ID
  // Teltonika EYE sensors 1–4 (BLE): temperature, °C × 100, signed
  10800: { name: 'eye_temperature1', divisor: 100, status: true },
  10801: { name: 'eye_temperature2', divisor: 100, status: true },
  10802: { name: 'eye_temperature3', divisor: 100, status: true },
  10803: { name: 'eye_temperature4', divisor: 100, status: true },
  // --- eventual I/O elements (in the record their event generates) ---
  236: { name: 'alarm' }, // 1: the alarm button was pressed (wiki, "Alarm event")
  243: { name: 'green_driving_duration' }, // ms
  246: { name: 'towing' }, // 1 towing started
  247: { name: 'crash_detection' }, // 1/6 crash detected, 2–5 crash with a limited or full trace
  248: { name: 'immobilizer', status: true }, // 0 iButton absent, 1 immobilized, 2 authorized
  249: { name: 'jamming' }, // GSM jamming: 1 started, 0 ended
  250: { name: 'trip' }, // 0 trip ended, 1 trip started (2+ business/private statuses)
  251: { name: 'idling' }, // 1 idling started, 0 ended
  252: { name: 'unplug' }, // 1 unplugged from external power, 0 plugged
  253: { name: 'green_driving_type' }, // 1 acceleration, 2 braking, 3 cornering
  254: { name: 'green_driving_value', divisor: 100 }, // g (rad/s for GPS-sourced cornering)
  255: { name: 'overspeeding' }, // km/h: the speed when over-speeding started, and when it ended
  318: { name: 'gnss_jamming' }, // 0 none, 1 warning, 2 critical
}

/**
 * Alarm IOs that become events, only on the record the IO itself triggered (eventIoId), so the
 * periodic records that repeat the value do not raise the alarm again. Over-speeding (255) is
 * raised on both records the device sends (start and end); its `io_value` is the speed.
 */
const ALARM_IOS: Readonly<Record<number, (value: number) => string | null>> = {
  236: (value) => (value === 1 ? 'sos' : null),
  246: (value) => (value === 1 ? 'towing' : null),
  247: (value) => (value > 0 ? 'crash' : null),
  249: (value) => (value === 1 ? 'jamming' : null),
  251: (value) => (value === 1 ? 'idling' : null),
  252: (value) => (value === 1 ? 'power_cut' : null),
  253: (value) => ({ 1: 'harsh_acceleration', 2: 'harsh_braking', 3: 'harsh_cornering' })[value] ?? null,
  255: () => 'overspeed',
  318: (value) => (value > 0 ? 'gnss_jamming' : null),
}

/** Teltonika GSM signal scale 0..5 → an ESTIMATED dBm (the device does not send dBm). */
export const TELTONIKA_GSM_LEVEL_DBM: readonly number[] = [-113, -107, -101, -95, -87, -75]

const MAX_SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER)

/** JSON-safe attribute value for a raw IO value without a mapping. */
function rawValue(value: TeltonikaIoValue): number | string {
  if (typeof value === 'number') return value
  if (typeof value === 'bigint') {
    return value <= MAX_SAFE_BIG && value >= -MAX_SAFE_BIG ? Number(value) : `0x${BigInt.asUintN(64, value).toString(16)}`
  }
  return hexOf(value)
}

/** The named value of an IO element, or undefined when the table gives this value no name. */
function namedValue(id: number, mapping: IoName, value: TeltonikaIoValue): unknown {
  // an identifier of 0 is "none attached" (no iButton on the reader)
  if (mapping.hex8) return typeof value === 'bigint' ? (value === 0n ? null : BigInt.asUintN(64, value).toString(16).padStart(16, '0')) : undefined
  if (typeof value !== 'number') return undefined
  if (mapping.flag) return value === 0 ? false : value === 1 ? true : undefined
  if (DALLAS_IDS.has(id) && DALLAS_ERROR_CODES.has(value)) return undefined
  if (mapping.max !== undefined && value > mapping.max) return undefined
  return mapping.divisor ? value / mapping.divisor : value
}

/**
 * ICCID from ICCID1 and ICCID2: the table sends the 19–20 digit ICCID as two numbers, ICCID2
 * holding its last 10 digits (leading zeros lost in the number). The wiki's Codec 8E example
 * (ICCID1 893700218, ICCID2 500686954) gives 8937002180500686954, the form of the wiki's own
 * `getimeiccid` answer ("CCID: 8937002180500123456").
 */
function iccidOf(first: TeltonikaIoValue | undefined, second: TeltonikaIoValue | undefined): string | undefined {
  if (typeof first !== 'bigint' || typeof second !== 'bigint' || first === 0n || second >= 10_000_000_000n) return undefined
  return `${first}${second.toString().padStart(10, '0')}`
}

function ioAttributes(record: TeltonikaRecord): { attributes: Record<string, unknown>; status: Record<string, unknown> } {
  const attributes: Record<string, unknown> = { priority: record.priority }
  const status: Record<string, unknown> = {}
  if (record.eventIoId !== 0) attributes.event_io = record.eventIoId
  if (record.generationType !== null) attributes.generation_type = record.generationType
  const iccid = iccidOf(record.io.get(ICCID1_ID), record.io.get(ICCID2_ID))
  if (iccid !== undefined) attributes.iccid = status.iccid = iccid
  for (const [id, value] of record.io) {
    if (iccid !== undefined && (id === ICCID1_ID || id === ICCID2_ID)) continue
    const mapping = TELTONIKA_IO_NAMES[id]
    const named = mapping ? namedValue(id, mapping, value) : undefined
    if (named === undefined) {
      attributes[`io${id}`] = rawValue(value)
      continue
    }
    attributes[mapping.name] = named
    if (mapping.status) status[mapping.name] = named
  }
  // Unplug (252) is sent when the device loses or regains its external power.
  const unplug = record.io.get(252)
  if (unplug === 0 || unplug === 1) status.external_power = unplug === 0
  return { attributes, status }
}

function recordToFix(record: TeltonikaRecord, timestamp: number, attributes: Record<string, unknown>): DecodedFix {
  return {
    timestamp,
    latitude: record.latitude,
    longitude: record.longitude,
    speed: record.speed,
    course: record.angle,
    altitude: record.altitude,
    satellites: record.satellites,
    // Without a fix the device repeats the last position with 0 satellites (the wiki's GPS
    // element note); zero satellites is the documented tell.
    valid: record.satellites > 0,
    attributes,
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

// ---------------------------------------------------------------------------------------------
// Codec 7 records → fixes, status and events. The GH3000's IO ids are its own (not the FMB
// table's): the names below are those of the GH3000 protocol document's IO list as other open
// decoders read them; any other id is kept raw as `io<ID>`.
// ---------------------------------------------------------------------------------------------

export const GH3000_IO_NAMES: Readonly<Record<number, IoName>> = {
  1: { name: 'battery_level', status: true }, // %
  2: { name: 'usb_connected', flag: true, status: true },
  5: { name: 'uptime' }, // s
  20: { name: 'hdop', divisor: 10 },
  21: { name: 'vdop', divisor: 10 },
  22: { name: 'pdop', divisor: 10 },
  67: { name: 'battery_voltage', divisor: 1000, status: true }, // mV → V
  221: { name: 'button' },
  222: { name: 'alarm' }, // 1: the SOS button was pressed
  240: { name: 'movement', flag: true, status: true },
  244: { name: 'roaming', flag: true, status: true },
}
const GH3000_SOS_IO = 222

function gh3000Record(record: TeltonikaRecord, timestamp: number, fixes: DecodedFix[], events: DecodedEvent[], statuses: TeltonikaStatus[]): void {
  const mask = record.gpsMask ?? 0
  const attributes: Record<string, unknown> = { priority: record.priority }
  const status: Record<string, unknown> = {}
  const extra = (key: number) => record.io.get(key) as number | undefined
  const lac = extra(GH3000_EXTRA_IO.lac)
  if (lac !== undefined) attributes.lac = status.lac = lac
  const cellId = extra(GH3000_EXTRA_IO.cellId)
  if (cellId !== undefined) attributes.cell_id = status.cell_id = cellId
  const signal = extra(GH3000_EXTRA_IO.signal)
  if (signal !== undefined) attributes.signal_quality = status.signal_quality = signal
  const operator = extra(GH3000_EXTRA_IO.operator)
  if (operator !== undefined) attributes.operator = status.operator = operator
  for (const [id, value] of record.io) {
    if (id > 0xff) continue // the GPS element's extras, above
    const mapping = GH3000_IO_NAMES[id]
    const named = mapping ? namedValue(id, mapping, value) : undefined
    if (named === undefined) {
      attributes[`io${id}`] = rawValue(value)
      continue
    }
    attributes[mapping.name] = named
    if (mapping.status) status[mapping.name] = named
  }
  statuses.push({ timestamp, attributes: status })

  // floats can say anything (NaN, 1e30): coordinates off the globe are no place
  const located =
    (mask & GH3000_GPS.coordinates) !== 0 && Math.abs(record.latitude) <= 90 && Math.abs(record.longitude) <= 180
  const satellites = mask & GH3000_GPS.satellites ? record.satellites : null
  const fix: DecodedFix | null = located
    ? {
        timestamp,
        latitude: record.latitude,
        longitude: record.longitude,
        speed: mask & GH3000_GPS.speed ? record.speed : null,
        course: mask & GH3000_GPS.angle ? record.angle : null,
        altitude: mask & GH3000_GPS.altitude ? record.altitude : null,
        satellites,
        // coordinates are sent with the fix they come from; zero satellites says there was none
        valid: satellites !== 0,
        attributes,
      }
    : null
  if (fix) fixes.push(fix)
  if (record.io.get(GH3000_SOS_IO) !== 1) return
  const { mcc, mnc } = splitOperator(operator)
  const context = { io_id: GH3000_SOS_IO, io_value: 1, priority: record.priority }
  events.push(fix ? eventAtFix('sos', fix, { mcc, mnc, dbm: null }, context) : eventWithoutFix('sos', timestamp, { mcc, mnc, dbm: null }, context))
}
