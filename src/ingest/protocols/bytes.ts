/** Byte helpers the stream splitters share. */

/** `chunk` after what was left over; no copy when nothing was (a chunk of whole frames is read in place). */
export function appendBytes(pending: Uint8Array, chunk: Uint8Array): Uint8Array {
  if (pending.length === 0) return chunk
  const joined = new Uint8Array(pending.length + chunk.length)
  joined.set(pending, 0)
  joined.set(chunk, pending.length)
  return joined
}
