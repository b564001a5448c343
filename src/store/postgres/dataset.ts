/**
 * The import on PostgreSQL: store/dataset.ts's store (the same rules, answers and audit rows) over
 * the schema's PostgreSQL twin. The stored rows the check asks about are read first, one
 * `= ANY($1)` read a table for the ids the document names, so the check stays synchronous; the
 * months the positions fall in get their partitions (db/postgres/partitions.ts) before the
 * transaction, since creating one locks the parent table; then the whole document is written in
 * one unit of work.
 *
 * Nothing is written row by row: the small tables in multi-row inserts of at most
 * MAX_STATEMENT_PARAMETERS parameters, positions and events (the many) as one `unnest` of column
 * arrays a chunk (ten or twelve parameters a statement, whatever the chunk's size).
 */
import { and, sql, type SQL } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import type { PgConnectable, PgTx, PostgresHandle } from '../../../db/postgres/client'
import { ensurePartitions, partitionOf } from '../../../db/postgres/partitions'
import { accounts, apiKeys, commands, deviceGroups, devices, groups, models, userGroups, users } from '../../../db/postgres/schema'
import type { ModelBody } from '../../admin/models-model'
import { Invalid } from '../../errors'
import { CLI_ACTOR } from '../audit'
import {
  type DatasetStore,
  fromExcluded,
  type ImportedTable,
  importedDevice,
  importedEvents,
  importedPosition,
  type ImportRows,
  type ImportSummary,
  type ImportWrite,
  type StoredRows,
} from '../dataset'
import { decodeCoordinate, type EncodedPosition, FLAG_UNLOCATABLE } from '../positions'
import { accountsUsingModelInTransaction, modelBodiesInTransaction, recordModelChangeInTransaction } from './models'
import { endLinksBeyondCreatorsReachInTransaction, removeFromOtherAccountsLinksInTransaction } from './shareLinks'
import { unitOfWork } from './unit'

/** PostgreSQL binds at most 65,535 parameters a statement; a little under it. */
export const MAX_STATEMENT_PARAMETERS = 65_000
/** positions and events a statement (their columns go as arrays: the count is not bound by parameters) */
export const BULK_ROWS = 10_000

/** The rows of `list` in chunks that bind at most MAX_STATEMENT_PARAMETERS parameters at `columns` a row. */
function* chunksOf<T>(list: readonly T[], columns: number): Generator<T[]> {
  const size = Math.max(1, Math.floor(MAX_STATEMENT_PARAMETERS / columns))
  for (let i = 0; i < list.length; i += size) yield list.slice(i, i + size)
}

/** `column = ANY($1)`: one parameter however many ids */
const anyOf = (column: AnyPgColumn | SQL, values: readonly (string | number)[], type: 'text' | 'int'): SQL =>
  sql`${column} = ANY(${sql.param([...values])}::${sql.raw(type)}[])`

/** an array bound as one parameter of a statement, cast to `type[]` */
const arrayOf = (values: readonly unknown[], type: string): SQL => sql`${sql.param(values)}::${sql.raw(type)}[]`

const affected = (result: unknown): number => (result as { count: number }).count

const unique = <T>(values: Iterable<T>): T[] => [...new Set(values)]

/** The stored rows the check asks about, read once for every id the document names. */
async function storedRows(tx: PgConnectable, data: ImportRows): Promise<StoredRows> {
  const named: Record<ImportedTable, string[]> = {
    accounts: unique([...(data.accounts ?? []).map((a) => a.id), ...(data.groups ?? []).map((g) => g.account), ...(data.users ?? []).map((u) => u.account), ...(data.devices ?? []).map((d) => d.account)]),
    groups: unique([...(data.groups ?? []).map((g) => g.id), ...(data.users ?? []).flatMap((u) => u.groups ?? []), ...(data.devices ?? []).flatMap((d) => d.groups ?? [])]),
    users: unique((data.users ?? []).map((u) => u.id)),
    models: unique([...(data.models ?? []).map((m) => m.id), ...(data.devices ?? []).flatMap((d) => (d.model === undefined ? [] : [d.model]))]),
    devices: unique([...(data.devices ?? []).map((d) => d.id), ...(data.positions ?? []).map((p) => p.device), ...(data.events ?? []).map((e) => e.device)]),
    commands: unique((data.models ?? []).flatMap((m) => (m.commands ?? []).map((c) => c.id))),
  }
  const ids = async (table: typeof accounts | typeof users | typeof devices | typeof commands, id: AnyPgColumn, list: string[]) =>
    list.length === 0 ? new Set<string>() : new Set((await tx.select({ id }).from(table).where(anyOf(id, list, 'text'))).map((row) => row.id as string))
  const accountIds = await ids(accounts, accounts.id, named.accounts)
  const userIds = await ids(users, users.id, named.users)
  const deviceIds = await ids(devices, devices.id, named.devices)
  const commandIds = await ids(commands, commands.id, named.commands)
  const groupAccounts = new Map(
    named.groups.length === 0 ? [] : (await tx.select({ id: groups.id, accountId: groups.accountId }).from(groups).where(anyOf(groups.id, named.groups, 'text'))).map((g) => [g.id, g.accountId]),
  )
  const modelAccounts = new Map<string, string | null>(
    named.models.length === 0 ? [] : (await tx.select({ id: models.id, accountId: models.accountId }).from(models).where(anyOf(models.id, named.models, 'text'))).map((m) => [m.id, m.accountId]),
  )
  const hashes = unique((data.users ?? []).flatMap((u) => u.apiKeyHashes ?? []))
  const storedHashes = new Set(hashes.length === 0 ? [] : (await tx.select({ hash: apiKeys.hash }).from(apiKeys).where(anyOf(apiKeys.hash, hashes, 'text'))).map((k) => k.hash))
  // sign-in names are unique whatever their case; an empty name signs nobody in
  const names = unique((data.users ?? []).map((u) => (u.name ?? '').toLowerCase()).filter((name) => name !== ''))
  const lowerName = sql<string>`lower(${users.name})`
  const userNamed = new Map(
    names.length === 0 ? [] : (await tx.select({ id: users.id, name: lowerName }).from(users).where(and(anyOf(lowerName, names, 'text'), sql`${users.name} <> ''`))).map((u) => [u.name, u.id]),
  )
  const present: Record<ImportedTable, (id: string) => boolean> = {
    accounts: (id) => accountIds.has(id),
    groups: (id) => groupAccounts.has(id),
    users: (id) => userIds.has(id),
    models: (id) => modelAccounts.has(id),
    devices: (id) => deviceIds.has(id),
    commands: (id) => commandIds.has(id),
  }
  return {
    has: (table, id) => present[table](id),
    groupAccount: (id) => groupAccounts.get(id),
    modelAccount: (id) => modelAccounts.get(id),
    keyHashStored: (hash) => storedHashes.has(hash),
    userNamed: (name) => userNamed.get(name),
  }
}

/**
 * Inserts a chunk of fixes none of which the file repeats, counting those written. Most imports
 * write fixes nothing stored collides with, and a plain INSERT costs markedly less than ON
 * CONFLICT's speculative insertion (147,080 fixes: 2.3–2.7 s against 4.3–4.4 s here): it is tried
 * first under a savepoint, and only a chunk that meets a stored fix is written again with
 * ON CONFLICT DO NOTHING.
 */
async function insertOrIgnore(tx: PgTx, insert: SQL, rows: number): Promise<number> {
  try {
    await tx.transaction(async (savepoint) => {
      await savepoint.execute(insert)
    })
    return rows
  } catch (error) {
    if (codeOf(error) !== UNIQUE_VIOLATION) throw error
    return affected(await tx.execute(sql`${insert} ON CONFLICT (device, ts) DO NOTHING`))
  }
}

const UNIQUE_VIOLATION = '23505'

/** the SQLSTATE of a driver's error, whether or not Drizzle wrapped it */
function codeOf(error: unknown): string | undefined {
  const own = (error as { code?: unknown }).code
  if (typeof own === 'string') return own
  const cause = (error as { cause?: unknown }).cause
  return cause ? codeOf(cause) : undefined
}

export function createPostgresDatasetStore(database: Pick<PostgresHandle, 'db' | 'sql' | 'versions'>): DatasetStore {
  const { db } = database

  async function write(tx: PgTx, data: ImportRows, positions: EncodedPosition[], { upsert, now, onProgress }: ImportWrite): Promise<ImportSummary> {
    const summary: ImportSummary = { accounts: 0, groups: 0, users: 0, apiKeys: 0, models: 0, commands: 0, devices: 0, positions: 0, events: 0 }

    // the stored models the rows rewrite (upsert), as they were: one that changes is audited
    const modelIds = (data.models ?? []).map((m) => m.id)
    const modelsBefore: { id: string; body: ModelBody; users: string[] }[] = []
    if (modelIds.length > 0) {
      const rows = await tx.select().from(models).where(anyOf(models.id, modelIds, 'text'))
      const bodies = new Map((await modelBodiesInTransaction(tx, rows)).map((body) => [body.id, body]))
      for (const id of modelIds) {
        const body = bodies.get(id)
        if (body) modelsBefore.push({ id, body, users: await accountsUsingModelInTransaction(tx, id) })
      }
    }

    for (const chunk of chunksOf(data.accounts ?? [], 3)) {
      const insert = tx.insert(accounts).values(chunk.map((a) => ({ id: a.id, name: a.name ?? '', createdAt: now })))
      summary.accounts += affected(await (upsert ? insert.onConflictDoUpdate({ target: accounts.id, set: fromExcluded(accounts, 'name') }) : insert))
    }
    for (const chunk of chunksOf(data.groups ?? [], 3)) {
      const insert = tx.insert(groups).values(chunk.map((g) => ({ id: g.id, accountId: g.account, name: g.name ?? '' })))
      summary.groups += affected(await (upsert ? insert.onConflictDoUpdate({ target: groups.id, set: fromExcluded(groups, 'accountId', 'name') }) : insert))
    }

    const fileUsers = data.users ?? []
    if (fileUsers.length > 0) {
      // a user moved to another account keeps none of the old account's groups
      const storedAccount = new Map(
        upsert ? (await tx.select({ id: users.id, accountId: users.accountId }).from(users).where(anyOf(users.id, fileUsers.map((u) => u.id), 'text'))).map((u) => [u.id, u.accountId]) : [],
      )
      for (const chunk of chunksOf(fileUsers, 4)) {
        const insert = tx.insert(users).values(chunk.map((u) => ({ id: u.id, accountId: u.account, name: u.name ?? '', createdAt: now })))
        summary.users += affected(await (upsert ? insert.onConflictDoUpdate({ target: users.id, set: fromExcluded(users, 'accountId', 'name') }) : insert))
      }
      const regrouped = fileUsers.filter((u) => u.groups !== undefined)
      if (regrouped.length > 0) {
        await tx.delete(userGroups).where(anyOf(userGroups.userId, regrouped.map((u) => u.id), 'text'))
        const memberships = regrouped.flatMap((u) => u.groups!.map((groupId) => ({ userId: u.id, groupId })))
        for (const chunk of chunksOf(memberships, 2)) await tx.insert(userGroups).values(chunk).onConflictDoNothing()
      }
      const moved = fileUsers.filter((u) => storedAccount.has(u.id) && storedAccount.get(u.id) !== u.account).map((u) => u.id)
      if (moved.length > 0) {
        await tx.execute(sql`
          DELETE FROM user_groups ug USING groups g, users u
          WHERE ${anyOf(sql`ug.user_id`, moved, 'text')} AND g.id = ug.group_id AND u.id = ug.user_id AND g.account_id <> u.account_id`)
      }
      for (const role of ['admin', 'member'] as const) {
        const given = fileUsers.filter((u) => u.role === role).map((u) => u.id)
        if (given.length > 0) await tx.update(users).set({ role }).where(anyOf(users.id, given, 'text'))
      }
      const keys = fileUsers.flatMap((u) => (u.apiKeyHashes ?? []).map((hash) => ({ userId: u.id, hash, publicId: crypto.randomUUID(), createdAt: now })))
      for (const chunk of chunksOf(keys, 4)) summary.apiKeys += affected(await tx.insert(apiKeys).values(chunk).onConflictDoNothing())
    }

    for (const chunk of chunksOf(data.models ?? [], 3)) {
      const insert = tx.insert(models).values(chunk.map((m) => ({ id: m.id, name: m.name ?? '', protocol: m.protocol ?? null })))
      summary.models += affected(await (upsert ? insert.onConflictDoUpdate({ target: models.id, set: fromExcluded(models, 'name', 'protocol') }) : insert))
    }
    const commandRows = (data.models ?? []).flatMap((m) =>
      (m.commands ?? []).map((c, ordinal) => ({ id: c.id, modelId: m.id, name: c.name ?? '', widget: JSON.stringify(c.widget), ordinal, send: c.send ? JSON.stringify(c.send) : null })),
    )
    for (const chunk of chunksOf(commandRows, 6)) {
      const insert = tx.insert(commands).values(chunk)
      summary.commands += affected(await (upsert ? insert.onConflictDoUpdate({ target: commands.id, set: fromExcluded(commands, 'modelId', 'name', 'widget', 'ordinal', 'send') }) : insert))
    }

    const keys = new Map<string, number>()
    const locateAfterPositions: number[] = []
    const fileDevices = data.devices ?? []
    if (fileDevices.length > 0) {
      const storedAccount = new Map(
        upsert ? (await tx.select({ id: devices.id, accountId: devices.accountId }).from(devices).where(anyOf(devices.id, fileDevices.map((d) => d.id), 'text'))).map((d) => [d.id, d.accountId]) : [],
      )
      // one statement a run of devices alike in whether they give created_at (upsert keeps the stored one otherwise), in the file's order
      const runs: { createdGiven: boolean; list: typeof fileDevices }[] = []
      for (const d of fileDevices) {
        const createdGiven = d.created_at !== undefined
        const last = runs.at(-1)
        if (last && last.createdGiven === createdGiven) last.list.push(d)
        else runs.push({ createdGiven, list: [d] })
      }
      for (const run of runs) {
        for (const chunk of chunksOf(run.list, 17)) {
          const insert = tx.insert(devices).values(chunk.map((d) => importedDevice(d, now)))
          const written = await (upsert
            ? insert.onConflictDoUpdate({
                target: devices.id,
                set: {
                  ...fromExcluded(devices, 'accountId', 'alias', 'properties', 'serial', 'imei', 'iccid', 'state', 'latitude', 'longitude', 'connected', 'connectedAt', 'disconnectedAt', 'updatedAt'),
                  // a device named without a model keeps its own; one given without created_at keeps the stored one
                  modelId: sql`coalesce(excluded.model_id, ${devices.modelId})`,
                  createdAt: run.createdGiven ? sql`excluded.created_at` : sql`${devices.createdAt}`,
                },
              })
            : insert
          ).returning({ id: devices.id, key: devices.key })
          for (const row of written) keys.set(row.id, row.key)
        }
      }
      summary.devices += fileDevices.length
      const regrouped = fileDevices.filter((d) => d.groups !== undefined)
      if (regrouped.length > 0) {
        await tx.delete(deviceGroups).where(anyOf(deviceGroups.deviceKey, regrouped.map((d) => keys.get(d.id)!), 'int'))
        const memberships = regrouped.flatMap((d) => d.groups!.map((groupId) => ({ groupId, deviceKey: keys.get(d.id)! })))
        for (const chunk of chunksOf(memberships, 2)) await tx.insert(deviceGroups).values(chunk).onConflictDoNothing()
      }
      const moved = fileDevices.filter((d) => storedAccount.has(d.id) && storedAccount.get(d.id) !== d.account)
      if (moved.length > 0) {
        await tx.execute(sql`
          DELETE FROM device_groups dg USING groups g, devices d
          WHERE ${anyOf(sql`dg.device_key`, moved.map((d) => keys.get(d.id)!), 'int')} AND g.id = dg.group_id AND d.key = dg.device_key AND g.account_id <> d.account_id`)
        for (const d of moved) await removeFromOtherAccountsLinksInTransaction(tx, keys.get(d.id)!, d.account, now)
      }
      for (const d of fileDevices) if (d.location === undefined) locateAfterPositions.push(keys.get(d.id)!)
    }

    if (modelsBefore.length > 0) {
      const rows = await tx.select().from(models).where(anyOf(models.id, modelsBefore.map((m) => m.id), 'text'))
      const after = new Map((await modelBodiesInTransaction(tx, rows)).map((body) => [body.id, body]))
      for (const before of modelsBefore) {
        const body = after.get(before.id)!
        if (Bun.deepEquals(body, before.body)) continue
        const accountIds = [...before.users, ...(await accountsUsingModelInTransaction(tx, before.id)), body.account]
        await recordModelChangeInTransaction(tx, { modelId: before.id, action: 'update', actor: CLI_ACTOR, accounts: accountIds }, now)
      }
    }

    // once every user's and device's groups, roles and accounts are as the rows say: share links
    // keep only what their creators reach. Only an upsert can take reach away.
    if (upsert) await endLinksBeyondCreatorsReachInTransaction(tx, null, now)

    // the stored devices the positions and events name, in one read
    const elsewhere = unique([...(data.positions ?? []).map((p) => p.device), ...(data.events ?? []).map((e) => e.device)]).filter((id) => !keys.has(id))
    if (elsewhere.length > 0) {
      for (const row of await tx.select({ id: devices.id, key: devices.key }).from(devices).where(anyOf(devices.id, elsewhere, 'text'))) keys.set(row.id, row.key)
    }
    const keyOf = (id: string): number => keys.get(id)!

    const fixes = data.positions ?? []
    if (fixes.length > 0) onProgress?.(0, fixes.length)
    let written: { device: number; row: EncodedPosition }[] = fixes.map((p, i) => ({ device: keyOf(p.device), row: positions[i]! }))
    if (upsert) {
      // every fix given replaces the one before it: each counts, and one statement may not update a row twice, so the last of a (device, ts) is written
      summary.positions += written.length
      const last = new Map<string, number>()
      written.forEach((fix, i) => last.set(`${fix.device} ${fix.row.ts}`, i))
      written = written.filter((fix, i) => last.get(`${fix.device} ${fix.row.ts}`) === i)
    } else {
      // the first of a (device, ts) is the one kept, as inserting one after another does
      const seenFixes = new Set<string>()
      written = written.filter((fix) => {
        const key = `${fix.device} ${fix.row.ts}`
        if (seenFixes.has(key)) return false
        seenFixes.add(key)
        return true
      })
    }
    for (let from = 0; from < written.length; from += BULK_ROWS) {
      const chunk = written.slice(from, from + BULK_ROWS)
      const column = <T>(pick: (fix: (typeof chunk)[number]) => T, type: string) => arrayOf(chunk.map(pick), type)
      const insert = sql`
        INSERT INTO positions (device, ts, lat, lon, speed, course, altitude, satellites, flags, attributes)
        SELECT * FROM unnest(${column((f) => f.device, 'int')}, ${column((f) => f.row.ts, 'bigint')}, ${column((f) => f.row.lat, 'int')}, ${column((f) => f.row.lon, 'int')},
          ${column((f) => f.row.speed, 'int')}, ${column((f) => f.row.course, 'int')}, ${column((f) => f.row.altitude, 'int')}, ${column((f) => f.row.satellites, 'int')},
          ${column((f) => f.row.flags, 'int')}, ${column((f) => f.row.attributes, 'text')})`
      if (upsert) {
        await tx.execute(sql`${insert} ON CONFLICT (device, ts) DO UPDATE SET lat = excluded.lat, lon = excluded.lon, speed = excluded.speed, course = excluded.course,
          altitude = excluded.altitude, satellites = excluded.satellites, flags = excluded.flags, attributes = excluded.attributes`)
      } else {
        summary.positions += await insertOrIgnore(tx, insert, chunk.length)
      }
      if (from + BULK_ROWS < written.length) onProgress?.(Math.round(((from + BULK_ROWS) / written.length) * fixes.length), fixes.length)
    }
    onProgress?.(fixes.length, fixes.length)

    const eventRows = [...importedEvents(data.events ?? [], keyOf)]
    for (let from = 0; from < eventRows.length; from += BULK_ROWS) {
      const chunk = eventRows.slice(from, from + BULK_ROWS)
      const column = <T>(pick: (row: (typeof chunk)[number]) => T) => chunk.map(pick)
      const result = await tx.execute(sql`
        INSERT INTO events (device, ts, alarm_code, context, speed, satellite, latitude, longitude, mcc, mnc, dbm, seq)
        SELECT * FROM unnest(${arrayOf(column((e) => e.key), 'int')}, ${arrayOf(column((e) => e.row.ts), 'bigint')}, ${arrayOf(column((e) => e.row.alarm_code), 'text')},
          ${arrayOf(column((e) => e.row.context), 'text')}, ${arrayOf(column((e) => e.row.speed), 'int')}, ${arrayOf(column((e) => e.row.satellite), 'int')},
          ${arrayOf(column((e) => e.row.latitude), 'float8')}, ${arrayOf(column((e) => e.row.longitude), 'float8')}, ${arrayOf(column((e) => e.row.mcc), 'int')},
          ${arrayOf(column((e) => e.row.mnc), 'int')}, ${arrayOf(column((e) => e.row.dbm), 'int')}, ${arrayOf(column((e) => e.seq), 'int')})
        ${upsert
          ? sql`ON CONFLICT (device, ts, alarm_code, seq) DO UPDATE SET context = excluded.context, speed = excluded.speed, satellite = excluded.satellite, latitude = excluded.latitude, longitude = excluded.longitude, mcc = excluded.mcc, mnc = excluded.mnc, dbm = excluded.dbm`
          : sql`ON CONFLICT DO NOTHING`}`)
      summary.events += affected(result)
    }

    // a device given without a location is where its newest valid fix is (positions.ts's rule)
    if (fixes.length > 0 && locateAfterPositions.length > 0) {
      // each device's newest valid fix through the primary key, newest first (no sort of its whole history)
      const newest = await tx.execute<{ device: number; lat: number; lon: number }>(sql`
        SELECT k.device, p.lat, p.lon FROM unnest(${arrayOf(locateAfterPositions, 'int')}) AS k(device)
        CROSS JOIN LATERAL (
          SELECT lat, lon FROM positions WHERE device = k.device AND (flags & ${sql.raw(String(FLAG_UNLOCATABLE))}) = 0 ORDER BY ts DESC LIMIT 1) p`)
      if (newest.length > 0) {
        await tx.execute(sql`
          UPDATE devices SET latitude = v.latitude, longitude = v.longitude
          FROM unnest(${arrayOf(newest.map((n) => n.device), 'int')}, ${arrayOf(newest.map((n) => decodeCoordinate(n.lat)), 'float8')}, ${arrayOf(newest.map((n) => decodeCoordinate(n.lon)), 'float8')}) AS v(key, latitude, longitude)
          WHERE devices.key = v.key`)
      }
    }
    return summary
  }

  return {
    async importRows(rows, options) {
      // the check reads before the transaction, as SQLite's does
      options.check(await storedRows(db, rows))
      const positions = (rows.positions ?? []).map(importedPosition)
      // a month without its partition refuses its fixes: create them first (outside the unit: creating one locks positions)
      const outOfRange = positions.findIndex((p) => !Number.isFinite(partitionOf(p.ts).fromSeconds))
      if (outOfRange >= 0) {
        // SQLite stores any integer; a month partition needs a date (JavaScript's, to ±275,760 years)
        throw Invalid.field(`/positions/${outOfRange}/timestamp`, 'is beyond any calendar month: PostgreSQL files each fix in its month')
      }
      if (positions.length > 0) await ensurePartitions(database.sql, positions.map((p) => p.ts))
      return unitOfWork(database, (tx) => write(tx, rows, positions, options))
    },
  }
}
