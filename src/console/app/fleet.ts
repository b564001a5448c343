/**
 * The fleet as the console holds it: every reachable device (GET /devices, page by page), moved by
 * the live stream (GET /devices/stream, read with fetch; no polling). Ten thousand devices change
 * many times a second, so devices are plain objects changed in place, and one signal (`version`)
 * moves at most once a frame; the map and the list read what changed when it does. Device alarms
 * (`event: alarm`) are handed to whoever listens (the notices, the Events page), not kept.
 */
import { batch, signal } from '@preact/signals'
import { motionState } from '../../track/motion'
import { ApiError, failure, getJson, request } from './api'
import type { AlarmEvent, Device, DeviceState, FixEvent, StatusEvent } from './types'

export interface FleetDevice {
  id: string
  body: Device
  latitude: number | null
  longitude: number | null
  /** the newest fix seen (the stream starts with each device's newest), null before */
  fix: { timestamp: number; speed: number | null; course: number | null } | null
  state: DeviceState
  /** lower-case text the search looks in */
  haystack: string
}

/** States an administrator sets; a fix never changes them. */
const ADMINISTRATIVE = new Set<DeviceState>(['suspended', 'unlink', 'stolen'])
const PAGE = 1000

function haystack(device: Device): string {
  const plate = typeof device.properties?.plate === 'string' ? device.properties.plate : ''
  return [device.alias, device.imei, device.serial, plate].map((field) => field.toLowerCase().replace(/\s+/g, ' ')).join('\n')
}

/** metres between two points: plenty for a heading or a speed between two fixes */
function metres(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const rad = Math.PI / 180
  const x = (lon2 - lon1) * rad * Math.cos(((lat1 + lat2) / 2) * rad)
  return Math.hypot(x, (lat2 - lat1) * rad) * 6_371_008
}

function bearing(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const rad = Math.PI / 180
  const y = Math.sin((lon2 - lon1) * rad) * Math.cos(lat2 * rad)
  const x = Math.cos(lat1 * rad) * Math.sin(lat2 * rad) - Math.sin(lat1 * rad) * Math.cos(lat2 * rad) * Math.cos((lon2 - lon1) * rad)
  return (Math.atan2(y, x) / rad + 360) % 360
}

export type LiveStatus = 'connecting' | 'live' | 'reconnecting'

export class Fleet {
  readonly devices = new Map<string, FleetDevice>()
  /** in the server's order (alias, then id) */
  order: FleetDevice[] = []
  /** moves when anything changed, at most once a frame */
  readonly version = signal(0)
  readonly loaded = signal(0)
  readonly loading = signal(true)
  readonly loadError = signal<string | null>(null)
  readonly live = signal<LiveStatus>('connecting')
  /** ids moved since the map last asked; the set of devices changed (added, removed) */
  private moved = new Set<string>()
  private reshaped = false
  private frame = 0
  /** fixes of devices the list has not brought yet (the stream may run ahead of the pages) */
  private early = new Map<string, FixEvent>()
  private abort = new AbortController()
  private stopped = false
  private listLoaded = false
  private alarmListeners = new Set<(alarm: AlarmEvent) => void>()
  private statusListeners = new Set<(status: StatusEvent) => void>()

  /** calls back with each alarm the stream brings; returns the unsubscribe */
  onAlarm(listener: (alarm: AlarmEvent) => void): () => void {
    this.alarmListeners.add(listener)
    return () => this.alarmListeners.delete(listener)
  }

  /** `event: status`: what one packet said of a device (only its attributes; the panel merges them) */
  onStatus(listener: (status: StatusEvent) => void): () => void {
    this.statusListeners.add(listener)
    return () => this.statusListeners.delete(listener)
  }

  /** starts loading and streaming; `stop` ends both */
  start(): void {
    void this.reload()
    void this.stream()
  }

  stop(): void {
    this.stopped = true
    this.abort.abort()
    cancelAnimationFrame(this.frame)
  }

  /** what moved, and whether devices came or went, since the last call */
  takeChanges(): { moved: Set<string>; reshaped: boolean } {
    const changes = { moved: this.moved, reshaped: this.reshaped }
    this.moved = new Set()
    this.reshaped = false
    return changes
  }

  private changed() {
    if (this.frame !== 0 || this.stopped) return
    this.frame = requestAnimationFrame(() => {
      this.frame = 0
      this.version.value++
    })
  }

  /** Reads every page of GET /devices (1,000 a page; an empty page is 404) and reconciles. */
  async reload(): Promise<void> {
    const seen = new Set<string>()
    const order: FleetDevice[] = []
    this.loading.value = true
    try {
      for (let offset = 0; ; offset += PAGE) {
        const response = await request(`devices?limit=${PAGE}&offset=${offset}`, { signal: this.abort.signal })
        if (response.status === 404) break
        if (!response.ok) throw await failure(response)
        const page = (await response.json()) as Device[]
        for (const body of page) {
          if (seen.has(body.id)) continue
          seen.add(body.id)
          order.push(this.upsert(body))
        }
        this.order = order.concat(this.order.filter((d) => !seen.has(d.id)))
        this.loaded.value = order.length
        this.reshaped = true
        this.changed()
        if (page.length < PAGE) break
      }
      for (const id of [...this.devices.keys()]) if (!seen.has(id)) this.devices.delete(id)
      this.order = order
      this.listLoaded = true
      this.early.clear()
      batch(() => {
        this.loadError.value = null
        this.loading.value = false
      })
      this.reshaped = true
      this.changed()
    } catch (error) {
      if (this.stopped) return
      batch(() => {
        this.loadError.value = error instanceof ApiError ? error.message : String(error)
        this.loading.value = false
      })
    }
  }

  private upsert(body: Device): FleetDevice {
    let device = this.devices.get(body.id)
    if (!device) {
      device = { id: body.id, body, latitude: null, longitude: null, fix: null, state: body.state, haystack: haystack(body) }
      this.devices.set(body.id, device)
    }
    device.body = body
    device.haystack = haystack(body)
    // the record's state is the server's word; a fix seen since may be newer than it
    if (!device.fix || !this.fixIsNewerThanRecord(device, device.fix.timestamp)) device.state = body.state
    if (body.location && (!device.fix || device.latitude === null)) {
      device.latitude = body.location[0]
      device.longitude = body.location[1]
    }
    const early = this.early.get(body.id)
    if (early) {
      this.early.delete(body.id)
      this.apply(device, early)
    }
    return device
  }

  /** A fix reported after the record last changed (an `off` device reporting again). */
  private fixIsNewerThanRecord(device: FleetDevice, timestamp: number): boolean {
    return timestamp * 1000 > Date.parse(device.body.updated_at)
  }

  private apply(device: FleetDevice, fix: FixEvent) {
    if (device.fix && device.fix.timestamp >= fix.timestamp && device.latitude !== null) return
    const previous = device.fix && device.latitude !== null ? { latitude: device.latitude, longitude: device.longitude!, timestamp: device.fix.timestamp } : null
    const distance = previous ? metres(previous.latitude, previous.longitude, fix.latitude, fix.longitude) : 0
    let course = fix.course ?? null
    // a device that sends no course: the direction it went, once it went far enough to tell
    if (course === null && previous) course = distance > 10 ? bearing(previous.latitude, previous.longitude, fix.latitude, fix.longitude) : device.fix!.course
    let speed = fix.speed
    if (speed === null && previous && fix.timestamp > previous.timestamp) speed = (distance / (fix.timestamp - previous.timestamp)) * 3.6
    device.fix = { timestamp: fix.timestamp, speed: fix.speed, course }
    device.latitude = fix.latitude
    device.longitude = fix.longitude
    // the server decides the state from the same fix; mirror it rather than ask again
    const motion = ['moving', 'stopped'].includes(device.state) || this.fixIsNewerThanRecord(device, fix.timestamp)
    if (!ADMINISTRATIVE.has(device.state) && motion && speed !== null) device.state = motionState(speed) // the server's own rule (track/motion.ts)
    this.moved.add(device.id)
    this.changed()
  }

  private onFix(fix: FixEvent) {
    const device = this.devices.get(fix.id)
    if (device) return this.apply(device, fix)
    this.early.set(fix.id, fix)
    // the stream follows access: a device that came into reach after the list was read
    if (this.listLoaded) void this.fetchOne(fix.id)
  }

  private async fetchOne(id: string) {
    try {
      const body = await getJson<Device>(`devices/${encodeURIComponent(id)}`, this.abort.signal)
      if (this.devices.has(id)) return
      this.order.push(this.upsert(body))
      this.reshaped = true
      this.changed()
    } catch {
      // gone again, or out of reach: nothing to show
    }
  }

  /** Reads the live stream until the server ends it, then again after a pause (longer each time, up to 30 s). */
  private async stream(): Promise<void> {
    let delayMs = 1000
    let first = true
    while (!this.stopped) {
      const started = Date.now()
      let retryAfterMs = 0
      try {
        const response = await request('devices/stream', { signal: this.abort.signal })
        if (response.status === 401) return this.stop()
        if (response.ok && response.body) {
          this.live.value = 'live'
          // after a break, the list may have changed (devices added, states set by an admin)
          if (!first) void this.reload()
          first = false
          await this.read(response.body)
        } else if (response.status === 429 || response.status === 503) {
          retryAfterMs = (Number(response.headers.get('retry-after')) || 15) * 1000
        }
      } catch {
        // the connection broke: try again below
      }
      if (this.stopped) return
      this.live.value = 'reconnecting'
      if (Date.now() - started > 10_000) delayMs = 1000
      await new Promise((resolve) => setTimeout(resolve, Math.max(delayMs, retryAfterMs)))
      delayMs = Math.min(delayMs * 2, 30_000)
    }
  }

  private async read(body: ReadableStream<Uint8Array>) {
    const reader = body.pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>).getReader()
    let buffer = ''
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      buffer = (buffer + value).replace(/\r\n?/g, '\n')
      let end: number
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        this.event(buffer.slice(0, end))
        buffer = buffer.slice(end + 2)
      }
    }
  }

  private event(block: string) {
    let name = 'message'
    let data = ''
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) name = line.slice(6).trim()
      else if (line.startsWith('data:')) data += line.slice(5).trim()
    }
    if (!data || (name !== 'fix' && name !== 'alarm' && name !== 'status')) return
    try {
      if (name === 'fix') this.onFix(JSON.parse(data) as FixEvent)
      else if (name === 'status') {
        const status = JSON.parse(data) as StatusEvent
        for (const listener of this.statusListeners) listener(status)
      } else {
        const alarm = JSON.parse(data) as AlarmEvent
        for (const listener of this.alarmListeners) listener(alarm)
      }
    } catch {
      // one bad event (or listener) does not end the stream
    }
  }
}
