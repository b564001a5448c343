/**
 * The owner of share_links, share_link_devices and share_viewers: how a link is stored (its acl
 * as a JSON array), the reads of the share service and its token cache, and the units of work
 * that change links (a link with its devices; a patch; a revoke; the background write of views).
 * Writes wait for another process's write lock asynchronously (store/busy.ts: Timeout after 5 s).
 *
 * Other owners' units of work that change who reaches what (users, groups, devices, an import)
 * end the links beyond their creators' reach in their own transaction, through the
 * `…InTransaction` writers below (for store adapters only; services never call them).
 *
 * SQLite-only, each with its PostgreSQL equivalent: `json_each` (`jsonb_array_elements_text`);
 * the two-argument scalar `max` (`greatest`); booleans as 0/1 in the hand-written conditions of
 * `endLinksBeyondCreatorsReachInTransaction` (`false`/`true`); the access_version triggers of
 * migrations 0003 and 0015 that deleting link devices or revoking links moves (the same triggers
 * in PL/pgSQL). A viewer counted twice is skipped with `ON CONFLICT DO NOTHING`, which both speak.
 */
import type { Changes } from 'bun:sqlite'
import { and, asc, count, desc, eq, gt, inArray, ne, notExists, sql, type SQL } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { connectionOf, type Connectable, type DatabaseHandle } from '../../db/client'
import * as schema from '../../db/schema'
import { accessVersion, accounts, devices, shareLinkDevices, shareLinks, shareViewers } from '../../db/schema'
import { type Clock, systemClock } from '../clock'
import type { Logger } from '../log'
import { retryWhileBusy } from './busy'
import { createDeferredWrites, type DeferredWrites } from './deferred'

/** A link as stored. */
export interface StoredLink {
  id: string
  accountId: string
  /** null only on a revoked link whose creator was deleted */
  createdBy: string | null
  token: string
  shortCode: string
  acl: string[]
  revoked: boolean
  /** Unix ms */
  expiresAt: number
  uniqueViews: number
  lastAccessedAt: number | null
  createdAt: number
}

/** One device of a link: its key (for access decisions) and id (for bodies). */
export interface LinkDevice {
  linkId: string
  key: number
  id: string
}

/** What the token cache keeps of a link. */
export interface LinkOfToken {
  id: string
  accountId: string
  createdBy: string | null
  acl: string[]
  revoked: boolean
  expiresAt: number
  /** in the link's order */
  deviceKeys: number[]
}

/** Whether a link still serves: what a long-lived stream reads again and again. */
export interface LinkState {
  revoked: boolean
  expiresAt: number
  createdBy: string | null
}

export interface NewLink {
  id: string
  accountId: string
  createdBy: string
  token: string
  shortCode: string
  acl: string[]
  expiresAt: number
  /** in the link's order */
  deviceKeys: number[]
  /** Unix ms: created_at and updated_at */
  now: number
}

export interface LinkChange {
  /** null: unchanged */
  expiresAt: number | null
  acl: string[] | null
  /** the new device list, in order; null: unchanged */
  deviceKeys: number[] | null
  now: number
  /** a revived link counts again against this creator's active links (checked in the same unit of work) */
  reviveFor: string | null
}

/** A creator already at their limit of active links: how many they have. */
export interface CreatorFull {
  full: number
}

/** Views of one link not yet written: new viewers (with when each was first seen) and the newest access. */
export interface PendingViews {
  viewers: ReadonlyMap<string, number>
  lastAccessedAt: number
}

export interface DeferredViewsOptions {
  delayMs: number
  /** what waits, by link id: written in one transaction */
  pending(): Iterable<[string, PendingViews]>
  hasPending(): boolean
  /** called once what `pending()` gave has committed */
  written(): void
  log: Logger
  failure: string
  context?(): Record<string, unknown>
}

export interface ShareLinkStore {
  /** the link of the account, or null */
  linkOfAccount(id: string, accountId: string): Promise<StoredLink | null>
  /** the account's links neither revoked nor expired at `now`, newest first */
  activeLinks(accountId: string, now: number): Promise<StoredLink[]>
  /** the devices of the links, each link's in its order */
  devicesOf(linkIds: readonly string[]): Promise<LinkDevice[]>
  linkByShortCode(code: string): Promise<{ token: string; revoked: boolean; expiresAt: number } | null>
  linkByToken(token: string): Promise<LinkOfToken | null>
  /** row 3 of access_version: moves when devices leave links or links are revoked, by any process */
  linkDevicesVersion(): Promise<number>
  /** whether the viewer has been counted for the link already */
  viewerCounted(linkId: string, viewer: string): Promise<boolean>
  /** the name of the account, or null */
  accountName(accountId: string): Promise<string | null>
  /**
   * Synchronous, for the callers that read it inside synchronous code (stream/service.ts's
   * heartbeat and fan-out, admin/me.ts): a second engine keeps it from a state it holds current.
   */
  linkStateNow(id: string): LinkState | null

  /**
   * The link and its devices, unless its creator already has `maxActive` active links (checked in
   * the same unit of work, so two at once cannot both pass); 'code-taken' when the short code clashes.
   */
  create(link: NewLink, maxActive: number): Promise<'made' | 'code-taken' | CreatorFull>
  /** the fields given, in one unit of work; a revival first checks the creator's room */
  update(id: string, change: LinkChange, maxActive: number): Promise<'updated' | CreatorFull>
  revoke(id: string, now: number): Promise<void>
  /** the background writer of views (store/deferred.ts): never on a request's path */
  deferViews(options: DeferredViewsOptions): DeferredWrites
}

export interface ShareLinkStoreOptions {
  /** the write deadline's clock */
  clock?: Clock
}

const LINK_COLUMN_NAMES = ['id', 'accountId', 'createdBy', 'token', 'shortCode', 'acl', 'revoked', 'expiresAt', 'uniqueViews', 'lastAccessedAt', 'createdAt'] as const satisfies readonly (keyof StoredLink)[]

/** The columns a read of a link selects (StoredLink before its acl is decoded), of either engine's share_links. */
export function linkColumnsOf<T extends Record<keyof StoredLink, unknown>>(table: T): Pick<T, (typeof LINK_COLUMN_NAMES)[number]> {
  return Object.fromEntries(LINK_COLUMN_NAMES.map((name) => [name, table[name]])) as never
}

const LINK_COLUMNS = linkColumnsOf(shareLinks)

const decodeAcl = (acl: string): string[] => JSON.parse(acl) as string[]
/** a row of share_links with its acl decoded (both engines' adapters) */
export const decodeLink = <T extends { acl: string }>(row: T): Omit<T, 'acl'> & { acl: string[] } => ({ ...row, acl: decodeAcl(row.acl) })

export function createShareLinkStore(database: Pick<DatabaseHandle, 'sqlite'>, { clock = systemClock }: ShareLinkStoreOptions = {}): ShareLinkStore {
  const { sqlite } = database
  const db = drizzle(sqlite, { schema })
  const placeholder = sql.placeholder

  const linkOfAccount = db
    .select(LINK_COLUMNS)
    .from(shareLinks)
    .where(and(eq(shareLinks.id, placeholder('id')), eq(shareLinks.accountId, placeholder('account'))))
    .prepare()
  const activeLinks = db
    .select(LINK_COLUMNS)
    .from(shareLinks)
    .where(and(eq(shareLinks.accountId, placeholder('account')), eq(shareLinks.revoked, false), gt(shareLinks.expiresAt, placeholder('now'))))
    .orderBy(desc(shareLinks.createdAt), asc(shareLinks.id))
    .prepare()
  // the ids as one JSON array: one prepared statement whatever their number
  const devicesOf = db
    .select({ linkId: shareLinkDevices.linkId, key: devices.key, id: devices.id })
    .from(shareLinkDevices)
    .innerJoin(devices, eq(devices.key, shareLinkDevices.deviceKey))
    .where(sql`${shareLinkDevices.linkId} IN (SELECT value FROM json_each(${placeholder('ids')}))`)
    .orderBy(asc(shareLinkDevices.linkId), asc(shareLinkDevices.ordinal))
    .prepare()
  const linkState = db
    .select({ revoked: shareLinks.revoked, expiresAt: shareLinks.expiresAt, createdBy: shareLinks.createdBy })
    .from(shareLinks)
    .where(eq(shareLinks.id, placeholder('id')))
    .prepare()
  const linkByCode = db
    .select({ token: shareLinks.token, revoked: shareLinks.revoked, expiresAt: shareLinks.expiresAt })
    .from(shareLinks)
    .where(eq(shareLinks.shortCode, placeholder('code')))
    .prepare()
  const linkByToken = db
    .select({ id: shareLinks.id, accountId: shareLinks.accountId, createdBy: shareLinks.createdBy, acl: shareLinks.acl, revoked: shareLinks.revoked, expiresAt: shareLinks.expiresAt })
    .from(shareLinks)
    .where(eq(shareLinks.token, placeholder('token')))
    .prepare()
  const deviceKeysOf = db
    .select({ deviceKey: shareLinkDevices.deviceKey })
    .from(shareLinkDevices)
    .where(eq(shareLinkDevices.linkId, placeholder('link')))
    .orderBy(asc(shareLinkDevices.ordinal))
    .prepare()
  const linkDevicesVersion = db.select({ version: accessVersion.version }).from(accessVersion).where(eq(accessVersion.id, 3)).prepare()
  const viewerCounted = db
    .select({ found: sql<number>`1` })
    .from(shareViewers)
    .where(and(eq(shareViewers.linkId, placeholder('link')), eq(shareViewers.viewer, placeholder('viewer'))))
    .prepare()
  const accountName = db.select({ name: accounts.name }).from(accounts).where(eq(accounts.id, placeholder('id'))).prepare()

  const activeLinksMadeBy = db
    .select({ n: count() })
    .from(shareLinks)
    .where(and(eq(shareLinks.createdBy, placeholder('user')), eq(shareLinks.revoked, false), gt(shareLinks.expiresAt, placeholder('now'))))
    .prepare()
  const insertLink = db
    .insert(shareLinks)
    .values({
      id: placeholder('id'),
      accountId: placeholder('account'),
      createdBy: placeholder('user'),
      token: placeholder('token'),
      shortCode: placeholder('code'),
      acl: placeholder('acl'),
      revoked: false,
      expiresAt: placeholder('expires'),
      uniqueViews: 0,
      createdAt: placeholder('now'),
      updatedAt: placeholder('now'),
    })
    .prepare()
  const insertDevice = db
    .insert(shareLinkDevices)
    .values({ linkId: placeholder('link'), deviceKey: placeholder('device'), ordinal: placeholder('ordinal') })
    .prepare()
  const deleteDevices = db.delete(shareLinkDevices).where(eq(shareLinkDevices.linkId, placeholder('link'))).prepare()
  const updateLink = db
    .update(shareLinks)
    .set({
      expiresAt: sql`coalesce(${placeholder('expires')}, ${shareLinks.expiresAt})`,
      acl: sql`coalesce(${placeholder('acl')}, ${shareLinks.acl})`,
      updatedAt: sql`${placeholder('now')}`,
    })
    .where(eq(shareLinks.id, placeholder('id')))
    .prepare()
  const revokeLink = db
    .update(shareLinks)
    .set({ revoked: true, updatedAt: sql`${placeholder('now')}` })
    .where(eq(shareLinks.id, placeholder('id')))
    .prepare()
  // the link may have gone (its account deleted) while its views waited: then they go too
  const insertViewer = db
    .insert(shareViewers)
    .select(
      db
        .select({ linkId: sql`${placeholder('link')}`.as('link_id'), viewer: sql`${placeholder('viewer')}`.as('viewer'), firstSeenAt: sql`${placeholder('at')}`.as('first_seen_at') })
        .from(shareLinks)
        .where(eq(shareLinks.id, placeholder('link'))),
    )
    .onConflictDoNothing()
    .prepare()
  const writeViews = db
    .update(shareLinks)
    .set({
      uniqueViews: sql`${shareLinks.uniqueViews} + ${placeholder('added')}`,
      // SQLite's scalar max; PostgreSQL: greatest
      lastAccessedAt: sql`max(coalesce(${shareLinks.lastAccessedAt}, 0), ${placeholder('at')})`,
    })
    .where(eq(shareLinks.id, placeholder('id')))
    .prepare()

  const changes = (result: unknown) => (result as Changes).changes

  /** how many active links the creator has, when it is `maxActive` or more */
  function creatorFull(userId: string, now: number, maxActive: number): CreatorFull | null {
    const made = activeLinksMadeBy.get({ user: userId, now })?.n ?? 0
    return made >= maxActive ? { full: made } : null
  }
  function insertDevices(linkId: string, deviceKeys: readonly number[]): void {
    deviceKeys.forEach((device, ordinal) => insertDevice.run({ link: linkId, device, ordinal }))
  }
  const write = <T>(work: () => T) => retryWhileBusy(sqlite, work, { clock })

  return {
    async linkOfAccount(id, accountId) {
      const row = linkOfAccount.get({ id, account: accountId })
      return row ? decodeLink(row) : null
    },
    async activeLinks(accountId, now) {
      return activeLinks.all({ account: accountId, now }).map(decodeLink)
    },
    async devicesOf(linkIds) {
      return devicesOf.all({ ids: JSON.stringify(linkIds) })
    },
    async linkByShortCode(code) {
      return linkByCode.get({ code }) ?? null
    },
    async linkByToken(token) {
      const row = linkByToken.get({ token })
      if (!row) return null
      return { ...decodeLink(row), deviceKeys: deviceKeysOf.all({ link: row.id }).map((d) => d.deviceKey) }
    },
    async linkDevicesVersion() {
      return linkDevicesVersion.get()?.version ?? 0
    },
    async viewerCounted(linkId, viewer) {
      return viewerCounted.get({ link: linkId, viewer }) !== undefined
    },
    async accountName(accountId) {
      return accountName.get({ id: accountId })?.name ?? null
    },
    linkStateNow(id) {
      return linkState.get({ id }) ?? null
    },

    async create(link, maxActive) {
      const unit = () =>
        db.transaction(
          () => {
            const full = creatorFull(link.createdBy, link.now, maxActive)
            if (full) return full
            insertLink.run({ id: link.id, account: link.accountId, user: link.createdBy, token: link.token, code: link.shortCode, acl: JSON.stringify(link.acl), expires: link.expiresAt, now: link.now })
            insertDevices(link.id, link.deviceKeys)
            return 'made' as const
          },
          { behavior: 'immediate' },
        )
      try {
        return await write(unit)
      } catch (error) {
        if (String((error as Error).message).includes('share_links.short_code')) return 'code-taken'
        throw error
      }
    },

    async update(id, change, maxActive) {
      return write(() =>
        db.transaction(
          () => {
            if (change.reviveFor !== null) {
              const full = creatorFull(change.reviveFor, change.now, maxActive)
              if (full) return full
            }
            updateLink.run({ id, expires: change.expiresAt, acl: change.acl && JSON.stringify(change.acl), now: change.now })
            if (change.deviceKeys) {
              deleteDevices.run({ link: id })
              insertDevices(id, change.deviceKeys)
            }
            return 'updated' as const
          },
          { behavior: 'immediate' },
        ),
      )
    },

    async revoke(id, now) {
      await write(() => revokeLink.run({ id, now }))
    },

    deferViews(options) {
      const writePending = (links: Iterable<[string, PendingViews]>) =>
        db.transaction(() => {
          for (const [linkId, views] of links) {
            let added = 0
            for (const [viewer, firstSeenAt] of views.viewers) added += changes(insertViewer.run({ link: linkId, viewer, at: firstSeenAt }))
            writeViews.run({ added, at: views.lastAccessedAt, id: linkId })
          }
        })
      return createDeferredWrites(sqlite, {
        delayMs: options.delayMs,
        hasPending: options.hasPending,
        write: () => {
          writePending([...options.pending()])
          options.written()
        },
        log: options.log,
        failure: options.failure,
        context: options.context,
      })
    },
  }
}

/**
 * Takes a device out of the share links of every account but `accountId`, the one it now
 * belongs to, and revokes a link left with no device: for the dataset import, inside its
 * transaction (`tx`), when it moves a device. Nothing crosses accounts, a link included. The
 * deletes bump the version the token cache follows (migration 0003), so no cached token serves
 * the device after the commit, whichever process made it.
 */
export function removeFromOtherAccountsLinksInTransaction(tx: Connectable, deviceKey: number, accountId: string, now: number): void {
  const db = drizzle(connectionOf(tx))
  const left = db
    .delete(shareLinkDevices)
    .where(
      and(
        eq(shareLinkDevices.deviceKey, deviceKey),
        inArray(shareLinkDevices.linkId, db.select({ id: shareLinks.id }).from(shareLinks).where(ne(shareLinks.accountId, accountId))),
      ),
    )
    .returning({ linkId: shareLinkDevices.linkId })
    .all()
  for (const { linkId } of left) {
    db.update(shareLinks)
      .set({ revoked: true, updatedAt: now })
      .where(
        and(
          eq(shareLinks.id, linkId),
          eq(shareLinks.revoked, false),
          notExists(db.select({ one: sql`1` }).from(shareLinkDevices).where(eq(shareLinkDevices.linkId, linkId))),
        ),
      )
      .run()
  }
}

/**
 * Whether the creator of the link `link` reaches the device `deviceKey` (SQL expressions): the
 * rule of devices/access.ts (`isAccountAdmin`: role 'admin'), within the link's account.
 */
function creatorReaches(link: SQL, deviceKey: SQL): SQL {
  return sql`EXISTS (
    SELECT 1 FROM share_links l
    JOIN users u ON u.id = l.created_by AND u.account_id = l.account_id
    JOIN devices d ON d.key = ${deviceKey} AND d.account_id = u.account_id
    WHERE l.id = ${link} AND (u.role = 'admin' OR EXISTS (
      SELECT 1 FROM user_groups ug JOIN device_groups dg ON dg.group_id = ug.group_id WHERE ug.user_id = u.id AND dg.device_key = ${deviceKey})))`
}

export interface EndedLinks {
  /** links revoked: their creator reaches none of their devices any more */
  revoked: number
  /** devices taken out of links that keep others */
  removed: number
}

/*
 * A share link ends with its creator. It serves only the devices the user who made it still
 * reaches — an admin the account's, a member those of their groups — so that a member taken out
 * of a group, a device moved to another group or account, or an admin made a member, cannot keep
 * showing what they no longer see through a link made before. A device the creator no longer
 * reaches leaves the link for good (coming back into reach does not bring it back); a link left
 * with none is revoked, as one left with no device always was. The user deleted: every link they
 * made is revoked (a trigger, migration 0015, so whichever process deletes them).
 *
 * Every unit of work that changes who reaches what (a user's groups or role, a group's users or
 * devices, a device's groups or account, an import: the people, devices and dataset stores) calls
 * the writer below inside its transaction, after all of its changes: never between a delete and
 * the insert that replaces it, where a user who keeps a group would seem to have lost it.
 * Deleting link devices and revoking links move row 3 of access_version (migrations 0003 and
 * 0015), so the share token cache and open live streams follow on their next request, in every
 * process.
 */

/**
 * A share link ends with its creator (above): takes out of the active links
 * of `accountId` (of every account when null: an import) the devices their creator no longer
 * reaches, and revokes those left with none, which keep their device list as it was. `now` (Unix
 * ms) is their updated_at. Inside the transaction `tx` of the change to who reaches what, after
 * all of its changes.
 */
export function endLinksBeyondCreatorsReachInTransaction(tx: Connectable, accountId: string | null, now: number): EndedLinks {
  const run = drizzle(connectionOf(tx))
  const ofAccount = accountId === null ? sql`1` : sql`account_id = ${accountId}`
  const revoked = (run.run(sql`
    UPDATE share_links SET revoked = 1, updated_at = ${now}
    WHERE ${ofAccount} AND revoked = 0 AND NOT EXISTS (
      SELECT 1 FROM share_link_devices s WHERE s.link_id = share_links.id AND ${creatorReaches(sql`share_links.id`, sql`s.device_key`)})`) as unknown as Changes).changes
  const removed = (run.run(sql`
    DELETE FROM share_link_devices
    WHERE link_id IN (SELECT id FROM share_links WHERE ${ofAccount} AND revoked = 0)
      AND NOT ${creatorReaches(sql`share_link_devices.link_id`, sql`share_link_devices.device_key`)}`) as unknown as Changes).changes
  return { revoked, removed }
}
