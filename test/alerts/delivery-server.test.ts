/**
 * The delivery worker runs with the server: a delivery committed to the outbox (here by another
 * connection, as the ingest pipeline's transaction will) reaches a real receiver on 127.0.0.1
 * within the poll interval, /metrics counts it, and the server stops with the worker.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { beginOutboxBatch } from '../../src/alerts/outbox'
import { loadConfig } from '../../src/config'
import { importNow } from '../support/import'
import { silentLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { baseDataset, ids, keys } from '../support/world'
import { startReceiver } from './delivery-receiver'

const dir = mkdtempSync(join(tmpdir(), 'tracker-delivery-server-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('the server delivers what is committed to the outbox, counts it, and stops with its worker', async () => {
  const path = join(dir, 'tracker.db')
  const setup = openDatabase(path)
  importNow(setup, baseDataset())
  setup.close()
  const receiver = startReceiver()
  const server = await startServer(
    loadConfig({ PORT: '0', HOST: '127.0.0.1', DATABASE_PATH: path, OSMAND_PORT: '0', GT06_PORT: '0', TELTONIKA_PORT: '0', H02_PORT: '0', MEITRACK_PORT: '0', WEBHOOK_ALLOW_PRIVATE: '1', LOG_LEVEL: 'silent' }),
    { log: silentLogger },
  )
  const other = openDatabase(path)
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

    const device = (other.sqlite.query('SELECT key FROM devices WHERE id = ?').get(ids.truck1) as { key: number }).key
    other.db.transaction((tx) =>
      beginOutboxBatch(tx).enqueueEvent({ device, ts: 1_764_000_000, alarm_code: 'sos', context: '{}', speed: null, satellite: null, latitude: null, longitude: null, mcc: null, mnc: null, dbm: null }, Date.now()),
    )
    // the worker looks every second
    for (let waited = 0; receiver.received.length === 0 && waited < 10_000; waited += 20) await Bun.sleep(20)
    expect(receiver.received).toHaveLength(1)
    expect(receiver.received[0]!.json).toMatchObject({ type: 'event', event: { alarm_code: 'sos', device: { id: ids.truck1, alias: 'Truck 1' } } })
    const list = async () => (await (await fetch(`${api}/notifications/${id}/deliveries`, { headers })).json()) as { status: string }[]
    for (let waited = 0; (await list())[0]?.status !== 'delivered' && waited < 5000; waited += 20) await Bun.sleep(20)
    expect((await list())[0]!.status).toBe('delivered')
    const metrics = await (await fetch(`${api}/metrics`)).text()
    expect(metrics).toContain('tracker_notification_deliveries_total{outcome="delivered"} 1')
    expect(metrics).toContain('tracker_notification_outbox_pending 0')
  } finally {
    other.close()
    await server.stop()
    receiver.stop()
  }
})
