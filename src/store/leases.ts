/**
 * Background work that must run on one node at a time (retention, partition upkeep, the sweep of
 * devices left connected, command expiry): each job runs inside `leases.run(name, work)`, which
 * answers null at once, doing nothing, when another node (or this one) holds that job now.
 *
 * One process on SQLite: the lease is this process's own (a job never overlaps itself). PostgreSQL:
 * src/store/postgres/leases.ts takes an advisory lock on a connection of its own for the job's
 * length; a node that dies loses its connection and with it the lock, so the next node's timer
 * takes the job over.
 */
export interface Leases {
  run<T>(name: string, work: () => Promise<T>): Promise<T | null>
}

export function createLocalLeases(): Leases {
  const held = new Set<string>()
  return {
    async run(name, work) {
      if (held.has(name)) return null
      held.add(name)
      try {
        return await work()
      } finally {
        held.delete(name)
      }
    },
  }
}
