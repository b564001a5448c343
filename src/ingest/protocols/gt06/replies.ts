/**
 * What the server sends a GT06 device: the acknowledgement of a login, status or alarm packet
 * (its own protocol number and serial, nothing else) and the answer to a time request. Sent only
 * after what the packet carried is committed.
 */
import { crc16X25 } from '../crc'
import { LONG_START, MIN_LENGTH_FIELD, SHORT_START, STOP_1, STOP_2 } from './framing'

/** 0x8A, the time calibration request (GT06N doc) and its answer */
const TIME_REQUEST_PROTOCOL = 0x8a

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

/** The standard response in a 0x7979 frame (2-byte length), for the packets that come in one and want their answer so. */
export function buildGt06LongAck(protocol: number, serial: number): Uint8Array {
  const frame = new Uint8Array(11)
  frame.set([LONG_START, LONG_START, 0x00, MIN_LENGTH_FIELD, protocol, (serial >> 8) & 0xff, serial & 0xff])
  const crc = crc16X25(frame, 2, 7)
  frame.set([crc >> 8, crc & 0xff, STOP_1, STOP_2], 7)
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
  return buildGt06Frame(TIME_REQUEST_PROTOCOL, content, serial)
}
