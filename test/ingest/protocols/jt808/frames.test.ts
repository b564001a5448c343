/**
 * Every JT/T 808 frame of Traccar's public tests (test/fixtures/jt808/frames.ts), escaped as a
 * device sends it, through our framing and decoder: the share of the frames that carry a position
 * stored with the right place and time (issue 23's measure, at least 85 %), no throw on any frame,
 * no fix from a frame that carries none, and every frame that asks for an answer answered.
 */
import { describe, expect, test } from 'bun:test'
import { decodeJt808Frame, type Jt808Message } from '../../../../src/ingest/protocols/jt808/decoder'
import { JT808_FRAMES, type Jt808Capture } from '../../../fixtures/jt808/frames'
import { createFrameMachine } from '../../../../src/ingest/protocols/framing'
import { jt808FrameReader } from '../../../../src/ingest/protocols/jt808/framing'
import { framesOf } from './support'

const NOW = Date.UTC(2026, 10, 27) / 1000
const iso = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString().replace('.000', '')

function decodeCapture(capture: Jt808Capture): Jt808Message[] {
  return framesOf(capture).map((frame) => decodeJt808Frame(frame, { now: NOW }))
}

/** Whether every location the capture carries was decoded as a fix at its place (within 1e-6°) and time. */
function storedRight(capture: Jt808Capture, messages: Jt808Message[]): boolean {
  const fixes = messages.flatMap((message) => (message.kind === 'report' ? message.report.fixes : []))
  if (capture.fixes.length === 0 || fixes.length !== capture.fixes.length) return false
  return capture.fixes.every(
    (expected, i) =>
      Math.abs(fixes[i].latitude - expected.latitude) < 1e-9 && Math.abs(fixes[i].longitude - expected.longitude) < 1e-9 && iso(fixes[i].timestamp) === expected.time,
  )
}

describe('JT808: the public test frames', () => {
  const withPosition = JT808_FRAMES.filter((capture) => capture.fixes.length > 0 || capture.proprietary)

  test('at least 85 % of the frames that carry a position are stored with the right place and time', () => {
    const right = withPosition.filter((capture) => storedRight(capture, decodeCapture(capture)))
    const missed = withPosition.filter((capture) => !right.includes(capture)).map((capture) => capture.name)
    console.log(`JT808: ${right.length} of ${withPosition.length} frames with a position stored right (${((100 * right.length) / withPosition.length).toFixed(1)} %); missed: ${missed.join(', ')}`)
    expect(withPosition.length).toBe(80)
    expect(right.length / withPosition.length).toBeGreaterThanOrEqual(0.85)
  })

  test('no frame throws; a frame without a position gives no fix', () => {
    for (const capture of JT808_FRAMES) {
      const messages = decodeCapture(capture)
      if (capture.fixes.length === 0) for (const message of messages) if (message.kind === 'report') expect(message.report.fixes).toEqual([])
    }
  })

  test('every frame that passes its check code is answered as the standard says, its serial echoed', () => {
    let answered = 0
    for (const capture of JT808_FRAMES) {
      for (const frame of framesOf(capture)) {
        const message = decodeJt808Frame(frame, { now: NOW })
        if (frame.messageId === 0x0001) {
          expect(message.kind === 'report' && message.reply).toBeNull()
          continue
        }
        const reply = message.kind === 'login' ? message.accept : message.reply!
        expect(reply).not.toBeNull()
        const [replyFrame] = createFrameMachine(jt808FrameReader()).push(reply)
        if (replyFrame.kind !== 'frame') throw new Error(`reply to ${capture.name} does not frame`)
        const expectedId = frame.messageId === 0x0100 ? 0x8100 : 0x8001
        expect(replyFrame.frame).toMatchObject({ messageId: expectedId, terminalId: frame.terminalId, serial: frame.serial, version2019: frame.version2019 })
        // the body names the message answered by its serial (and, 0x8001, its id)
        expect((replyFrame.frame.body[0] << 8) | replyFrame.frame.body[1]).toBe(frame.serial)
        if (expectedId === 0x8001) expect((replyFrame.frame.body[2] << 8) | replyFrame.frame.body[3]).toBe(frame.messageId)
        answered++
      }
    }
    expect(answered).toBeGreaterThan(90)
  })
})
