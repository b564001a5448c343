/**
 * The owner of notifications (the account's channels and each user's own email alerts) and of
 * notification_deliveries (the outbox and its deliveries). Its faces:
 * - `NotificationStore` (promises): the channels' API (alerts/notifications-service.ts) and a
 *   user's email alerts (alerts/email-alerts-service.ts). Each change is one unit of work with its
 *   audit row, retried while another process holds the write lock (store/busy.ts).
 * - `outboxInTransaction(tx)` (synchronous): what ingest's outbox batch (alerts/outbox.ts) reads
 *   and writes inside the pipeline's group commit, on the transaction's connection, so a delivery
 *   commits with its event or fix, or not at all.
 * - `DeliveryStore` (promises): the delivery worker (alerts/delivery.ts).
 */
import type { UserPrincipal } from '../principal'
import { and, asc, desc, eq, gt, inArray, isNull, lt, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { type Connectable, connectionOf, type DatabaseHandle, type Db } from '../../db/client'
import * as schema from '../../db/schema'
import { accessVersion, accounts, deviceGroups, devices, notificationDeliveries, notifications, users } from '../../db/schema'
import { type AuditEntry, recordAuditInTransaction } from './audit'
import { type Clock, systemClock } from '../clock'
import { retryWhileBusy } from './busy'
import { groupsRefusedInTransaction } from './people'

/** a channel (or a user's email alerts) as stored */
export type NotificationRow = typeof notifications.$inferSelect
/** a delivery as stored */
export type DeliveryRow = typeof notificationDeliveries.$inferSelect

/** the access_version row that migration 0010's triggers bump on every change to notifications */
export const NOTIFICATIONS_VERSION_ROW = 6
/** the access_version row that moves with a user's role or account (migration 0005): whom a user's own alerts reach */
export const CREDENTIALS_VERSION_ROW = 4

/** Who makes a change, for its audit row. */
export interface NotificationAudit {
  actor: string
  requestId: string | null
}

/** Some groups named are not the account's: those that are. */
export interface GroupsRefused {
  groupsFound: ReadonlySet<string>
}

/** A user's email alerts to save: `address` absent keeps the saved one (`firstAddress` reads it from the stored url). */
export interface PersonalAlerts {
  events: readonly string[]
  enabled: boolean
  address: string | undefined
  firstAddress(url: string): string | undefined
}

export interface NotificationStore {
  /** the account's channels (never a user's own alerts), by name then id, one page */
  list(accountId: string, page: { limit: number; offset: number }): Promise<NotificationRow[]>
  /** the account's channel (id in any case; never a user's own alerts), or null */
  find(accountId: string, id: string): Promise<NotificationRow | null>
  /** Checks the groups and writes the channel with its audit row (one unit of work); the row as stored. */
  create(row: NotificationRow, groupIds: readonly string[], audit: NotificationAudit): Promise<NotificationRow | GroupsRefused>
  /**
   * Sets `fields` (and `groupIds`, checked, when given) on the account's channel with its audit
   * row, updated_at `atMs` (one unit of work); the row as stored, or null when there is no such channel.
   */
  update(accountId: string, id: string, fields: Partial<NotificationRow>, groupIds: readonly string[] | undefined, atMs: number, audit: NotificationAudit): Promise<NotificationRow | GroupsRefused | null>
  /** Deletes the account's channel (its deliveries go with it) with its audit row; false when there is none. */
  remove(accountId: string, id: string, atMs: number, audit: NotificationAudit): Promise<boolean>
  /** the channel's deliveries, newest first, one page */
  deliveries(notificationId: string, page: { limit: number; offset: number }): Promise<DeliveryRow[]>
  /** the account's name ('' when gone): a test delivery names it */
  accountName(accountId: string): Promise<string>
  /** Records a test delivery in the channel's list, unless the channel was deleted meanwhile. */
  recordTest(delivery: typeof notificationDeliveries.$inferInsert): Promise<void>
  /** the user's own email alerts, or null when never saved */
  personal(userId: string): Promise<NotificationRow | null>
  /**
   * Saves the user's email alerts with its audit row (one unit of work), under the account the user
   * is in now: 'no-user' when the user is gone, 'no-address' when none is sent or saved.
   */
  savePersonal(userId: string, alerts: PersonalAlerts, atMs: number, requestId: string | null): Promise<NotificationRow | 'no-user' | 'no-address'>
}

/** what a personal row is called (the admins never see it; a mail's subject does not name it) */
const PERSONAL_ROW_NAME = 'Email alerts'

/** A channel's audit row (both engines' stores). */
export const notificationAuditEntry = (accountId: string, audit: NotificationAudit, action: 'create' | 'update' | 'delete', id: string): AuditEntry => ({
  accountId,
  actor: audit.actor,
  action,
  objectType: 'notification',
  objectId: id,
  requestId: audit.requestId,
})

/** What a save of a user's email alerts sets, under the account the user is in now. */
export const personalFields = (alerts: PersonalAlerts, address: string, accountId: string, atMs: number) => ({
  events: JSON.stringify(alerts.events),
  url: `mailto:${address}`,
  enabled: alerts.enabled,
  accountId,
  updatedAt: atMs,
})

/** A user's email alerts saved for the first time. */
export const newPersonalRow = (userId: string, fields: ReturnType<typeof personalFields>, atMs: number): NotificationRow => ({
  id: crypto.randomUUID(),
  name: PERSONAL_ROW_NAME,
  groups: '[]',
  positions: false,
  channelType: 'email',
  secret: null,
  userId,
  createdAt: atMs,
  ...fields,
})

/** The audit row of a save of a user's email alerts (the user is its actor). */
export const personalAuditEntry = (accountId: string, userId: string, existed: boolean, requestId: string | null): AuditEntry => ({
  accountId,
  actor: userId,
  action: existed ? 'update' : 'create',
  objectType: 'email_alerts',
  objectId: userId,
  requestId,
})

export interface NotificationStoreOptions {
  /** where the write deadline is read (busy retries) */
  clock?: Clock
}

export function createNotificationStore(database: Pick<DatabaseHandle, 'db' | 'sqlite'>, { clock = systemClock }: NotificationStoreOptions = {}): NotificationStore {
  const { db, sqlite } = database
  const write = <T>(work: () => T) => retryWhileBusy(sqlite, work, { clock })

  const accountChannel = (accountId: string, id: string): NotificationRow | null =>
    db
      .select()
      .from(notifications)
      // a user's own email alerts are theirs (/me/email-alerts), not the account's: never shown or touched here
      .where(and(eq(notifications.id, id.toLowerCase()), eq(notifications.accountId, accountId), isNull(notifications.userId)))
      .get() ?? null
  const personal = (userId: string): NotificationRow | null => db.select().from(notifications).where(eq(notifications.userId, userId)).get() ?? null

  return {
    async list(accountId, page) {
      return db
        .select()
        .from(notifications)
        .where(and(eq(notifications.accountId, accountId), isNull(notifications.userId)))
        .orderBy(asc(notifications.name), asc(notifications.id))
        .limit(page.limit)
        .offset(page.offset)
        .all()
    },

    async find(accountId, id) {
      return accountChannel(accountId, id)
    },

    create(row, groupIds, audit) {
      return write(() => {
        const refused = db.transaction(
          (tx) => {
            const refused = groupsRefusedInTransaction(tx, row.accountId, groupIds)
            if (refused) return refused
            tx.insert(notifications).values(row).run()
            recordAuditInTransaction(tx, notificationAuditEntry(row.accountId, audit, 'create', row.id), row.createdAt)
            return null
          },
          { behavior: 'immediate' },
        )
        return refused ?? accountChannel(row.accountId, row.id)!
      })
    },

    update(accountId, id, fields, groupIds, atMs, audit) {
      return write(() => {
        const outcome = db.transaction(
          (tx) => {
            const current = accountChannel(accountId, id)
            if (current === null) return null
            const refused = groupsRefusedInTransaction(tx, accountId, groupIds)
            if (refused) return refused
            tx.update(notifications)
              .set({ ...fields, ...(groupIds !== undefined ? { groups: JSON.stringify(groupIds) } : {}), updatedAt: atMs })
              .where(eq(notifications.id, current.id))
              .run()
            recordAuditInTransaction(tx, notificationAuditEntry(accountId, audit, 'update', current.id), atMs)
            return current
          },
          { behavior: 'immediate' },
        )
        if (outcome === null || 'groupsFound' in outcome) return outcome
        return accountChannel(accountId, id)
      })
    },

    remove(accountId, id, atMs, audit) {
      return write(() =>
        db.transaction(
          (tx) => {
            const current = accountChannel(accountId, id)
            if (current === null) return false
            tx.delete(notifications).where(eq(notifications.id, current.id)).run()
            recordAuditInTransaction(tx, notificationAuditEntry(accountId, audit, 'delete', current.id), atMs)
            return true
          },
          { behavior: 'immediate' },
        ),
      )
    },

    async deliveries(notificationId, page) {
      return db
        .select()
        .from(notificationDeliveries)
        .where(eq(notificationDeliveries.notificationId, notificationId))
        .orderBy(desc(notificationDeliveries.key))
        .limit(page.limit)
        .offset(page.offset)
        .all()
    },

    async accountName(accountId) {
      // accounts is the people store's table: one read of a name, here until that store offers it
      return db.select({ name: accounts.name }).from(accounts).where(eq(accounts.id, accountId)).get()?.name ?? ''
    },

    async recordTest(delivery) {
      await write(() => {
        // the channel may have been deleted meanwhile: then there is no log to write it in
        const still = db.select({ id: notifications.id }).from(notifications).where(eq(notifications.id, delivery.notificationId)).get()
        if (still) db.insert(notificationDeliveries).values(delivery).run()
      })
    },

    async personal(userId) {
      return personal(userId)
    },

    savePersonal(userId, alerts, atMs, requestId) {
      return write(() => {
        const outcome = db.transaction(
          (tx) => {
            // users is the people store's table: the user's account, read in this unit of work
            const owner = tx.select({ accountId: users.accountId }).from(users).where(eq(users.id, userId)).get()
            if (!owner) return 'no-user' as const
            const current = personal(userId)
            const address = alerts.address ?? (current ? alerts.firstAddress(current.url) : undefined)
            if (address === undefined) return 'no-address' as const
            const fields = personalFields(alerts, address, owner.accountId, atMs)
            if (current) tx.update(notifications).set(fields).where(eq(notifications.id, current.id)).run()
            else tx.insert(notifications).values(newPersonalRow(userId, fields, atMs)).run()
            recordAuditInTransaction(tx, personalAuditEntry(owner.accountId, userId, current !== null, requestId), atMs)
            return null
          },
          { behavior: 'immediate' },
        )
        return outcome ?? personal(userId)!
      })
    },
  }
}

/** An enabled channel as the outbox matches it, with its user when it is a user's own alerts. */
export interface OutboxChannelRow {
  id: string
  accountId: string
  /** JSON array of alarm codes, or ["*"] */
  events: string
  /** JSON array of group ids */
  groups: string
  positions: boolean
  userId: string | null
  userRole: string | null
  userAccountId: string | null
}

/** A delivery to write: an event to one channel, or a batch of one device's fixes. */
export interface OutboxDelivery {
  id: string
  notificationId: string
  kind: 'event' | 'positions'
  deviceKey: number
  payload: string
  fixes: number | null
  /** Unix ms: written now, due now */
  now: number
}

/**
 * What ingest's outbox batch reads and writes inside the pipeline's transaction: synchronous, each
 * call on that transaction's connection. The same object for every transaction on a connection.
 */
export interface OutboxInTransaction {
  /** rows 6 and 4 of access_version together: moves when a channel, or a user's role or account, changes */
  version(): number
  /** every enabled channel, with the role and account of the user whose own alerts it is */
  enabledChannels(): OutboxChannelRow[]
  /** the device's id, alias and account, or null when there is no such device */
  device(deviceKey: number): { id: string; alias: string; accountId: string } | null
  /** the ids of the device's groups */
  groupsOf(deviceKey: number): string[]
  /** writes one pending delivery */
  enqueue(delivery: OutboxDelivery): void
}

/**
 * An adapter's own source of the outbox's statements, in place of a connection: PostgreSQL's
 * ingest (src/store/postgres/ingest.ts) answers them from what its batch read ahead, with whom
 * users with alerts of their own reach among the batch's devices.
 */
export interface OutboxSource extends OutboxInTransaction {
  reachOfInTransaction(user: UserPrincipal): (deviceKey: number) => boolean
}

const outboxes = new WeakMap<object, OutboxInTransaction>()

/**
 * The outbox's statements on the connection of `tx` (a Drizzle database or transaction, or the
 * connection itself), prepared once a connection: ingest calls these on every commit, and building
 * Drizzle queries each time cost about 100 µs a call (measured), against a few µs prepared. They
 * join whatever transaction the connection has open. The devices and device_groups reads are
 * their owners' tables, read here until src/store/devices.ts offers them in a transaction.
 */
export function outboxInTransaction(tx: Connectable): OutboxInTransaction {
  const connection = connectionOf(tx)
  let found = outboxes.get(connection)
  if (found) return found
  const db = drizzle(connection, { schema })
  const placeholder = sql.placeholder
  // both rows only grow, so their sum moves when either does (migrations 0010's and 0005's triggers bump them).
  // PostgreSQL: the same rows, bumped by the same triggers in PL/pgSQL
  const version = db
    .select({ version: sql<number>`sum(${accessVersion.version})` })
    .from(accessVersion)
    .where(inArray(accessVersion.id, [NOTIFICATIONS_VERSION_ROW, CREDENTIALS_VERSION_ROW]))
    .prepare()
  const channels = db
    .select({
      id: notifications.id,
      accountId: notifications.accountId,
      events: notifications.events,
      groups: notifications.groups,
      positions: notifications.positions,
      userId: notifications.userId,
      userRole: users.role,
      userAccountId: users.accountId,
    })
    .from(notifications)
    .leftJoin(users, eq(users.id, notifications.userId))
    .where(eq(notifications.enabled, true))
    .prepare()
  const device = db.select({ id: devices.id, alias: devices.alias, accountId: devices.accountId }).from(devices).where(eq(devices.key, placeholder('device'))).prepare()
  const groupsOf = db.select({ id: deviceGroups.groupId }).from(deviceGroups).where(eq(deviceGroups.deviceKey, placeholder('device'))).prepare()
  const insert = db
    .insert(notificationDeliveries)
    .values({
      id: placeholder('id'),
      notificationId: placeholder('notificationId'),
      kind: placeholder('kind'),
      deviceKey: placeholder('deviceKey'),
      payload: placeholder('payload'),
      fixes: placeholder('fixes'),
      status: 'pending',
      attempts: 0,
      nextAttemptAt: placeholder('now'),
      createdAt: placeholder('now'),
    })
    .prepare()
  found = {
    version: () => version.get()?.version ?? 0,
    enabledChannels: () => channels.all(),
    device: (deviceKey) => device.get({ device: deviceKey }) ?? null,
    groupsOf: (deviceKey) => groupsOf.all({ device: deviceKey }).map((g) => g.id),
    enqueue(delivery) {
      insert.run({ ...delivery })
    },
  }
  outboxes.set(connection, found)
  return found
}

/** A pending delivery as the worker reads it. */
export interface QueuedDelivery {
  key: number
  id: string
  notificationId: string
  kind: string
  payload: string | null
  attempts: number
  createdAt: number
  nextAttemptAt: number | null
  fixes: number | null
}

/** An enabled channel with its account's name, as the worker sends to it. */
export interface SendingChannel {
  id: string
  accountId: string
  account: string
  type: string
  url: string
  secret: string | null
  positions: boolean
}

/** What an attempt's outcome writes to its delivery. */
export interface DeliverySettled {
  status: 'pending' | 'delivered' | 'dead'
  attempts: number
  lastStatusCode: number | null
  lastError: string | null
  nextAttemptAt: number | null
  deliveredAt: number | null
  /** a settled batch of fixes is not kept (its count stays) */
  clearPayload: boolean
}

/** How many batches after the head (never sent either) fit in one batch with it, up to `maxFixes` fixes. */
export function mergeableBatches(heads: readonly { attempts: number; fixes: number | null }[], maxFixes: number): number {
  let total = heads[0]?.fixes ?? 0
  let count = 0
  for (const next of heads.slice(1)) {
    if (next.attempts > 0 || total + (next.fixes ?? 0) > maxFixes) break
    total += next.fixes ?? 0
    count++
  }
  return count
}

/** The head batch with the batches taken into it: their payloads (JSON arrays of fixes) joined into one array. */
export function joinedBatches(head: QueuedDelivery, taken: readonly QueuedDelivery[]): { payload: string; fixes: number } {
  const merged = [head, ...taken].flatMap((row) => JSON.parse(row.payload ?? '[]') as unknown[])
  return { payload: JSON.stringify(merged), fixes: merged.length }
}

export interface DeliveryStore {
  /**
   * Pending deliveries: how many, and since when the oldest waits (Unix ms; null when none).
   * Synchronous: the metrics gauges read it as they render (ops/server-metrics.ts).
   */
  pendingStatsNow(): { pending: number; oldestCreatedAt: number | null }
  /** the same, read now (pendingStatsNow on PostgreSQL answers the last such read) */
  pendingStats(): Promise<{ pending: number; oldestCreatedAt: number | null }>
  /** the newest delivery key (0: none) */
  newestKey(): Promise<number>
  /** the channels that deliveries with a key above `key` were written to */
  channelsWrittenAfter(key: number): Promise<string[]>
  /** access_version row 6: moves on every change to a channel, by any process */
  channelsVersion(): Promise<number>
  /** the enabled channels, by id */
  enabledChannels(): Promise<SendingChannel[]>
  /** up to `limit` of the channel's pending event deliveries, by next attempt then writing */
  pendingEvents(channelId: string, limit: number): Promise<QueuedDelivery[]>
  /** up to `limit` of the channel's pending batches of fixes, oldest first */
  pendingBatches(channelId: string, limit: number): Promise<QueuedDelivery[]>
  /**
   * Before the first attempt of the channel's oldest batch: takes the batches written after it
   * that fit (mergeableBatches) into it, in one unit of work. The head as it now is, with its
   * payload (unchanged when it is no longer `headKey`'s or there was nothing to take).
   */
  mergeBatches(channelId: string, headKey: number, maxFixes: number): Promise<QueuedDelivery>
  /** the keys of up to `limit` of the channel's queued deliveries due before `until` (Unix ms) */
  dueBefore(channelId: string, until: number, limit: number): Promise<number[]>
  /** moves the channel's queued deliveries due before `until` to `until` (a backed-off channel's pause) */
  holdUntil(channelId: string, until: number): Promise<void>
  /** deletes up to `limit` delivered or dead deliveries written before `before` (Unix ms); how many */
  prune(before: number, limit: number): Promise<number>
  /**
   * Takes the delivery for one attempt by this node: the row as it is now (its payload may have
   * grown by a merge), or null when it is no longer pending with `attempts` attempts made (settled
   * or attempted since it was read) or is under way on another node. Each delivery claimed is
   * given back with `release` once its outcome is settled or the attempt cut off. SQLite (one
   * process): the row read again. PostgreSQL: a lock that dies with the node's connection.
   */
  claim(key: number, attempts: number): Promise<QueuedDelivery | null>
  /** gives back a delivery this node claimed (nothing when it holds none) */
  release(key: number): Promise<void>
  /**
   * Writes an attempt's outcome to the delivery if it is still pending with the attempts made
   * before this one (`outcome.attempts - 1`: an attempt's outcome is written once), retried while
   * another process holds the write lock.
   */
  settle(key: number, outcome: DeliverySettled): Promise<void>
}

/** the kinds the worker sends (a test delivery is sent by the API, never pending) */
export const QUEUED_KINDS = ['event', 'positions']

export function createDeliveryStore(database: Pick<DatabaseHandle, 'db' | 'sqlite'>, { clock = systemClock }: NotificationStoreOptions = {}): DeliveryStore {
  const { db, sqlite } = database
  const placeholder = sql.placeholder
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
  // prepared once: a look (after every commit and every attempt that ends) runs these
  const stats = db
    .select({ pending: sql<number>`count(*)`, oldest: sql<number | null>`min(${notificationDeliveries.createdAt})` })
    .from(notificationDeliveries)
    .where(eq(notificationDeliveries.status, 'pending'))
    .prepare()
  const newestKey = db.select({ key: sql<number | null>`max(${notificationDeliveries.key})` }).from(notificationDeliveries).prepare()
  const writtenAfter = db
    .selectDistinct({ channel: notificationDeliveries.notificationId })
    .from(notificationDeliveries)
    .where(gt(notificationDeliveries.key, placeholder('key')))
    .prepare()
  // row 6, bumped by migration 0010's triggers. PostgreSQL: the same row and triggers in PL/pgSQL
  const channelsVersion = db.select({ version: accessVersion.version }).from(accessVersion).where(eq(accessVersion.id, NOTIFICATIONS_VERSION_ROW)).prepare()
  const enabledChannels = db
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
    .orderBy(asc(notifications.id))
    .prepare()
  const pendingEvents = db
    .select(columns)
    .from(notificationDeliveries)
    .where(and(eq(notificationDeliveries.notificationId, placeholder('channel')), eq(notificationDeliveries.kind, 'event'), eq(notificationDeliveries.status, 'pending')))
    .orderBy(asc(notificationDeliveries.nextAttemptAt), asc(notificationDeliveries.key))
    .limit(placeholder('limit'))
    .prepare()
  /** a channel's oldest pending batches of fixes, oldest first */
  const pendingBatches = (tx: Pick<Db, 'select'>, channelId: string, limit: number) =>
    tx
      .select(columns)
      .from(notificationDeliveries)
      .where(and(eq(notificationDeliveries.notificationId, channelId), eq(notificationDeliveries.kind, 'positions'), eq(notificationDeliveries.status, 'pending')))
      .orderBy(asc(notificationDeliveries.key))
      .limit(limit)
      .all()
  // a channel's queued deliveries due before `until`: the rows a backoff holds back
  const pendingBeforeUntil = and(
    eq(notificationDeliveries.notificationId, placeholder('channel')),
    inArray(notificationDeliveries.kind, QUEUED_KINDS),
    eq(notificationDeliveries.status, 'pending'),
    lt(notificationDeliveries.nextAttemptAt, placeholder('until')),
  )
  const dueBefore = db
    .select({ key: notificationDeliveries.key })
    .from(notificationDeliveries)
    .where(pendingBeforeUntil)
    .limit(placeholder('limit'))
    .prepare()
  const holdUntil = db
    .update(notificationDeliveries)
    .set({ nextAttemptAt: sql`${placeholder('until')}` })
    .where(pendingBeforeUntil)
    .prepare()

  const claimable = db
    .select(columns)
    .from(notificationDeliveries)
    .where(and(eq(notificationDeliveries.key, placeholder('key')), eq(notificationDeliveries.status, 'pending'), eq(notificationDeliveries.attempts, placeholder('attempts'))))
    .prepare()
  const pendingStatsNow = () => {
    const row = stats.get()
    return { pending: row?.pending ?? 0, oldestCreatedAt: row?.oldest ?? null }
  }

  return {
    pendingStatsNow,
    async pendingStats() {
      return pendingStatsNow()
    },
    async newestKey() {
      return newestKey.get()?.key ?? 0
    },
    async channelsWrittenAfter(key) {
      return writtenAfter.all({ key }).map((row) => row.channel)
    },
    async channelsVersion() {
      return channelsVersion.get()?.version ?? 0
    },
    async enabledChannels() {
      return enabledChannels.all()
    },
    async pendingEvents(channelId, limit) {
      return pendingEvents.all({ channel: channelId, limit })
    },
    async pendingBatches(channelId, limit) {
      return pendingBatches(db, channelId, limit)
    },
    async mergeBatches(channelId, headKey, maxFixes) {
      return db.transaction(
        (tx) => {
          const heads = pendingBatches(tx, channelId, maxFixes)
          const first = heads[0]!
          const taken = heads.slice(1, 1 + mergeableBatches(heads, maxFixes))
          if (first.key !== headKey || taken.length === 0) return first
          const joined = joinedBatches(first, taken)
          tx.update(notificationDeliveries).set(joined).where(eq(notificationDeliveries.key, first.key)).run()
          tx.delete(notificationDeliveries).where(inArray(notificationDeliveries.key, taken.map((row) => row.key))).run()
          return { ...first, ...joined }
        },
        { behavior: 'immediate' },
      )
    },
    async dueBefore(channelId, until, limit) {
      return dueBefore.all({ channel: channelId, until, limit }).map((row) => row.key)
    },
    async holdUntil(channelId, until) {
      holdUntil.run({ channel: channelId, until })
    },
    async prune(before, limit) {
      const old = db
        .select({ key: notificationDeliveries.key })
        .from(notificationDeliveries)
        .where(and(inArray(notificationDeliveries.status, ['delivered', 'dead']), lt(notificationDeliveries.createdAt, before)))
        .limit(limit)
      // bun:sqlite reports the rows deleted as `changes`. PostgreSQL: the DELETE's row count (a LIMIT in the subquery works the same)
      const { changes } = db.delete(notificationDeliveries).where(inArray(notificationDeliveries.key, old)).run() as unknown as { changes: number }
      return changes
    },
    async claim(key, attempts) {
      // one process: nobody else attempts it; the row as it is now, if still as it was read
      return claimable.get({ key, attempts }) ?? null
    },
    async release() {},
    async settle(key, outcome) {
      const { clearPayload, ...fields } = outcome
      await retryWhileBusy(
        sqlite,
        () =>
          db
            .update(notificationDeliveries)
            .set({ ...fields, ...(clearPayload ? { payload: null } : {}) })
            .where(and(eq(notificationDeliveries.key, key), eq(notificationDeliveries.status, 'pending'), eq(notificationDeliveries.attempts, outcome.attempts - 1)))
            .run(),
        { clock },
      )
    },
  }
}
