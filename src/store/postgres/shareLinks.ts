/**
 * Share links on PostgreSQL: src/store/shareLinks.ts's store over the schema's PostgreSQL twin,
 * and its in-transaction writers for the units of work that change who reaches what (the rule
 * they keep is explained there).
 */
import { and, eq, inArray, ne, notExists, type SQL, sql } from 'drizzle-orm'
import type { PgConnectable } from '../../../db/postgres/client'
import { shareLinkDevices, shareLinks } from '../../../db/postgres/schema'
import type { EndedLinks } from '../shareLinks'

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
