/**
 * The operator names things as they know them: an account, user, group, device or model by its
 * name (or a device by its alias, IMEI or serial) or by its id. One lookup each, through
 * store/operator-names.ts; a name that matches nothing, or more than one thing, is a bad argument (exit 2)
 * naming the option it came from.
 */
import type { NameMatch, OperatorNameStore } from '../store/operator-names'

export class ArgumentError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function one<T extends { id: string }>(rows: T[], what: string, option: string, given: string): T {
  if (rows.length === 1) return rows[0]!
  if (rows.length === 0) throw new ArgumentError(`${option}: no ${what} named or with id "${given}"`)
  throw new ArgumentError(`${option}: "${given}" names ${rows.length} ${what}s; give its id (${rows.map((r) => r.id).join(', ')})`)
}

/** by id (any case), else by name (any case) */
const idOrName = (given: string): NameMatch => (UUID.test(given) ? { id: given.toLowerCase() } : { name: given })

export async function resolveAccount(names: OperatorNameStore, given: string, option = '--account'): Promise<{ id: string; name: string }> {
  return one(await names.accounts(idOrName(given)), 'account', option, given)
}

export async function resolveUser(names: OperatorNameStore, given: string, option = '--user'): Promise<{ id: string; name: string; accountId: string }> {
  return one(await names.users(idOrName(given)), 'user', option, given)
}

export async function resolveGroup(names: OperatorNameStore, accountId: string, given: string, option = '--groups'): Promise<{ id: string; name: string }> {
  return one(await names.groups(accountId, idOrName(given)), 'group', option, given)
}

/**
 * A model by id or name; with `accountId`, only one that account's devices may use (a server-wide
 * model or one of the account's own): another account's model is no model there.
 */
export async function resolveModel(
  names: OperatorNameStore,
  given: string,
  option = '--model',
  accountId?: string,
): Promise<{ id: string; name: string; accountId: string | null }> {
  const match = idOrName(given)
  const rows = await names.models(match, accountId)
  if (rows.length === 0 && accountId !== undefined && (await names.anyModel(match))) {
    throw new ArgumentError(`${option}: "${given}" is another account's model; a device may use a server-wide model or one of its own account's`)
  }
  return one(rows, 'model', option, given)
}

/** a device by id, alias (within the account when one is given), IMEI or serial */
export async function resolveDevice(names: OperatorNameStore, given: string, option = '--device', accountId?: string): Promise<{ id: string; alias: string; accountId: string }> {
  const rows = await names.devices(UUID.test(given) ? { id: given.toLowerCase() } : { text: given }, accountId)
  return one(rows, 'device', option, given)
}

/** "a,b, c" → ['a', 'b', 'c'] */
export function list(value: string | undefined): string[] {
  return (value ?? '').split(',').map((part) => part.trim()).filter((part) => part !== '')
}
