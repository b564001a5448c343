/**
 * The operator names things as they know them: an account, user, group, device or model by its
 * name (or a device by its alias, IMEI or serial) or by its id. One lookup each: accounts, users
 * and groups through the people store (`…In`); a name that matches nothing, or more than one
 * thing, is a bad argument (exit 2) naming the option it came from.
 *
 * The synchronous lookups over a Drizzle database (`resolveAccount`, `resolveUser`,
 * `resolveGroup`, `resolveModel`, `resolveDevice`) serve the commands of the areas not yet moved
 * to a store (devices, models, keys); they go as those move.
 */
import { and, eq, isNull, or, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { accounts, devices, groups, models, users } from '../../db/schema'
import type { PeopleStore } from '../store/people'

export class ArgumentError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function one<T extends { id: string }>(rows: T[], what: string, option: string, given: string): T {
  if (rows.length === 1) return rows[0]!
  if (rows.length === 0) throw new ArgumentError(`${option}: no ${what} named or with id "${given}"`)
  throw new ArgumentError(`${option}: "${given}" names ${rows.length} ${what}s; give its id (${rows.map((r) => r.id).join(', ')})`)
}

/** by id (any case), else by name (any case) */
const byIdOrName = (column: { id: unknown; name: unknown }, given: string) =>
  UUID.test(given) ? eq(column.id as never, given.toLowerCase()) : sql`lower(${column.name}) = ${given.toLowerCase()}`

/** what the people store is asked: an id (any case), else a name (any case) */
const matchOf = (given: string) => (UUID.test(given) ? { id: given.toLowerCase() } : { name: given })

export async function resolveAccountIn(people: PeopleStore, given: string, option = '--account'): Promise<{ id: string; name: string }> {
  return one(await people.accountsNamed(matchOf(given)), 'account', option, given)
}

export async function resolveUserIn(people: PeopleStore, given: string, option = '--user'): Promise<{ id: string; name: string; accountId: string }> {
  return one(await people.usersNamed(matchOf(given)), 'user', option, given)
}

export async function resolveGroupIn(people: PeopleStore, accountId: string, given: string, option = '--groups'): Promise<{ id: string; name: string }> {
  return one(await people.groupsNamed(accountId, matchOf(given)), 'group', option, given)
}

export function resolveAccount(db: Db, given: string, option = '--account'): { id: string; name: string } {
  return one(db.select({ id: accounts.id, name: accounts.name }).from(accounts).where(byIdOrName(accounts, given)).all(), 'account', option, given)
}

export function resolveUser(db: Db, given: string, option = '--user'): { id: string; name: string; accountId: string } {
  const rows = db.select({ id: users.id, name: users.name, accountId: users.accountId }).from(users).where(byIdOrName(users, given)).all()
  return one(rows, 'user', option, given)
}

export function resolveGroup(db: Db, accountId: string, given: string, option = '--groups'): { id: string; name: string } {
  const rows = db.select({ id: groups.id, name: groups.name }).from(groups).where(and(eq(groups.accountId, accountId), byIdOrName(groups, given))).all()
  return one(rows, 'group', option, given)
}

/**
 * A model by id or name; with `accountId`, only one that account's devices may use (a server-wide
 * model or one of the account's own): another account's model is no model there.
 */
export function resolveModel(db: Db, given: string, option = '--model', accountId?: string): { id: string; name: string; accountId: string | null } {
  const match = byIdOrName(models, given)
  const rows = db
    .select({ id: models.id, name: models.name, accountId: models.accountId })
    .from(models)
    .where(accountId === undefined ? match : and(match, or(isNull(models.accountId), eq(models.accountId, accountId))))
    .all()
  if (rows.length === 0 && accountId !== undefined && db.select({ id: models.id }).from(models).where(match).limit(1).get()) {
    throw new ArgumentError(`${option}: "${given}" is another account's model; a device may use a server-wide model or one of its own account's`)
  }
  return one(rows, 'model', option, given)
}

/** a device by id, alias (within the account when one is given), IMEI or serial */
export function resolveDevice(db: Db, given: string, option = '--device', accountId?: string): { id: string; alias: string; accountId: string } {
  const match = UUID.test(given)
    ? eq(devices.id, given.toLowerCase())
    : or(sql`lower(${devices.alias}) = ${given.toLowerCase()}`, and(eq(devices.imei, given), sql`${devices.imei} <> ''`), and(eq(devices.serial, given), sql`${devices.serial} <> ''`))
  const rows = db
    .select({ id: devices.id, alias: devices.alias, accountId: devices.accountId })
    .from(devices)
    .where(accountId === undefined ? match : and(eq(devices.accountId, accountId), match))
    .all()
  return one(rows, 'device', option, given)
}

/** "a,b, c" → ['a', 'b', 'c'] */
export function list(value: string | undefined): string[] {
  return (value ?? '').split(',').map((part) => part.trim()).filter((part) => part !== '')
}
