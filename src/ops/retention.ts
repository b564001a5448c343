/**
 * RETENTION_DAYS: positions and events older than the cutoff are deleted in the background, in
 * small transactions (5,000 rows by default) with a pause between them, so that ingestion (same
 * process, same connection) never waits behind one long DELETE. Rows are found per device
 * through the primary key (positions) and the (device, ts) index (events): no table scan.
 *
 * The WAL is kept bounded: a PASSIVE checkpoint after every batch (it never waits), and a
 * TRUNCATE checkpoint at the end of a pass that deleted something, tried without waiting so a
 * reader in another process (a backup) cannot stall the server. Deleted pages are reused by new
 * rows; the file itself does not shrink (README: "Retention").
 *
 * While another process holds the write lock (an import), a batch waits for it asynchronously
 * (store/busy.ts); still locked after 5 s, the pass ends and the next one starts over. The
 * batches are store/retention.ts's units of work; the WAL is store/maintenance.ts's.
 *
 * The cutoff comes from the injected clock; the pass schedule is real time.
 */
import type { Leases } from '../store/leases'
import type { Clock } from '../clock'
import type { Logger } from '../log'
import type { MaintenanceStore } from '../store/maintenance'
import type { RetainedTable, RetentionStore, RetentionTask } from '../store/retention'

export type { RetainedTable }

export interface RetentionOptions {
  /** the batches' deletes */
  store: RetentionStore
  /** the WAL's checkpoints */
  maintenance: Pick<MaintenanceStore, 'checkpoint' | 'truncateLog'>
  clock: Clock
  log: Logger
  /** keep this many days of positions and events */
  days: number
  /** rows deleted per transaction (default 5,000) */
  batchRows?: number
  /** devices visited per transaction at most, so a large fleet with little to delete stays short too (default 1,000) */
  batchDevices?: number
  /** real-time pause between two transactions, for ingestion to get its turn (default 10 ms) */
  pauseMs?: number
  /** first pass this long after the start (default 30 s); then every `intervalMs` (default 5 min); 0 = never (tests) */
  firstDelayMs?: number
  intervalMs?: number
  onDeleted?: (table: RetainedTable, rows: number) => void
  /** many nodes on one database: a scheduled pass runs on one node at a time (default: always runs) */
  leases?: Leases
}

export interface RetentionPass {
  /** Unix seconds: rows with a timestamp before it were deleted */
  cutoff: number
  positions: number
  events: number
  /** transactions */
  batches: number
}

export interface Retention {
  /** one pass now (a pass already running is joined, not doubled) */
  runOnce(): Promise<RetentionPass>
  /** stop scheduling; a running pass ends after its current batch */
  stop(): Promise<void>
}

export function startRetention(options: RetentionOptions): Retention {
  const { store, maintenance, clock, log, days } = options
  if (!Number.isInteger(days) || days < 1) throw new Error(`retention needs a whole number of days ≥ 1, got ${days}`)
  const batchRows = options.batchRows ?? 5000
  const batchDevices = options.batchDevices ?? 1000
  const pauseMs = options.pauseMs ?? 10
  const intervalMs = options.intervalMs ?? 5 * 60_000
  const firstDelayMs = options.firstDelayMs ?? 30_000

  let stopped = false
  let running: Promise<RetentionPass> | null = null
  let timer: ReturnType<typeof setTimeout> | null = null

  async function pass(): Promise<RetentionPass> {
    const started = performance.now()
    const cutoff = Math.floor(clock.now() / 1000) - days * 86_400
    const keys = await store.deviceKeys()
    const tasks: RetentionTask[] = [
      ...keys.map((key) => ({ table: 'positions' as const, key })),
      ...keys.map((key) => ({ table: 'events' as const, key })),
    ]
    const result: RetentionPass = { cutoff, positions: 0, events: 0, batches: 0 }
    let next = 0
    while (next < tasks.length && !stopped) {
      const done = await store.deleteBatch(tasks, next, cutoff, { rows: batchRows, devices: batchDevices })
      const deleted = done.deleted
      next = done.next
      result.batches++
      result.positions += deleted.positions
      result.events += deleted.events
      if (deleted.positions) options.onDeleted?.('positions', deleted.positions)
      if (deleted.events) options.onDeleted?.('events', deleted.events)
      if (deleted.positions || deleted.events) await maintenance.checkpoint()
      if (next < tasks.length) await Bun.sleep(pauseMs)
    }
    if (result.positions || result.events) {
      await truncateWal()
      log.info('retention pass', {
        cutoff: new Date(cutoff * 1000).toISOString(),
        positions: result.positions,
        events: result.events,
        batches: result.batches,
        ms: Math.round(performance.now() - started),
      })
    }
    return result
  }

  /** TRUNCATE without waiting: with a reader in the way it simply does not happen this time. */
  async function truncateWal(): Promise<void> {
    try {
      await maintenance.truncateLog()
    } catch (error) {
      log.debug('retention: WAL not truncated', { error: (error as Error).message })
    }
  }

  function runOnce(): Promise<RetentionPass> {
    running ??= pass().finally(() => {
      running = null
    })
    return running
  }

  function schedule(delayMs: number): void {
    if (stopped) return
    timer = setTimeout(async () => {
      try {
        await (options.leases ? options.leases.run('retention', runOnce) : runOnce())
      } catch (error) {
        log.error('retention pass failed', { error: (error as Error).message })
      }
      schedule(intervalMs)
    }, delayMs)
    timer.unref?.()
  }
  if (intervalMs > 0) schedule(firstDelayMs)

  return {
    runOnce,
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await running?.catch(() => {})
    },
  }
}
