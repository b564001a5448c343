/**
 * The H02 protocol as a unit: what a listener needs to serve it. A plain object, to be adapted
 * to the shared descriptor type when there is one.
 *
 * Per connection a listener keeps the bytes not yet consumed and the device's last status word:
 *
 *   const { frames, consumedBytes } = h02.split(pending)   // pending = leftover + chunk
 *   pending = pending.subarray(consumedBytes)                // never longer than the frame cap
 *   for (const frame of frames) {
 *     const message = h02.decode(frame, { now, previousStatusWord })
 *     if (message.kind === 'invalid') continue               // log; nothing to store or answer
 *     await pipeline.ingest(message.report)                  // keep-alive when it has no fixes
 *     previousStatusWord = message.status?.value ?? previousStatusWord
 *     if (message.reply) socket.write(message.reply)         // only after the commit
 *   }
 *
 * There is no login: every frame names its device, and a connection whose frames name an unknown
 * device is refused like any other. H02_PORT 0 turns the listener off.
 */
import { decodeH02Frame } from './decoder'
import { H02_DEFAULT_MAX_FRAME_BYTES, splitH02Frames } from './framing'

export const h02Descriptor = {
  name: 'h02',
  transport: 'tcp',
  defaultPort: 5013,
  portVariable: 'H02_PORT',
  /** bytes received → complete frames, bytes consumed, garbage skipped */
  split: splitH02Frames,
  /** one frame → fixes, events, status, network, the reply to send after the commit */
  decode: decodeH02Frame,
  /** the most a connection ever buffers */
  maxFrameBytes: H02_DEFAULT_MAX_FRAME_BYTES,
} as const
