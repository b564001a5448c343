/**
 * One side of the devices benchmark, in its own process: `product` is the real app (auth,
 * access function, serialisation, validation); `floor` is a bare Bun.serve answering the same
 * bytes from the same raw prepared query, with no auth and no framework.
 */
import { Database } from 'bun:sqlite'
import { openDatabase } from '../../db/client'
import { createApp } from '../../src/app'

const [mode, path] = process.argv.slice(2)

if (mode === 'product') {
  const app = createApp({ database: openDatabase(path) })
  app.listen({ port: 0, hostname: '127.0.0.1' })
  console.log(`ready ${app.server!.port}`)
} else {
  const sqlite = new Database(path, { strict: true })
  const one = sqlite.query<Record<string, unknown>, [string]>('SELECT * FROM devices WHERE id = ?')
  const list = sqlite.query<Record<string, unknown>, []>('SELECT * FROM devices WHERE state <> \'unlink\' ORDER BY alias, id LIMIT 99')
  const iso = (ms: unknown) => (ms == null ? null : new Date(ms as number).toISOString())
  const body = (d: Record<string, unknown>) => ({
    id: d.id, model: d.model_id, alias: d.alias, properties: JSON.parse(d.properties as string), serial: d.serial, imei: d.imei,
    iccid: d.iccid, state: d.state, location: d.latitude == null ? null : [d.latitude, d.longitude], connected: d.connected === 1,
    connected_at: iso(d.connected_at), disconnected_at: iso(d.disconnected_at), created_at: iso(d.created_at), updated_at: iso(d.updated_at),
  })
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const path = new URL(request.url).pathname
      if (path === '/devices') return Response.json(list.all().map(body))
      const row = one.get(path.slice('/devices/'.length))
      return row ? Response.json(body(row)) : new Response('not found', { status: 404 })
    },
  })
  console.log(`ready ${server.port}`)
}
