/** Test helpers: hex strings (spaces allowed) to bytes and back. */
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
