/**
 * device_status on PostgreSQL: src/store/status.ts's reads (StatusReads) over the schema's
 * PostgreSQL twin. The merge of each report's attributes is ingest's write (the lead's, with the
 * ingest's group commit).
 */
import { eq } from 'drizzle-orm'
import type { PostgresHandle } from '../../../db/postgres/client'
import { deviceStatus } from '../../../db/postgres/schema'
import { type StatusReads, statusOf } from '../status'

export function createPostgresStatusReads(database: Pick<PostgresHandle, 'db'>): StatusReads {
  const { db } = database
  return {
    async latest(deviceKey) {
      const [row] = await db
        .select({ attributes: deviceStatus.attributes, updatedAt: deviceStatus.updatedAt })
        .from(deviceStatus)
        .where(eq(deviceStatus.deviceKey, deviceKey))
      return row ? statusOf(row) : null
    },
  }
}
