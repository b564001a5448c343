/**
 * The events table on PostgreSQL: src/store/events.ts's reads (EventReads) over the schema's
 * PostgreSQL twin, and its writers for other owners' units of work, with the same key rule:
 * (device, second, code, seq), a device's own alarm at seq 0 stored once however often it is
 * re-sent, an event the server derives at the next seq of its second.
 *
 * The devices of a fleet-wide read go as one `int[]` parameter (`= ANY`), whatever their number:
 * SQLite's json_each array.
 */
import { and, asc, between, desc, eq, sql } from 'drizzle-orm'
import type { PgConnectable, PostgresHandle } from '../../../db/postgres/client'
import { events } from '../../../db/postgres/schema'
import { type EncodedEvent, type EventReads, storedColumnsOf } from '../events'

const storedColumns = storedColumnsOf(events)

/**
 * events.ts's `insert`, inside the caller's transaction: writes the event unless its (device, ts,
 * code, seq) is stored; true when it was written. seq 0: a device's own alarm.
 */
export async function insertEventInTransaction(tx: PgConnectable, deviceKey: number, row: EncodedEvent, seq = 0): Promise<boolean> {
  const written = await tx
    .insert(events)
    .values({
      device: deviceKey,
      ts: row.ts,
      alarmCode: row.alarm_code,
      context: row.context,
      speed: row.speed,
      satellite: row.satellite,
      latitude: row.latitude,
      longitude: row.longitude,
      mcc: row.mcc,
      mnc: row.mnc,
      dbm: row.dbm,
      seq,
    })
    .onConflictDoNothing()
    .returning({ id: events.id })
  return written.length > 0
}

/**
 * events.ts's `append`, inside the caller's transaction: an event the server derived, at its own
 * second after any other of its code there (always a new row). Unlike SQLite's one writer,
 * transactions of several nodes may append the same (device, second, code) at once: an insert
 * that finds its seq taken (it waits for the transaction holding it, then skips) reads the next
 * seq again, after that transaction's commit, and tries it; each round follows one more commit.
 */
export async function appendEventInTransaction(tx: PgConnectable, deviceKey: number, row: EncodedEvent): Promise<void> {
  // the common case, the first of its code in its second: one statement
  let tried = 1
  if (await insertEventInTransaction(tx, deviceKey, row, tried)) return
  for (;;) {
    const [next] = await tx
      .select({ seq: sql<number>`coalesce(max(${events.seq}), 0) + 1`.mapWith(Number) })
      .from(events)
      .where(and(eq(events.device, deviceKey), eq(events.ts, row.ts), eq(events.alarmCode, row.alarm_code)))
    // never the same seq twice, whatever the transaction's snapshot shows
    tried = Math.max(next!.seq, tried + 1)
    if (await insertEventInTransaction(tx, deviceKey, row, tried)) return
  }
}

export function createPostgresEventReads(database: Pick<PostgresHandle, 'db'>): EventReads {
  const { db } = database
  return {
    async ofDevice(deviceKey, from, to) {
      return db
        .select(storedColumns)
        .from(events)
        .where(and(eq(events.device, deviceKey), between(events.ts, from, to)))
        .orderBy(asc(events.ts), asc(events.id))
    },
    async newestFirst(deviceKeys, window) {
      if (deviceKeys.length === 0) return []
      const alarmCode = window.alarmCode ?? null
      return (
        db
          .select(storedColumns)
          .from(events)
          .where(
            and(
              sql`${events.device} = ANY(${sql.param([...deviceKeys])}::int[])`,
              between(events.ts, window.from, window.to),
              alarmCode === null ? undefined : eq(events.alarmCode, alarmCode),
            ),
          )
          // id breaks ties within a second: the order is stable from page to page
          .orderBy(desc(events.ts), desc(events.id))
          .limit(window.limit)
          .offset(window.offset)
      )
    },
  }
}
