/**
 * Reading devices: access through the one access function, then the exact Device shape of the
 * spec. A `moving` device's location is its newest live fix (fed by ingestion), or its newest
 * stored fix when no live one is held.
 */
import { NotFound } from '../errors'
import type { Geocoder } from '../geocode'
import { isoOrNull } from '../http/model'
import type { LivePositions } from '../ingest/live'
import type { Principal } from '../principal'
import { PERMISSION, requirePermission } from '../share/permissions'
import type { PositionReads } from '../store/positions'
import type { StatusReads } from '../store/status'
import type { DeviceAccess, DeviceRow, ListFilter } from './access'
import type { DeviceBody, DeviceState, DeviceStatusBody } from './model'

export interface DeviceServiceDeps {
  positions: Pick<PositionReads, 'newestValid'>
  statuses: StatusReads
  access: DeviceAccess
  live: LivePositions
  /** names the place of a device's location in its status */
  geocoder: Pick<Geocoder, 'reverseOffline'>
}

export function createDeviceService({ positions, statuses, access, live, geocoder }: DeviceServiceDeps) {
  type Location = [number, number] | null
  const rowLocation = (row: DeviceRow): Location => (row.latitude === null || row.longitude === null ? null : [row.latitude, row.longitude])

  /** Where the device is; a promise only when the store must be read (a moving device without a live fix), so a page of parked devices awaits nothing. */
  function location(row: DeviceRow): Location | Promise<Location> {
    if (row.state !== 'moving') return rowLocation(row)
    const fix = live.get(row.key)
    if (fix) return [fix.latitude, fix.longitude]
    return positions.newestValid(row.key).then((stored) => (stored ? [stored.latitude, stored.longitude] : rowLocation(row)))
  }

  function body(row: DeviceRow, at: Location): DeviceBody {
    return {
      id: row.id,
      model: row.model_id,
      alias: row.alias,
      properties: JSON.parse(row.properties),
      serial: row.serial,
      imei: row.imei,
      iccid: row.iccid,
      state: row.state as DeviceState,
      location: at,
      connected: row.connected === 1,
      connected_at: isoOrNull(row.connected_at),
      disconnected_at: isoOrNull(row.disconnected_at),
      created_at: isoOrNull(row.created_at)!,
      updated_at: isoOrNull(row.updated_at)!,
    }
  }

  return {
    async list(principal: Principal, filter: ListFilter): Promise<DeviceBody[]> {
      requirePermission(principal, PERMISSION.location)
      const rows = await access.list(principal, filter)
      if (rows.length === 0) throw new NotFound('No devices found')
      const bodies: DeviceBody[] = []
      for (const row of rows) {
        const at = location(row)
        bodies.push(body(row, at instanceof Promise ? await at : at))
      }
      return bodies
    },

    // one async frame on GET /devices/{id}, the busiest read: the body built here, not in toBody's own
    async get(principal: Principal, id: string): Promise<DeviceBody> {
      requirePermission(principal, PERMISSION.location)
      const row = await requireDevice(access, principal, id)
      const at = location(row)
      return body(row, at instanceof Promise ? await at : at)
    },

    /** What the device's status and information packets said of it, each attribute's latest value, and where it is. */
    async status(principal: Principal, id: string): Promise<DeviceStatusBody> {
      requirePermission(principal, PERMISSION.location)
      const device = await requireDevice(access, principal, id)
      const stored = await statuses.latest(device.key)
      const found = location(device)
      const at = found instanceof Promise ? await found : found
      return {
        id: device.id,
        attributes: stored?.attributes ?? {},
        updated_at: stored ? new Date(stored.updatedAt).toISOString() : null,
        address: at === null ? null : geocoder.reverseOffline(at[0], at[1]),
      }
    },
  }
}

/** The device row, or 404 whether it does not exist or is out of reach: existence is not revealed. */
export async function requireDevice(access: DeviceAccess, principal: Principal, id: string): Promise<DeviceRow> {
  const row = await access.find(principal, id)
  if (!row) throw new NotFound(`No device ${id}`)
  return row
}

export type DeviceService = ReturnType<typeof createDeviceService>
