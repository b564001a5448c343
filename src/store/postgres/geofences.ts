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
import { and, asc, count, eq, inArray, sql } from 'drizzle-orm'
import type { PgConnectable, PostgresHandle } from '../../../db/postgres/client'
import { accounts, geofences } from '../../../db/postgres/schema'
import { GEOFENCES_VERSION_ROW, geofenceAuditEntry, geofenceChangeFields, type GeofenceCacheReads, type GeofenceListed, type GeofenceRefused, type GeofenceRow, type GeofenceStore, type GeofenceStoreOptions } from '../geofences'
import { recordAuditInTransaction } from './audit'
import { groupsRefusedInTransaction } from './people'
import { unitOfWork } from './unit'
import { byCodePoint } from './order'

/** names sort by their bytes, as SQLite's BINARY collation does, whatever the database's collation */

/** `options` as the SQLite store's (its clock bounds busy retries, which PostgreSQL does not need) */
export function createPostgresGeofenceStore(database: Pick<PostgresHandle, 'db' | 'versions'>, _options: GeofenceStoreOptions = {}): GeofenceStore {
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

  return {
    async list(accountId, page) {
      return db
        .select()
        .from(geofences)
        .where(eq(geofences.accountId, accountId))
        .orderBy(byCodePoint(geofences.name), asc(geofences.id))
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
        const refused = await groupsRefusedInTransaction(tx, row.accountId, groupIds)
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
        const refused = await groupsRefusedInTransaction(tx, accountId, change.groupIds)
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

/** The rules' cache reads on PostgreSQL, which answer from what `load` read ahead. */
export interface PostgresGeofenceCacheReads extends GeofenceCacheReads {
  /**
   * Reads ahead what the rules may ask of these accounts' geofences (ingest's unit of work calls it
   * with the accounts of its batch, before the rules run): the version (this node's copy of
   * access_version row 5), the geofences of each account not read since it last moved, and the
   * areas of those new or changed since they were last handed out. Nothing when nothing moved.
   */
  load(accountIds: Iterable<string>): Promise<void>
}

/**
 * What the rules' geofence cache reads (src/alerts/cache.ts), synchronous as the rules are: on
 * PostgreSQL from what `load` read ahead. The cache asks for an area only when its row's updated_at
 * or area length differs from the one it prepared: here too an area is read again only when its
 * row changed (a rename among 1,000 large polygons reads one), and kept only until it is handed out.
 */
export function createPostgresGeofenceCacheReads(database: Pick<PostgresHandle, 'db' | 'versions'>): PostgresGeofenceCacheReads {
  const { db } = database
  /** access_version row 5 as of the last load */
  let version = 0
  /** each account's geofences, as of the version they were read at */
  const listed = new Map<string, { version: number; rows: GeofenceListed[] }>()
  /** areas read ahead and not yet handed out, with the row they were read for */
  const areas = new Map<string, { text: string; updatedAt: number; areaLength: number }>()
  /** what each area handed out was read for: the cache has prepared it */
  const handedOut = new Map<string, { updatedAt: number; areaLength: number }>()

  return {
    version: () => version,
    ofAccount(accountId) {
      const found = listed.get(accountId)
      if (found?.version !== version) throw new Error(`the geofences of account ${accountId} were not read ahead (load, in ingest's unit of work)`)
      return found.rows
    },
    areaOf(id) {
      const area = areas.get(id)
      if (area === undefined) return undefined
      areas.delete(id)
      handedOut.set(id, { updatedAt: area.updatedAt, areaLength: area.areaLength })
      return area.text
    },
    async load(accountIds) {
      version = await database.versions.current(GEOFENCES_VERSION_ROW)
      const missing = [...new Set(accountIds)].filter((accountId) => listed.get(accountId)?.version !== version)
      if (missing.length === 0) return
      const at = version
      const rows = await db
        .select({
          accountId: geofences.accountId,
          id: geofences.id,
          name: geofences.name,
          groups: geofences.groups,
          speedLimit: geofences.speedLimit,
          updatedAt: geofences.updatedAt,
          // the value's bytes, as SQLite's octet_length
          areaLength: sql<number>`octet_length(${geofences.area})`.mapWith(Number),
        })
        .from(geofences)
        .where(inArray(geofences.accountId, missing))
        .orderBy(byCodePoint(geofences.name), asc(geofences.id))
      const changed = rows.filter((row) => {
        const prepared = handedOut.get(row.id)
        return prepared?.updatedAt !== row.updatedAt || prepared.areaLength !== row.areaLength
      })
      if (changed.length > 0) {
        const texts = await db.select({ id: geofences.id, area: geofences.area }).from(geofences).where(inArray(geofences.id, changed.map((row) => row.id)))
        const byId = new Map(changed.map((row) => [row.id, row]))
        for (const { id, area } of texts) areas.set(id, { text: area, updatedAt: byId.get(id)!.updatedAt, areaLength: byId.get(id)!.areaLength })
      }
      const byAccount = new Map<string, GeofenceListed[]>(missing.map((accountId) => [accountId, []]))
      for (const { accountId, ...row } of rows) byAccount.get(accountId)!.push(row)
      for (const accountId of missing) {
        // geofences gone since the account was last read are forgotten
        const kept = new Set(byAccount.get(accountId)!.map((row) => row.id))
        for (const row of listed.get(accountId)?.rows ?? []) {
          if (kept.has(row.id)) continue
          areas.delete(row.id)
          handedOut.delete(row.id)
        }
        listed.set(accountId, { version: at, rows: byAccount.get(accountId)! })
      }
    },
  }
}
