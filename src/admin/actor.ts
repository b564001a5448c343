/**
 * What the administration services (users.ts, groups.ts, keys.ts) take besides their stores: the
 * clock, the access function, and who acts. Each change is one unit of work of a store, with its
 * audit row; the stores wait for another process's write lock themselves (store/busy.ts).
 */
import type { Clock } from '../clock'
import { createDeviceAccess, type DeviceAccess } from '../devices/access'
import { Invalid, NotFound, type FieldError } from '../errors'
import type { KeyUsage } from '../keys/service'
import type { UserPrincipal } from '../principal'
import type { Stores } from '../store'
import type { KeyStore } from '../store/keys'
import { CLI_ACTOR } from '../store/audit'
import { MAX_NAME_LENGTH } from './model'

export interface AdminDeps {
  clock: Clock
  /** the one access function: device ids named in a group are looked up through it */
  access: DeviceAccess
  /** keys' uses not yet written (keys/service.ts), merged into last_used_at; absent outside the server */
  keyUsage?: KeyUsage
  /** API keys (store/keys.ts): what admin/keys.ts reads and writes */
  keys: KeyStore
}

/** Deps for a process of its own (the command line): the access function and the key store of its stores. */
export function adminDeps(stores: Pick<Stores, 'deviceAccess' | 'keys'>, clock: Clock = { now: () => Date.now() }): AdminDeps {
  return { clock, access: createDeviceAccess(stores.deviceAccess), keys: stores.keys }
}

/** Who makes a change, within which account: what the audit log records, and what they may do. */
export interface Actor {
  /** a user id, or CLI_ACTOR */
  id: string
  /** everything the actor names must be of this account (else 404) */
  accountId: string
  /** an account admin or the operator; a member may only manage their own keys and read their own groups */
  admin: boolean
  /** the request's X-Request-Id, for the audit log */
  requestId?: string | null
}

/** The operator at the command line, acting in `accountId`: audit actor `cli`. */
export function operator(accountId: string): Actor {
  return { id: CLI_ACTOR, accountId, admin: true, requestId: null }
}

/** A signed-in user (API key or session) as an actor. */
export function actorOf(user: UserPrincipal, requestId: string | null = null): Actor {
  return { id: user.userId, accountId: user.accountId, admin: user.role === 'admin', requestId }
}

/** The account's devices, as its admin reaches them: how an id named in a body is looked up through the access function. */
export function accountScope(by: Actor): UserPrincipal {
  return { kind: 'user', userId: by.id, accountId: by.accountId, role: 'admin', via: 'key' }
}

export interface Page {
  limit: number
  offset: number
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

/** A name as stored: what the schema checks (length), plus what a person would not type (see model.ts) */
export function checkName(name: string, path = '/name'): string {
  if (name.length === 0 || name.length > MAX_NAME_LENGTH) throw Invalid.field(path, `must be 1 to ${MAX_NAME_LENGTH} characters`)
  if (CONTROL.test(name)) throw Invalid.field(path, 'must not hold control characters')
  if (name.trim() !== name) throw Invalid.field(path, 'must not begin or end with a space')
  return name
}

/** Ids as stored (lower case), each once: a repeat is 400 naming it. */
export function distinctIds(ids: readonly string[], path: string): string[] {
  const first = new Map<string, number>()
  const errors: FieldError[] = []
  ids.forEach((raw, i) => {
    const id = raw.toLowerCase()
    const seen = first.get(id)
    if (seen === undefined) first.set(id, i)
    else errors.push({ path: `${path}/${i}`, message: `repeats ${path}/${seen}; each id may appear once` })
  })
  if (errors.length > 0) throw new Invalid(`${path} holds a repeated id: ${errors.map((e) => e.path).join(', ')}`, errors.slice(0, 20))
  return [...first.keys()]
}

/** 404 naming each id of `ids` (at `path`) that `known` lacks: another account's is not there either. */
export function requireKnown(ids: readonly string[], known: ReadonlySet<string>, path: string, what: string): void {
  const missing = ids.flatMap((id, i) => (known.has(id) ? [] : [{ id, path: `${path}/${i}` }]))
  if (missing.length === 0) return
  const named = missing.slice(0, 5).map((m) => `${m.id} (${m.path})`).join(', ') + (missing.length > 5 ? ` and ${missing.length - 5} more` : '')
  throw new MissingReferences(
    `No ${what} ${named} in your account`,
    missing.slice(0, 20).map((m) => ({ path: m.path, message: `no ${what} with this id in your account` })),
  )
}

/** 404 that names the body's paths at fault, as a 400 would. */
export class MissingReferences extends NotFound {
  override readonly errors: FieldError[]
  constructor(detail: string, errors: FieldError[]) {
    super(detail)
    this.errors = errors
  }
}

