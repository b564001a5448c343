/**
 * The owner of api_keys: the lookup of a presented key by its hash (on every request with a key:
 * one prepared read, cached above it by keys/service.ts), a user's keys, and the units of work that
 * create and delete a key with its audit row. Writes wait for another process's write lock
 * asynchronously (store/busy.ts: Timeout after 5 s). Last uses are written in the background
 * (store/deferred.ts), never on a request's path.
 *
 * The credentials version (row 4 of access_version) moves by triggers (migration 0005; PostgreSQL:
 * the same triggers in PL/pgSQL) when a key, a session, a user's password, role or account changes.
 */
import { and, asc, eq, isNotNull, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { connectionOf, type Connectable, type DatabaseHandle, type Db } from '../../db/client'
import * as schema from '../../db/schema'
import { accessVersion, apiKeys, users } from '../../db/schema'
import { recordAuditInTransaction } from './audit'
import { type Clock, systemClock } from '../clock'
import type { Logger } from '../log'
import { retryWhileBusy } from './busy'
import { createDeferredWrites, type DeferredWrites } from './deferred'

/** A key found by its hash, with whose it is. */
export interface KeyOfHash {
  /** the row id: what last uses are noted by */
  id: number
  hash: string
  userId: string
  accountId: string
  role: string
  expiresAt: number | null
}

/** A key as a user's list shows it (never its hash). */
export interface StoredKey {
  id: number
  publicId: string
  name: string
  lastUsedAt: number | null
  expiresAt: number | null
  createdAt: number
}

/** Who makes a change, for its audit row. */
export interface KeyAudit {
  actor: string
  requestId: string | null
}

export interface NewKeyRow {
  userId: string
  /** the user must be of this account, else nothing is made */
  accountId: string
  hash: string
  publicId: string
  name: string
  expiresAt: number | null
  now: number
}

export interface DeferredUsesOptions {
  delayMs: number
  /** key row id → the use (Unix ms) waiting: written in one transaction */
  pending(): Iterable<[number, number]>
  hasPending(): boolean
  /** called once what `pending()` gave has committed */
  written(): void
  log: Logger
  failure: string
  context?(): Record<string, unknown>
}

export interface KeyStore {
  /** row 4 of access_version: a cache of who a credential is holds only while it stays the same */
  credentialsVersion(): Promise<number>
  keyByHash(hash: string): Promise<KeyOfHash | null>
  /** the user, when of the account */
  keyHolder(userId: string, accountId: string): Promise<{ id: string; accountId: string } | null>
  /** the user's keys with a public id, by name then id */
  keysOf(userId: string, page: { limit: number; offset: number }): Promise<StoredKey[]>
  /** whose key this is, by its public id */
  ownerOf(publicId: string): Promise<{ userId: string; accountId: string } | null>
  /** the key and its audit row in one unit of work; null when the user is not (or no longer) of the account */
  create(key: NewKeyRow, audit: KeyAudit): Promise<StoredKey | null>
  /** deletes the user's key (by public id) with its audit row; 'no-user' when the user is not of the account */
  remove(userId: string, accountId: string, publicId: string, now: number, audit: KeyAudit): Promise<'removed' | 'no-key' | 'no-user'>
  /** the background writer of last uses (store/deferred.ts) */
  deferUses(options: DeferredUsesOptions): DeferredWrites
}

export interface KeyStoreOptions {
  /** the write deadline's clock */
  clock?: Clock
}

/** the columns a key is listed with, of either engine's api_keys (the PostgreSQL adapter's too) */
type KeyColumn = 'id' | 'publicId' | 'name' | 'lastUsedAt' | 'expiresAt' | 'createdAt'
export const keyColumns = <T extends Record<KeyColumn, unknown>>(t: T): Pick<T, KeyColumn> => ({
  id: t.id,
  publicId: t.publicId,
  name: t.name,
  lastUsedAt: t.lastUsedAt,
  expiresAt: t.expiresAt,
  createdAt: t.createdAt,
})

const KEY_COLUMNS = keyColumns(apiKeys)

export const stored = (row: Omit<StoredKey, 'publicId'> & { publicId: string | null }): StoredKey => ({ ...row, publicId: row.publicId! })

export function createKeyStore(database: Pick<DatabaseHandle, 'sqlite'>, { clock = systemClock }: KeyStoreOptions = {}): KeyStore {
  const { sqlite } = database
  const db = drizzle(sqlite, { schema })
  const placeholder = sql.placeholder
  const credentialsVersion = createCredentialsVersion(sqlite)
  const byHash = db
    .select({ id: apiKeys.id, hash: apiKeys.hash, userId: users.id, accountId: users.accountId, role: users.role, expiresAt: apiKeys.expiresAt })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .where(eq(apiKeys.hash, placeholder('hash')))
    .prepare()
  const holder = db
    .select({ id: users.id, accountId: users.accountId })
    .from(users)
    .where(and(eq(users.id, placeholder('user')), eq(users.accountId, placeholder('account'))))
    .prepare()
  const keysOf = db
    .select(KEY_COLUMNS)
    .from(apiKeys)
    .where(and(eq(apiKeys.userId, placeholder('user')), isNotNull(apiKeys.publicId)))
    .orderBy(asc(apiKeys.name), asc(apiKeys.publicId))
    .limit(placeholder('limit'))
    .offset(placeholder('offset'))
    .prepare()
  const ownerOf = db
    .select({ userId: users.id, accountId: users.accountId })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .where(eq(apiKeys.publicId, placeholder('publicId')))
    .prepare()
  // a key deleted while its use waited: the update finds no row, and nothing is written
  // (SQLite's scalar max; PostgreSQL: greatest)
  const writeUse = db
    .update(apiKeys)
    .set({ lastUsedAt: sql`max(coalesce(${apiKeys.lastUsedAt}, 0), ${placeholder('at')})` })
    .where(eq(apiKeys.id, placeholder('id')))
    .prepare()
  const write = <T>(work: () => T) => retryWhileBusy(sqlite, work, { clock })

  return {
    // on every request with a key: a settled promise, without an async frame
    credentialsVersion: () => Promise.resolve(credentialsVersion()),
    async keyByHash(hash) {
      return byHash.get({ hash }) ?? null
    },
    async keyHolder(userId, accountId) {
      return holder.get({ user: userId, account: accountId }) ?? null
    },
    async keysOf(userId, page) {
      return keysOf.all({ user: userId, limit: page.limit, offset: page.offset }).map(stored)
    },
    async ownerOf(publicId) {
      return ownerOf.get({ publicId }) ?? null
    },

    async create(key, audit) {
      return write(() =>
        db.transaction(
          (tx) => {
            const user = tx.select({ id: users.id }).from(users).where(and(eq(users.id, key.userId), eq(users.accountId, key.accountId))).get()
            if (!user) return null
            const row = tx
              .insert(apiKeys)
              .values({ userId: key.userId, hash: key.hash, publicId: key.publicId, name: key.name, expiresAt: key.expiresAt, createdAt: key.now })
              .returning(KEY_COLUMNS)
              .get()
            recordAuditInTransaction(tx, { accountId: key.accountId, actor: audit.actor, action: 'create', objectType: 'key', objectId: key.publicId, requestId: audit.requestId }, key.now)
            return stored(row)
          },
          { behavior: 'immediate' },
        ),
      )
    },

    async remove(userId, accountId, publicId, now, audit) {
      return write(() =>
        db.transaction(
          (tx) => {
            const user = tx.select({ id: users.id }).from(users).where(and(eq(users.id, userId), eq(users.accountId, accountId))).get()
            if (!user) return 'no-user' as const
            const deleted = tx
              .delete(apiKeys)
              .where(and(eq(apiKeys.publicId, publicId), eq(apiKeys.userId, userId)))
              .returning({ id: apiKeys.id })
              .all()
            if (deleted.length === 0) return 'no-key' as const
            recordAuditInTransaction(tx, { accountId, actor: audit.actor, action: 'delete', objectType: 'key', objectId: publicId, requestId: audit.requestId }, now)
            return 'removed' as const
          },
          { behavior: 'immediate' },
        ),
      )
    },

    deferUses(options) {
      const writeAll = (uses: [number, number][]) =>
        db.transaction(() => {
          for (const [id, at] of uses) writeUse.run({ id, at })
        })
      return createDeferredWrites(sqlite, {
        delayMs: options.delayMs,
        hasPending: options.hasPending,
        write: () => {
          writeAll([...options.pending()])
          options.written()
        },
        log: options.log,
        failure: options.failure,
        context: options.context,
      })
    },
  }
}

/** A reader of the credentials version (access_version row 4: keys, roles, users), run to completion. */
function createCredentialsVersion(connection: Connectable): () => number {
  const read = drizzle(connectionOf(connection)).select({ version: accessVersion.version }).from(accessVersion).where(eq(accessVersion.id, 4)).prepare()
  return () => read.get()?.version ?? 0
}

/**
 * A key for the user, made at `now` with the hash `hash`: for the demo (src/demo.ts, which
 * opens the database itself) until it takes a KeyStore. False when there is no such user.
 */
export function insertKeyInTransaction(tx: Connectable, userId: string, hash: string, now: number): boolean {
  const db = drizzle(connectionOf(tx))
  if (!db.select({ id: users.id }).from(users).where(eq(users.id, userId)).get()) return false
  db.insert(apiKeys).values({ userId, hash, publicId: crypto.randomUUID(), createdAt: now }).run()
  return true
}
