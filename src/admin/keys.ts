/**
 * API keys of a user, by their public id (a UUID; the secret is shown once, at creation, and only
 * its SHA-256 is kept). A user manages their own keys, an admin (or the operator) anyone's in the
 * account. Deleting a key bumps the credentials version (migration 0005), so the key lookup's
 * cache drops it and the very next request with it is 401, in this process or any other.
 */
import type { Clock } from '../clock'
import { Forbidden, Invalid, NotFound } from '../errors'
import { iso } from '../http/model'
import { generateKey, hashKey, type KeyUsage } from '../keys/service'
import type { KeyStore, StoredKey } from '../store/keys'
import { type Actor, checkName, type Page } from './actor'
import type { ApiKeyBody, ApiKeyCreatedBody } from './model'

export type { ApiKeyBody, ApiKeyCreatedBody }

/** What the key services take (a part of admin/actor.ts's AdminDeps). */
export interface KeyAdminDeps {
  keys: KeyStore
  clock: Clock
  /** keys' uses not yet written (keys/service.ts), merged into last_used_at; absent outside the server */
  keyUsage?: KeyUsage
}

export interface NewKey {
  /** a label; default none ('') */
  name?: string
  /** Unix ms, in the future; default: never expires */
  expiresAtMs?: number | null
}

/** the user (404 unless of the actor's account), if the actor may manage their keys (else 403) */
async function requireKeyHolder(keys: KeyStore, by: Actor, userId: string): Promise<{ id: string; accountId: string }> {
  const user = await keys.keyHolder(userId.toLowerCase(), by.accountId)
  if (!user) throw new NotFound(`No user ${userId}`)
  if (!by.admin && by.id !== user.id) throw new Forbidden("You may manage only your own keys; an account admin manages anyone's")
  return user
}

function toBody(deps: KeyAdminDeps, row: StoredKey): ApiKeyBody {
  // a use noted in memory and not yet written shows at once
  const lastUsed = Math.max(row.lastUsedAt ?? 0, deps.keyUsage?.pendingUse(row.id) ?? 0)
  return {
    id: row.publicId,
    name: row.name,
    created_at: iso(row.createdAt),
    last_used_at: lastUsed === 0 ? null : iso(lastUsed),
    expires_at: row.expiresAt === null ? null : iso(row.expiresAt),
  }
}

/** The user's keys, by name then id (expired ones too). */
export async function listKeys(deps: KeyAdminDeps, by: Actor, userId: string, page: Page = { limit: 1000, offset: 0 }): Promise<ApiKeyBody[]> {
  const user = await requireKeyHolder(deps.keys, by, userId)
  const rows = await deps.keys.keysOf(user.id, page)
  return rows.map((row) => toBody(deps, row))
}

/** A new key for the user: the answer's `key` is the secret, which is not kept and never shown again. */
export async function createKey(deps: KeyAdminDeps, by: Actor, userId: string, input: NewKey = {}): Promise<ApiKeyCreatedBody> {
  const name = input.name === undefined || input.name === '' ? '' : checkName(input.name)
  const now = deps.clock.now()
  const expiresAt = input.expiresAtMs ?? null
  if (expiresAt !== null && expiresAt <= now) throw Invalid.field('/expires_at', 'must be in the future')
  const key = generateKey()
  const publicId = crypto.randomUUID()
  const user = await requireKeyHolder(deps.keys, by, userId)
  // the key and its audit row in one unit of work, which checks the user again (deleted meanwhile: 404)
  const row = await deps.keys.create(
    { userId: user.id, accountId: user.accountId, hash: hashKey(key), publicId, name, expiresAt, now },
    { actor: by.id, requestId: by.requestId ?? null },
  )
  if (!row) throw new NotFound(`No user ${userId}`)
  return { ...toBody(deps, row), key }
}

/** Deletes the key: the next request with it is 401. */
export async function revokeKey(deps: KeyAdminDeps, by: Actor, userId: string, keyId: string): Promise<void> {
  const now = deps.clock.now()
  const user = await requireKeyHolder(deps.keys, by, userId)
  const removed = await deps.keys.remove(user.id, user.accountId, keyId.toLowerCase(), now, { actor: by.id, requestId: by.requestId ?? null })
  if (removed === 'no-user') throw new NotFound(`No user ${userId}`)
  if (removed === 'no-key') throw new NotFound(`No key ${keyId} of user ${user.id}`)
}

/** Whose key this is (for the command line's `key revoke ID`), or null when there is no such key. */
export async function keyOwner(keys: KeyStore, keyId: string): Promise<{ userId: string; accountId: string } | null> {
  return keys.ownerOf(keyId.toLowerCase())
}
