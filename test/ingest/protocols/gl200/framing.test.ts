/**
 * @Track framing: frames end at `$` (or NUL), CR LF between them is a separator, the binary
 * variant's frames are skipped as garbage, and a connection never keeps more than the cap.
 */
import { expect, test } from 'bun:test'
import { createFrameMachine } from '../../../../src/ingest/protocols/framing'
import { GL200_MAX_FRAME_BYTES, gl200FrameReader, splitGl200Frames } from '../../../../src/ingest/protocols/gl200/framing'
import { BINARY_FRAMES_HEX, frameStarting } from '../../../fixtures/gl200/frames'

const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0))
const fromHex = (hex: string) => Uint8Array.from(hex.match(/../g)!, (pair) => Number.parseInt(pair, 16))
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}

const FRI = frameStarting('+RESP:GTFRI,060228,862894020180553,,,10').text
const HBD = '+ACK:GTHBD,1A0401,135790246811220,,20100214093254,11F0$'
/** a frame with `+` inside (the phone number that called) */
const LBC = `${frameStarting('+RESP:GTLBC').text}$`

test('frames back to back, with CR LF between: each whole, `$` included, nothing counted as garbage', () => {
  const result = splitGl200Frames(ascii(`${FRI}\r\n${HBD}${LBC}\r\n`))
  expect(result.frames).toEqual([FRI, HBD, LBC])
  expect(result.skippedBytes).toBe(0)
  expect(result.consumedBytes).toBe(FRI.length + 2 + HBD.length + LBC.length + 2)
})

test('a frame ended by NUL instead of `$`', () => {
  const body = HBD.slice(0, -1)
  expect(splitGl200Frames(ascii(`${body}\0${FRI}`)).frames).toEqual([body, FRI])
})

test('a frame split anywhere across chunks comes out once, whole', () => {
  const bytes = ascii(`${FRI}${HBD}`)
  for (let cut = 1; cut < bytes.length; cut++) {
    const machine = createFrameMachine(gl200FrameReader())
    const items = [...machine.push(bytes.subarray(0, cut)), ...machine.push(bytes.subarray(cut))]
    expect(items).toEqual([
      { kind: 'frame', frame: FRI },
      { kind: 'frame', frame: HBD },
    ])
  }
})

test('frames of the binary variant are skipped as garbage; the text frames around them are kept', () => {
  const binary = BINARY_FRAMES_HEX.map(({ hex }) => fromHex(hex))
  const result = splitGl200Frames(concat(ascii(HBD), ...binary, ascii(FRI)))
  expect(result.frames).toEqual([HBD, FRI])
  const binaryBytes = binary.reduce((sum, frame) => sum + frame.length, 0)
  // (their CR, LF and NUL bytes pass as separators, the rest is counted)
  expect(result.skippedBytes).toBeGreaterThan(binaryBytes / 2)
  expect(result.skippedBytes).toBeLessThanOrEqual(binaryBytes)
  expect(result.consumedBytes).toBe(HBD.length + binaryBytes + FRI.length)
})

test('a frame that never ends is dropped at the next head; one past the cap is garbage and the buffer stays under it', () => {
  const broken = FRI.slice(0, 80)
  expect(splitGl200Frames(ascii(`${broken}${HBD}`)).frames).toEqual([HBD])
  const machine = createFrameMachine(gl200FrameReader())
  const endless = ascii(`+RESP:GTFRI,${'1,'.repeat(GL200_MAX_FRAME_BYTES)}`)
  for (let at = 0; at < endless.length; at += 500) {
    expect(machine.push(endless.subarray(at, at + 500)).filter((item) => item.kind === 'frame')).toEqual([])
    expect(machine.bufferedBytes).toBeLessThan(GL200_MAX_FRAME_BYTES)
  }
  expect(machine.push(ascii(HBD))).toContainEqual({ kind: 'frame', frame: HBD })
})

test('control bytes inside a frame make it garbage', () => {
  expect(splitGl200Frames(ascii(`+RESP:GTFRI,06\x0102${HBD}`)).frames).toEqual([HBD])
})
