/**
 * The first run: a server whose database has no user yet offers a one-time setup link (the
 * token is random, new at every start until setup is done, and kept in memory only); whoever
 * opens it names the first account and its admin. `tracker init` does the same from the command
 * line through `setupFirstAccount`.
 */
import { timingSafeEqual } from 'node:crypto'
import { networkInterfaces } from 'node:os'
import { checkName } from '../admin/actor'
import type { Clock } from '../clock'
import { Conflict, Invalid } from '../errors'
import type { PeopleStore } from '../store/people'
import { checkPassword, hashPassword } from './passwords'
import { type SessionUser } from './service'

/** account names as `account create` takes them (admin/accounts.ts): trimmed, 1 to 200 characters */
const MAX_ACCOUNT_NAME_LENGTH = 200

function checkAccountName(value: string, path: string): string {
  const name = value.trim()
  if (name === '' || name.length > MAX_ACCOUNT_NAME_LENGTH) throw Invalid.field(path, `must be 1 to ${MAX_ACCOUNT_NAME_LENGTH} characters`)
  if (/\p{Cc}/u.test(name)) throw Invalid.field(path, 'must not hold control characters')
  return name
}

export interface FirstAccount {
  account: string
  name: string
  password: string
}

export interface SetupOptions {
  /** who the audit log names: the new admin (default, the setup page) or `cli` (`tracker init`) */
  actor?: string
  requestId?: string | null
}

/**
 * Creates the first account and its admin (role admin, with the password) in one transaction,
 * with their audit entries (action `setup`). 400 naming the field for a bad name or password;
 * 409 once any user exists. The admin's name follows the users API (1 to 100 characters, no
 * control characters, no space at either end); the account name is trimmed, 1 to 200 characters.
 * Waits for another process's write lock (up to 5 s, then 504).
 */
export async function setupFirstAccount(people: PeopleStore, input: FirstAccount, clock: Clock, options: SetupOptions = {}): Promise<SessionUser> {
  const accountName = checkAccountName(input.account, '/account')
  // a sign-in name as the users API takes it
  const userName = checkName(input.name, '/name')
  const passwordHash = await hashPassword(checkPassword(input.password))
  const accountId = crypto.randomUUID()
  const userId = crypto.randomUUID()
  const made = await people.setupFirstAccount(
    { accountId, accountName, userId, userName, passwordHash },
    { actor: options.actor ?? null, requestId: options.requestId ?? null },
    clock.now(),
  )
  if (!made) throw new Conflict('Setup is done: this server already has a user; sign in instead')
  return { id: userId, name: userName, role: 'admin', account: { id: accountId, name: accountName } }
}

const hashToken = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest()

export type SetupTokenCheck = 'valid' | 'used' | 'wrong'

/** The setup link's token, in memory, for one run of the server. */
export interface FirstRun {
  /** the token of the setup link while setup is needed; null once done, or when a user existed at start */
  readonly token: string | null
  check(token: string): SetupTokenCheck
  /** the token has served (or setup was done elsewhere meanwhile): it is refused from now on */
  invalidate(): void
  /** whether setup is still needed (no user in the database) */
  needed(): Promise<boolean>
}

/**
 * `token`: tests choose it; the server lets it be random (32 bytes, base64url). None is issued
 * when the database already has a user.
 */
export async function createFirstRun(
  people: Pick<PeopleStore, 'hasUsers'>,
  token: string = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url'),
): Promise<FirstRun> {
  const needed = async () => !(await people.hasUsers())
  let current: string | null = (await needed()) ? token : null
  let used: Buffer | null = null
  return {
    get token() {
      return current
    },
    check(given) {
      // compared as hashes, in constant time: the token is a password of sorts
      const presented = hashToken(given)
      if (current !== null && timingSafeEqual(presented, hashToken(current))) return 'valid'
      if (used !== null && timingSafeEqual(presented, used)) return 'used'
      return 'wrong'
    },
    invalidate() {
      if (current !== null) used = hashToken(current)
      current = null
    },
    needed,
  }
}

/** where the setup page is, for the start's log line */
export function setupUrl(appUrl: string, token: string): string {
  return `${appUrl.replace(/\/+$/, '')}/setup?token=${token}`
}

type Interfaces = ReturnType<typeof networkInterfaces>

/**
 * The addresses the console can be opened at, for the start's log: APP_URL when it is set; else
 * the address the server listens on, or, listening on every address (HOST 0.0.0.0 or ::), each
 * address of this machine's network interfaces (IPv6 ones only for ::, never link-local, which a
 * browser cannot open without a zone) and then localhost.
 */
export function consoleAddresses(
  { appUrl, appUrlSet, host }: { appUrl: string; appUrlSet: boolean; host: string },
  port: number,
  interfaces: Interfaces = networkInterfaces(),
): string[] {
  if (appUrlSet) return [appUrl.replace(/\/+$/, '')]
  const at = (address: string) => `http://${address.includes(':') ? `[${address}]` : address}:${port}`
  if (host !== '0.0.0.0' && host !== '::') return [at(host)]
  const addresses = Object.values(interfaces)
    .flatMap((entries) => entries ?? [])
    .filter((entry) => !entry.internal && (entry.family === 'IPv4' || (host === '::' && !/^fe[89ab]/i.test(entry.address))))
    .map((entry) => at(entry.address))
  return [...new Set(addresses), at('localhost')]
}
