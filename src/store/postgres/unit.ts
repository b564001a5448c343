/**
 * A unit of work on PostgreSQL: one transaction a store function opens, runs and commits. Once it
 * has committed, this node's access counters are read again on their next use (the triggers'
 * announcement reaches every node a moment later; this node's next request must not wait for it).
 */
import type { PgTx, PostgresHandle } from '../../../db/postgres/client'

export async function unitOfWork<T>(database: Pick<PostgresHandle, 'db' | 'versions'>, work: (tx: PgTx) => Promise<T>): Promise<T> {
  try {
    return await database.db.transaction(work)
  } finally {
    database.versions.changed()
  }
}
