/**
 * Many nodes on one PostgreSQL: what another node's ingest committed reaches this node's live
 * streams (the API's, the share page's, the console's) as if it had been ingested here, and this
 * node's pipeline forgets what it kept of those devices (their newest fix, their rule state), which
 * the other node has moved on. The batch comes from src/store/postgres/signals.ts, sent by the
 * other node's own transaction: only what committed is relayed.
 */
import type { StoredBatch } from '../store/postgres/signals'
import { decodeCoordinate, decodeSpeed } from '../store/positions'
import type { Logger } from '../log'
import { liveAlarmOf, type LivePositions } from './live'

export interface RelayTargets {
  live: LivePositions
  /** the pipeline's forget (src/ingest/pipeline.ts) */
  forget(deviceKeys: readonly number[]): void
  log: Logger
}

export function relayStoredBatch(batch: StoredBatch, { live, forget, log }: RelayTargets): void {
  forget(batch.devices)
  try {
    for (const [deviceKey, ts, lat, lon, speed, course] of batch.fixes) {
      live.publish({ deviceKey, timestamp: ts, latitude: decodeCoordinate(lat), longitude: decodeCoordinate(lon), speed: decodeSpeed(speed), course })
    }
    for (const [deviceKey, event] of batch.alarms) live.publishAlarm(liveAlarmOf(deviceKey, event))
    for (const [deviceKey, attributes, updatedAt] of batch.statuses) {
      live.publishStatus({ deviceKey, attributes: JSON.parse(attributes) as Record<string, unknown>, updatedAt })
    }
  } catch (error) {
    log.error('relaying another node’s batch failed', { node: batch.node, error: (error as Error)?.message })
  }
}
