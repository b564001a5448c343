/**
 * Passwords of people: checked for length, stored with Bun.password (argon2id, its defaults:
 * 64 MiB, 2 passes, about 160 ms of one core here), verified off the event loop (Bun's async
 * hash and verify run on a worker thread).
 */
import { Invalid } from '../errors'

/** the contract's floor */
export const MIN_PASSWORD_LENGTH = 10
/** a ceiling so that nobody hashes a megabyte; far above any passphrase */
export const MAX_PASSWORD_LENGTH = 1024

/** `password` as the API takes it, else 400 naming `path` (the password itself is never in the message) */
export function checkPassword(password: string, path = '/password'): string {
  const length = [...password].length
  if (length < MIN_PASSWORD_LENGTH) throw Invalid.field(path, `must be at least ${MIN_PASSWORD_LENGTH} characters`)
  if (length > MAX_PASSWORD_LENGTH) throw Invalid.field(path, `must be at most ${MAX_PASSWORD_LENGTH} characters`)
  return password
}

/** argon2id, as users.password_hash keeps it */
export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: 'argon2id' })
}

let dummy: Promise<string> | undefined

/**
 * Verifies `password` against `hash`; with no hash (an unknown name, a user without a password)
 * it verifies against a hash of a random password made once per process, so that the answer
 * takes as long either way and says nothing about which names exist.
 */
export async function verifyPassword(password: string, hash: string | null): Promise<boolean> {
  // awaited on both paths: the first sign-in of the process pays for making it, whichever it is
  const dummyHash = await (dummy ??= hashPassword(crypto.randomUUID()))
  const stored = hash ?? dummyHash
  let matches = false
  try {
    matches = await Bun.password.verify(password, stored)
  } catch {
    // a stored hash Bun cannot read (written by hand): no sign-in, same answer
  }
  return matches && hash !== null
}
