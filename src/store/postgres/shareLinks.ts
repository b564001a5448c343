/**
 * Share links on PostgreSQL: src/store/shareLinks.ts's store over the schema's PostgreSQL twin,
 * and its in-transaction writers for the units of work that change who reaches what (the rule
 * they keep is explained there).
 */
import { and, asc, count, desc, eq, gt, inArray, ne, notExists, type SQL, sql } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import { LRUCache } from 'lru-cache'
import type { PgConnectable, PgTx, PostgresHandle } from '../../../db/postgres/client'
import { accounts, devices, shareLinkDevices, shareLinks, shareViewers, users } from '../../../db/postgres/schema'
import { type CreatorFull, decodeLink, type EndedLinks, linkColumnsOf, type LinkState, type PendingViews, type ShareLinkStore, type ShareLinkStoreOptions } from '../shareLinks'
import { systemClock } from '../../clock'
import { createPostgresDeferredWrites } from './deferred'
import { unitOfWork } from './unit'
import { byCodePoint } from './order'

/** shareLinks.ts's writer of the same name: a device moved to `accountId` leaves other accounts' links. */
export async function removeFromOtherAccountsLinksInTransaction(tx: PgConnectable, deviceKey: number, accountId: string, now: number): Promise<void> {
  const left = await tx
    .delete(shareLinkDevices)
    .where(
      and(
        eq(shareLinkDevices.deviceKey, deviceKey),
        inArray(shareLinkDevices.linkId, tx.select({ id: shareLinks.id }).from(shareLinks).where(ne(shareLinks.accountId, accountId))),
      ),
    )
    .returning({ linkId: shareLinkDevices.linkId })
  for (const { linkId } of left) {
    await tx
      .update(shareLinks)
      .set({ revoked: true, updatedAt: now })
      .where(
        and(
          eq(shareLinks.id, linkId),
          eq(shareLinks.revoked, false),
          notExists(tx.select({ one: sql`1` }).from(shareLinkDevices).where(eq(shareLinkDevices.linkId, linkId))),
        ),
      )
  }
}

/** Whether the creator of the link `link` reaches the device `deviceKey`: shareLinks.ts's rule. */
function creatorReaches(link: SQL, deviceKey: SQL): SQL {
  return sql`EXISTS (
    SELECT 1 FROM share_links l
    JOIN users u ON u.id = l.created_by AND u.account_id = l.account_id
    JOIN devices d ON d.key = ${deviceKey} AND d.account_id = u.account_id
    WHERE l.id = ${link} AND (u.role = 'admin' OR EXISTS (
      SELECT 1 FROM user_groups ug JOIN device_groups dg ON dg.group_id = ug.group_id WHERE ug.user_id = u.id AND dg.device_key = ${deviceKey})))`
}

/** shareLinks.ts's writer of the same name: links keep only what their creator still reaches. */
export async function endLinksBeyondCreatorsReachInTransaction(tx: PgConnectable, accountId: string | null, now: number): Promise<EndedLinks> {
  const ofAccount = accountId === null ? sql`true` : sql`account_id = ${accountId}`
  const revoked = await tx.execute(sql`
    UPDATE share_links SET revoked = true, updated_at = ${now}
    WHERE ${ofAccount} AND NOT revoked AND NOT EXISTS (
      SELECT 1 FROM share_link_devices s WHERE s.link_id = share_links.id AND ${creatorReaches(sql`share_links.id`, sql`s.device_key`)})`)
  const removed = await tx.execute(sql`
    DELETE FROM share_link_devices
    WHERE link_id IN (SELECT id FROM share_links WHERE ${ofAccount} AND NOT revoked)
      AND NOT ${creatorReaches(sql`share_link_devices.link_id`, sql`share_link_devices.device_key`)}`)
  return { revoked: revoked.count, removed: removed.count }
}

const LINK_COLUMNS = linkColumnsOf(shareLinks)

/** the column is one of the ids, bound as one text[] parameter whatever their number (SQLite's json_each) */
const oneOf = (column: SQL | AnyPgColumn, ids: readonly string[]) => sql`${column} = ANY(${sql.param([...ids])}::text[])`

/** text in SQLite's order (bytes), whatever the database's collation */

/** links whose state `linkStateNow` keeps (those resolved by token on this node, and those it wrote) */
const MAX_KNOWN_STATES = 20_000
/** how old the kept states may grow before a call of `linkStateNow` reads them again in the background */
const STATE_REFRESH_MS = 1000
/** rounds of a views write that follow views arriving meanwhile before it leaves them to the next write */
const MAX_VIEW_ROUNDS = 5

/**
 * shareLinks.ts's store over PostgreSQL. The differences a reader may want:
 *
 * - the creator's limit of active links is checked under a lock of the creator's row (`FOR NO KEY
 *   UPDATE`, which a share link's own foreign key check does not wait for): two links made at once
 *   by one creator cannot both pass, as SQLite's `BEGIN IMMEDIATE` ensures there;
 * - `linkStateNow` answers synchronously from states this node keeps: every link resolved by its
 *   token here or written here, read again (one statement for all) whenever row 3 of access_version
 *   is announced (a link revoked, devices leaving a link, its creator deleted: by any node), and in
 *   the background once they are older than a second when it is called (a link's expiry patched on
 *   another node). A link it does not know yet answers null, and is read in the background for the
 *   next call;
 * - views are written in one transaction with `written()` called only once nothing arrived while it
 *   ran: the writes are idempotent (a viewer counted twice is skipped), so views arriving meanwhile
 *   are written in a further round rather than forgotten with the rest.
 */
export function createPostgresShareLinkStore(database: PostgresHandle, { clock = systemClock }: ShareLinkStoreOptions = {}): ShareLinkStore {
  const { db } = database

  const states = new LRUCache<string, LinkState>({ max: MAX_KNOWN_STATES })
  let statesReadAt = 0
  let refreshing = false
  let again = false
  async function readStates(): Promise<void> {
    const ids = [...states.keys()]
    statesReadAt = clock.now()
    if (ids.length === 0) return
    try {
      const rows = await db
        .select({ id: shareLinks.id, revoked: shareLinks.revoked, expiresAt: shareLinks.expiresAt, createdBy: shareLinks.createdBy })
        .from(shareLinks)
        .where(oneOf(shareLinks.id, ids))
      const found = new Map(rows.map(({ id, ...state }) => [id, state]))
      // a link gone (its account deleted) serves no more
      for (const id of ids) {
        const state = found.get(id)
        if (state) states.set(id, state)
        else states.delete(id)
      }
    } catch {
      // kept as they were: the next announcement or call tries again
      statesReadAt = 0
    }
  }
  /** reads the kept states again; asked while a read runs, reads once more after it (that read may predate the change) */
  async function refreshStates(): Promise<void> {
    if (refreshing) {
      again = true
      return
    }
    refreshing = true
    try {
      do {
        again = false
        await readStates()
      } while (again)
    } finally {
      refreshing = false
    }
  }
  database.versions.onChange((ids) => {
    if (ids.includes(3)) void refreshStates()
  })
  const keepState = (id: string, state: LinkState) => states.set(id, state)

  /** how many active links the creator has, when it is `maxActive` or more; under the creator's row lock */
  async function creatorFull(tx: PgTx, userId: string, now: number, maxActive: number): Promise<CreatorFull | null> {
    await tx.execute(sql`SELECT 1 FROM ${users} WHERE ${users.id} = ${userId} FOR NO KEY UPDATE`)
    const [row] = await tx
      .select({ n: count() })
      .from(shareLinks)
      .where(and(eq(shareLinks.createdBy, userId), eq(shareLinks.revoked, false), gt(shareLinks.expiresAt, now)))
    const made = row?.n ?? 0
    return made >= maxActive ? { full: made } : null
  }
  async function insertDevices(tx: PgTx, linkId: string, deviceKeys: readonly number[]): Promise<void> {
    if (deviceKeys.length === 0) return
    await tx.insert(shareLinkDevices).values(deviceKeys.map((deviceKey, ordinal) => ({ linkId, deviceKey, ordinal })))
  }
  async function stateOf(tx: PgConnectable, id: string): Promise<LinkState | null> {
    const [row] = await tx
      .select({ revoked: shareLinks.revoked, expiresAt: shareLinks.expiresAt, createdBy: shareLinks.createdBy })
      .from(shareLinks)
      .where(eq(shareLinks.id, id))
    return row ?? null
  }

  /**
   * writes the views given (one transaction); idempotent: a viewer already counted adds nothing.
   * The links in one order on every node, so that two nodes' writes wait for each other rather than deadlock.
   */
  async function writeViews(links: ReadonlyMap<string, PendingViews>): Promise<void> {
    const ordered = [...links].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    await unitOfWork(database, async (tx) => {
      for (const [linkId, views] of ordered) {
        let added = 0
        if (views.viewers.size > 0) {
          // the link may have gone (its account deleted) while its views waited: then they go too
          const viewers = [...views.viewers].map(([viewer, at]) => ({ viewer, at }))
          const inserted = await tx.execute(sql`
            INSERT INTO ${shareViewers} (link_id, viewer, first_seen_at)
            SELECT l.id, v.viewer, v.at FROM ${shareLinks} l, jsonb_to_recordset(${JSON.stringify(viewers)}::jsonb) AS v(viewer text, at bigint)
            WHERE l.id = ${linkId}
            ON CONFLICT DO NOTHING`)
          added = inserted.count
        }
        await tx
          .update(shareLinks)
          .set({ uniqueViews: sql`${shareLinks.uniqueViews} + ${added}`, lastAccessedAt: sql`greatest(coalesce(${shareLinks.lastAccessedAt}, 0), ${views.lastAccessedAt})` })
          .where(eq(shareLinks.id, linkId))
      }
    })
  }

  return {
    async linkOfAccount(id, accountId) {
      const [row] = await db
        .select(LINK_COLUMNS)
        .from(shareLinks)
        .where(and(eq(shareLinks.id, id), eq(shareLinks.accountId, accountId)))
      return row ? decodeLink(row) : null
    },
    async activeLinks(accountId, now) {
      const rows = await db
        .select(LINK_COLUMNS)
        .from(shareLinks)
        .where(and(eq(shareLinks.accountId, accountId), eq(shareLinks.revoked, false), gt(shareLinks.expiresAt, now)))
        .orderBy(desc(shareLinks.createdAt), byCodePoint(shareLinks.id))
      return rows.map(decodeLink)
    },
    async devicesOf(linkIds) {
      if (linkIds.length === 0) return []
      return db
        .select({ linkId: shareLinkDevices.linkId, key: devices.key, id: devices.id })
        .from(shareLinkDevices)
        .innerJoin(devices, eq(devices.key, shareLinkDevices.deviceKey))
        .where(oneOf(shareLinkDevices.linkId, linkIds))
        .orderBy(byCodePoint(shareLinkDevices.linkId), asc(shareLinkDevices.ordinal))
    },
    async linkByShortCode(code) {
      const [row] = await db
        .select({ token: shareLinks.token, revoked: shareLinks.revoked, expiresAt: shareLinks.expiresAt })
        .from(shareLinks)
        .where(eq(shareLinks.shortCode, code))
      return row ?? null
    },
    async linkByToken(token) {
      // the device keys in the link's order, in the same statement
      const [row] = await db
        .select({
          id: shareLinks.id,
          accountId: shareLinks.accountId,
          createdBy: shareLinks.createdBy,
          acl: shareLinks.acl,
          revoked: shareLinks.revoked,
          expiresAt: shareLinks.expiresAt,
          deviceKeys: sql<number[]>`array(SELECT ${shareLinkDevices.deviceKey} FROM ${shareLinkDevices} WHERE ${shareLinkDevices.linkId} = ${shareLinks.id} ORDER BY ${shareLinkDevices.ordinal})`,
        })
        .from(shareLinks)
        .where(eq(shareLinks.token, token))
      if (!row) return null
      keepState(row.id, { revoked: row.revoked, expiresAt: row.expiresAt, createdBy: row.createdBy })
      return { ...decodeLink(row), deviceKeys: row.deviceKeys.map(Number) }
    },
    linkDevicesVersion() {
      return database.versions.current(3)
    },
    async viewerCounted(linkId, viewer) {
      const [row] = await db
        .select({ found: sql<number>`1` })
        .from(shareViewers)
        .where(and(eq(shareViewers.linkId, linkId), eq(shareViewers.viewer, viewer)))
      return row !== undefined
    },
    async accountName(accountId) {
      const [row] = await db.select({ name: accounts.name }).from(accounts).where(eq(accounts.id, accountId))
      return row?.name ?? null
    },
    linkStateNow(id) {
      if (clock.now() - statesReadAt >= STATE_REFRESH_MS) void refreshStates()
      const state = states.get(id)
      // not resolved here (or forgotten): known from the next call on
      if (state === undefined) void stateOf(db, id).then((found) => found && !states.has(id) && keepState(id, found), () => {})
      return state ?? null
    },

    async create(link, maxActive) {
      try {
        const made = await unitOfWork(database, async (tx) => {
          const full = await creatorFull(tx, link.createdBy, link.now, maxActive)
          if (full) return full
          await tx.insert(shareLinks).values({
            id: link.id,
            accountId: link.accountId,
            createdBy: link.createdBy,
            token: link.token,
            shortCode: link.shortCode,
            acl: JSON.stringify(link.acl),
            revoked: false,
            expiresAt: link.expiresAt,
            uniqueViews: 0,
            createdAt: link.now,
            updatedAt: link.now,
          })
          await insertDevices(tx, link.id, link.deviceKeys)
          return 'made' as const
        })
        if (made === 'made') keepState(link.id, { revoked: false, expiresAt: link.expiresAt, createdBy: link.createdBy })
        return made
      } catch (error) {
        if (uniqueViolated(error) === 'share_links_short_code') return 'code-taken'
        throw error
      }
    },

    async update(id, change, maxActive) {
      const updated = await unitOfWork(database, async (tx) => {
        if (change.reviveFor !== null) {
          const full = await creatorFull(tx, change.reviveFor, change.now, maxActive)
          if (full) return full
        }
        await tx
          .update(shareLinks)
          .set({
            ...(change.expiresAt === null ? {} : { expiresAt: change.expiresAt }),
            ...(change.acl === null ? {} : { acl: JSON.stringify(change.acl) }),
            updatedAt: change.now,
          })
          .where(eq(shareLinks.id, id))
        if (change.deviceKeys) {
          await tx.delete(shareLinkDevices).where(eq(shareLinkDevices.linkId, id))
          await insertDevices(tx, id, change.deviceKeys)
        }
        return stateOf(tx, id)
      })
      if (updated !== null && 'full' in updated) return updated
      if (updated) keepState(id, updated)
      return 'updated'
    },

    async revoke(id, now) {
      await unitOfWork(database, async (tx) => {
        await tx.update(shareLinks).set({ revoked: true, updatedAt: now }).where(eq(shareLinks.id, id))
      })
      const state = states.get(id)
      if (state) keepState(id, { ...state, revoked: true })
    },

    deferViews(options) {
      const deferred = createPostgresDeferredWrites({
        delayMs: options.delayMs,
        hasPending: options.hasPending,
        async write() {
          const written = new Map<string, { viewers: Set<string>; lastAccessedAt: number }>()
          for (let round = 0; ; round++) {
            // what waits and was not written yet (a copy: views go on arriving while the write awaits)
            const unwritten = new Map<string, PendingViews>()
            for (const [linkId, views] of options.pending()) {
              const before = written.get(linkId)
              const viewers = new Map([...views.viewers].filter(([viewer]) => !before?.viewers.has(viewer)))
              if (viewers.size > 0 || before === undefined || views.lastAccessedAt > before.lastAccessedAt) {
                unwritten.set(linkId, { viewers, lastAccessedAt: views.lastAccessedAt })
              }
            }
            // nothing arrived since the last commit: forget it all, with no await in between
            if (unwritten.size === 0) return options.written()
            if (round === MAX_VIEW_ROUNDS) return deferred.schedule()
            await writeViews(unwritten)
            for (const [linkId, views] of unwritten) {
              const before = written.get(linkId) ?? { viewers: new Set<string>(), lastAccessedAt: 0 }
              for (const viewer of views.viewers.keys()) before.viewers.add(viewer)
              before.lastAccessedAt = Math.max(before.lastAccessedAt, views.lastAccessedAt)
              written.set(linkId, before)
            }
          }
        },
        log: options.log,
        failure: options.failure,
        context: options.context,
      })
      return deferred
    },
  }
}

/** the constraint (or unique index) a unique violation names, or null when `error` is none */
function uniqueViolated(error: unknown): string | null {
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    const { code, constraint_name: constraint } = cause as { code?: string; constraint_name?: string }
    if (code === '23505') return constraint ?? ''
  }
  return null
}
