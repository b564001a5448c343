import { describe, expect, test } from 'bun:test'
import { crc16Arc, crc16X25 } from '../../../src/ingest/protocols/crc'
import { hex } from './helpers'

const CHECK_INPUT = new TextEncoder().encode('123456789')

describe('crc16X25 (CRC-ITU, GT06)', () => {
  test('standard check value', () => {
    expect(crc16X25(CHECK_INPUT)).toBe(0x906e)
  })

  test('empty input gives init ^ xorout = 0', () => {
    expect(crc16X25(new Uint8Array(0))).toBe(0x0000)
  })

  test('range arguments select a sub-array', () => {
    const padded = new Uint8Array([0xaa, ...CHECK_INPUT, 0xbb])
    expect(crc16X25(padded, 1, 10)).toBe(0x906e)
  })

  test('GT06 document login frame: CRC over length..serial is 0x8CDD', () => {
    const frame = hex('78 78 0D 01 01 23 45 67 89 01 23 45 00 01 8C DD 0D 0A')
    expect(crc16X25(frame, 2, frame.length - 4)).toBe(0x8cdd)
  })
})

describe('crc16Arc (CRC-16/IBM, Teltonika)', () => {
  test('standard check value', () => {
    expect(crc16Arc(CHECK_INPUT)).toBe(0xbb3d)
  })

  test('empty input gives 0', () => {
    expect(crc16Arc(new Uint8Array(0))).toBe(0)
  })

  test('Teltonika wiki Codec 8 example: CRC over codec id..number of data 2 is 0xC7CF', () => {
    const packet = hex(
      '000000000000003608010000016B40D8EA30010000000000000000000000000000000105021503010101425E0F01F10000601A014E0000000000000000010000C7CF',
    )
    expect(crc16Arc(packet, 8, packet.length - 4)).toBe(0xc7cf)
  })
})
