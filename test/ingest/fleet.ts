/** Test helpers for ingest: a small fleet on the run's engine, and fix/report builders. */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type SQL, sql } from 'drizzle-orm'
import { type EngineWorld, openWorld } from '../support/world'
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

/** The test fleet (and `extra` devices) in a world on the run's engine (TRACKER_TEST_ENGINE). */
export function openFleet(extra: { imei: string; serial?: string }[] = []): Promise<EngineWorld> {
  return openWorld(fleetDataset(extra))
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

type Readable = Pick<EngineWorld, 'execute'>

/** rows read on either engine, each value as SQLite answers it (a boolean as 0/1, a bigint or an integer string as a number) */
export async function rows<Row = Record<string, unknown>>(world: Readable, query: SQL): Promise<Row[]> {
  const asSqlite = (value: unknown) =>
    typeof value === 'boolean' || typeof value === 'bigint' ? Number(value) : typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value
  return (await world.execute<Record<string, unknown>>(query)).map((row) => Object.fromEntries(Object.entries(row).map(([key, value]) => [key, asSqlite(value)]))) as Row[]
}

/** the first row of `rows`, or null */
export async function firstRow<Row = Record<string, unknown>>(world: Readable, query: SQL): Promise<Row | null> {
  return (await rows<Row>(world, query))[0] ?? null
}

export async function deviceRow(world: Readable, id: string): Promise<DeviceRowView> {
  return (await firstRow<DeviceRowView>(world, sql`SELECT key, state, latitude, longitude, connected, connected_at, disconnected_at, updated_at FROM devices WHERE id = ${id}`))!
}

export function positionCount(world: Pick<EngineWorld, 'count'>, deviceId?: string): Promise<number> {
  return deviceId ? world.count('positions', sql`device = (SELECT key FROM devices WHERE id = ${deviceId})`) : world.count('positions')
}

/** until, for a condition read from the database */
export async function untilRead(predicate: () => Promise<boolean>, timeoutMs = 2000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(5)
  }
}

/** Resolves when `predicate` holds, polling every few ms; rejects after `timeoutMs`. */
export async function until(predicate: () => boolean, timeoutMs = 2000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(5)
  }
}
