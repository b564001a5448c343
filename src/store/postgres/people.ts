/**
 * accounts, users, groups, memberships and sessions on PostgreSQL: src/store/people.ts's store
 * over the schema's PostgreSQL twin.
 */
import { and, eq, inArray } from 'drizzle-orm'
import type { PgConnectable } from '../../../db/postgres/client'
import { groups } from '../../../db/postgres/schema'

/** Which of `ids` are groups of the account, inside a caller's unit of work (people.ts's writer of the same name). */
export async function groupsOfAccountInTransaction(tx: PgConnectable, accountId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const rows = await tx.select({ id: groups.id }).from(groups).where(and(eq(groups.accountId, accountId), inArray(groups.id, [...ids])))
  return new Set(rows.map((g) => g.id))
}
