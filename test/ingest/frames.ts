/**
 * What devices send, built byte by byte: GT06 frames and Teltonika handshakes and AVL packets.
 * Used by the listener tests and the ingest benchmark's load clients.
 */
import { crc16Arc } from '../../src/ingest/protocols/crc'
import { buildGt06Frame } from '../../src/ingest/protocols/gt06/replies'

// --- GT06 ---

export function gt06Login(imei: string, serial = 1): Uint8Array {
  const digits = imei.padStart(16, '0')
  const content = new Uint8Array(8)
  for (let i = 0; i < 8; i++) content[i] = (Number(digits[2 * i]) << 4) | Number(digits[2 * i + 1])
  return buildGt06Frame(0x01, content, serial)
}

export interface Gt06FixInput {
  timestamp: number
  latitude: number
  longitude: number
  speed?: number
  course?: number
  satellites?: number
  positioned?: boolean
}

function gpsBlock(fix: Gt06FixInput): number[] {
  const d = new Date(fix.timestamp * 1000)
  const lat = Math.round(Math.abs(fix.latitude) * 1_800_000)
  const lon = Math.round(Math.abs(fix.longitude) * 1_800_000)
  const status =
    ((fix.positioned ?? true) ? 0x1000 : 0) | (fix.longitude < 0 ? 0x0800 : 0) | (fix.latitude >= 0 ? 0x0400 : 0) | ((fix.course ?? 0) & 0x3ff)
  return [
    d.getUTCFullYear() % 100, d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(),
    0xc0 | ((fix.satellites ?? 9) & 0x0f),
    (lat >>> 24) & 0xff, (lat >>> 16) & 0xff, (lat >>> 8) & 0xff, lat & 0xff,
    (lon >>> 24) & 0xff, (lon >>> 16) & 0xff, (lon >>> 8) & 0xff, lon & 0xff,
    (fix.speed ?? 0) & 0xff,
    (status >> 8) & 0xff, status & 0xff,
  ]
}

/** MCC 272, MNC 1, LAC 0x1234, cell 0x00ABCD */
const CELL = [0x01, 0x10, 0x01, 0x12, 0x34, 0x00, 0xab, 0xcd]

export function gt06Location(fix: Gt06FixInput, serial = 2): Uint8Array {
  return buildGt06Frame(0x12, Uint8Array.from([...gpsBlock(fix), ...CELL]), serial)
}

export function gt06Status(serial = 3): Uint8Array {
  // terminal info: GPS tracking on, ignition on; voltage level 4; GSM level 3; no alarm
  return buildGt06Frame(0x13, Uint8Array.of(0x42, 0x04, 0x03, 0x00, 0x02), serial)
}

export function gt06Alarm(fix: Gt06FixInput, alarmByte: number, serial = 4): Uint8Array {
  return buildGt06Frame(0x16, Uint8Array.from([...gpsBlock(fix), 0x09, ...CELL, 0x42, 0x04, 0x03, alarmByte, 0x02]), serial)
}

// --- Teltonika ---

export function teltonikaImei(imei: string): Uint8Array {
  const bytes = new Uint8Array(2 + imei.length)
  bytes[1] = imei.length
  for (let i = 0; i < imei.length; i++) bytes[2 + i] = imei.charCodeAt(i)
  return bytes
}

export interface AvlRecordInput {
  timestampMs: number
  latitude: number
  longitude: number
  altitude?: number
  angle?: number
  satellites?: number
  speed?: number
  priority?: number
  eventIoId?: number
  /** 1-byte IO elements: id → value */
  io1?: Record<number, number>
  /** 2-byte IO elements */
  io2?: Record<number, number>
  /** 4-byte IO elements */
  io4?: Record<number, number>
}

class Writer {
  bytes: number[] = []
  u8(v: number) {
    this.bytes.push(v & 0xff)
  }
  u16(v: number) {
    this.bytes.push((v >>> 8) & 0xff, v & 0xff)
  }
  u32(v: number) {
    this.bytes.push((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff)
  }
  u64(v: number) {
    this.u32(Math.floor(v / 2 ** 32))
    this.u32(v >>> 0)
  }
}

/** One AVL packet, Codec 8 (ids and counts 1 byte) or 8 Extended (2 bytes, plus an empty NX group). */
export function teltonikaPacket(records: AvlRecordInput[], codec: 0x08 | 0x8e = 0x08): Uint8Array {
  const extended = codec === 0x8e
  const w = new Writer()
  const id = (v: number) => (extended ? w.u16(v) : w.u8(v))
  w.u8(codec)
  w.u8(records.length)
  for (const r of records) {
    w.u64(r.timestampMs)
    w.u8(r.priority ?? 0)
    w.u32(Math.round(r.longitude * 1e7) >>> 0)
    w.u32(Math.round(r.latitude * 1e7) >>> 0)
    w.u16((r.altitude ?? 0) & 0xffff)
    w.u16(r.angle ?? 0)
    w.u8(r.satellites ?? 10)
    w.u16(r.speed ?? 0)
    id(r.eventIoId ?? 0)
    const groups = [r.io1 ?? {}, r.io2 ?? {}, r.io4 ?? {}, {}] as Record<number, number>[]
    id(groups.reduce((n, g) => n + Object.keys(g).length, 0))
    groups.forEach((group, g) => {
      const entries = Object.entries(group)
      id(entries.length)
      for (const [key, value] of entries) {
        id(Number(key))
        if (g === 0) w.u8(value)
        else if (g === 1) w.u16(value)
        else w.u32(value)
      }
    })
    if (extended) w.u16(0)
  }
  w.u8(records.length)
  return teltonikaFrame(Uint8Array.from(w.bytes))
}

/** A data field (codec id … number of data 2) in its preamble, length and CRC: an AVL packet as sent. */
export function teltonikaFrame(data: Uint8Array): Uint8Array {
  const packet = new Uint8Array(8 + data.length + 4)
  const view = new DataView(packet.buffer)
  view.setUint32(4, data.length)
  packet.set(data, 8)
  view.setUint32(8 + data.length, crc16Arc(data))
  return packet
}

/** A TCP client that collects what it receives. */
export interface TestClient {
  send(bytes: Uint8Array): void
  /** resolves with exactly `count` received bytes (consumed), rejects after `timeoutMs` */
  read(count: number, timeoutMs?: number): Promise<Uint8Array>
  /** bytes received and not yet read */
  readonly pending: number
  readonly closed: Promise<void>
  isClosed(): boolean
  end(): void
}

export async function connectClient(port: number): Promise<TestClient> {
  let buffer = new Uint8Array(0)
  let wake: (() => void) | null = null
  let isClosed = false
  let resolveClosed!: () => void
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve))
  const socket = await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      binaryType: 'uint8array',
      data(_socket, chunk) {
        const next = new Uint8Array(buffer.length + chunk.length)
        next.set(buffer)
        next.set(chunk as Uint8Array, buffer.length)
        buffer = next
        wake?.()
      },
      close() {
        isClosed = true
        resolveClosed()
        wake?.()
      },
      end() {
        isClosed = true
        resolveClosed()
        wake?.()
      },
      error() {},
    },
  })
  return {
    send(bytes) {
      socket.write(bytes)
    },
    async read(count, timeoutMs = 2000) {
      const deadline = Date.now() + timeoutMs
      while (buffer.length < count) {
        if (isClosed) throw new Error(`connection closed after ${buffer.length} of ${count} bytes`)
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`timed out with ${buffer.length} of ${count} bytes`)
        await new Promise<void>((resolve) => {
          wake = resolve
          setTimeout(resolve, Math.min(left, 50))
        })
        wake = null
      }
      const out = buffer.slice(0, count)
      buffer = buffer.slice(count)
      return out
    },
    get pending() {
      return buffer.length
    },
    closed,
    isClosed: () => isClosed,
    end() {
      socket.end()
    },
  }
}

export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0').toUpperCase()).join(' ')
}

/**
 * A Teltonika device that streams packets of `recordsPerPacket` fixes, one second apart, until
 * `stopped()` or until the server stops answering; every fix the server acknowledged is pushed
 * to `acknowledged` (Unix seconds). What it did not acknowledge is not owed.
 */
export async function streamTeltonika(
  port: number,
  imei: string,
  options: { recordsPerPacket: number; baseMs: number; acknowledged: number[]; stopped: () => boolean },
): Promise<void> {
  const { recordsPerPacket, baseMs, acknowledged, stopped } = options
  const client = await connectClient(port)
  client.send(teltonikaImei(imei))
  if ((await client.read(1))[0] !== 1) throw new Error('handshake refused')
  for (let packet = 0; !stopped(); packet++) {
    const records = Array.from({ length: recordsPerPacket }, (_, i) => ({
      timestampMs: baseMs + (packet * recordsPerPacket + i) * 1000,
      latitude: 54.68 + i * 1e-4,
      longitude: 25.27,
      speed: 40,
      satellites: 9,
    }))
    client.send(teltonikaPacket(records))
    try {
      const ack = await client.read(4, 5000)
      if (new DataView(ack.buffer).getUint32(0) !== recordsPerPacket) throw new Error('short ack')
    } catch {
      return
    }
    acknowledged.push(...records.map((r) => r.timestampMs / 1000))
  }
}
