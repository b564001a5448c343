/** JT808 test helpers: a captured frame as a device sends it, and the frames our framing reads from it. */
import { createFrameMachine } from '../../../../src/ingest/protocols/framing'
import { jt808FrameReader, type Jt808Frame } from '../../../../src/ingest/protocols/jt808/framing'
import type { Jt808Capture } from '../../../fixtures/jt808/frames'
import { hex } from '../helpers'

/** The frame as it goes on the wire: 7E and 7D inside escaped. */
export function onTheWire(frame: Uint8Array): Uint8Array {
  if (frame[0] !== 0x7e) return frame
  const out: number[] = [0x7e]
  for (const byte of frame.subarray(1, -1)) {
    if (byte === 0x7e) out.push(0x7d, 0x02)
    else if (byte === 0x7d) out.push(0x7d, 0x01)
    else out.push(byte)
  }
  out.push(0x7e)
  return Uint8Array.from(out)
}

export function framesOf(capture: Jt808Capture): Jt808Frame[] {
  const items = createFrameMachine(jt808FrameReader()).push(onTheWire(hex(capture.hex)))
  return items.flatMap((item) => (item.kind === 'frame' ? [item.frame] : []))
}

