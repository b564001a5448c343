/**
 * Leases over PostgreSQL advisory locks (src/store/leases.ts says what they are for): a job holds
 * `pg_try_advisory_lock(space, hashtext(name))` on a connection reserved for its length. A node
 * killed mid-job drops the connection, and PostgreSQL the lock with it: the next node to try runs
 * the job.
 */
import type { Sql } from 'postgres'
import type { Leases } from '../leases'

/** the advisory lock space of background jobs (the first key of the two-key form) */
const LEASE_SPACE = 0x7472_6b03

export function createPostgresLeases(sql: Sql): Leases {
  return {
    async run(name, work) {
      const connection = await sql.reserve()
      try {
        const [row] = await connection<{ taken: boolean }[]>`SELECT pg_try_advisory_lock(${LEASE_SPACE}, hashtext(${name})) AS taken`
        if (!row?.taken) return null
        try {
          return await work()
        } finally {
          await connection`SELECT pg_advisory_unlock(${LEASE_SPACE}, hashtext(${name}))`.catch(() => undefined)
        }
      } finally {
        connection.release()
      }
    },
  }
}
