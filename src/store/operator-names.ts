/**
 * What the operator's command line (src/cli) reads to turn the names it is given into rows, and
 * the lists it prints: accounts, users, groups, models and devices by id or name (any case), a
 * device also by alias, IMEI or serial. Reads only; the changes go through each table's own
 * module. Which one a name means, and what is a bad argument, is the command line's decision
 * (cli/resolve.ts).
 */
import { and, asc, type Column, eq, isNull, or, sql, type SQL } from 'drizzle-orm'
import type { DatabaseHandle } from '../../db/client'
import { accounts, devices, groups, models, users } from '../../db/schema'
import { settled } from './busy'

/** a row by its id (lower case), or by its name whatever its case */
export type NameMatch = { id: string } | { name: string }

export interface OperatorNameStore {
  accounts(match: NameMatch): Promise<{ id: string; name: string }[]>
  users(match: NameMatch): Promise<{ id: string; name: string; accountId: string }[]>
  groups(accountId: string, match: NameMatch): Promise<{ id: string; name: string }[]>
  /** with `accountId`, only the models its devices may use (server-wide or its own) */
  models(match: NameMatch, accountId?: string): Promise<{ id: string; name: string; accountId: string | null }[]>
  /** whether any model matches, whoever's */
  anyModel(match: NameMatch): Promise<boolean>
  /** devices by id, or by a given text that is their alias (any case), IMEI or serial; with `accountId`, that account's only */
  devices(match: { id: string } | { text: string }, accountId?: string): Promise<{ id: string; alias: string; accountId: string }[]>
  /** the devices (of one account, or all), by alias then id */
  deviceList(accountId: string | null): Promise<{ id: string; alias: string; imei: string; serial: string; state: string }[]>
  /** the accounts that have users */
  accountsWithUsers(): Promise<string[]>
  /** every account's name, by id */
  accountNames(): Promise<Map<string, string>>
}

/** The row `match` names (either engine's columns): its id, or its name whatever its case. */
export const matching = (id: Column, name: Column, match: NameMatch): SQL =>
  'id' in match ? eq(id, match.id) : sql`lower(${name}) = ${match.name.toLowerCase()}`

/** The devices `match` names (either engine's columns): by id, or a text that is their alias (any case), IMEI or serial. */
export function deviceMatching(columns: { id: Column; alias: Column; imei: Column; serial: Column }, match: { id: string } | { text: string }): SQL | undefined {
  if ('id' in match) return eq(columns.id, match.id)
  return or(
    sql`lower(${columns.alias}) = ${match.text.toLowerCase()}`,
    and(eq(columns.imei, match.text), sql`${columns.imei} <> ''`),
    and(eq(columns.serial, match.text), sql`${columns.serial} <> ''`),
  )
}

export function createOperatorNameStore({ db }: DatabaseHandle): OperatorNameStore {
  return {
    accounts: (match) => settled(() => db.select({ id: accounts.id, name: accounts.name }).from(accounts).where(matching(accounts.id, accounts.name, match)).all()),
    users: (match) =>
      settled(() => db.select({ id: users.id, name: users.name, accountId: users.accountId }).from(users).where(matching(users.id, users.name, match)).all()),
    groups: (accountId, match) =>
      settled(() =>
        db.select({ id: groups.id, name: groups.name }).from(groups).where(and(eq(groups.accountId, accountId), matching(groups.id, groups.name, match))).all(),
      ),
    models: (match, accountId) =>
      settled(() => {
        const found = matching(models.id, models.name, match)
        return db
          .select({ id: models.id, name: models.name, accountId: models.accountId })
          .from(models)
          .where(accountId === undefined ? found : and(found, or(isNull(models.accountId), eq(models.accountId, accountId))))
          .all()
      }),
    anyModel: (match) => settled(() => db.select({ id: models.id }).from(models).where(matching(models.id, models.name, match)).limit(1).get() !== undefined),
    devices: (match, accountId) =>
      settled(() => {
        const found = deviceMatching(devices, match)
        return db
          .select({ id: devices.id, alias: devices.alias, accountId: devices.accountId })
          .from(devices)
          .where(accountId === undefined ? found : and(eq(devices.accountId, accountId), found))
          .all()
      }),
    deviceList: (accountId) =>
      settled(() => {
        const query = db
          .select({ id: devices.id, alias: devices.alias, imei: devices.imei, serial: devices.serial, state: devices.state })
          .from(devices)
        return (accountId === null ? query : query.where(eq(devices.accountId, accountId))).orderBy(asc(devices.alias), asc(devices.id)).all()
      }),
    accountsWithUsers: () => settled(() => db.selectDistinct({ id: users.accountId }).from(users).all().map((row) => row.id)),
    accountNames: () => settled(() => new Map(db.select({ id: accounts.id, name: accounts.name }).from(accounts).all().map((a) => [a.id, a.name]))),
  }
}
