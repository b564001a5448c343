/**
 * Accounts: created by the operator (`account create`) or by the first-run setup. An account is
 * a fleet's boundary: nothing ever crosses it.
 */
import type { Db } from '../../db/client'
import { accounts } from '../../db/schema'
import { Invalid } from '../errors'
import { createAuditLog } from './audit'

export interface AccountBody {
  id: string
  name: string
  created_at: string
}

export function createAccount(db: Db, input: { name: string }, actor: string, nowMs: number, requestId: string | null = null): AccountBody {
  const name = input.name.trim()
  if (name === '' || name.length > 200) throw Invalid.field('/name', 'must be 1 to 200 characters')
  const id = crypto.randomUUID()
  db.transaction((tx) => {
    tx.insert(accounts).values({ id, name, createdAt: nowMs }).run()
    createAuditLog(tx).record({ accountId: id, actor, action: 'create', objectType: 'account', objectId: id, requestId }, nowMs)
  })
  return { id, name, created_at: new Date(nowMs).toISOString() }
}
