/**
 * Watch decoder (3G/4G child and elder watches: Wonlex, SeTracker and their many makers): one frame
 * from `watchFrameReader` in, one message out. Pure: no I/O, no clock.
 *
 * `[<maker>*<id>*<length hex>*<type>[,<fields>]]`, or `[<maker>*<id>*<serial hex>*<length hex>*…]`
 * (ZJ and others number their frames); the maker is any two letters or digits (SG, 3G, CS, ZJ…),
 * the id the watch's own (10 digits, or 15 on some). Messages (the watch protocol documents, "3G
 * watch communication protocol"; frames watches sent, test/fixtures/watch):
 *
 *   LK[,<steps>,<turnovers>,<battery %>]      link (the heartbeat): answered [..*LK]
 *   UD, UD2, UD3, UD_LTE, UD_WCDMA, WT         a position (UD2: one kept while offline, sent late)
 *   AL, AL_LTE, ALCUSTOMER1…                   an alarm with its position: answered [..*AL]
 *   TKQ, TKQ2                                  voice-message queries: answered with their own type
 *   INIT                                       answered INIT,1
 *   heart, PULSE, bphrt, BLOOD, oxygen, TEMP, btemp2   health values, kept as the device's status
 *
 * The position body: ddmmyy, hhmmss (UTC), A|V, latitude, N|S, longitude, E|W (decimal degrees; a
 * sign or an empty hemisphere both occur), speed km/h, course, altitude m, satellites, GSM signal
 * %, battery %, steps, turnovers, the terminal status (hex, below), then the cells (count, timing
 * advance, mcc, mnc, then lac, cell id, signal for each) and the Wi-Fi access points (count, then
 * name, MAC, signal for each). Watches send 0,0 while they have never had a fix: no fix then.
 *
 * Terminal status: bits 0–15 are states, bits 16–23 alarms (16 SOS, 17 low battery, 18 out of a
 * fence, 19 into a fence, 20 the watch taken off, 21–22 fall). Alarms are raised from AL messages
 * only: a UD repeats the status while the alarm holds.
 */
import type { DecodedEvent, DecodedFix, DecodedReport } from '../../types'
import { deviceAlarm, eventAtFix, eventWithoutFix, GENERIC_ALARM_CODE } from '../events'

export interface WatchHeader {
  maker: string
  id: string
  /** the frame's serial number, when the maker sends one (echoed in the reply) */
  index: string | null
  type: string
  /** the content after the length field: the type and its fields as sent */
  content: string
}

export type WatchMessage =
  | {
      kind: 'report'
      header: WatchHeader
      report: DecodedReport
      /** the reply's content (`LK`, `AL`, `TKQ`, `INIT,1`), framed by `watchReply`; null when none is due */
      replyContent: string | null
    }
  | { kind: 'invalid'; reason: string }

/** The status bits that raise an alarm, with our code. */
export const WATCH_ALARM_BITS: readonly { bit: number; alarmCode: string }[] = [
  { bit: 16, alarmCode: 'sos' },
  { bit: 17, alarmCode: 'low_battery' },
  { bit: 18, alarmCode: 'geofence_exit' },
  { bit: 19, alarmCode: 'geofence_enter' },
  { bit: 20, alarmCode: 'tamper' },
  { bit: 21, alarmCode: 'fall' },
  { bit: 22, alarmCode: 'fall' },
]

const FRAME = /^\[([0-9A-Za-z]{2})\*([0-9A-Za-z]{1,20})\*(?:([0-9A-Fa-f]{4})\*)?([0-9A-Fa-f]{4})\*([\s\S]*)\]$/
const DECIMAL = /^-?\d+(\.\d+)?$/

class Malformed extends Error {}
function fail(why: string): never {
  throw new Malformed(why)
}

function decimal(text: string | undefined): number {
  const trimmed = (text ?? '').trim()
  if (!DECIMAL.test(trimmed)) fail(`not a number: ${text}`)
  return Number(trimmed)
}

function optionalInt(text: string | undefined): number | null {
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : null
}

/** Decimal degrees with a hemisphere that may be empty, or repeat a sign the value already has. */
function degrees(text: string, hemisphere: string, max: number): number {
  const value = decimal(text)
  if (Math.abs(value) > max) fail(`coordinate out of range: ${text}`)
  return hemisphere === 'S' || hemisphere === 'W' ? -Math.abs(value) : value
}

function timestampOf(date: string, time: string): number {
  const d = /^(\d\d)(\d\d)(\d\d)$/.exec(date)
  const t = /^(\d\d)(\d\d)(\d\d)$/.exec(time)
  if (!d || !t) fail('no date and time')
  const [day, month, year] = d.slice(1).map(Number)
  const [hour, minute, second] = t.slice(1).map(Number)
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) fail('not a date')
  const ms = Date.UTC(2000 + year, month - 1, day, hour, minute, second)
  if (new Date(ms).getUTCDate() !== day) fail('not a date')
  return ms / 1000
}

interface Network {
  mcc: number | null
  mnc: number | null
  cells: { mcc: number; mnc: number; lac: number; cell_id: number; signal?: number }[]
  wifi: { mac: string; signal: number }[]
}

/** The cells and Wi-Fi access points after the status; what does not read is left out. */
function networkOf(values: string[]): Network {
  const network: Network = { mcc: null, mnc: null, cells: [], wifi: [] }
  let at = 0
  const cellCount = optionalInt(values[at++])
  if (cellCount === null) return network
  if (cellCount > 0) {
    at++ // timing advance
    network.mcc = optionalInt(values[at++])
    network.mnc = optionalInt(values[at++])
    for (let i = 0; i < cellCount && at + 3 <= values.length; i++) {
      const lacText = values[at++] ?? ''
      const cellText = values[at++] ?? ''
      const signal = values[at++]
      // LAC and cell id in decimal, or hex when a letter shows it
      const base = (text: string) => (/[A-Fa-f]/.test(text) ? 16 : 10)
      if (!/^[0-9A-Fa-f]{1,10}$/.test(lacText) || !/^[0-9A-Fa-f]{1,10}$/.test(cellText) || network.mcc === null || network.mnc === null) continue
      const cell: Network['cells'][number] = { mcc: network.mcc, mnc: network.mnc, lac: Number.parseInt(lacText, base(lacText)), cell_id: Number.parseInt(cellText, base(cellText)) }
      if (signal !== undefined && /^-?\d+$/.test(signal)) cell.signal = Number(signal)
      network.cells.push(cell)
    }
  }
  const wifiCount = optionalInt(values[at++])
  for (let i = 0; wifiCount !== null && i < wifiCount && at + 3 <= values.length; i++) {
    at++ // the access point's name
    const mac = values[at++] ?? ''
    const signal = values[at++] ?? ''
    if (/^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$/.test(mac) && /^-?\d+$/.test(signal)) network.wifi.push({ mac: mac.toLowerCase(), signal: Number(signal) })
  }
  return network
}

function positionReport(header: WatchHeader, body: string): DecodedReport {
  const values = body.split(',')
  if (values.length < 16) fail('a position body of too few fields')
  const timestamp = timestampOf(values[0], values[1])
  const validity = values[2]
  if (validity !== 'A' && validity !== 'V') fail(`validity ${validity}`)
  const latitude = degrees(values[3], values[4], 90)
  const longitude = degrees(values[5], values[6], 180)
  const speed = decimal(values[7])
  const course = decimal(values[8])
  const altitude = decimal(values[9])
  const satellites = optionalInt(values[10])
  const gsmSignal = optionalInt(values[11])
  const battery = optionalInt(values[12])
  const steps = optionalInt(values[13])
  const turnovers = optionalInt(values[14])
  if (!/^[0-9A-Fa-f]{1,8}$/.test(values[15])) fail(`status ${values[15]}`)
  const statusWord = Number.parseInt(values[15], 16)
  const network = networkOf(values.slice(16))

  const status: Record<string, unknown> = {}
  if (gsmSignal !== null) status.gsm_signal = gsmSignal
  if (battery !== null) status.battery_level = battery
  if (steps !== null) status.steps = steps
  if (turnovers !== null) status.turnovers = turnovers
  if (network.cells.length > 0) status.cells = network.cells
  if (network.wifi.length > 0) status.wifi = network.wifi

  // 0,0 is what a watch that has never had a fix sends: no place
  const fixes: DecodedFix[] =
    latitude === 0 && longitude === 0
      ? []
      : [
          {
            timestamp,
            latitude,
            longitude,
            speed: speed >= 0 ? speed : null,
            course: course >= 0 ? course % 360 : null,
            altitude,
            satellites,
            valid: validity === 'A',
            attributes: { ...(header.type === 'UD2' ? { buffered: true } : {}), ...(battery !== null ? { battery_level: battery } : {}), ...(steps !== null ? { steps } : {}) },
          },
        ]
  const events: DecodedEvent[] = []
  if (header.type.startsWith('AL')) {
    const cell = { mcc: network.mcc, mnc: network.mnc, dbm: null }
    const raised = WATCH_ALARM_BITS.filter(({ bit }) => ((statusWord >>> bit) & 1) === 1).map(({ alarmCode }) => alarmCode)
    const codes = raised.length > 0 ? [...new Set(raised)] : [GENERIC_ALARM_CODE]
    for (const code of codes) {
      const context = code === GENERIC_ALARM_CODE ? deviceAlarm(`status ${values[15]}`).context : {}
      events.push(fixes.length > 0 ? eventAtFix(code, fixes[0], cell, context) : eventWithoutFix(code, timestamp, cell, context))
    }
  }
  const report: DecodedReport = { uniqueId: header.id, fixes, events }
  if (Object.keys(status).length > 0) report.status = status
  return report
}

/** LK's values: steps, turnovers and battery (some firmware sends steps and battery only). */
function linkStatus(values: string[]): Record<string, unknown> {
  const numbers = values.map(optionalInt)
  if (numbers.length >= 3 && numbers.slice(0, 3).every((n) => n !== null)) return { steps: numbers[0], turnovers: numbers[1], battery_level: numbers[2] }
  if (numbers.length === 2 && numbers.every((n) => n !== null)) return { steps: numbers[0], battery_level: numbers[1] }
  return {}
}

/** Health values: heart rate, blood pressure, blood oxygen, body temperature. */
function healthStatus(type: string, values: string[]): Record<string, unknown> {
  const number = (text: string | undefined) => (text !== undefined && DECIMAL.test(text) ? Number(text) : null)
  const status: Record<string, unknown> = {}
  const put = (key: string, value: number | null) => {
    if (value !== null) status[key] = value
  }
  switch (type.toLowerCase()) {
    case 'heart':
    case 'pulse':
      put('heart_rate', number(values[0]))
      break
    case 'bphrt':
    case 'blood':
      put('blood_pressure_high', number(values[0]))
      put('blood_pressure_low', number(values[1]))
      put('heart_rate', number(values[2]))
      break
    case 'oxygen':
      put('blood_oxygen', number(values[1]))
      break
    case 'temp':
      put('body_temperature', number(values[0]))
      break
    case 'btemp2':
      if (values[0] !== '0') put('body_temperature', number(values[1]))
      break
  }
  // 0 is "no reading" on these watches
  if (status.heart_rate === 0) delete status.heart_rate
  return status
}

const HEALTH = new Set(['heart', 'pulse', 'bphrt', 'blood', 'oxygen', 'temp', 'btemp2'])
/** command names a watch echoes back when it has carried one out (the answer to a command) */
export const WATCH_COMMAND_ANSWERS = new Set(['CR', 'UPLOAD', 'SOS', 'SOS1', 'SOS2', 'SOS3', 'MONITOR', 'LZ', 'FIND', 'RESET', 'POWEROFF', 'CENTER', 'FACTORY', 'SOSSMS', 'LOWBAT', 'REMOVE'])

export function decodeWatchFrame(frame: string): WatchMessage {
  try {
    const match = FRAME.exec(frame)
    if (!match) fail('not a watch frame')
    const [, maker, id, index = null, , content] = match
    const comma = content.indexOf(',')
    const type = comma < 0 ? content : content.slice(0, comma)
    const body = comma < 0 ? '' : content.slice(comma + 1)
    if (!/^[A-Za-z0-9_]{1,20}$/.test(type)) fail('no message type')
    const header: WatchHeader = { maker, id, index, type, content }
    const empty: DecodedReport = { uniqueId: id, fixes: [], events: [] }
    const withStatus = (status: Record<string, unknown>): DecodedReport => (Object.keys(status).length > 0 ? { ...empty, status } : empty)
    if (type === 'LK') return { kind: 'report', header, report: withStatus(linkStatus(body === '' ? [] : body.split(','))), replyContent: 'LK' }
    if (type.startsWith('UD') || type.startsWith('AL') || type === 'WT') {
      return { kind: 'report', header, report: positionReport(header, body), replyContent: type.startsWith('AL') ? 'AL' : null }
    }
    if (type === 'TKQ' || type === 'TKQ2') return { kind: 'report', header, report: empty, replyContent: type }
    if (type === 'INIT') return { kind: 'report', header, report: empty, replyContent: 'INIT,1' }
    if (HEALTH.has(type.toLowerCase())) return { kind: 'report', header, report: withStatus(healthStatus(type, body.split(','))), replyContent: null }
    // any other message (a command's echo, a voice message, a photo): the watch is there, nothing kept
    return { kind: 'report', header, report: empty, replyContent: null }
  } catch (error) {
    if (error instanceof Malformed) return { kind: 'invalid', reason: error.message }
    throw error
  }
}

/** `[<maker>*<id>[*<index>]*<length hex>*<content>]`: the framing the watch's own frames use. */
export function watchFrame(maker: string, id: string, index: string | null, content: string): string {
  const length = content.length.toString(16).toUpperCase().padStart(4, '0')
  return `[${maker}*${id}*${index === null ? '' : `${index}*`}${length}*${content}]`
}
