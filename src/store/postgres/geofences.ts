/**
 * geofences on PostgreSQL: src/store/geofences.ts's `GeofenceStore` (the API's units of work, each
 * with its audit row) and the rules' cache reads, over the schema's PostgreSQL twin. alert_states
 * (the rules' state, written in ingest's transaction) is not here.
 *
 * Where SQLite's `BEGIN IMMEDIATE` serialises every writer, a unit here locks what it decides on:
 * a creation locks the account's row (FOR NO KEY UPDATE, which does not stop rows that merely
 * reference the account), so two creations at once cannot both take the last place; a change
 * locks the geofence's row, so updated_at moves on from the value it read.
 */
import { and, asc, type Column, count, eq, sql } from 'drizzle-orm'
import type { PgConnectable, PostgresHandle } from '../../../db/postgres/client'
import { accounts, geofences } from '../../../db/postgres/schema'
import { GEOFENCES_VERSION_ROW, geofenceAuditEntry, geofenceChangeFields, type GeofenceCacheReadsAsync, type GeofenceRefused, type GeofenceRow, type GeofenceStore } from '../geofences'
import { recordAuditInTransaction } from './audit'
import { groupsOfAccountInTransaction } from './people'
import { unitOfWork } from './unit'

/** names sort by their bytes, as SQLite's BINARY collation does, whatever the database's collation */
export const byName = (column: Column) => asc(sql`${column} COLLATE "C"`)

export function createPostgresGeofenceStore(database: Pick<PostgresHandle, 'db' | 'versions'>): GeofenceStore {
  const { db } = database

  const find = async (tx: PgConnectable, accountId: string, id: string, lock = false): Promise<GeofenceRow | null> => {
    const query = tx
      .select()
      .from(geofences)
      .where(and(eq(geofences.id, id.toLowerCase()), eq(geofences.accountId, accountId)))
    const [row] = lock ? await query.for('update') : await query
    return row ?? null
  }
  const held = async (tx: PgConnectable, accountId: string): Promise<number> => {
    const [row] = await tx.select({ n: count() }).from(geofences).where(eq(geofences.accountId, accountId))
    return row?.n ?? 0
  }
  /** null when every id is a group of the account */
  const unknownGroups = async (tx: PgConnectable, accountId: string, ids: readonly string[] | undefined): Promise<GeofenceRefused | null> => {
    if (ids === undefined || ids.length === 0) return null
    const found = await groupsOfAccountInTransaction(tx, accountId, ids)
    return ids.every((id) => found.has(id)) ? null : { groupsFound: found }
  }

  return {
    async list(accountId, page) {
      return db
        .select()
        .from(geofences)
        .where(eq(geofences.accountId, accountId))
        .orderBy(byName(geofences.name), asc(geofences.id))
        .limit(page.limit)
        .offset(page.offset)
    },

    find: (accountId, id) => find(db, accountId, id),

    count: (accountId) => held(db, accountId),

    create({ row, groupIds, maxPerAccount }, audit) {
      return unitOfWork(database, async (tx): Promise<{ created: GeofenceRow } | GeofenceRefused> => {
        // the account's row locked: creations in one account count one after the other
        await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, row.accountId)).for('no key update')
        const n = await held(tx, row.accountId)
        if (n >= maxPerAccount) return { held: n }
        const refused = await unknownGroups(tx, row.accountId, groupIds)
        if (refused) return refused
        const [created] = await tx.insert(geofences).values(row).returning()
        await recordAuditInTransaction(tx, geofenceAuditEntry(row.accountId, audit, 'create', row.id), row.createdAt)
        return { created: created! }
      })
    },

    update(accountId, id, change, atMs, audit) {
      return unitOfWork(database, async (tx) => {
        const current = await find(tx, accountId, id, true)
        if (current === null) return null
        const refused = await unknownGroups(tx, accountId, change.groupIds)
        if (refused) return refused
        const fields = geofenceChangeFields(change)
        if (Object.keys(fields).length === 0) return { row: current, changed: false }
        const [row] = await tx
          .update(geofences)
          .set({ ...fields, updatedAt: Math.max(atMs, current.updatedAt + 1) })
          .where(eq(geofences.id, current.id))
          .returning()
        await recordAuditInTransaction(tx, geofenceAuditEntry(accountId, audit, 'update', current.id), atMs)
        return { row: row!, changed: true }
      })
    },

    remove(accountId, id, atMs, audit) {
      return unitOfWork(database, async (tx) => {
        const current = await find(tx, accountId, id, true)
        if (current === null) return false
        await tx.delete(geofences).where(eq(geofences.id, current.id))
        await recordAuditInTransaction(tx, geofenceAuditEntry(accountId, audit, 'delete', current.id), atMs)
        return true
      })
    },
  }
}

/**
 * What the rules' geofence cache reads, on PostgreSQL: the same reads as createGeofenceCacheReads,
 * as promises (on this engine the rules' hook awaits). The version is this node's copy of
 * access_version row 5 (db/postgres/versions.ts: no query unless a change was announced).
 * The reads go through the pool, not ingest's transaction: ingest never writes geofences, so they
 * see what a read on that transaction would.
 */
export function createPostgresGeofenceCacheReads(database: Pick<PostgresHandle, 'db' | 'versions'>): GeofenceCacheReadsAsync {
  const { db } = database
  return {
    version: () => database.versions.current(GEOFENCES_VERSION_ROW),
    ofAccount: (accountId) =>
      db
        .select({
          id: geofences.id,
          name: geofences.name,
          groups: geofences.groups,
          speedLimit: geofences.speedLimit,
          updatedAt: geofences.updatedAt,
          // the value's bytes, as SQLite's octet_length
          areaLength: sql<number>`octet_length(${geofences.area})`.mapWith(Number),
        })
        .from(geofences)
        .where(eq(geofences.accountId, accountId))
        .orderBy(byName(geofences.name), asc(geofences.id)),
    async areaOf(id) {
      const [row] = await db.select({ area: geofences.area }).from(geofences).where(eq(geofences.id, id))
      return row?.area
    },
  }
}
