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
// The unit of work lives with the links' store (store/shareLinks.ts); the writers that change who
// reaches what (users, groups, devices, the import) call it in their transaction.
export { endLinksBeyondCreatorsReachInTransaction as endLinksBeyondCreatorsReach, type EndedLinks } from '../store/shareLinks'
