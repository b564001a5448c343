/**
 * GET /devices/{id}'s one query on PostgreSQL (the access function's device read) is a prepared
 * statement: parsed and planned once per connection, then one round trip a request. Unnamed, as
 * Drizzle sends a query built without `.prepare()`, postgres.js first waits for a Describe of it
 * and PostgreSQL plans it anew each time (`npm run bench -- pg devices`: 0.13× the bare floor).
 */
import { afterEach, expect, test } from 'bun:test'
import { openPostgres, type PostgresHandle } from '../../../db/postgres/client'
import { importDataset } from '../../../src/dataset/service'
import { createPostgresStores } from '../../../src/store/postgres'
import { createPostgresDeviceAccessReads } from '../../../src/store/postgres/devices'
import { freshPostgres, postgresAvailable } from '../../support/postgres'

const available = postgresAvailable('the prepared device read')
let cleanup: (() => Promise<void>) | null = null
afterEach(async () => {
  await cleanup?.()
  cleanup = null
})

test.skipIf(!available)('the device read by id is prepared once on its connection and answers the row each time', async () => {
  const fresh = await freshPostgres()
  // one connection: the statements this store prepared are that session's
  const handle: PostgresHandle = await openPostgres(fresh.url, { poolSize: 1 })
  cleanup = async () => {
    await handle.close()
    await fresh.drop()
  }
  const account = '0a000000-0000-4000-8000-000000000001'
  const devices = ['0f000000-0000-4000-8000-000000000001', '0f000000-0000-4000-8000-000000000002']
  await importDataset(createPostgresStores(handle).dataset, {
    accounts: [{ id: account, name: 'A' }],
    devices: devices.map((id, i) => ({ id, account, alias: `Van ${i}`, imei: String(359710049000000 + i) })),
  })
  const reads = createPostgresDeviceAccessReads(handle)
  expect((await reads.byId(devices[0]!))?.alias).toBe('Van 0')
  expect((await reads.byId(devices[1]!))?.alias).toBe('Van 1')
  expect(await reads.byId('0f000000-0000-4000-8000-000000000009')).toBeNull()
  const prepared = await handle.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE '%from "devices" where "devices"."id" = $1%' AND statement NOT LIKE '%pg_prepared_statements%'`
  expect(prepared[0]!.n).toBe(1)
})
