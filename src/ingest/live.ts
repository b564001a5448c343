/**
 * The newest fix of each device, in memory: what a `moving` device's `location` reads, and what
 * live streams subscribe to. The pipeline writes it after a batch commits; readers never wait.
 */
import { LRUCache } from 'lru-cache'

export interface LiveFix {
  deviceKey: number
  timestamp: number
  latitude: number
  longitude: number
  /** km/h, or null when the device sent none */
  speed: number | null
  course: number | null
}

export type LiveListener = (fix: LiveFix) => void

export class LivePositions {
  private readonly newest: LRUCache<number, LiveFix>
  private readonly listeners = new Set<LiveListener>()

  constructor(max = 100_000) {
    this.newest = new LRUCache({ max })
  }

  get(deviceKey: number): LiveFix | undefined {
    return this.newest.get(deviceKey)
  }

  /** Records a committed fix; an older fix than the one held (a re-sent buffer) does not replace it. */
  publish(fix: LiveFix): void {
    const held = this.newest.get(fix.deviceKey)
    if (!held || held.timestamp <= fix.timestamp) this.newest.set(fix.deviceKey, fix)
    for (const listener of this.listeners) listener(fix)
  }

  subscribe(listener: LiveListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}
