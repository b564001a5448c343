/**
 * The access counters (access_version's rows) as this node knows them, without a read per request:
 * every change of a counter is announced by its trigger on the channel `tracker_versions`
 * (migration 0000), which this node LISTENs to. A counter is read again from the database when
 * an announcement names it, after this node's own write (`changed()`, called by the stores once
 * their unit of work has committed: the announcement may come a moment later, and the next request
 * must already see the change), and whenever the LISTEN connection is (re)established, since
 * announcements may have been missed while it was down. Until the first LISTEN succeeds, every
 * `current()` reads.
 */
import type { Sql } from 'postgres'

export const VERSIONS_CHANNEL = 'tracker_versions'

export interface AccessVersions {
  /** counter `id` (1 membership, 2 identity, 3 share links, 4 credentials, 5 geofences, 6 notifications, 7 rules) */
  current(id: number): Promise<number>
  /** this node committed a change that may move a counter: the next `current()` reads */
  changed(): void
  /** called with the ids announced (from any node, this one included) */
  onChange(listener: (ids: number[]) => void): () => void
  close(): Promise<void>
}

export function createAccessVersions(sql: Sql): AccessVersions {
  const known = new Map<number, number>()
  let stale = true
  let listening: Promise<{ unlisten(): Promise<void> }> | null = null
  let listenerUp = false
  const listeners = new Set<(ids: number[]) => void>()

  function startListening() {
    listening ??= sql.listen(
      VERSIONS_CHANNEL,
      (payload) => {
        stale = true
        generation++
        const ids = payload.split(',').map(Number).filter(Number.isInteger)
        for (const listener of listeners) listener(ids)
      },
      () => {
        // (re)connected: whatever was announced meanwhile is unknown
        listenerUp = true
        stale = true
        generation++
        for (const listener of listeners) listener([1, 2, 3, 4, 5, 6, 7])
      },
    )
    listening.catch(() => {
      listening = null
      listenerUp = false
    })
  }

  let reading: Promise<void> | null = null
  /** moved by every change this node hears of (its own commit, an announcement) */
  let generation = 0
  /** `generation` when the read under way began: one begun before a change may not see it */
  let readingGeneration = -1
  async function read(): Promise<void> {
    stale = false
    try {
      const rows = await sql<{ id: number; version: number }[]>`SELECT id, version FROM access_version`
      for (const row of rows) known.set(row.id, row.version)
    } catch (error) {
      stale = true
      throw error
    }
  }

  return {
    async current(id) {
      startListening()
      for (;;) {
        if (reading) {
          // one under way since the latest change answers for this request too; one begun before
          // it may be older than the change: wait for it, then read again
          if (readingGeneration === generation) {
            await reading
            break
          }
          await reading.catch(() => undefined)
          continue
        }
        if (!stale && listenerUp && known.has(id)) break
        readingGeneration = generation
        reading = read().finally(() => (reading = null))
        await reading
        break
      }
      return known.get(id) ?? 0
    },
    changed() {
      stale = true
      generation++
    },
    onChange(listener) {
      startListening()
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    async close() {
      const current = listening
      listening = null
      if (current) await current.then((l) => l.unlisten()).catch(() => {})
    },
  }
}
