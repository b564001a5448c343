/**
 * The events of a whole fleet (GET /events): every device the principal reaches, through the one
 * access function, their events read by the events store, newest first. Each item is shaped as
 * GET /devices/{id}/history/events shapes it, with the device it is of.
 */
import type { Clock } from '../clock'
import type { DeviceAccess } from '../devices/access'
import type { Geocoder } from '../geocode'
import { Invalid } from '../errors'
import type { Principal } from '../principal'
import { PERMISSION, requirePermission } from '../share/permissions'
import { eventBody, type EventReads } from '../store/events'
import { DEFAULT_WINDOW_SECONDS, MAX_RANGE_SECONDS, type EventsQueryInput, type FleetEventBody } from './model'

export interface EventsServiceDeps {
  access: DeviceAccess
  store: Pick<EventReads, 'newestFirst'>
  clock: Clock
  /** the offline "City, CC" of each event */
  geocoder: Pick<Geocoder, 'reverseOffline'>
}

export function createEventsService({ access, store, clock, geocoder }: EventsServiceDeps) {
  return {
    async list(principal: Principal, query: EventsQueryInput): Promise<FleetEventBody[]> {
      const to = query.to ?? Math.floor(clock.now() / 1000)
      const from = query.from ?? Math.max(0, to - DEFAULT_WINDOW_SECONDS)
      if (from > to) throw Invalid.field('/from', `must not be after to (${from} > ${to})`)
      if (to - from > MAX_RANGE_SECONDS) throw Invalid.field('/to', `the window may span at most 31 days (${MAX_RANGE_SECONDS} s); got ${to - from} s`)
      requirePermission(principal, PERMISSION.events)

      const reachable = (await access.reachableDevices(principal)).filter((d) => query.device === undefined || d.id === query.device.toLowerCase())
      const devices = new Map(reachable.map((d) => [d.key, d]))
      const rows = await store.newestFirst([...devices.keys()], { from, to, limit: query.limit, offset: query.offset, alarmCode: query.alarm_code ?? null })
      return rows.map((e) => {
        const device = devices.get(e.device)!
        const body = eventBody(e)
        const address = body.coordinates === null ? null : geocoder.reverseOffline(body.coordinates[0], body.coordinates[1])
        return { device: { id: device.id, alias: device.alias }, ...body, address }
      })
    },
  }
}

export type EventsService = ReturnType<typeof createEventsService>
