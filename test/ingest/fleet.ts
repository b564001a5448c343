/** Test helpers for ingest: a temp database with a small fleet, and fix/report builders. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, type DatabaseHandle } from '../../db/client'
import { importNow } from '../support/import'
import type { DecodedEvent, DecodedFix } from '../../src/ingest/types'

export const ACCOUNT = '00000000-0000-4000-8000-000000000001'
export const MODEL = '00000000-0000-4000-8000-000000000002'

/** identifiers of the fleet's devices, by the state they start in */
export const DEVICES = {
  fresh: { id: '00000000-0000-4000-8000-0000000000a1', imei: '359710049095095', serial: 'SN-FRESH', state: 'new' },
  parked: { id: '00000000-0000-4000-8000-0000000000a2', imei: '359710049095096', serial: 'SN-PARKED', state: 'stopped' },
  suspended: { id: '00000000-0000-4000-8000-0000000000a3', imei: '359710049095097', serial: 'SN-SUSP', state: 'suspended' },
  unlinked: { id: '00000000-0000-4000-8000-0000000000a4', imei: '359710049095098', serial: 'SN-UNLINK', state: 'unlink' },
  stolen: { id: '00000000-0000-4000-8000-0000000000a5', imei: '359710049095099', serial: 'SN-STOLEN', state: 'stolen' },
  /** the OsmAnd-style device, known by a serial that is not an IMEI */
  phone: { id: '00000000-0000-4000-8000-0000000000a6', imei: '', serial: 'phone-42', state: 'new' },
} as const

export interface TempDb {
  dir: string
  path: string
  database: DatabaseHandle
  cleanup(): void
}

export function tempDir(prefix = 'ingest-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

export function fleetDataset(extra: { imei: string; serial?: string; alias?: string }[] = []) {
  const devices = [
    ...Object.entries(DEVICES).map(([alias, d]) => ({ id: d.id, account: ACCOUNT, model: MODEL, alias, imei: d.imei, serial: d.serial, state: d.state })),
    ...extra.map((d, i) => ({
      id: `00000000-0000-4000-9000-${String(i).padStart(12, '0')}`,
      account: ACCOUNT,
      model: MODEL,
      alias: d.alias ?? `extra ${i}`,
      imei: d.imei,
      serial: d.serial ?? '',
    })),
  ]
  return { accounts: [{ id: ACCOUNT, name: 'Test' }], models: [{ id: MODEL, name: 'Tracker', protocol: 'gt06' }], devices }
}

/** A fresh database file in a temp dir, with the test fleet imported. */
export function tempFleetDb(extra: { imei: string; serial?: string }[] = []): TempDb {
  const dir = tempDir()
  const path = join(dir, 'tracker.db')
  const database = openDatabase(path)
  importNow(database, fleetDataset(extra))
  return {
    dir,
    path,
    database,
    cleanup() {
      try {
        database.close()
      } catch {}
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export function fix(timestamp: number, overrides: Partial<DecodedFix> = {}): DecodedFix {
  return {
    timestamp,
    latitude: 52.629151,
    longitude: -8.661746,
    speed: 0,
    course: 90,
    altitude: 20,
    satellites: 9,
    valid: true,
    attributes: {},
    ...overrides,
  }
}

export function event(timestamp: number, alarmCode: string, overrides: Partial<DecodedEvent> = {}): DecodedEvent {
  return { timestamp, alarmCode, latitude: 52.6, longitude: -8.6, speed: 0, satellites: 7, mcc: 272, mnc: 1, dbm: -80, context: {}, ...overrides }
}

export interface DeviceRowView {
  key: number
  state: string
  latitude: number | null
  longitude: number | null
  connected: number
  connected_at: number | null
  disconnected_at: number | null
  updated_at: number
}

export function deviceRow(database: DatabaseHandle, id: string): DeviceRowView {
  return database.sqlite
    .query<DeviceRowView, [string]>('SELECT key, state, latitude, longitude, connected, connected_at, disconnected_at, updated_at FROM devices WHERE id = ?')
    .get(id)!
}

export function positionCount(database: DatabaseHandle, deviceId?: string): number {
  if (!deviceId) return database.sqlite.query<{ n: number }, []>('SELECT count(*) AS n FROM positions').get()!.n
  return database.sqlite
    .query<{ n: number }, [string]>('SELECT count(*) AS n FROM positions WHERE device = (SELECT key FROM devices WHERE id = ?)')
    .get(deviceId)!.n
}

/** Resolves when `predicate` holds, polling every few ms; rejects after `timeoutMs`. */
export async function until(predicate: () => boolean, timeoutMs = 2000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(5)
  }
}
