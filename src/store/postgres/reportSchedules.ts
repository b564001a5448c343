/** src/store/reportSchedules.ts on PostgreSQL: the same statements over the twin tables. */
import { and, asc, desc, eq, gt, inArray, lte, notExists, or } from 'drizzle-orm'
import { alias } from 'drizzle-orm/pg-core'
import type { PostgresHandle } from '../../../db/postgres/client'
import { reportRuns, reportSchedules } from '../../../db/postgres/schema'
import type { ReportScheduleStore } from '../reportSchedules'

export function createPostgresReportScheduleStore(database: Pick<PostgresHandle, 'db'>): ReportScheduleStore {
  const { db } = database
  const s = reportSchedules
  const r = reportRuns
  return {
    list: (accountId, userId) =>
      db.select().from(s).where(userId === null ? eq(s.accountId, accountId) : and(eq(s.accountId, accountId), eq(s.userId, userId))).orderBy(asc(s.name), asc(s.id)),
    async find(accountId, id) {
      const [row] = await db.select().from(s).where(and(eq(s.accountId, accountId), eq(s.id, id)))
      return row ?? null
    },
    async schedule(id) {
      const [row] = await db.select().from(s).where(eq(s.id, id))
      return row ?? null
    },
    async create(row) {
      await db.insert(s).values(row)
    },
    async update(accountId, id, fields) {
      const [row] = await db.update(s).set(fields).where(and(eq(s.accountId, accountId), eq(s.id, id))).returning()
      return row ?? null
    },
    async remove(accountId, id) {
      return (await db.delete(s).where(and(eq(s.accountId, accountId), eq(s.id, id))).returning({ id: s.id })).length > 0
    },
    enabled: () => db.select().from(s).where(eq(s.enabled, true)).orderBy(asc(s.id)),
    async claimRun(row) {
      return (await db.insert(r).values(row).onConflictDoNothing().returning({ id: r.id })).length > 0
    },
    dueRuns: (nowMs, limit) =>
      db.select().from(r).where(and(eq(r.status, 'queued'), lte(r.nextAttemptAt, nowMs))).orderBy(asc(r.nextAttemptAt), asc(r.createdAt)).limit(limit),
    async run(id) {
      const [row] = await db.select().from(r).where(eq(r.id, id))
      return row ?? null
    },
    async settleRun(id, settled) {
      await db.update(r).set(settled).where(eq(r.id, id))
    },
    runs: (scheduleId, limit) => db.select().from(r).where(eq(r.scheduleId, scheduleId)).orderBy(desc(r.createdAt), desc(r.id)).limit(limit),
    async lastRuns(scheduleIds) {
      if (scheduleIds.length === 0) return []
      const newer = alias(r, 'newer')
      return db
        .select()
        .from(r)
        .where(
          and(
            inArray(r.scheduleId, [...scheduleIds]),
            notExists(
              db
                .select({ id: newer.id })
                .from(newer)
                .where(and(eq(newer.scheduleId, r.scheduleId), or(gt(newer.createdAt, r.createdAt), and(eq(newer.createdAt, r.createdAt), gt(newer.id, r.id))))),
            ),
          ),
        )
    },
  }
}
