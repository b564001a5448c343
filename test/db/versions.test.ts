/**
 * The access counters as a node knows them (db/postgres/versions.ts), over a stand-in for the
 * pool whose reads the test answers one by one: a read that began before this node's own commit
 * cannot answer for the request after it.
 */
import { expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import { createAccessVersions } from '../../db/postgres/versions'

/** a pool whose `SELECT … FROM access_version` reads wait until the test answers them, in order */
function heldPool() {
  const pending: ((rows: { id: number; version: number }[]) => void)[] = []
  const sql = Object.assign(
    () => new Promise<{ id: number; version: number }[]>((resolve) => pending.push(resolve)),
    {
      listen: async (_channel: string, _onNotify: (payload: string) => void, onListen: () => void) => {
        onListen()
        return { unlisten: async () => {} }
      },
    },
  ) as unknown as Sql
  return { sql, pending }
}

test('a read begun before this node committed a change does not answer for the next request: that one reads again', async () => {
  const { sql, pending } = heldPool()
  const versions = createAccessVersions(sql)
  const first = versions.current(4)
  await Bun.sleep(0)
  pending.shift()!([{ id: 4, version: 1 }])
  expect(await first).toBe(1)

  // something (another request, a background job) reads after an announcement; its read is under way…
  versions.changed()
  const background = versions.current(4)
  await Bun.sleep(0)
  expect(pending).toHaveLength(1)
  // …when this node commits a revocation (the counter moves to 2) and answers it
  versions.changed()
  const nextRequest = versions.current(4)
  await Bun.sleep(0)
  // the read begun before the commit answers what it saw then
  pending.shift()!([{ id: 4, version: 1 }])
  expect(await background).toBe(1)
  await Bun.sleep(0)
  // the next request waits for a read begun after the commit
  expect(pending).toHaveLength(1)
  pending.shift()!([{ id: 4, version: 2 }])
  expect(await nextRequest).toBe(2)
  await versions.close()
})

test('requests while one read is under way, with no change since it began, share it', async () => {
  const { sql, pending } = heldPool()
  const versions = createAccessVersions(sql)
  const reads = [versions.current(1), versions.current(4)]
  await Bun.sleep(0)
  expect(pending).toHaveLength(1)
  pending.shift()!([{ id: 1, version: 3 }, { id: 4, version: 7 }])
  expect(await Promise.all(reads)).toEqual([3, 7])
  expect(await versions.current(4)).toBe(7)
  expect(pending).toHaveLength(0)
  await versions.close()
})

test('a request while a read begun after the latest change is under way waits for that read, not the counters known before', async () => {
  const { sql, pending } = heldPool()
  const versions = createAccessVersions(sql)
  const first = versions.current(4)
  await Bun.sleep(0)
  pending.shift()!([{ id: 4, version: 1 }])
  expect(await first).toBe(1)

  versions.changed() // this node committed a revocation
  const background = versions.current(4)
  const nextRequest = versions.current(4)
  await Bun.sleep(0)
  expect(pending).toHaveLength(1)
  pending.shift()!([{ id: 4, version: 2 }])
  expect(await Promise.all([background, nextRequest])).toEqual([2, 2])
  await versions.close()
})
