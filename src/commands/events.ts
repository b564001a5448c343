/**
 * The events a sent command's status changes write (`command_answered`, `command_failed`,
 * `command_expired`), in the transaction of the change: no position, `context` `{ id, command,
 * name }`. The events table keeps one event per device, second and code; a second already taken
 * by the same code (two commands expiring in one sweep) moves the event to the newest free second
 * before it, so every change has its event and none lands after "now" (GET /events reads up to now).
 */
import { sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { events } from '../../db/schema'

/** how far back a taken second is moved at most: a day of such events of one device at once */
const MAX_SHIFT_SECONDS = 86_400

export function createCommandEvents(db: Db) {
  const insertIfFree = db
    .insert(events)
    .values({ device: sql.placeholder('device'), ts: sql.placeholder('ts'), alarmCode: sql.placeholder('code'), context: sql.placeholder('context') })
    .onConflictDoNothing()
    .prepare()

  return {
    /** Writes the event at `second` (Unix seconds) or the newest free second before it; returns the second used. */
    append(deviceKey: number, code: string, context: Record<string, unknown>, second: number): number {
      const encoded = JSON.stringify(context)
      for (let ts = second; ts > second - MAX_SHIFT_SECONDS; ts--) {
        const { changes } = insertIfFree.run({ device: deviceKey, ts, code, context: encoded }) as unknown as { changes: number }
        if (changes > 0) return ts
      }
      throw new Error(`no free second for a ${code} event of device ${deviceKey}`)
    },
  }
}
