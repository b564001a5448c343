/** Background work on one node at a time: a job held by one node is skipped by another, and a dead node's lease passes on. */
import { afterEach, describe, expect, test } from 'bun:test'
import { openPostgres } from '../../../db/postgres/client'
import { createLocalLeases } from '../../../src/store/leases'
import { createPostgresLeases } from '../../../src/store/postgres/leases'
import { postgresAvailable } from '../../support/postgres'
import { openPostgresForTest, type OpenedPostgres } from './support'

describe('leases in one process (SQLite)', () => {
  test('a job never overlaps itself; another job runs meanwhile', async () => {
    const leases = createLocalLeases()
    let release!: () => void
    const first = leases.run('retention', () => new Promise<string>((resolve) => (release = () => resolve('done'))))
    expect(await leases.run('retention', async () => 'again')).toBeNull()
    expect(await leases.run('partitions', async () => 'other')).toBe('other')
    release()
    expect(await first).toBe('done')
    expect(await leases.run('retention', async () => 'next')).toBe('next')
  })
})

describe.skipIf(!postgresAvailable('leases on PostgreSQL (test/store/postgres/leases.test.ts)'))('leases on PostgreSQL', () => {
  const opened: OpenedPostgres[] = []
  afterEach(async () => {
    for (const o of opened.splice(0)) await o.close()
  })

  test('two nodes: one runs the job, the other skips it; a node whose connections die leaves it to the next', async () => {
    const a = await openPostgresForTest()
    opened.push(a)
    const nodeB = await openPostgres(a.url, { migrate: false })
    try {
      const leasesA = createPostgresLeases(a.handle.sql)
      const leasesB = createPostgresLeases(nodeB.sql)
      let release!: () => void
      const held = leasesA.run('retention', () => new Promise<string>((resolve) => (release = () => resolve('a ran'))))
      await Bun.sleep(50)
      expect(await leasesB.run('retention', async () => 'b ran')).toBeNull()
      release()
      expect(await held).toBe('a ran')
      expect(await leasesB.run('retention', async () => 'b ran')).toBe('b ran')

      // node B dies holding the lease: its connections end, and A takes the job
      const dying = leasesB.run('retention', () => new Promise<string>(() => {}))
      await Bun.sleep(50)
      expect(await leasesA.run('retention', async () => 'a ran')).toBeNull()
      await nodeB.sql.end({ timeout: 0 })
      void dying.catch(() => undefined)
      let taken: string | null = null
      for (let i = 0; i < 50 && taken === null; i++) {
        taken = await leasesA.run('retention', async () => 'a took over')
        if (taken === null) await Bun.sleep(20)
      }
      expect(taken).toBe('a took over')
    } finally {
      await nodeB.close().catch(() => undefined)
    }
  })
})
