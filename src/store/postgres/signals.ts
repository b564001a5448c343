/**
 * What one node tells the others through PostgreSQL itself (LISTEN/NOTIFY: no broker to run):
 *
 * - `tracker_live`: what an ingest batch stored (its devices, its locatable fixes, its events, its
 *   status changes), sent by the batch's own transaction, so it is delivered exactly when the
 *   batch commits and never for one that rolled back. Other nodes hand it to their live streams
 *   and forget what they kept of those devices (newest fix, rule state): another node wrote them.
 * - `tracker_commands`: a command was queued for a device; the node holding the device's session
 *   sends it.
 *
 * A notification carries at most 8,000 bytes: a batch's message is cut into several, each
 * complete in itself. Each names its node, which ignores its own.
 */
import type { Sql, TransactionSql } from 'postgres'
import type { EncodedEvent } from '../events'

export const LIVE_CHANNEL = 'tracker_live'
export const COMMANDS_CHANNEL = 'tracker_commands'

/** PostgreSQL's limit is 8,000 bytes a payload; room for the envelope */
const MAX_PAYLOAD_BYTES = 7_600

/** A fix as stored (positions' encoding): device, ts (s), lat, lon (1e-7°), speed (0.1 km/h) or null, course or null. */
export type SignalledFix = [number, number, number, number, number | null, number | null]
/** A status change: device, attributes (JSON object text), committed at (Unix ms). */
export type SignalledStatus = [number, string, number]

/** What another node's ingest batch stored. */
export interface StoredBatch {
  node: string
  devices: number[]
  fixes: SignalledFix[]
  alarms: [number, EncodedEvent][]
  statuses: SignalledStatus[]
}

/** The batch as payloads of at most MAX_PAYLOAD_BYTES, each a StoredBatch of its own (devices in the first). */
export function batchPayloads(batch: StoredBatch): string[] {
  const payloads: string[] = []
  let current: StoredBatch = { node: batch.node, devices: batch.devices, fixes: [], alarms: [], statuses: [] }
  let size = JSON.stringify(current).length
  const push = <K extends 'fixes' | 'alarms' | 'statuses'>(kind: K, item: StoredBatch[K][number]) => {
    const bytes = Buffer.byteLength(JSON.stringify(item)) + 1
    if (size + bytes > MAX_PAYLOAD_BYTES && size > 0) {
      payloads.push(JSON.stringify(current))
      current = { node: batch.node, devices: [], fixes: [], alarms: [], statuses: [] }
      size = JSON.stringify(current).length
    }
    ;(current[kind] as StoredBatch[K][number][]).push(item)
    size += bytes
  }
  if (size > MAX_PAYLOAD_BYTES) {
    // a batch of very many devices: their keys go in messages of their own
    current.devices = []
    size = JSON.stringify(current).length
    for (let i = 0; i < batch.devices.length; i += 500) payloads.push(JSON.stringify({ node: batch.node, devices: batch.devices.slice(i, i + 500), fixes: [], alarms: [], statuses: [] }))
  }
  for (const fix of batch.fixes) push('fixes', fix)
  for (const alarm of batch.alarms) push('alarms', alarm)
  for (const status of batch.statuses) push('statuses', status)
  payloads.push(JSON.stringify(current))
  return payloads
}

/** Sends the batch's payloads inside its transaction: delivered at its commit, never for a rollback. */
export function announceBatchInTransaction(tx: TransactionSql, batch: StoredBatch): Promise<unknown>[] {
  return batchPayloads(batch).map((payload) => tx`SELECT pg_notify(${LIVE_CHANNEL}, ${payload})`)
}

export interface NodeSignals {
  /** another node's ingest batch has committed */
  onBatch(listener: (batch: StoredBatch) => void): void
  /** tells every node (this one included) that a command was queued for the device */
  commandQueued(deviceKey: number): Promise<void>
  /** a command was queued for the device, by any node */
  onCommandQueued(listener: (deviceKey: number) => void): void
  /** starts listening (resolves once both channels are listened to) */
  start(): Promise<void>
  close(): Promise<void>
}

export function createNodeSignals(sql: Sql, node: string): NodeSignals {
  const batchListeners = new Set<(batch: StoredBatch) => void>()
  const commandListeners = new Set<(deviceKey: number) => void>()
  const subscriptions: { unlisten(): Promise<void> }[] = []
  const each = <T>(listeners: Set<(value: T) => void>, value: T) => {
    for (const listener of listeners) {
      try {
        listener(value)
      } catch {
        // a listener's failure is its own
      }
    }
  }
  return {
    onBatch: (listener) => void batchListeners.add(listener),
    onCommandQueued: (listener) => void commandListeners.add(listener),
    async commandQueued(deviceKey) {
      await sql`SELECT pg_notify(${COMMANDS_CHANNEL}, ${String(deviceKey)})`
    },
    async start() {
      subscriptions.push(
        await sql.listen(LIVE_CHANNEL, (payload) => {
          let batch: StoredBatch
          try {
            batch = JSON.parse(payload) as StoredBatch
          } catch {
            return
          }
          if (batch.node !== node) each(batchListeners, batch)
        }),
        await sql.listen(COMMANDS_CHANNEL, (payload) => {
          const deviceKey = Number(payload)
          if (Number.isInteger(deviceKey)) each(commandListeners, deviceKey)
        }),
      )
    },
    async close() {
      for (const subscription of subscriptions.splice(0)) await subscription.unlisten().catch(() => undefined)
    },
  }
}
