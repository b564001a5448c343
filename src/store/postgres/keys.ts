/**
 * api_keys on PostgreSQL: src/store/keys.ts's store over the schema's PostgreSQL twin, with the
 * same answers and audit rows. The credentials version is `database.versions`' counter 4 (no
 * query per request); last uses are written in the background over the pool, in one statement.
 */
import { and, eq, isNotNull, sql } from 'drizzle-orm'
import type { PgConnectable, PostgresHandle } from '../../../db/postgres/client'
import { apiKeys, users } from '../../../db/postgres/schema'
import { keyColumns, type KeyStore, type KeyStoreOptions, stored } from '../keys'
import { recordAuditInTransaction } from './audit'
import { deferNotedUses } from './people'
import { unitOfWork } from './unit'
import { byCodePoint } from './order'

const KEY_COLUMNS = keyColumns(apiKeys)

export function createPostgresKeyStore(database: PostgresHandle, _options: KeyStoreOptions = {}): KeyStore {
  const { db } = database

  /** the user, when of the account; kept (not deleted) until the unit commits */
  async function holderIn(tx: PgConnectable, userId: string, accountId: string) {
    const [user] = await tx
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.id, userId), eq(users.accountId, accountId)))
      .for('key share')
    return user
  }

  return {
    credentialsVersion() {
      return database.versions.current(4)
    },
    async keyByHash(hash) {
      const [row] = await db
        .select({ id: apiKeys.id, hash: apiKeys.hash, userId: users.id, accountId: users.accountId, role: users.role, expiresAt: apiKeys.expiresAt })
        .from(apiKeys)
        .innerJoin(users, eq(users.id, apiKeys.userId))
        .where(eq(apiKeys.hash, hash))
      return row ?? null
    },
    async keyHolder(userId, accountId) {
      const [row] = await db
        .select({ id: users.id, accountId: users.accountId })
        .from(users)
        .where(and(eq(users.id, userId), eq(users.accountId, accountId)))
      return row ?? null
    },
    async keysOf(userId, page) {
      const rows = await db
        .select(KEY_COLUMNS)
        .from(apiKeys)
        .where(and(eq(apiKeys.userId, userId), isNotNull(apiKeys.publicId)))
        .orderBy(byCodePoint(apiKeys.name), byCodePoint(apiKeys.publicId))
        .limit(page.limit)
        .offset(page.offset)
      return rows.map(stored)
    },
    async ownerOf(publicId) {
      const [row] = await db
        .select({ userId: users.id, accountId: users.accountId })
        .from(apiKeys)
        .innerJoin(users, eq(users.id, apiKeys.userId))
        .where(eq(apiKeys.publicId, publicId))
      return row ?? null
    },

    create(key, audit) {
      return unitOfWork(database, async (tx) => {
        if (!(await holderIn(tx, key.userId, key.accountId))) return null
        const [row] = await tx
          .insert(apiKeys)
          .values({ userId: key.userId, hash: key.hash, publicId: key.publicId, name: key.name, expiresAt: key.expiresAt, createdAt: key.now })
          .returning(KEY_COLUMNS)
        await recordAuditInTransaction(tx, { accountId: key.accountId, actor: audit.actor, action: 'create', objectType: 'key', objectId: key.publicId, requestId: audit.requestId }, key.now)
        return stored(row!)
      })
    },

    remove(userId, accountId, publicId, now, audit) {
      return unitOfWork(database, async (tx) => {
        if (!(await holderIn(tx, userId, accountId))) return 'no-user' as const
        // found first: api_keys' delete trigger fires once a statement, even for no row, and a
        // key that is not there must not move the credentials version
        const [found] = await tx
          .select({ id: apiKeys.id })
          .from(apiKeys)
          .where(and(eq(apiKeys.publicId, publicId), eq(apiKeys.userId, userId)))
          .for('update')
        if (!found) return 'no-key' as const
        await tx.delete(apiKeys).where(eq(apiKeys.id, found.id))
        await recordAuditInTransaction(tx, { accountId, actor: audit.actor, action: 'delete', objectType: 'key', objectId: publicId, requestId: audit.requestId }, now)
        return 'removed' as const
      })
    },

    deferUses(options) {
      // every use waiting in one statement; a key deleted while its use waited has no row to
      // update. last_used_at moves no access counter, so no unit of work
      const write = async (uses: [number, number][]) => {
        const rows = JSON.stringify(uses.map(([id, atMs]) => ({ id, at: atMs })))
        await db.execute(sql`
          UPDATE api_keys SET last_used_at = greatest(coalesce(api_keys.last_used_at, 0), u.at)
          FROM jsonb_to_recordset(${rows}::jsonb) AS u(id integer, at bigint)
          WHERE api_keys.id = u.id`)
      }
      return deferNotedUses(options, write)
    },
  }
}

/** keys.ts's writer of the same name (the demo's key): false when there is no such user. */
export async function insertKeyInTransaction(tx: PgConnectable, userId: string, hash: string, now: number): Promise<boolean> {
  const [user] = await tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).for('key share')
  if (!user) return false
  await tx.insert(apiKeys).values({ userId, hash, publicId: crypto.randomUUID(), createdAt: now })
  return true
}
