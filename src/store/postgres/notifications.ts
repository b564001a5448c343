/**
 * notifications and notification_deliveries on PostgreSQL: src/store/notifications.ts's
 * `NotificationStore` (channels and each user's own email alerts, each change a unit of work with
 * its audit row) and `DeliveryStore` (the delivery worker's outbox), over the schema's PostgreSQL
 * twin. The outbox's writer inside ingest's transaction is not here.
 *
 * Many nodes share the outbox. A node takes a delivery for one attempt with `claim`: a session
 * advisory lock on the delivery's key, held by one connection this store reserves from the pool,
 * so a lease needs no column and no transaction held open across the attempt (an HTTP request of
 * up to 10 s), and dies with that connection: a node killed, or cut off from the database, leaves
 * its deliveries to the others at once. Under the lock the row is read again, so an attempt sends
 * the delivery as it is now (a batch merged meanwhile, attempts made elsewhere), or not at all.
 */
import { and, asc, desc, eq, gt, inArray, isNull, lt, or, sql } from 'drizzle-orm'
import type { ReservedSql } from 'postgres'
import type { PgConnectable, PostgresHandle } from '../../../db/postgres/client'
import { accounts, notificationDeliveries, notifications, users } from '../../../db/postgres/schema'
import {
  type DeliveryStore,
  type GroupsRefused,
  joinedBatches,
  mergeableBatches,
  newPersonalRow,
  NOTIFICATIONS_VERSION_ROW,
  notificationAuditEntry,
  type NotificationRow,
  type NotificationStore,
  type NotificationStoreOptions,
  personalAuditEntry,
  personalFields,
  QUEUED_KINDS,
  type QueuedDelivery,
} from '../notifications'
import { recordAuditInTransaction } from './audit'
import { groupsRefusedInTransaction } from './people'
import { unitOfWork } from './unit'
import { byCodePoint } from './order'

/** `options` as the SQLite store's (its clock bounds busy retries, which PostgreSQL does not need) */
export function createPostgresNotificationStore(database: Pick<PostgresHandle, 'db' | 'versions'>, _options: NotificationStoreOptions = {}): NotificationStore {
  const { db } = database

  const accountChannel = async (tx: PgConnectable, accountId: string, id: string, lock = false): Promise<NotificationRow | null> => {
    const query = tx
      .select()
      .from(notifications)
      // a user's own email alerts are theirs (/me/email-alerts), not the account's: never shown or touched here
      .where(and(eq(notifications.id, id.toLowerCase()), eq(notifications.accountId, accountId), isNull(notifications.userId)))
    const [row] = lock ? await query.for('update') : await query
    return row ?? null
  }
  const personal = async (tx: PgConnectable, userId: string): Promise<NotificationRow | null> => {
    const [row] = await tx.select().from(notifications).where(eq(notifications.userId, userId))
    return row ?? null
  }

  return {
    async list(accountId, page) {
      return db
        .select()
        .from(notifications)
        .where(and(eq(notifications.accountId, accountId), isNull(notifications.userId)))
        .orderBy(byCodePoint(notifications.name), asc(notifications.id))
        .limit(page.limit)
        .offset(page.offset)
    },

    find: (accountId, id) => accountChannel(db, accountId, id),

    create(row, groupIds, audit) {
      return unitOfWork(database, async (tx) => {
        const refused = await groupsRefusedInTransaction(tx, row.accountId, groupIds)
        if (refused) return refused
        const [created] = await tx.insert(notifications).values(row).returning()
        await recordAuditInTransaction(tx, notificationAuditEntry(row.accountId, audit, 'create', row.id), row.createdAt)
        return created!
      })
    },

    update(accountId, id, fields, groupIds, atMs, audit) {
      return unitOfWork(database, async (tx) => {
        const current = await accountChannel(tx, accountId, id, true)
        if (current === null) return null
        const refused = await groupsRefusedInTransaction(tx, accountId, groupIds)
        if (refused) return refused
        const [row] = await tx
          .update(notifications)
          .set({ ...fields, ...(groupIds !== undefined ? { groups: JSON.stringify(groupIds) } : {}), updatedAt: atMs })
          .where(eq(notifications.id, current.id))
          .returning()
        await recordAuditInTransaction(tx, notificationAuditEntry(accountId, audit, 'update', current.id), atMs)
        return row!
      })
    },

    remove(accountId, id, atMs, audit) {
      return unitOfWork(database, async (tx) => {
        const current = await accountChannel(tx, accountId, id, true)
        if (current === null) return false
        await tx.delete(notifications).where(eq(notifications.id, current.id))
        await recordAuditInTransaction(tx, notificationAuditEntry(accountId, audit, 'delete', current.id), atMs)
        return true
      })
    },

    async deliveries(notificationId, page) {
      return db
        .select()
        .from(notificationDeliveries)
        .where(eq(notificationDeliveries.notificationId, notificationId))
        .orderBy(desc(notificationDeliveries.key))
        .limit(page.limit)
        .offset(page.offset)
    },

    async accountName(accountId) {
      // accounts is the people store's table: one read of a name, here until that store offers it
      const [row] = await db.select({ name: accounts.name }).from(accounts).where(eq(accounts.id, accountId))
      return row?.name ?? ''
    },

    async recordTest(delivery) {
      await unitOfWork(database, async (tx) => {
        // the channel may have been deleted meanwhile: then there is no log to write it in (its row
        // is held against a deletion until this commits)
        const [still] = await tx.select({ id: notifications.id }).from(notifications).where(eq(notifications.id, delivery.notificationId)).for('key share')
        if (still) await tx.insert(notificationDeliveries).values(delivery)
      })
    },

    personal: (userId) => personal(db, userId),

    savePersonal(userId, alerts, atMs, requestId) {
      return unitOfWork(database, async (tx) => {
        // users is the people store's table: the user's account, read in this unit of work; its row
        // locked, so two saves at once for one user write one row, one after the other
        const [owner] = await tx.select({ accountId: users.accountId }).from(users).where(eq(users.id, userId)).for('no key update')
        if (!owner) return 'no-user' as const
        const current = await personal(tx, userId)
        const address = alerts.address ?? (current ? alerts.firstAddress(current.url) : undefined)
        if (address === undefined) return 'no-address' as const
        const fields = personalFields(alerts, address, owner.accountId, atMs)
        const [row] = current
          ? await tx.update(notifications).set(fields).where(eq(notifications.id, current.id)).returning()
          : await tx.insert(notifications).values(newPersonalRow(userId, fields, atMs)).returning()
        await recordAuditInTransaction(tx, personalAuditEntry(owner.accountId, userId, current !== null, requestId), atMs)
        return row!
      })
    },
  }
}

/**
 * The advisory-lock space of deliveries under way: a delivery is locked as (this, its key), the
 * two-key form, apart from the one-key locks of the migrations and of background work. Keys past
 * 2^31 share a lock with one 2^31 apart: at worst one waits for the other's attempt to end.
 */
export const DELIVERY_LOCKS = 0x7472_6b64 // "trkd"
const lockOf = (key: number) => key % 2_147_483_648

/** how far below the newest key seen a row may still be committed (keys drawn by transactions under way) */
export const IN_FLIGHT_KEYS = 10_000

/** a snapshot's transaction ids as a row's xmin shows them (32 bits) */
interface Snapshot {
  xmax: number
  inProgress: number[]
}
const XID_SPACE = 4_294_967_296

/** `xmin:xmax:xip,…` (pg_current_snapshot) */
function parseSnapshot(text: string): Snapshot {
  const [, xmax = '0', list = ''] = text.split(':')
  return { xmax: Number(BigInt(xmax) % BigInt(XID_SPACE)), inProgress: list === '' ? [] : list.split(',').map((xid) => Number(BigInt(xid) % BigInt(XID_SPACE))) }
}

/**
 * Rows written by a transaction the snapshot did not see: one under way then, or one begun after it
 * (an id at or past its xmax, compared modulo 2^32 as ids wrap: the rows looked at are recent).
 */
function notSeenIn(snapshot: Snapshot) {
  const xid = sql`(${notificationDeliveries}.xmin::text::bigint)`
  const later = sql`((${xid} - ${snapshot.xmax} + ${XID_SPACE}) % ${XID_SPACE}) < ${XID_SPACE / 2}`
  if (snapshot.inProgress.length === 0) return later
  return or(later, sql`${xid} IN (${sql.join(snapshot.inProgress.map((id) => sql`${id}`), sql`, `)})`)
}

export function createPostgresDeliveryStore(database: Pick<PostgresHandle, 'db' | 'sql' | 'versions'>, _options: NotificationStoreOptions = {}): DeliveryStore {
  const { db } = database
  const columns = {
    key: notificationDeliveries.key,
    id: notificationDeliveries.id,
    notificationId: notificationDeliveries.notificationId,
    kind: notificationDeliveries.kind,
    payload: notificationDeliveries.payload,
    attempts: notificationDeliveries.attempts,
    createdAt: notificationDeliveries.createdAt,
    nextAttemptAt: notificationDeliveries.nextAttemptAt,
    fixes: notificationDeliveries.fixes,
  }
  const pending = eq(notificationDeliveries.status, 'pending')
  /** a channel's oldest pending batches of fixes, oldest first */
  const pendingBatches = (tx: PgConnectable, channelId: string, limit: number): Promise<QueuedDelivery[]> =>
    tx
      .select(columns)
      .from(notificationDeliveries)
      .where(and(eq(notificationDeliveries.notificationId, channelId), eq(notificationDeliveries.kind, 'positions'), pending))
      .orderBy(asc(notificationDeliveries.key))
      .limit(limit)
  // a channel's queued deliveries due before `until`: the rows a backoff holds back
  const pendingBeforeUntil = (channelId: string, until: number) =>
    and(eq(notificationDeliveries.notificationId, channelId), inArray(notificationDeliveries.kind, QUEUED_KINDS), pending, lt(notificationDeliveries.nextAttemptAt, until))

  const statsColumns = { pending: sql<number>`count(*)`.mapWith(Number), oldest: sql<number | null>`min(${notificationDeliveries.createdAt})` }
  const keepStats = (row: { pending: number; oldest: number | null } | undefined) =>
    (lastStats = { pending: row?.pending ?? 0, oldestCreatedAt: row?.oldest == null ? null : Number(row.oldest) })
  async function pendingStats() {
    const [row] = await db.select(statsColumns).from(notificationDeliveries).where(pending)
    return keepStats(row)
  }
  /** the snapshot of the read that answered each of the last newest keys */
  const seenAt = new Map<number, Snapshot>()
  /** the last stats read, for the metrics gauges (synchronous: they render as they are scraped) */
  let lastStats: { pending: number; oldestCreatedAt: number | null } = { pending: 0, oldestCreatedAt: null }
  let statsReading: Promise<unknown> | null = null

  /**
   * The connection holding this node's claims: reserved from the pool while it holds one (or a
   * claim is being taken), given back once it holds none, so that a pool closing finds it idle.
   */
  let lockConnection: Promise<ReservedSql> | null = null
  /** the keys this node holds */
  const held = new Set<number>()
  /** statements under way on the lock connection */
  let using = 0
  async function onLockConnection<T>(work: (connection: ReservedSql) => Promise<T>): Promise<T> {
    const reserving = (lockConnection ??= database.sql.reserve())
    using++
    try {
      let connection: ReservedSql
      try {
        connection = await reserving
      } catch (error) {
        if (lockConnection === reserving) lockConnection = null
        throw error
      }
      try {
        return await work(connection)
      } catch (error) {
        // the connection may be gone, and its locks with it: they are all given up, and the next
        // claim reserves another (one still up lets go of them before it goes back to the pool)
        if (lockConnection === reserving) {
          lockConnection = null
          held.clear()
          await connection`SELECT pg_advisory_unlock_all()`.catch(() => {})
          connection.release()
        }
        throw error
      }
    } finally {
      using--
      if (using === 0 && held.size === 0 && lockConnection === reserving) {
        lockConnection = null
        void reserving.then((connection) => connection.release()).catch(() => {})
      }
    }
  }

  async function release(key: number): Promise<void> {
    if (!held.has(key)) return
    await onLockConnection(async (connection) => {
      held.delete(key)
      await connection`SELECT pg_advisory_unlock(${DELIVERY_LOCKS}::int, ${lockOf(key)}::int)`
    })
  }

  return {
    pendingStatsNow() {
      // what the last look (or read) found; a scrape starts the next, for a node whose worker is stopped
      statsReading ??= pendingStats()
        .catch(() => {})
        .finally(() => (statsReading = null))
      return lastStats
    },
    pendingStats,
    async newestKey() {
      // the stats with it, in the same statement: the gauges answer as of the worker's last look
      const [row] = await db
        .select({
          key: sql<number | null>`(SELECT max(${notificationDeliveries.key}) FROM ${notificationDeliveries})`,
          snapshot: sql<string>`pg_current_snapshot()::text`,
          ...statsColumns,
        })
        .from(notificationDeliveries)
        .where(pending)
      keepStats(row)
      const key = row?.key == null ? 0 : Number(row.key)
      seenAt.set(key, parseSnapshot(row!.snapshot))
      // the worker asks after the key it saw at its last look: the last few are kept
      if (seenAt.size > 4) seenAt.delete(seenAt.keys().next().value!)
      return key
    },
    async channelsWrittenAfter(key) {
      // A key is drawn when its row is written but shows when its transaction commits: with many
      // nodes writing, a row below a key already seen may show later. Those are the rows (among
      // the IN_FLIGHT_KEYS keys below) that the snapshot of the read which saw `key` did not see:
      // written by a transaction then under way, or begun after it. (SQLite's one writer commits
      // keys in order.)
      const snapshot = seenAt.get(key)
      const after = gt(notificationDeliveries.key, key)
      const rows = await db
        .selectDistinct({ channel: notificationDeliveries.notificationId })
        .from(notificationDeliveries)
        .where(snapshot === undefined ? after : and(gt(notificationDeliveries.key, key - IN_FLIGHT_KEYS), or(after, notSeenIn(snapshot))))
      return rows.map((row) => row.channel)
    },
    channelsVersion: () => database.versions.current(NOTIFICATIONS_VERSION_ROW),
    async enabledChannels() {
      return db
        .select({
          id: notifications.id,
          accountId: notifications.accountId,
          account: accounts.name,
          type: notifications.channelType,
          url: notifications.url,
          secret: notifications.secret,
          positions: notifications.positions,
        })
        .from(notifications)
        .innerJoin(accounts, eq(accounts.id, notifications.accountId))
        .where(eq(notifications.enabled, true))
        .orderBy(byCodePoint(notifications.id))
    },
    async pendingEvents(channelId, limit) {
      return db
        .select(columns)
        .from(notificationDeliveries)
        .where(and(eq(notificationDeliveries.notificationId, channelId), eq(notificationDeliveries.kind, 'event'), pending))
        // SQLite puts nulls first
        .orderBy(sql`${notificationDeliveries.nextAttemptAt} ASC NULLS FIRST`, asc(notificationDeliveries.key))
        .limit(limit)
    },
    pendingBatches: (channelId, limit) => pendingBatches(db, channelId, limit),
    mergeBatches(channelId, headKey, maxFixes) {
      return unitOfWork(database, async (tx) => {
        // a head under way on a node (claimed) or being merged by another is sent as it is: taken
        // first, so that the batches read next are as that other merge left them
        const [free] = await tx.execute<{ free: boolean }>(sql`SELECT pg_try_advisory_xact_lock(${DELIVERY_LOCKS}::int, ${lockOf(headKey)}::int) AS free`)
        const heads = await pendingBatches(tx, channelId, maxFixes)
        const first = heads[0]!
        if (!free?.free) return first
        const taken = heads.slice(1, 1 + mergeableBatches(heads, maxFixes))
        if (first.key !== headKey || taken.length === 0) return first
        const joined = joinedBatches(first, taken)
        await tx.update(notificationDeliveries).set(joined).where(eq(notificationDeliveries.key, first.key))
        await tx.delete(notificationDeliveries).where(inArray(notificationDeliveries.key, taken.map((row) => row.key)))
        return { ...first, ...joined }
      })
    },
    async dueBefore(channelId, until, limit) {
      const rows = await db.select({ key: notificationDeliveries.key }).from(notificationDeliveries).where(pendingBeforeUntil(channelId, until)).limit(limit)
      return rows.map((row) => row.key)
    },
    async holdUntil(channelId, until) {
      await db.update(notificationDeliveries).set({ nextAttemptAt: until }).where(pendingBeforeUntil(channelId, until))
    },
    async prune(before, limit) {
      const old = db
        .select({ key: notificationDeliveries.key })
        .from(notificationDeliveries)
        .where(and(inArray(notificationDeliveries.status, ['delivered', 'dead']), lt(notificationDeliveries.createdAt, before)))
        .limit(limit)
      const gone = await db.delete(notificationDeliveries).where(inArray(notificationDeliveries.key, old)).returning({ key: notificationDeliveries.key })
      return gone.length
    },
    async claim(key, attempts) {
      if (held.has(key)) return null
      // both on the claims' connection, which is reserved meanwhile: a pool of one still answers
      const row = await onLockConnection(async (connection) => {
        const [lock] = await connection<{ got: boolean }[]>`SELECT pg_try_advisory_lock(${DELIVERY_LOCKS}::int, ${lockOf(key)}::int) AS got`
        if (!lock?.got) return null
        held.add(key)
        // read under the lock: an attempt that ended elsewhere has settled (and moved attempts) before letting go
        const [found] = await connection<QueuedDelivery[]>`
          SELECT key, id, notification_id AS "notificationId", kind, payload, attempts, created_at AS "createdAt", next_attempt_at AS "nextAttemptAt", fixes
          FROM notification_deliveries WHERE key = ${key} AND status = 'pending' AND attempts = ${attempts}`
        return found ? { ...found } : null
      })
      if (row === null) await release(key)
      return row
    },
    release,
    async settle(key, outcome) {
      const { clearPayload, ...fields } = outcome
      // only over the attempts it read: a node that lost its connection (and its claim)
      // mid-attempt does not write over the outcome of an attempt made meanwhile elsewhere
      const update = db
        .update(notificationDeliveries)
        .set({ ...fields, ...(clearPayload ? { payload: null } : {}) })
        .where(and(eq(notificationDeliveries.key, key), pending, eq(notificationDeliveries.attempts, outcome.attempts - 1)))
      if (!held.has(key)) return void (await update)
      // claimed here: written on the claims' connection, which the claim keeps reserved (a pool of
      // one would otherwise wait for itself)
      const { sql: text, params } = update.toSQL()
      await onLockConnection((connection) => connection.unsafe(text, params as never[]))
    },
  }
}
