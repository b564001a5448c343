/**
 * The delivery worker runs with the server: a delivery committed to the outbox (here by another
 * connection, as the ingest pipeline's transaction will) reaches a real receiver on 127.0.0.1
 * within the poll interval, /metrics counts it, and the server stops with the worker.
 */
import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../../src/config'
import { silentLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { eventBody } from '../../src/store/events'
import { serverDatabase } from '../support/server-database'
import { baseDataset, ids, keys } from '../support/world'
import { startReceiver } from './delivery-receiver'
import { devicePortsOff } from '../support/process'

test('the server delivers what is committed to the outbox, counts it, and stops with its worker', async () => {
  const database = await serverDatabase('tracker-delivery-server', baseDataset())
  const receiver = startReceiver()
  const server = await startServer(
    loadConfig({ ...devicePortsOff(), PORT: '0', HOST: '127.0.0.1', ...database.env, WEBHOOK_ALLOW_PRIVATE: '1', LOG_LEVEL: 'silent' }),
    { log: silentLogger },
  )
  try {
    const api = `http://127.0.0.1:${server.port}`
    const headers = { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' }
    const created = await fetch(`${api}/notifications`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'SOS', events: ['sos'], channel: { type: 'webhook', url: receiver.url, secret: 'server-test-secret' } }),
    })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as { id: string }

    // a pending delivery of an SOS event as the outbox writes it (the events API's shape, the device named)
    const event = { ts: 1_764_000_000, alarm_code: 'sos', context: '{}', speed: null, satellite: null, latitude: null, longitude: null, mcc: null, mnc: null, dbm: null }
    const payload = JSON.stringify({ ...eventBody(event), device: { id: ids.truck1, alias: 'Truck 1' } })
    const now = Date.now()
    await database.execute(sql`INSERT INTO notification_deliveries (id, notification_id, kind, device_key, payload, fixes, status, attempts, next_attempt_at, created_at)
      SELECT ${Bun.randomUUIDv7()}, ${id}, 'event', key, ${payload}, NULL, 'pending', 0, ${now}, ${now} FROM devices WHERE id = ${ids.truck1}`)
    // the worker looks every second
    for (let waited = 0; receiver.received.length === 0 && waited < 10_000; waited += 20) await Bun.sleep(20)
    expect(receiver.received).toHaveLength(1)
    expect(receiver.received[0]!.json).toMatchObject({ type: 'event', event: { alarm_code: 'sos', device: { id: ids.truck1, alias: 'Truck 1' } } })
    const list = async () => (await (await fetch(`${api}/notifications/${id}/deliveries`, { headers })).json()) as { status: string }[]
    for (let waited = 0; (await list())[0]?.status !== 'delivered' && waited < 5000; waited += 20) await Bun.sleep(20)
    expect((await list())[0]!.status).toBe('delivered')
    const metrics = await (await fetch(`${api}/metrics`)).text()
    expect(metrics).toContain(`${database.sample('tracker_notification_deliveries_total', 'outcome="delivered"')} 1`)
    expect(metrics).toContain(`${database.sample('tracker_notification_outbox_pending')} 0`)
  } finally {
    await server.stop()
    receiver.stop()
    await database.close()
  }
})
