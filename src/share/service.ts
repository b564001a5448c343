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
import { Conflict, Invalid, NotFound, type FieldError } from '../errors'
import type { Clock } from '../clock'
import { type DeviceAccess, isAccountAdmin } from '../devices/access'
import { isoOrNull } from '../http/model'
import type { SharePrincipal, UserPrincipal } from '../principal'
import type { CreatorFull, ShareLinkStore, StoredLink } from '../store/shareLinks'
import type { CreateShareInput, ShareCreatedBody, ShareLinkBody, ShareLinkDetailBody, ShareLinkListedBody, UpdateShareInput } from './model'
import { DEFAULT_ACL, isPermission } from './permissions'
import { generateShortCode, generateToken, SHORT_CODE, type ShareTokenCache } from './tokens'


export interface ShareServiceDeps {
  links: ShareLinkStore
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

export function createShareService({
  links,
  access,
  clock,
  tokens,
  appUrl,
  shortUrlBase,
  maxActiveLinksPerUser = DEFAULT_MAX_ACTIVE_LINKS_PER_USER,
}: ShareServiceDeps) {
  /** the creator already has the most active links allowed (the store counts them in the write's unit of work, so two at once cannot both pass) */
  function creatorFull({ full }: CreatorFull): Conflict {
    return new Conflict(
      `The user who makes this link already has ${full} active share links, the most allowed (${maxActiveLinksPerUser}); revoke one, or let one expire, first`,
    )
  }

  const changeListeners = new Set<(linkId: string) => void>()

  const originalUrl = (token: string) => `${appUrl}/share?token=${token}`
  const shortUrl = (code: string) => `${shortUrlBase}/${code}`

  /** The devices, each distinct and reachable by the user, as keys in the order given. */
  async function reachableDevices(user: UserPrincipal, ids: readonly string[]): Promise<number[]> {
    const first = new Map<string, number>()
    const repeats: FieldError[] = []
    ids.forEach((id, i) => {
      const seen = first.get(id.toLowerCase())
      if (seen === undefined) first.set(id.toLowerCase(), i)
      else repeats.push({ path: `/devices/${i}`, message: `repeats /devices/${seen}; each device may appear once` })
    })
    if (repeats.length > 0) throw new Invalid(`devices holds a repeated id: ${repeats.map((e) => e.path).join(', ')}`, repeats)

    const keys = await access.reachableKeys(user, ids)
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

  async function devicesOf(linkIds: string[]): Promise<Map<string, LinkDevices>> {
    const byLink = new Map<string, LinkDevices>(linkIds.map((id) => [id, { ids: [], keys: [] }]))
    for (const row of await links.devicesOf(linkIds)) {
      const devices = byLink.get(row.linkId)!
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
  async function visibleTo(user: UserPrincipal): Promise<(devices: LinkDevices) => boolean> {
    if (isAccountAdmin(user)) return () => true
    const reaches = await access.reachOf(user)
    return (devices) => devices.keys.length > 0 && devices.keys.every(reaches)
  }

  /** The link and its devices; 404 when it is not the account's or the user may not see it (the same answer: nothing is revealed). */
  async function requireLink(user: UserPrincipal, id: string): Promise<{ row: StoredLink; devices: LinkDevices }> {
    const row = await links.linkOfAccount(id.toLowerCase(), user.accountId)
    const devices = row && (await devicesOf([row.id])).get(row.id)!
    if (!row || !devices || !(await visibleTo(user))(devices)) throw new NotFound(`No share link ${id}`)
    return { row, devices }
  }

  function toBody(row: StoredLink, devices: string[]): ShareLinkBody {
    // views not yet written (tokens.ts flushes them in the background) count already
    const pending = tokens.pendingAccess(row.id)
    const lastAccess = Math.max(row.lastAccessedAt ?? 0, pending.lastAccessedAt ?? 0)
    return {
      id: row.id,
      account: row.accountId,
      devices,
      acl: row.acl,
      revoked: row.revoked,
      expires_at: isoOrNull(row.expiresAt)!,
      unique_views: row.uniqueViews + pending.views,
      last_accessed_at: lastAccess === 0 ? null : isoOrNull(lastAccess),
      created_at: isoOrNull(row.createdAt)!,
    }
  }

  const listed = (row: StoredLink, devices: string[]): ShareLinkListedBody => ({ ...toBody(row, devices), token: row.token, original_url: originalUrl(row.token) })

  function changed(row: StoredLink): void {
    tokens.forget(row.token)
    for (const listener of changeListeners) listener(row.id)
  }

  async function open(token: string, viewer: string): Promise<OpenLink | 'inactive' | null> {
    const link = await tokens.lookup(token)
    if (link === null) return null
    if (!tokens.isActive(link)) return 'inactive'
    await tokens.recordAccess(link, viewer)
    return {
      principal: { kind: 'share', linkId: link.linkId, accountId: link.accountId, deviceKeys: link.deviceKeys, acl: link.acl, creatorId: link.creatorId },
      expiresAt: link.expiresAt,
      accountName: (await links.accountName(link.accountId)) ?? '',
    }
  }

  return {
    async create(user: UserPrincipal, input: CreateShareInput): Promise<ShareCreatedBody> {
      const keys = await reachableDevices(user, input.devices)
      const acl = input.acl === undefined ? [...DEFAULT_ACL] : checkAcl(input.acl)
      const now = clock.now()
      const id = crypto.randomUUID()
      const token = generateToken()
      const expiresAt = now + input.ttl * 1000
      // 59 bits make a clash of short codes all but impossible; retry rather than assume
      let code = generateShortCode()
      for (let attempt = 1; ; attempt++) {
        const made = await links.create(
          { id, accountId: user.accountId, createdBy: user.userId, token, shortCode: code, acl, expiresAt, deviceKeys: keys, now },
          maxActiveLinksPerUser,
        )
        if (made === 'made') break
        if (made !== 'code-taken') throw creatorFull(made)
        if (attempt >= 5) throw new Error('share link: five short codes in a row were taken')
        code = generateShortCode()
      }
      return { id, token, devices: input.devices.map((device) => device.toLowerCase()), expires_at: isoOrNull(expiresAt)!, original_url: originalUrl(token), short_url: shortUrl(code) }
    },

    /** the account's active links: neither revoked nor expired, newest first */
    async list(user: UserPrincipal): Promise<ShareLinkListedBody[]> {
      const rows = await links.activeLinks(user.accountId, clock.now())
      const devices = await devicesOf(rows.map((r) => r.id))
      const visible = await visibleTo(user)
      return rows.filter((row) => visible(devices.get(row.id)!)).map((row) => listed(row, devices.get(row.id)!.ids))
    },

    /** one of the links the user may see, active or not */
    async get(user: UserPrincipal, id: string): Promise<ShareLinkDetailBody> {
      const { row, devices } = await requireLink(user, id)
      return { ...listed(row, devices.ids), short_url: shortUrl(row.shortCode) }
    },

    async update(user: UserPrincipal, id: string, input: UpdateShareInput): Promise<ShareLinkBody> {
      const { row } = await requireLink(user, id)
      const keys = input.devices === undefined ? null : await reachableDevices(user, input.devices)
      const acl = input.acl === undefined ? null : checkAcl(input.acl)
      const now = clock.now()
      // a ttl brings an expired link back to life: it counts again against its creator's links
      const revives = input.ttl !== undefined && !row.revoked && row.expiresAt <= now && row.createdBy !== null
      const updated = await links.update(
        row.id,
        { expiresAt: input.ttl === undefined ? null : now + input.ttl * 1000, acl, deviceKeys: keys, now, reviveFor: revives ? row.createdBy : null },
        maxActiveLinksPerUser,
      )
      if (updated !== 'updated') throw creatorFull(updated)
      changed(row)
      const fresh = (await links.linkOfAccount(row.id, user.accountId))!
      return toBody(fresh, (await devicesOf([row.id])).get(row.id)!.ids)
    },

    /** revokes the link for good; revoking a revoked link is a no-op */
    async revoke(user: UserPrincipal, id: string): Promise<void> {
      const { row } = await requireLink(user, id)
      if (!row.revoked) await links.revoke(row.id, clock.now())
      changed(row)
    },

    /** where a short link points while its link is active */
    async redirectTarget(code: string): Promise<string> {
      const row = SHORT_CODE.test(code) ? await links.linkByShortCode(code) : null
      if (!row) throw new NotFound('No such short link')
      if (row.revoked || clock.now() >= row.expiresAt) throw new NotFound('This short link has expired or was revoked')
      return originalUrl(row.token)
    },

    /** the link behind a token, counting the viewer; 'inactive' when revoked or expired; null when unknown */
    open,

    /** the ShareTokenResolver of http/auth.ts */
    async resolve(token: string, viewer: string): Promise<SharePrincipal | 'inactive' | null> {
      const opened = await open(token, viewer)
      return opened === null || opened === 'inactive' ? opened : opened.principal
    },

    /** whether the link is neither revoked nor expired, its creator still there (read from the database: for long-lived streams) */
    isActive(linkId: string): boolean {
      const row = links.linkStateNow(linkId)
      return row !== null && !row.revoked && row.createdBy !== null && clock.now() < row.expiresAt
    },

    /** when the link expires (Unix ms), null when there is no such link: live streams end then */
    expiresAt(linkId: string): number | null {
      return links.linkStateNow(linkId)?.expiresAt ?? null
    },

    /** tells `listener` the id of every link that changes (patched or revoked) */
    onChange(listener: (linkId: string) => void): () => void {
      changeListeners.add(listener)
      return () => changeListeners.delete(listener)
    },
  }
}

export type ShareService = ReturnType<typeof createShareService>
