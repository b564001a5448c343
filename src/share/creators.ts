/**
 * A share link ends with its creator. It serves only the devices the user who made it still
 * reaches — an admin the account's, a member those of their groups — so that a member taken out
 * of a group, a device moved to another group or account, or an admin made a member, cannot keep
 * showing what they no longer see through a link made before. A device the creator no longer
 * reaches leaves the link for good (coming back into reach does not bring it back); a link left
 * with none is revoked, as one left with no device always was. The user deleted: every link they
 * made is revoked (a trigger, migration 0015, so whichever process deletes them).
 *
 * Every unit of work that changes who reaches what (a user's groups or role, a group's users or
 * devices, a device's groups or account, an import) calls `endLinksBeyondCreatorsReach` inside its
 * transaction, after all of its changes: never between a delete and the insert that replaces it,
 * where a user who keeps a group would seem to have lost it. Deleting link devices and revoking
 * links move row 3 of access_version (migrations 0003 and 0015), so the share token cache and
 * open live streams follow on their next request, in every process.
 */
import type { Changes } from 'bun:sqlite'
import { sql, type SQL } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { connectionOf, type Connectable } from '../../db/client'

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

/**
 * Takes out of the active links of `accountId` (of every account when null: an import) the
 * devices their creator no longer reaches, and revokes those left with none, which keep their
 * device list as it was. `now` (Unix ms) is their updated_at.
 */
export function endLinksBeyondCreatorsReach(db: Connectable, accountId: string | null, now: number): EndedLinks {
  const run = drizzle(connectionOf(db))
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
