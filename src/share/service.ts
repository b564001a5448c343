/**
 * Share links: creating, reading, changing and revoking them for an account's users, and
 * resolving a presented token to the principal that may read the link's devices. Devices are
 * checked through the access function only; every change drops the token's cache entry and
 * tells open live streams, so it takes effect on the very next request.
 *
 * Who sees a link: a user sees (lists, reads, changes, revokes) only the links of their account
 * whose every device they reach now, decided afresh on each request through the access function;
 * any other link is "no such link" (404), so its token never reaches them. An account admin sees
 * all of the account's links. A link with no devices left is the admin's only.
 *
 * Writes wait for another process's write lock (an import) asynchronously, up to 5 s, then
 * Timeout (504): store/busy.ts. Reads never wait for it.
 *
 * A user may have made at most `maxActiveLinksPerUser` active (unexpired, unrevoked) links: a
 * link spends its creator's stream and history budget, and this bounds what one user can hand
 * out. One more, created or brought back to life by a PATCH of its ttl, is 409.
 */
import type { Database } from 'bun:sqlite'
import { and, count, eq, gt, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import * as schema from '../../db/schema'
import { shareLinks } from '../../db/schema'
import type { Clock } from '../clock'
import { type DeviceAccess, isAccountAdmin } from '../devices/access'
import { Conflict, Invalid, NotFound, type FieldError } from '../errors'
import { isoOrNull } from '../http/model'
import type { SharePrincipal, UserPrincipal } from '../principal'
import { retryWhileBusy } from '../store/busy'
import type { CreateShareInput, ShareCreatedBody, ShareLinkBody, ShareLinkDetailBody, ShareLinkListedBody, UpdateShareInput } from './model'
import { DEFAULT_ACL, isPermission } from './permissions'
import { generateShortCode, generateToken, SHORT_CODE, type ShareTokenCache } from './tokens'

export interface ShareServiceDeps {
  sqlite: Database
  access: DeviceAccess
  clock: Clock
  tokens: ShareTokenCache
  /** APP_URL and SHORT_URL_BASE, without a trailing slash */
  appUrl: string
  shortUrlBase: string
  /** active links one user may have made (MAX_SHARE_LINKS_PER_USER); default DEFAULT_MAX_ACTIVE_LINKS_PER_USER */
  maxActiveLinksPerUser?: number
}

export const DEFAULT_MAX_ACTIVE_LINKS_PER_USER = 100

interface LinkRow {
  id: string
  account_id: string
  created_by: string | null
  token: string
  short_code: string
  acl: string
  revoked: number
  expires_at: number
  unique_views: number
  last_accessed_at: number | null
  created_at: number
}

/** A link's devices in the link's order: ids for its body, keys for deciding who sees it. */
interface LinkDevices {
  ids: string[]
  keys: number[]
}

/** An open link, as the page sees it. */
export interface OpenLink {
  principal: SharePrincipal
  expiresAt: number
  /** the name of the account that shares the vehicles, shown on the page */
  accountName: string
}

const LINK_COLUMNS = 'id, account_id, created_by, token, short_code, acl, revoked, expires_at, unique_views, last_accessed_at, created_at'

/**
 * Takes a device out of the share links of every account but `accountId`, the one it now
 * belongs to, and revokes a link left with no device: for the dataset import, inside its
 * transaction, when it moves a device. Nothing crosses accounts, a link included. The deletes
 * bump the version the token cache follows (migration 0003), so no cached token serves the
 * device after the commit, whichever process made it.
 */
export function removeFromOtherAccountsLinks(sqlite: Database, deviceKey: number, accountId: string, now: number): void {
  const left = sqlite
    .query<{ link_id: string }, [number, string]>(
      'DELETE FROM share_link_devices WHERE device_key = ? AND link_id IN (SELECT id FROM share_links WHERE account_id <> ?) RETURNING link_id',
    )
    .all(deviceKey, accountId)
  const revokeIfEmpty = sqlite.query<unknown, [number, string]>(
    `UPDATE share_links SET revoked = 1, updated_at = ?1
     WHERE id = ?2 AND revoked = 0 AND NOT EXISTS (SELECT 1 FROM share_link_devices WHERE link_id = ?2)`,
  )
  for (const { link_id } of left) revokeIfEmpty.run(now, link_id)
}

export function createShareService({
  sqlite,
  access,
  clock,
  tokens,
  appUrl,
  shortUrlBase,
  maxActiveLinksPerUser = DEFAULT_MAX_ACTIVE_LINKS_PER_USER,
}: ShareServiceDeps) {
  const db = drizzle(sqlite, { schema })
  const activeLinksMadeBy = db
    .select({ n: count() })
    .from(shareLinks)
    .where(and(eq(shareLinks.createdBy, sql.placeholder('user')), eq(shareLinks.revoked, false), gt(shareLinks.expiresAt, sql.placeholder('now'))))
    .prepare()
  /** Conflict when `userId` already has the most active links allowed: run inside the write's transaction, so two at once cannot both pass. */
  function checkRoomForLink(userId: string, now: number): void {
    const made = activeLinksMadeBy.get({ user: userId, now })?.n ?? 0
    if (made >= maxActiveLinksPerUser) {
      throw new Conflict(
        `The user who makes this link already has ${made} active share links, the most allowed (${maxActiveLinksPerUser}); revoke one, or let one expire, first`,
      )
    }
  }

  const accountNameOf = db.select({ name: schema.accounts.name }).from(schema.accounts).where(eq(schema.accounts.id, sql.placeholder('id'))).prepare()

  const linkById = sqlite.query<LinkRow, [string, string]>(`SELECT ${LINK_COLUMNS} FROM share_links WHERE id = ? AND account_id = ?`)
  const activeLinks = sqlite.query<LinkRow, [string, number]>(
    `SELECT ${LINK_COLUMNS} FROM share_links WHERE account_id = ? AND revoked = 0 AND expires_at > ? ORDER BY created_at DESC, id`,
  )
  const linkState = sqlite.query<{ revoked: number; expires_at: number; created_by: string | null }, [string]>(
    'SELECT revoked, expires_at, created_by FROM share_links WHERE id = ?',
  )
  const linkByCode = sqlite.query<{ token: string; revoked: number; expires_at: number }, [string]>(
    'SELECT token, revoked, expires_at FROM share_links WHERE short_code = ?',
  )
  // The links' devices: ids for the body, keys for deciding who may see the link.
  const devicesOfLinks = sqlite.query<{ link_id: string; key: number; id: string }, [string]>(
    `SELECT l.link_id, d.key, d.id FROM share_link_devices l JOIN devices d ON d.key = l.device_key
     WHERE l.link_id IN (SELECT value FROM json_each(?)) ORDER BY l.link_id, l.ordinal`,
  )
  const insertLink = sqlite.query(
    `INSERT INTO share_links (id, account_id, created_by, token, short_code, acl, revoked, expires_at, unique_views, created_at, updated_at)
     VALUES ($id, $account, $user, $token, $code, $acl, 0, $expires, 0, $now, $now)`,
  )
  const insertDevice = sqlite.query<unknown, [string, number, number]>('INSERT INTO share_link_devices (link_id, device_key, ordinal) VALUES (?, ?, ?)')
  const deleteDevices = sqlite.query<unknown, [string]>('DELETE FROM share_link_devices WHERE link_id = ?')
  const updateLink = sqlite.query(
    `UPDATE share_links SET expires_at = coalesce($expires, expires_at), acl = coalesce($acl, acl), updated_at = $now WHERE id = $id`,
  )
  const revokeLink = sqlite.query<unknown, [number, string]>('UPDATE share_links SET revoked = 1, updated_at = ? WHERE id = ?')

  const changeListeners = new Set<(linkId: string) => void>()

  const originalUrl = (token: string) => `${appUrl}/share?token=${token}`
  const shortUrl = (code: string) => `${shortUrlBase}/${code}`

  /** The devices, each distinct and reachable by the user, as keys in the order given. */
  function reachableDevices(user: UserPrincipal, ids: readonly string[]): number[] {
    const first = new Map<string, number>()
    const repeats: FieldError[] = []
    ids.forEach((id, i) => {
      const seen = first.get(id.toLowerCase())
      if (seen === undefined) first.set(id.toLowerCase(), i)
      else repeats.push({ path: `/devices/${i}`, message: `repeats /devices/${seen}; each device may appear once` })
    })
    if (repeats.length > 0) throw new Invalid(`devices holds a repeated id: ${repeats.map((e) => e.path).join(', ')}`, repeats)

    const keys = access.reachableKeys(user, ids)
    const missing = ids.filter((id) => !keys.has(id))
    if (missing.length > 0) {
      const named = missing.slice(0, 5).join(', ') + (missing.length > 5 ? ` and ${missing.length - 5} more` : '')
      throw new NotFound(`No device ${named} (it does not exist or you cannot reach it)`)
    }
    return ids.map((id) => keys.get(id)!)
  }

  /** The acl as stored: known permission ids, each once, lower case, in the order given. */
  function checkAcl(acl: readonly string[]): string[] {
    const errors: FieldError[] = []
    const seen = new Set<string>()
    acl.forEach((raw, i) => {
      const id = raw.toLowerCase()
      if (!isPermission(id)) errors.push({ path: `/acl/${i}`, message: 'is not a known permission id' })
      else if (seen.has(id)) errors.push({ path: `/acl/${i}`, message: 'repeats a permission' })
      seen.add(id)
    })
    if (errors.length > 0) throw new Invalid(`acl: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`, errors)
    return [...seen]
  }

  function devicesOf(linkIds: string[]): Map<string, LinkDevices> {
    const byLink = new Map<string, LinkDevices>(linkIds.map((id) => [id, { ids: [], keys: [] }]))
    for (const row of devicesOfLinks.all(JSON.stringify(linkIds))) {
      const devices = byLink.get(row.link_id)!
      devices.ids.push(row.id)
      devices.keys.push(row.key)
    }
    return byLink
  }

  /**
   * Which of the account's links `user` may see: an admin all of them; anyone else those with
   * devices, every one of which they reach now. Decided per request, so a link whose devices a
   * user no longer all reaches (a group change, by any process) is gone for them at once.
   */
  function visibleTo(user: UserPrincipal): (devices: LinkDevices) => boolean {
    if (isAccountAdmin(user)) return () => true
    const reaches = access.reachOf(user)
    return (devices) => devices.keys.length > 0 && devices.keys.every(reaches)
  }

  /** The link and its devices; 404 when it is not the account's or the user may not see it (the same answer: nothing is revealed). */
  function requireLink(user: UserPrincipal, id: string): { row: LinkRow; devices: LinkDevices } {
    const row = linkById.get(id.toLowerCase(), user.accountId)
    const devices = row && devicesOf([row.id]).get(row.id)!
    if (!row || !devices || !visibleTo(user)(devices)) throw new NotFound(`No share link ${id}`)
    return { row, devices }
  }

  function toBody(row: LinkRow, devices: string[]): ShareLinkBody {
    // views not yet written (tokens.ts flushes them in the background) count already
    const pending = tokens.pendingAccess(row.id)
    const lastAccess = Math.max(row.last_accessed_at ?? 0, pending.lastAccessedAt ?? 0)
    return {
      id: row.id,
      account: row.account_id,
      devices,
      acl: JSON.parse(row.acl),
      revoked: row.revoked === 1,
      expires_at: isoOrNull(row.expires_at)!,
      unique_views: row.unique_views + pending.views,
      last_accessed_at: lastAccess === 0 ? null : isoOrNull(lastAccess),
      created_at: isoOrNull(row.created_at)!,
    }
  }

  const listed = (row: LinkRow, devices: string[]): ShareLinkListedBody => ({ ...toBody(row, devices), token: row.token, original_url: originalUrl(row.token) })

  function changed(row: LinkRow): void {
    tokens.forget(row.token)
    for (const listener of changeListeners) listener(row.id)
  }

  function open(token: string, viewer: string): OpenLink | 'inactive' | null {
    const link = tokens.lookup(token)
    if (link === null) return null
    if (!tokens.isActive(link)) return 'inactive'
    tokens.recordAccess(link, viewer)
    return {
      principal: { kind: 'share', linkId: link.linkId, accountId: link.accountId, deviceKeys: link.deviceKeys, acl: link.acl, creatorId: link.creatorId },
      expiresAt: link.expiresAt,
      accountName: accountNameOf.get({ id: link.accountId })?.name ?? '',
    }
  }

  return {
    async create(user: UserPrincipal, input: CreateShareInput): Promise<ShareCreatedBody> {
      const keys = reachableDevices(user, input.devices)
      const acl = input.acl === undefined ? [...DEFAULT_ACL] : checkAcl(input.acl)
      const now = clock.now()
      const id = crypto.randomUUID()
      const token = generateToken()
      const expiresAt = now + input.ttl * 1000

      const write = sqlite.transaction((code: string) => {
        checkRoomForLink(user.userId, now)
        insertLink.run({ id, account: user.accountId, user: user.userId, token, code, acl: JSON.stringify(acl), expires: expiresAt, now })
        keys.forEach((key, i) => insertDevice.run(id, key, i))
      })
      // 59 bits make a clash of short codes all but impossible; retry rather than assume
      let code = generateShortCode()
      for (let attempt = 1; ; attempt++) {
        try {
          await retryWhileBusy(sqlite, () => write.immediate(code), { clock })
          break
        } catch (error) {
          if (attempt >= 5 || !String((error as Error).message).includes('share_links.short_code')) throw error
          code = generateShortCode()
        }
      }
      return { id, token, devices: input.devices.map((device) => device.toLowerCase()), expires_at: isoOrNull(expiresAt)!, original_url: originalUrl(token), short_url: shortUrl(code) }
    },

    /** the account's active links: neither revoked nor expired, newest first */
    list(user: UserPrincipal): ShareLinkListedBody[] {
      const rows = activeLinks.all(user.accountId, clock.now())
      const devices = devicesOf(rows.map((r) => r.id))
      const visible = visibleTo(user)
      return rows.filter((row) => visible(devices.get(row.id)!)).map((row) => listed(row, devices.get(row.id)!.ids))
    },

    /** one of the links the user may see, active or not */
    get(user: UserPrincipal, id: string): ShareLinkDetailBody {
      const { row, devices } = requireLink(user, id)
      return { ...listed(row, devices.ids), short_url: shortUrl(row.short_code) }
    },

    async update(user: UserPrincipal, id: string, input: UpdateShareInput): Promise<ShareLinkBody> {
      const { row } = requireLink(user, id)
      const keys = input.devices === undefined ? null : reachableDevices(user, input.devices)
      const acl = input.acl === undefined ? null : checkAcl(input.acl)
      const now = clock.now()
      // a ttl brings an expired link back to life: it counts again against its creator's links
      const revives = input.ttl !== undefined && row.revoked === 0 && row.expires_at <= now && row.created_by !== null
      const write = sqlite.transaction(() => {
        if (revives) checkRoomForLink(row.created_by!, now)
        updateLink.run({ id: row.id, expires: input.ttl === undefined ? null : now + input.ttl * 1000, acl: acl && JSON.stringify(acl), now })
        if (keys) {
          deleteDevices.run(row.id)
          keys.forEach((key, i) => insertDevice.run(row.id, key, i))
        }
      })
      await retryWhileBusy(sqlite, () => write.immediate(), { clock })
      changed(row)
      const updated = linkById.get(row.id, user.accountId)!
      return toBody(updated, devicesOf([row.id]).get(row.id)!.ids)
    },

    /** revokes the link for good; revoking a revoked link is a no-op */
    async revoke(user: UserPrincipal, id: string): Promise<void> {
      const { row } = requireLink(user, id)
      const now = clock.now()
      if (row.revoked === 0) await retryWhileBusy(sqlite, () => revokeLink.run(now, row.id), { clock })
      changed(row)
    },

    /** where a short link points while its link is active */
    redirectTarget(code: string): string {
      const row = SHORT_CODE.test(code) ? linkByCode.get(code) : null
      if (!row) throw new NotFound('No such short link')
      if (row.revoked === 1 || clock.now() >= row.expires_at) throw new NotFound('This short link has expired or was revoked')
      return originalUrl(row.token)
    },

    /** the link behind a token, counting the viewer; 'inactive' when revoked or expired; null when unknown */
    open,

    /** the ShareTokenResolver of http/auth.ts */
    resolve(token: string, viewer: string): SharePrincipal | 'inactive' | null {
      const opened = open(token, viewer)
      return opened === null || opened === 'inactive' ? opened : opened.principal
    },

    /** whether the link is neither revoked nor expired, its creator still there (read from the database: for long-lived streams) */
    isActive(linkId: string): boolean {
      const row = linkState.get(linkId)
      return row !== null && row.revoked === 0 && row.created_by !== null && clock.now() < row.expires_at
    },

    /** when the link expires (Unix ms), null when there is no such link: live streams end then */
    expiresAt(linkId: string): number | null {
      return linkState.get(linkId)?.expires_at ?? null
    },

    /** tells `listener` the id of every link that changes (patched or revoked) */
    onChange(listener: (linkId: string) => void): () => void {
      changeListeners.add(listener)
      return () => changeListeners.delete(listener)
    },
  }
}

export type ShareService = ReturnType<typeof createShareService>
