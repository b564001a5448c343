/**
 * Crash between commit and delivery: the spawned server stores a geofence crossing, the receiver
 * holds the first attempt open, the server is killed with SIGKILL, then restarted: exactly the
 * committed events are delivered (the same delivery ids, none missing, none extra).
 */
import { afterAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { freePort, serverEnv } from '../support/process'
import { serverDatabase, type ServerDatabase } from '../support/server-database'
import { baseDataset, keys } from '../support/world'
import { startReceiver, verifySignature } from './delivery-receiver'

const ROOT = join(import.meta.dir, '..', '..')
let database: ServerDatabase | undefined
afterAll(async () => {
  await database?.close()
}, 20_000)
const SECRET = 'crash-test-secret'

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out')
    await Bun.sleep(25)
  }
}

test('SIGKILL between commit and delivery: after the restart exactly the committed events are delivered', async () => {
  database = await serverDatabase('tracker-alerts-crash', baseDataset())
  const ports = { http: freePort(), osmand: freePort(), teltonika: freePort() }
  const env = { ...serverEnv(database, ports, 'error'), WEBHOOK_ALLOW_PRIVATE: '1' }
  const spawn = () => Bun.spawn([process.execPath, 'src/main.ts', 'serve'], { cwd: ROOT, env, stdout: 'ignore', stderr: 'inherit' })
  const api = `http://127.0.0.1:${ports.http}`
  const up = async () => (await fetch(`${api}/ready`).catch(() => null))?.status === 200

  // holds every request open until the server dies
  const receiver = startReceiver(() => new Promise<Response>(() => {}))
  let server = spawn()
  try {
    await waitFor(up)
    const headers = { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' }
    const post = (path: string, body: unknown) => fetch(`${api}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
    expect((await post('/geofences', { name: 'Yard', area: { type: 'Circle', center: [10, 10], radius: 1000 } })).status).toBe(201)
    const created = await post('/notifications', { name: 'Yard', events: ['geofence_enter', 'geofence_exit'], channel: { type: 'webhook', url: receiver.url, secret: SECRET } })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as { id: string }

    const t0 = Math.floor(Date.now() / 1000) - 600
    for (const [dt, lat] of [[0, 10.1], [60, 10], [120, 10.1]] as const) {
      expect((await fetch(`http://127.0.0.1:${ports.osmand}/?id=S-T1&lat=${lat}&lon=10&timestamp=${t0 + dt}`)).status).toBe(200)
    }
    // an attempt is under way (committed, not delivered): kill
    await waitFor(() => receiver.received.length > 0)
    server.kill(9)
    await server.exited
    const before = receiver.received.length

    receiver.answer(() => new Response(null, { status: 204 }))
    server = spawn()
    await waitFor(up)
    const list = async () => (await (await fetch(`${api}/notifications/${id}/deliveries`, { headers })).json()) as { id: string; status: string }[]
    await waitFor(async () => {
      const deliveries = await list()
      return deliveries.length === 2 && deliveries.every((d) => d.status === 'delivered')
    })
    const after = receiver.received.slice(before)
    const byDelivery = new Map(after.map((r) => [r.headers.get('x-tracker-delivery') ?? '', r.json.event.alarm_code]))
    expect([...byDelivery.values()].sort()).toEqual(['geofence_enter', 'geofence_exit'])
    expect(new Set((await list()).map((d) => d.id))).toEqual(new Set(byDelivery.keys()))
    // what was attempted before the kill is among them (same delivery id)
    for (const r of receiver.received.slice(0, before)) expect(byDelivery.has(r.headers.get('x-tracker-delivery') ?? '')).toBe(true)
    for (const r of after) expect(verifySignature(r.headers.get('x-tracker-signature'), r.body, SECRET).ok).toBe(true)
  } finally {
    server.kill(9)
    await server.exited
    receiver.stop()
  }
}, 40_000)
