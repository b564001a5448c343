/**
 * Bytes as every protocol unit reads them: one bounds-checked, big-endian reader over a frame's
 * content, and the helper the framing machine joins chunks with. A read past the end throws
 * OutOfBytes, which a decoder turns into "malformed": a short frame is refused, never read as
 * zeros or as the next frame's bytes.
 */

/** A read went past the end of what the frame holds. */
export class OutOfBytes extends Error {}

/** Big-endian reads over `bytes`, each checked against its end; `offset` moves past what was read. */
export class ByteReader {
  offset = 0
  private readonly view: DataView

  /** `what` names the bytes in the error message ("content", "data") */
  constructor(
    readonly bytes: Uint8Array,
    private readonly what = 'data',
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  get remaining(): number {
    return this.bytes.length - this.offset
  }

  /** The offset of `count` bytes, moving past them; throws when fewer remain. */
  private take(count: number): number {
    if (count < 0 || this.offset + count > this.bytes.length) {
      throw new OutOfBytes(`${this.what} ends at byte ${this.bytes.length}, needed ${this.offset + count}`)
    }
    const at = this.offset
    this.offset += count
    return at
  }

  u8(): number {
    return this.view.getUint8(this.take(1))
  }
  i8(): number {
    return this.view.getInt8(this.take(1))
  }
  u16(): number {
    return this.view.getUint16(this.take(2))
  }
  i16(): number {
    return this.view.getInt16(this.take(2))
  }
  u24(): number {
    const at = this.take(3)
    return (this.view.getUint8(at) << 16) | this.view.getUint16(at + 1)
  }
  u32(): number {
    return this.view.getUint32(this.take(4))
  }
  i32(): number {
    return this.view.getInt32(this.take(4))
  }
  u64(): bigint {
    return this.view.getBigUint64(this.take(8))
  }
  i64(): bigint {
    return this.view.getBigInt64(this.take(8))
  }
  /** An unsigned integer of 1..8 bytes; null when it does not fit a JavaScript number exactly. */
  uint(width: number): number | null {
    const at = this.take(width)
    let value = 0
    for (let i = 0; i < width; i++) value = value * 256 + this.bytes[at + i]
    return Number.isSafeInteger(value) ? value : null
  }
  /** The next `count` bytes, a view of the frame (valid while the frame is) */
  bytesOf(count: number): Uint8Array {
    const at = this.take(count)
    return this.bytes.subarray(at, at + count)
  }
  /** The next `count` bytes, copied (to keep beyond the frame) */
  copyOf(count: number): Uint8Array {
    const at = this.take(count)
    return this.bytes.slice(at, at + count)
  }
  skip(count: number): void {
    this.take(count)
  }
}

/** `chunk` after what was left over; no copy when nothing was (a chunk of whole frames is read in place). */
export function appendBytes(pending: Uint8Array, chunk: Uint8Array): Uint8Array {
  if (pending.length === 0) return chunk
  const joined = new Uint8Array(pending.length + chunk.length)
  joined.set(pending, 0)
  joined.set(chunk, pending.length)
  return joined
}
