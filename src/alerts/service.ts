/**
 * Geofences of an account: any user of the account reads them all (a member too: they are the
 * account's map, not a device's), an account admin changes them. Plain functions over the
 * geofence store (src/store/geofences.ts): each change is one unit of work with its audit entry
 * there, and tells `onChange` after it commits (the alert rules' geofence cache drops the
 * account's geofences). Another account's geofence is 404, as one that does not exist.
 */
import { type Actor, checkName, distinctIds, type Page, requireKnown } from '../admin/actor'
import type { Clock } from '../clock'
import { Conflict, Forbidden, Invalid, NotFound } from '../errors'
import { iso } from '../http/model'
import { type Area, checkArea, MAX_POLYGON_POINTS } from '../track/geofence'
import type { GeofenceAudit, GeofenceRefused, GeofenceRow, GeofenceStore } from '../store/geofences'
import type { CreateGeofenceInput, GeofenceBody, UpdateGeofenceInput } from './model'

/** an account's geofences at most, unless the operator says otherwise (MAX_GEOFENCES_PER_ACCOUNT) */
export const MAX_GEOFENCES_PER_ACCOUNT = 1000

export interface GeofenceServiceDeps {
  store: GeofenceStore
  clock: Clock
  /** told after a change has committed, with the account whose geofences changed */
  onChange?: (accountId: string) => void
  /** geofences an account may have (MAX_GEOFENCES_PER_ACCOUNT) */
  maxPerAccount?: number
  /** points a new or changed polygon may have, all rings together (MAX_GEOFENCE_VERTICES); stored ones are kept as they are */
  maxPoints?: number
}


/** The area as stored: only its own fields (a Polygon's `bbox` is dropped: the server computes its own). */
function checkedArea(input: Record<string, unknown>, maxPoints: number): Area {
  const problems = checkArea(input, { maxPoints })
  if (problems.length > 0) {
    const errors = problems.slice(0, 20).map((p) => ({ path: `/area${p.path}`, message: p.message }))
    throw new Invalid(`Invalid area: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`, errors)
  }
  const area = input as unknown as Area
  return area.type === 'Circle'
    ? { type: 'Circle', center: [area.center[0], area.center[1]], radius: area.radius }
    : { type: 'Polygon', coordinates: area.coordinates }
}

export function toGeofenceBody(row: GeofenceRow): GeofenceBody {
  return {
    id: row.id,
    name: row.name,
    area: JSON.parse(row.area),
    groups: JSON.parse(row.groups),
    speed_limit: row.speedLimit,
    created_at: iso(row.createdAt),
  }
}

export function createGeofenceService({ store, clock, onChange, maxPerAccount = MAX_GEOFENCES_PER_ACCOUNT, maxPoints = MAX_POLYGON_POINTS }: GeofenceServiceDeps) {
  function requireAdmin(by: Actor): void {
    if (!by.admin) throw new Forbidden('Only an account admin can do this')
  }

  async function requireGeofence(accountId: string, id: string): Promise<GeofenceRow> {
    const row = await store.find(accountId, id)
    if (!row) throw new NotFound(`No geofence ${id}`)
    return row
  }

  const full = (held: number) =>
    new Conflict(
      `The account has ${held.toLocaleString('en')} geofences, the most it may have (${maxPerAccount.toLocaleString('en')}, MAX_GEOFENCES_PER_ACCOUNT): delete one first`,
    )

  /** what the store's refusal means: the account is full (409), or a group is not the account's (404 naming its place) */
  function refusal(refused: GeofenceRefused, ids: readonly string[]): Error {
    if ('held' in refused) return full(refused.held)
    try {
      requireKnown(ids, refused.groupsFound, '/groups', 'group')
    } catch (error) {
      return error as Error
    }
    return new Error('geofence store: groups refused, yet all found')
  }

  const auditOf = (by: Actor): GeofenceAudit => ({ actor: by.id, requestId: by.requestId ?? null })

  return {
    /** the account's geofences, by name then id */
    async list(accountId: string, page: Page): Promise<GeofenceBody[]> {
      return (await store.list(accountId, page)).map(toGeofenceBody)
    },

    async get(accountId: string, id: string): Promise<GeofenceBody> {
      return toGeofenceBody(await requireGeofence(accountId, id))
    },

    async create(by: Actor, input: CreateGeofenceInput): Promise<GeofenceBody> {
      requireAdmin(by)
      const name = checkName(input.name)
      const area = checkedArea(input.area, maxPoints)
      let groupIds: string[]
      try {
        groupIds = distinctIds(input.groups ?? [], '/groups')
      } catch (error) {
        // a full account is told first, as when the count and the groups were checked in one transaction
        const held = await store.count(by.accountId)
        if (held >= maxPerAccount) throw full(held)
        throw error
      }
      const now = clock.now()
      const id = crypto.randomUUID()
      const row: GeofenceRow = {
        id,
        accountId: by.accountId,
        name,
        area: JSON.stringify(area),
        groups: JSON.stringify(groupIds),
        speedLimit: input.speed_limit ?? null,
        createdAt: now,
        updatedAt: now,
      }
      const outcome = await store.create({ row, groupIds, maxPerAccount }, auditOf(by))
      if (!('created' in outcome)) throw refusal(outcome, groupIds)
      onChange?.(by.accountId)
      return toGeofenceBody(outcome.created)
    },

    /** Changes the fields given (`groups` replaces the list, `speed_limit: null` removes the limit); an empty change changes nothing. */
    async update(by: Actor, id: string, input: UpdateGeofenceInput): Promise<GeofenceBody> {
      requireAdmin(by)
      const name = input.name === undefined ? undefined : checkName(input.name)
      const area = input.area === undefined ? undefined : checkedArea(input.area, maxPoints)
      let groupIds: string[] | undefined
      try {
        groupIds = input.groups === undefined ? undefined : distinctIds(input.groups, '/groups')
      } catch (error) {
        // an unknown geofence is told first, as when it was read in the same transaction
        await requireGeofence(by.accountId, id)
        throw error
      }
      const now = clock.now()
      const outcome = await store.update(
        by.accountId,
        id,
        {
          ...(name === undefined ? {} : { name }),
          ...(area === undefined ? {} : { area: JSON.stringify(area) }),
          ...(groupIds === undefined ? {} : { groupIds }),
          ...(input.speed_limit === undefined ? {} : { speedLimit: input.speed_limit }),
        },
        now,
        auditOf(by),
      )
      if (outcome === null) throw new NotFound(`No geofence ${id}`)
      if (!('row' in outcome)) throw refusal(outcome, groupIds ?? [])
      if (outcome.changed) onChange?.(by.accountId)
      return toGeofenceBody(outcome.row)
    },

    /** Deletes the geofence: devices inside it get no exit event (it no longer exists to leave). */
    async remove(by: Actor, id: string): Promise<void> {
      requireAdmin(by)
      if (!(await store.remove(by.accountId, id, clock.now(), auditOf(by)))) throw new NotFound(`No geofence ${id}`)
      onChange?.(by.accountId)
    },
  }
}

export type GeofenceService = ReturnType<typeof createGeofenceService>
