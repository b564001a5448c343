/**
 * The events of a whole fleet (GET /events): every device the principal reaches, through the one
 * access function, their events read by the events store, newest first. Each item is shaped as
 * GET /devices/{id}/history/events shapes it, with the device it is of.
 */
import type { Clock } from '../clock'
import type { DeviceAccess } from '../devices/access'
import { Invalid } from '../errors'
import type { Principal } from '../principal'
import { PERMISSION, requirePermission } from '../share/permissions'
import { eventBody, type EventStore } from '../store/events'
import { DEFAULT_WINDOW_SECONDS, MAX_RANGE_SECONDS, type EventsQueryInput, type FleetEventBody } from './model'

export interface EventsServiceDeps {
  access: DeviceAccess
  store: EventStore
  clock: Clock
}

export function createEventsService({ access, store, clock }: EventsServiceDeps) {
  return {
    list(principal: Principal, query: EventsQueryInput): FleetEventBody[] {
      const to = query.to ?? Math.floor(clock.now() / 1000)
      const from = query.from ?? Math.max(0, to - DEFAULT_WINDOW_SECONDS)
      if (from > to) throw Invalid.field('/from', `must not be after to (${from} > ${to})`)
      if (to - from > MAX_RANGE_SECONDS) throw Invalid.field('/to', `the window may span at most 31 days (${MAX_RANGE_SECONDS} s); got ${to - from} s`)
      requirePermission(principal, PERMISSION.events)

      const devices = new Map(access.reachableDevices(principal).map((d) => [d.key, d]))
      const rows = store.newestFirst([...devices.keys()], { from, to, limit: query.limit, offset: query.offset })
      return rows.map((e) => {
        const device = devices.get(e.device)!
        return { device: { id: device.id, alias: device.alias }, ...eventBody(e) }
      })
    },
  }
}

export type EventsService = ReturnType<typeof createEventsService>
