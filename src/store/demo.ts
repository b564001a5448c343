/**
 * The demo's own write (`tracker demo`): the demo user's new password, ending the sessions of the
 * last run, as one unit of work. It writes users and sessions, whose owner is the people store:
 * it becomes that store's password change once there is one.
 */
import { eq } from 'drizzle-orm'
import type { DatabaseHandle } from '../../db/client'
import { sessions, users } from '../../db/schema'

export interface DemoStore {
  /** Sets the user's password hash and ends every session of theirs, in one transaction. */
  setPasswordEndingSessions(userId: string, passwordHash: string): Promise<void>
}

export function createDemoStore({ db }: DatabaseHandle): DemoStore {
  return {
    setPasswordEndingSessions(userId, passwordHash) {
      try {
        db.transaction((tx) => {
          tx.update(users).set({ passwordHash }).where(eq(users.id, userId)).run()
          tx.delete(sessions).where(eq(sessions.userId, userId)).run()
        })
        return Promise.resolve()
      } catch (error) {
        return Promise.reject(error)
      }
    },
  }
}
