/**
 * One side of the pg benchmark's GET /devices/{id}, in its own process, over one PostgreSQL pool
 * (openPostgres, the product's pool of 10): `product` is the real app over createPostgresStores
 * (auth, access function, serialisation); `floor` is a bare Bun.serve answering the same bytes
 * from the same query on the same kind of pool, with no auth and no framework.
 */
import { openPostgres } from '../../db/postgres/client'
import { createApp } from '../../src/app'
import { createPostgresStores } from '../../src/store/postgres'

const [mode, url] = process.argv.slice(2)
const handle = await openPostgres(url!, { migrate: false })

if (mode === 'product') {
  const app = createApp({ stores: createPostgresStores(handle) })
  app.listen({ port: 0, hostname: '127.0.0.1' })
  console.log(`ready ${app.server!.port}`)
} else {
  const iso = (ms: unknown) => (ms == null ? null : new Date(ms as number).toISOString())
  const body = (d: Record<string, unknown>) => ({
    id: d.id, model: d.model_id, alias: d.alias, properties: JSON.parse(d.properties as string), serial: d.serial, imei: d.imei,
    iccid: d.iccid, state: d.state, location: d.latitude == null ? null : [d.latitude, d.longitude], connected: d.connected,
    connected_at: iso(d.connected_at), disconnected_at: iso(d.disconnected_at), created_at: iso(d.created_at), updated_at: iso(d.updated_at),
  })
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const id = new URL(request.url).pathname.slice('/devices/'.length)
      const [row] = await handle.sql<Record<string, unknown>[]>`SELECT * FROM devices WHERE id = ${id}`
      return row ? Response.json(body(row)) : new Response('not found', { status: 404 })
    },
  })
  console.log(`ready ${server.port}`)
}
