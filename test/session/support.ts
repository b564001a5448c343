/** Shared by the sign-in tests: people with passwords in the test world, and cookies. */
import { createPeopleStore, type PeopleStore } from '../../src/store/people'
import { sql } from 'drizzle-orm'
import type { EngineWorld, World } from '../support/world'

export const PASSWORD = 'correct horse battery'

/** the people store over the world's database, as the app builds it */
export function peopleOf(world: Pick<World, 'database' | 'clock'>): PeopleStore {
  return createPeopleStore(world.database, { clock: world.clock })
}

let hashed: Promise<string> | undefined
/**
 * One argon2id hash for every test. A stored hash carries its own cost, and verifying the
 * server's (64 MiB, 2 passes) takes about 160 ms: the tests' is cheap (1 MiB, 1 pass, 3 ms).
 */
export const passwordHash = () => (hashed ??= Bun.password.hash(PASSWORD, { algorithm: 'argon2id', memoryCost: 1024, timeCost: 1 }))

/** gives these users of the world the password PASSWORD */
export async function givePasswords(world: World | EngineWorld, userIds: string[]): Promise<void> {
  const hash = await passwordHash()
  for (const id of userIds) {
    if ('database' in world) world.database.sqlite.query('UPDATE users SET password_hash = ? WHERE id = ?').run(hash, id)
    else await world.execute(sql`UPDATE users SET password_hash = ${hash} WHERE id = ${id}`)
  }
}

/** `tracker_session=…` from a response's Set-Cookie, ready for a Cookie header */
export function cookieOf(response: Response): string {
  const header = response.headers.get('set-cookie')
  if (header === null) throw new Error(`no Set-Cookie (status ${response.status})`)
  return header.split(';')[0]!
}

/** the Set-Cookie attributes, by lower-case name ('' for flags) */
export function cookieAttributes(response: Response): Map<string, string> {
  const [, ...parts] = (response.headers.get('set-cookie') ?? '').split(';').map((p) => p.trim())
  return new Map(parts.map((p) => {
    const eq = p.indexOf('=')
    return eq < 0 ? [p.toLowerCase(), ''] : [p.slice(0, eq).toLowerCase(), p.slice(eq + 1)]
  }))
}

export function signIn(world: Pick<World, 'call'>, name: string, password = PASSWORD, headers: Record<string, string> = {}): Promise<Response> {
  return world.call('POST', '/session', { body: { name, password }, headers })
}

/** the response's headers without the per-request id */
export function headersOf(response: Response): Record<string, string> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    if (name !== 'x-request-id') headers[name] = value
  })
  return headers
}
