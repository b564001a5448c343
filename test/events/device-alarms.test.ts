/**
 * Alarm codes from devices, through the real server: a GT06 alarm packet over a TCP socket and
 * OsmAnd reports over HTTP, read back with GET /events and GET /devices/{id}/history/events. A
 * code the product does not list is stored as `alarm` with the device's own code in the
 * context (`raw_alarm`), never as a code of its own.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../db/client'
import { manualClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { importNow } from '../support/import'
import { silentLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { connectClient, gt06Alarm, gt06Login, hex } from '../ingest/frames'
import { freePort } from '../support/process'
import { baseDataset, ids, keys } from '../support/world'

const dir = mkdtempSync(join(tmpdir(), 'tracker-device-alarms-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('an alarm code the product does not list is stored and served as `alarm` with the raw code in its context', async () => {
  const databasePath = join(dir, 'tracker.db')
  const setup = openDatabase(databasePath)
  importNow(setup, baseDataset())
  setup.close()
  const ports = { osmand: freePort(), gt06: freePort() }
  const clock = manualClock(Date.UTC(2026, 10, 25, 12))
  const now = clock.now() / 1000
  const config = loadConfig({
    DATABASE_PATH: databasePath, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent',
    OSMAND_PORT: String(ports.osmand), GT06_PORT: String(ports.gt06), TELTONIKA_PORT: '0', H02_PORT: '0', MEITRACK_PORT: '0',
  })
  const server = await startServer(config, { clock, log: silentLogger })
  try {
    // Truck 1 (GT06, IMEI 359710049095001): an alarm packet with alarm byte 0x1F, which no Concox table names
    const truck = await connectClient(ports.gt06)
    truck.send(gt06Login('359710049095001'))
    await truck.read(10)
    truck.send(gt06Alarm({ timestamp: now - 30, latitude: 48.85, longitude: 2.35, speed: 0 }, 0x1f, 9))
    expect(hex(await truck.read(10))).toStartWith('78 78 05 16 00 09')
    truck.end()
    // Van 1 over OsmAnd (serial S-V1): an invented alarm, a server code, a Traccar synonym, a listed one
    const osmand = (alarm: string, ago: number) =>
      fetch(`http://127.0.0.1:${ports.osmand}/?id=S-V1&lat=48.86&lon=2.34&timestamp=${now - ago}&alarm=${encodeURIComponent(alarm)}`).then((r) => r.status)
    expect(await osmand('fuelTheft', 20)).toBe(200)
    expect(await osmand('device_online', 15)).toBe(200)
    expect(await osmand('hardBraking', 10)).toBe(200)
    expect(await osmand('sos', 5)).toBe(200)

    const api = async (path: string) => {
      const response = await fetch(`http://127.0.0.1:${server.port}${path}`, { headers: { authorization: `Bearer ${keys.dana}` } })
      expect(response.status).toBe(200)
      return (await response.json()) as { alarm_code: string; context: Record<string, unknown>; device?: { alias: string } }[]
    }
    const fleet = await api(`/events?from=${now - 3600}&to=${now}`)
    const device = (alias: string) => fleet.filter((e) => e.device?.alias === alias).map((e) => ({ alarm_code: e.alarm_code, raw: e.context.raw_alarm ?? null }))
    expect(device('Van 1')).toEqual([
      { alarm_code: 'sos', raw: null },
      { alarm_code: 'harsh_braking', raw: null },
      { alarm_code: 'alarm', raw: 'device_online' },
      { alarm_code: 'alarm', raw: 'fuelTheft' },
    ])
    // the truck's own alarm, beside the server's device_online/device_offline for its connection
    const truckEvents = await api(`/devices/${ids.truck1}/history/events?from=${now - 3600}&to=${now}`)
    expect(truckEvents.filter((e) => !e.alarm_code.startsWith('device_'))).toEqual([
      expect.objectContaining({ alarm_code: 'alarm', context: expect.objectContaining({ raw_alarm: '0x1f', alarm_byte: 0x1f }) }),
    ])
    // no code was made up: besides the server's own connection events, only these
    expect(fleet.map((e) => e.alarm_code).filter((code) => code !== 'device_online' && code !== 'device_offline').sort()).toEqual(['alarm', 'alarm', 'alarm', 'harsh_braking', 'sos'])
  } finally {
    await server.stop()
  }
})
