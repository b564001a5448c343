/** Test helpers: hex strings (spaces allowed) to bytes and back; a unit's decoder as a connection runs it. */
import type { FrameContext, Step, TcpProtocol } from '../../../src/ingest/protocols/protocol'

export function hex(text: string): Uint8Array {
  const clean = text.replace(/[^0-9a-fA-F]/g, '')
  if (clean.length % 2 !== 0) throw new Error(`odd hex length: ${text}`)
  const out = new Uint8Array(clean.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(i * 2, i * 2 + 2), 16)
  return out
}

export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0').toUpperCase()).join(' ')
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

export { seededRandom } from '../../support/random'

/** A unit's decoder as one connection runs it: one state (`connectionState()`) for every frame given. */
export function connectionDecoder<F, S>(protocol: TcpProtocol<F, S>, state: S = protocol.connectionState()): (frame: F, context: FrameContext) => Step {
  return (frame, context) => protocol.decode(frame, context, state)
}
