/**
 * Scheduled reports and their runs (src/reports/schedules.ts decides, src/reports/scheduler.ts
 * sends): the schedules of an account or of one user, and the runs, each period's scheduled run
 * written once (`report_runs.period_key` is unique) before anything is sent.
 */
import { and, asc, desc, eq, gt, inArray, lte, notExists, or } from 'drizzle-orm'
import { alias } from 'drizzle-orm/sqlite-core'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { DatabaseHandle } from '../../db/client'
import { reportRuns, reportSchedules } from '../../db/schema'

export type ScheduleRow = typeof reportSchedules.$inferSelect
export type RunRow = typeof reportRuns.$inferSelect

/** The fields of a run settled after an attempt. */
export interface RunSettled {
  status: 'queued' | 'sent' | 'failed'
  attempts: number
  error: string | null
  nextAttemptAt: number | null
  sentAt: number | null
}

export interface ReportScheduleStore {
  /** the account's schedules (userId given: that user's only), by name then id */
  list(accountId: string, userId: string | null): Promise<ScheduleRow[]>
  find(accountId: string, id: string): Promise<ScheduleRow | null>
  /** the schedule of a run, whatever its account (the scheduler) */
  schedule(id: string): Promise<ScheduleRow | null>
  create(row: ScheduleRow): Promise<void>
  /** the schedule with `fields` changed, or null when it is gone */
  update(accountId: string, id: string, fields: Partial<ScheduleRow>): Promise<ScheduleRow | null>
  remove(accountId: string, id: string): Promise<boolean>
  /** every enabled schedule, of every account (the scheduler's look) */
  enabled(): Promise<ScheduleRow[]>
  /**
   * Writes the run unless one with the same `periodKey` exists: true when written (this caller
   * sends it), false when another process or node did already. A run without a key is always written.
   */
  claimRun(row: RunRow): Promise<boolean>
  /** queued runs whose next attempt is due at `nowMs`, oldest first */
  dueRuns(nowMs: number, limit: number): Promise<RunRow[]>
  run(id: string): Promise<RunRow | null>
  settleRun(id: string, settled: RunSettled): Promise<void>
  /** the schedule's runs, newest first */
  runs(scheduleId: string, limit: number): Promise<RunRow[]>
  /** the newest run of each of these schedules (none for a schedule never run) */
  lastRuns(scheduleIds: readonly string[]): Promise<RunRow[]>
}

/** the encodings of a schedule's list fields (JSON text in both engines) */
export const encodeList = (values: readonly string[]) => JSON.stringify(values)
export const decodeList = (text: string): string[] => {
  const parsed = JSON.parse(text) as unknown
  return Array.isArray(parsed) ? parsed.filter((v): v is string => typeof v === 'string') : []
}

export function createReportScheduleStore(database: Pick<DatabaseHandle, 'sqlite'>): ReportScheduleStore {
  const db = drizzle(database.sqlite)
  const s = reportSchedules
  const r = reportRuns
  return {
    list: async (accountId, userId) =>
      db.select().from(s).where(userId === null ? eq(s.accountId, accountId) : and(eq(s.accountId, accountId), eq(s.userId, userId))).orderBy(asc(s.name), asc(s.id)).all(),
    find: async (accountId, id) => db.select().from(s).where(and(eq(s.accountId, accountId), eq(s.id, id))).get() ?? null,
    schedule: async (id) => db.select().from(s).where(eq(s.id, id)).get() ?? null,
    async create(row) {
      db.insert(s).values(row).run()
    },
    async update(accountId, id, fields) {
      return db.update(s).set(fields).where(and(eq(s.accountId, accountId), eq(s.id, id))).returning().get() ?? null
    },
    async remove(accountId, id) {
      return db.delete(s).where(and(eq(s.accountId, accountId), eq(s.id, id))).returning({ id: s.id }).all().length > 0
    },
    enabled: async () => db.select().from(s).where(eq(s.enabled, true)).orderBy(asc(s.id)).all(),
    async claimRun(row) {
      // INSERT … ON CONFLICT DO NOTHING: the same on PostgreSQL
      return db.insert(r).values(row).onConflictDoNothing().returning({ id: r.id }).all().length > 0
    },
    dueRuns: async (nowMs, limit) =>
      db.select().from(r).where(and(eq(r.status, 'queued'), lte(r.nextAttemptAt, nowMs))).orderBy(asc(r.nextAttemptAt), asc(r.createdAt)).limit(limit).all(),
    run: async (id) => db.select().from(r).where(eq(r.id, id)).get() ?? null,
    async settleRun(id, settled) {
      db.update(r).set(settled).where(eq(r.id, id)).run()
    },
    runs: async (scheduleId, limit) => db.select().from(r).where(eq(r.scheduleId, scheduleId)).orderBy(desc(r.createdAt), desc(r.id)).limit(limit).all(),
    async lastRuns(scheduleIds) {
      if (scheduleIds.length === 0) return []
      const newer = alias(r, 'newer')
      // a run with no newer one of its schedule (by created_at, then id, as `runs` orders them)
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
        .all()
    },
  }
}
