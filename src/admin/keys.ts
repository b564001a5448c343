/**
 * API keys of a user, by their public id (a UUID; the secret is shown once, at creation, and only
 * its SHA-256 is kept). A user manages their own keys, an admin (or the operator) anyone's in the
 * account. Deleting a key bumps the credentials version (migration 0005), so the key lookup's
 * cache drops it and the very next request with it is 401, in this process or any other.
 */
import { and, eq, isNotNull } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { apiKeys, users } from '../../db/schema'
import { Forbidden, Invalid, NotFound } from '../errors'
import { iso } from '../http/model'
import { generateKey, hashKey } from '../keys/service'
import { type Actor, type AdminDeps, checkName, type Page } from './actor'
import type { ApiKeyBody, ApiKeyCreatedBody } from './model'

export type { ApiKeyBody, ApiKeyCreatedBody }

export interface NewKey {
  /** a label; default none ('') */
  name?: string
  /** Unix ms, in the future; default: never expires */
  expiresAtMs?: number | null
}

type KeyRow = typeof apiKeys.$inferSelect

/** the user (404 unless of the actor's account), if the actor may manage their keys (else 403) */
function requireKeyHolder(db: Db, by: Actor, userId: string): { id: string; accountId: string } {
  const user = db
    .select({ id: users.id, accountId: users.accountId })
    .from(users)
    .where(and(eq(users.id, userId.toLowerCase()), eq(users.accountId, by.accountId)))
    .get()
  if (!user) throw new NotFound(`No user ${userId}`)
  if (!by.admin && by.id !== user.id) throw new Forbidden("You may manage only your own keys; an account admin manages anyone's")
  return user
}

function toBody(deps: AdminDeps, row: KeyRow): ApiKeyBody {
  // a use noted in memory and not yet written shows at once
  const lastUsed = Math.max(row.lastUsedAt ?? 0, deps.keyUsage?.pendingUse(row.id) ?? 0)
  return {
    id: row.publicId!,
    name: row.name,
    created_at: iso(row.createdAt),
    last_used_at: lastUsed === 0 ? null : iso(lastUsed),
    expires_at: row.expiresAt === null ? null : iso(row.expiresAt),
  }
}

/** The user's keys, by name then id (expired ones too). */
export function listKeys(deps: AdminDeps, by: Actor, userId: string, page: Page = { limit: 1000, offset: 0 }): ApiKeyBody[] {
  const user = requireKeyHolder(deps.db, by, userId)
  const rows = deps.db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.userId, user.id), isNotNull(apiKeys.publicId)))
    .orderBy(apiKeys.name, apiKeys.publicId)
    .limit(page.limit)
    .offset(page.offset)
    .all()
  return rows.map((row) => toBody(deps, row))
}

/** A new key for the user: the answer's `key` is the secret, which is not kept and never shown again. */
export function createKey(deps: AdminDeps, by: Actor, userId: string, input: NewKey = {}): ApiKeyCreatedBody {
  const name = input.name === undefined || input.name === '' ? '' : checkName(input.name)
  const now = deps.clock.now()
  const expiresAt = input.expiresAtMs ?? null
  if (expiresAt !== null && expiresAt <= now) throw Invalid.field('/expires_at', 'must be in the future')
  const key = generateKey()
  const publicId = crypto.randomUUID()
  // one connection: the statements below, through deps.db, are inside this transaction
  const row = deps.db.transaction(
    () => {
      const user = requireKeyHolder(deps.db, by, userId)
      const inserted = deps.db
        .insert(apiKeys)
        .values({ userId: user.id, hash: hashKey(key), publicId, name, expiresAt, createdAt: now })
        .returning()
        .get()
      deps.audit.record({ accountId: user.accountId, actor: by.id, action: 'create', objectType: 'key', objectId: publicId, requestId: by.requestId }, now)
      return inserted
    },
    { behavior: 'immediate' },
  )
  return { ...toBody(deps, row), key }
}

/** Deletes the key: the next request with it is 401. */
export function revokeKey(deps: AdminDeps, by: Actor, userId: string, keyId: string): void {
  const now = deps.clock.now()
  deps.db.transaction(
    () => {
      const user = requireKeyHolder(deps.db, by, userId)
      const deleted = deps.db
        .delete(apiKeys)
        .where(and(eq(apiKeys.publicId, keyId.toLowerCase()), eq(apiKeys.userId, user.id)))
        .returning({ id: apiKeys.id })
        .all()
      if (deleted.length === 0) throw new NotFound(`No key ${keyId} of user ${user.id}`)
      deps.audit.record({ accountId: user.accountId, actor: by.id, action: 'delete', objectType: 'key', objectId: keyId.toLowerCase(), requestId: by.requestId }, now)
    },
    { behavior: 'immediate' },
  )
}

/** Whose key this is (for the command line's `key revoke ID`), or null when there is no such key. */
export function keyOwner(db: Db, keyId: string): { userId: string; accountId: string } | null {
  const row = db
    .select({ userId: users.id, accountId: users.accountId })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .where(eq(apiKeys.publicId, keyId.toLowerCase()))
    .get()
  return row ?? null
}
