/**
 * One side of the history benchmark, in its own process. `product`: the real app. `floor`:
 * a bare Bun.serve that runs the raw select of the same rows and JSON.stringify of the same
 * points — what any route endpoint must do at the least. Both report their memory at /memory.
 */
import { Database } from 'bun:sqlite'
import { openDatabase } from '../../db/client'
import { createApp } from '../../src/app'

const [mode, path] = process.argv.slice(2)

function memory(): Response {
  const status = require('node:fs').readFileSync('/proc/self/status', 'utf8') as string
  const kib = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
  return Response.json({ rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 })
}

if (mode === 'product') {
  const app = createApp({ database: openDatabase(path) }).get('/memory', memory)
  app.listen({ port: 0, hostname: '127.0.0.1' })
  console.log(`ready ${app.server!.port}`)
} else {
  const sqlite = new Database(path, { strict: true })
  const device = sqlite.query<{ key: number }, [string]>('SELECT key FROM devices WHERE id = ?')
  const fixes = sqlite.query<[number, number, number, number | null], [number, number, number]>(
    'SELECT ts, lat, lon, speed FROM positions WHERE device = ? AND ts BETWEEN ? AND ? ORDER BY ts',
  )
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const url = new URL(request.url)
      if (url.pathname === '/memory') return memory()
      const id = url.pathname.split('/')[2]
      const key = device.get(id)!.key
      const rows = fixes.values(key, Number(url.searchParams.get('from')), Number(url.searchParams.get('to'))) as unknown as [number, number, number, number | null][]
      const points = rows.map(([ts, lat, lon, speed]) => ({ latitude: lat / 1e7, longitude: lon / 1e7, speed: speed === null ? 0 : speed / 10, timestamp: ts }))
      return new Response(JSON.stringify({ points }), { headers: { 'content-type': 'application/json' } })
    },
  })
  console.log(`ready ${server.port}`)
}
