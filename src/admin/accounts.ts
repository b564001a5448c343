/**
 * Accounts: created by the operator (`account create`) or by the first-run setup. An account is
 * a fleet's boundary: nothing ever crosses it.
 */
import { Invalid } from '../errors'
import type { PeopleStore } from '../store/people'

export interface AccountBody {
  id: string
  name: string
  created_at: string
}

/** A new account with its audit entry (one unit of work of the people store). */
export async function createAccount(people: PeopleStore, input: { name: string }, actor: string, nowMs: number, requestId: string | null = null): Promise<AccountBody> {
  const name = input.name.trim()
  if (name === '' || name.length > 200) throw Invalid.field('/name', 'must be 1 to 200 characters')
  const id = crypto.randomUUID()
  await people.createAccount({ id, name }, { actor, requestId }, nowMs)
  return { id, name, created_at: new Date(nowMs).toISOString() }
}
