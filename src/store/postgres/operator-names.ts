/**
 * The operator's command line's name lookups on PostgreSQL: src/store/operator-names.ts's store
 * over the schema's PostgreSQL twin (its matching rules are that module's). Lists order by byte
 * order (`COLLATE "C"`), as SQLite's BINARY does, whatever the database's collation.
 */
import { and, eq, isNull, or } from 'drizzle-orm'
import type { PostgresHandle } from '../../../db/postgres/client'
import { accounts, devices, groups, models, users } from '../../../db/postgres/schema'
import { deviceMatching, matching, type OperatorNameStore } from '../operator-names'
import { byCodePoint } from './order'

export function createPostgresOperatorNameStore({ db }: Pick<PostgresHandle, 'db'>): OperatorNameStore {
  return {
    accounts: async (match) => db.select({ id: accounts.id, name: accounts.name }).from(accounts).where(matching(accounts.id, accounts.name, match)),
    users: async (match) => db.select({ id: users.id, name: users.name, accountId: users.accountId }).from(users).where(matching(users.id, users.name, match)),
    groups: async (accountId, match) =>
      db.select({ id: groups.id, name: groups.name }).from(groups).where(and(eq(groups.accountId, accountId), matching(groups.id, groups.name, match))),
    models: async (match, accountId) => {
      const found = matching(models.id, models.name, match)
      return db
        .select({ id: models.id, name: models.name, accountId: models.accountId })
        .from(models)
        .where(accountId === undefined ? found : and(found, or(isNull(models.accountId), eq(models.accountId, accountId))))
    },
    anyModel: async (match) => (await db.select({ id: models.id }).from(models).where(matching(models.id, models.name, match)).limit(1)).length > 0,
    devices: async (match, accountId) => {
      const found = deviceMatching(devices, match)
      return db
        .select({ id: devices.id, alias: devices.alias, accountId: devices.accountId })
        .from(devices)
        .where(accountId === undefined ? found : and(eq(devices.accountId, accountId), found))
    },
    deviceList: async (accountId) =>
      db
        .select({ id: devices.id, alias: devices.alias, imei: devices.imei, serial: devices.serial, state: devices.state })
        .from(devices)
        .where(accountId === null ? undefined : eq(devices.accountId, accountId))
        .orderBy(byCodePoint(devices.alias), byCodePoint(devices.id)),
    // SQLite answers its DISTINCT from the users_account index, in id order
    accountsWithUsers: async () =>
      (await db.select({ id: users.accountId }).from(users).groupBy(users.accountId).orderBy(byCodePoint(users.accountId))).map((row) => row.id),
    accountNames: async () => new Map((await db.select({ id: accounts.id, name: accounts.name }).from(accounts)).map((a) => [a.id, a.name])),
  }
}
