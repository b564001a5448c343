/**
 * sent_commands on PostgreSQL: src/store/commands.ts's command queue over the schema's
 * PostgreSQL twin. A command reaching a final status is written with its event in one unit of
 * work, through the events writer (store/postgres/events.ts: the same (device, second, code, seq)
 * rule as SQLite's); every change is guarded by the status the rules saw, so that a change made
 * meanwhile, by this node or another, wins and the guarded one writes nothing.
 */
import { and, asc, desc, eq, gt, inArray, lte, sql } from 'drizzle-orm'
import type { PgTx, PostgresHandle } from '../../../db/postgres/client'
import { sentCommands } from '../../../db/postgres/schema'
import { type CommandChange, type CommandStore, changesMade, type FinalStatus, finalChange, mayGoOut, OPEN_STATUSES, type StoredCommand } from '../commands'
import { appendEventInTransaction } from './events'
import { unitOfWork } from './unit'

export function createPostgresCommandStore(database: PostgresHandle): CommandStore {
  const { db } = database

  async function byId(tx: PgTx | PostgresHandle['db'], id: string): Promise<StoredCommand | null> {
    const [row] = await tx.select().from(sentCommands).where(eq(sentCommands.id, id))
    return row ?? null
  }

  /**
   * Inside a unit of work: the command reaches a final status with its event (at `atMs`), unless
   * it has left `row.status` meanwhile.
   */
  async function finish(tx: PgTx, row: StoredCommand, status: FinalStatus, atMs: number, extra: Partial<StoredCommand> = {}): Promise<CommandChange | null> {
    const updated = await tx
      .update(sentCommands)
      .set({ status, payload: null, ...extra })
      .where(and(eq(sentCommands.key, row.key), eq(sentCommands.status, row.status)))
      .returning({ key: sentCommands.key })
    if (updated.length === 0) return null
    const { change, event } = finalChange(row, status, atMs)
    await appendEventInTransaction(tx, row.deviceKey, event)
    return change
  }

  return {
    async insert(command) {
      const [row] = await db
        .insert(sentCommands)
        .values({ ...command, status: 'queued' })
        .returning()
      return row!
    },

    async page(deviceKey, page) {
      return db.select().from(sentCommands).where(eq(sentCommands.deviceKey, deviceKey)).orderBy(desc(sentCommands.key)).limit(page.limit).offset(page.offset)
    },

    byId: (id) => byId(db, id),

    async open(deviceKey) {
      return db
        .select()
        .from(sentCommands)
        .where(and(eq(sentCommands.deviceKey, deviceKey), inArray(sentCommands.status, OPEN_STATUSES)))
        .orderBy(asc(sentCommands.key))
    },

    async pastExpiry(nowMs) {
      return db
        .select()
        .from(sentCommands)
        .where(and(inArray(sentCommands.status, OPEN_STATUSES), lte(sentCommands.expiresAt, nowMs)))
        .orderBy(asc(sentCommands.key))
        .limit(1000)
    },

    async sentBetween(afterMs, upToMs) {
      const rows = await db
        .selectDistinct({ deviceKey: sentCommands.deviceKey })
        .from(sentCommands)
        .where(and(eq(sentCommands.status, 'sent'), eq(sentCommands.resendDue, false), gt(sentCommands.sentAt, afterMs), lte(sentCommands.sentAt, upToMs)))
      return rows.map((row) => row.deviceKey)
    },

    async cancel(deviceKey, id) {
      const updated = await db
        .update(sentCommands)
        .set({ status: 'cancelled', payload: null })
        .where(and(eq(sentCommands.id, id), eq(sentCommands.deviceKey, deviceKey), eq(sentCommands.status, 'queued')))
        .returning({ key: sentCommands.key })
      if (updated.length > 0) return { cancelled: true, status: 'cancelled' }
      const row = await byId(db, id)
      return row && row.deviceKey === deviceKey ? { cancelled: false, status: row.status } : null
    },

    async markSent(id, nowMs) {
      const [updated] = await db
        .update(sentCommands)
        .set({ status: 'sent', sentAt: nowMs, attempts: sql`${sentCommands.attempts} + 1`, resendDue: false })
        .where(mayGoOut(sentCommands, id, nowMs))
        .returning({ deviceKey: sentCommands.deviceKey, attempts: sentCommands.attempts })
      return updated ?? null
    },

    async lapse(lapsed) {
      if (lapsed.length === 0) return []
      return unitOfWork(database, async (tx) => {
        const changes: (CommandChange | null)[] = []
        for (const { row, status, atMs } of lapsed) changes.push(await finish(tx, row, status, atMs))
        return changesMade(changes)
      })
    },

    async answer(deviceKey, id, atMs, response) {
      return unitOfWork(database, async (tx) => {
        const row =
          id === undefined
            ? ((
                await tx
                  .select()
                  .from(sentCommands)
                  .where(and(eq(sentCommands.deviceKey, deviceKey), eq(sentCommands.status, 'sent')))
                  .orderBy(asc(sentCommands.key))
                  .limit(1)
              )[0] ?? null)
            : await byId(tx, id)
        if (!row || row.deviceKey !== deviceKey || row.status !== 'sent') return null
        const answered = { answeredAt: atMs, response: response(row), resendDue: false }
        const change = await finish(tx, row, 'answered', atMs, answered)
        return change && { change, row: { ...row, ...answered, status: 'answered', payload: null } }
      })
    },

    async fail(id, atMs) {
      return unitOfWork(database, async (tx) => {
        const row = await byId(tx, id)
        return row && (row.status === 'queued' || row.status === 'sent') ? finish(tx, row, 'failed', atMs) : null
      })
    },

    async reconnect(resend, failed, atMs) {
      if (resend.length === 0 && failed.length === 0) return []
      return unitOfWork(database, async (tx) => {
        if (resend.length > 0) {
          await tx
            .update(sentCommands)
            .set({ resendDue: true })
            .where(and(inArray(sentCommands.key, [...resend]), eq(sentCommands.status, 'sent')))
        }
        const changes: (CommandChange | null)[] = []
        for (const row of failed) changes.push(await finish(tx, row, 'failed', atMs))
        return changesMade(changes)
      })
    },
  }
}
