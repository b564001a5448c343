/**
 * Geofences of an account: any user of the account reads them all (a member too: they are the
 * account's map, not a device's), an account admin changes them. Plain synchronous functions;
 * each change is one transaction with its audit entry, and tells `onChange` after it commits
 * (the alert rules' geofence cache drops the account's geofences). Another account's geofence is
 * 404, as one that does not exist.
 */
import { and, asc, count, eq, inArray } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { geofences, groups } from '../../db/schema'
import { type Actor, checkName, distinctIds, type Page, requireKnown } from '../admin/actor'
import { createAuditLog } from '../admin/audit'
import type { Clock } from '../clock'
import { Conflict, Forbidden, Invalid, NotFound } from '../errors'
import { iso } from '../http/model'
import { type Area, checkArea, MAX_POLYGON_POINTS } from '../track/geofence'
import type { CreateGeofenceInput, GeofenceBody, UpdateGeofenceInput } from './model'

/** an account's geofences at most, unless the operator says otherwise (MAX_GEOFENCES_PER_ACCOUNT) */
export const MAX_GEOFENCES_PER_ACCOUNT = 1000

export interface GeofenceServiceDeps {
  db: Db
  clock: Clock
  /** told after a change has committed, with the account whose geofences changed */
  onChange?: (accountId: string) => void
  /** geofences an account may have (MAX_GEOFENCES_PER_ACCOUNT) */
  maxPerAccount?: number
  /** points a new or changed polygon may have, all rings together (MAX_GEOFENCE_VERTICES); stored ones are kept as they are */
  maxPoints?: number
}

type GeofenceRow = typeof geofences.$inferSelect

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

export function createGeofenceService({ db, clock, onChange, maxPerAccount = MAX_GEOFENCES_PER_ACCOUNT, maxPoints = MAX_POLYGON_POINTS }: GeofenceServiceDeps) {
  const audit = createAuditLog(db)

  function requireAdmin(by: Actor): void {
    if (!by.admin) throw new Forbidden('Only an account admin can do this')
  }

  function requireGeofence(accountId: string, id: string): GeofenceRow {
    const row = db
      .select()
      .from(geofences)
      .where(and(eq(geofences.id, id.toLowerCase()), eq(geofences.accountId, accountId)))
      .get()
    if (!row) throw new NotFound(`No geofence ${id}`)
    return row
  }

  /** group ids as stored (lower case, each once), each a group of the account (else 404 naming its place) */
  function checkedGroups(accountId: string, given: readonly string[]): string[] {
    const ids = distinctIds(given, '/groups')
    if (ids.length === 0) return ids
    const found = db
      .select({ id: groups.id })
      .from(groups)
      .where(and(eq(groups.accountId, accountId), inArray(groups.id, ids)))
      .all()
    requireKnown(ids, new Set(found.map((g) => g.id)), '/groups', 'group')
    return ids
  }

  const record = (by: Actor, action: 'create' | 'update' | 'delete', id: string, at: number) =>
    audit.record({ accountId: by.accountId, actor: by.id, action, objectType: 'geofence', objectId: id, requestId: by.requestId }, at)

  return {
    /** the account's geofences, by name then id */
    list(accountId: string, page: Page): GeofenceBody[] {
      return db
        .select()
        .from(geofences)
        .where(eq(geofences.accountId, accountId))
        .orderBy(asc(geofences.name), asc(geofences.id))
        .limit(page.limit)
        .offset(page.offset)
        .all()
        .map(toGeofenceBody)
    },

    get(accountId: string, id: string): GeofenceBody {
      return toGeofenceBody(requireGeofence(accountId, id))
    },

    create(by: Actor, input: CreateGeofenceInput): GeofenceBody {
      requireAdmin(by)
      const name = checkName(input.name)
      const area = checkedArea(input.area, maxPoints)
      const now = clock.now()
      const id = crypto.randomUUID()
      const row = db.transaction(
        () => {
          // counted in the write transaction: two creations at once cannot both take the last place
          const held = db.select({ n: count() }).from(geofences).where(eq(geofences.accountId, by.accountId)).get()?.n ?? 0
          if (held >= maxPerAccount) {
            throw new Conflict(
              `The account has ${held.toLocaleString('en')} geofences, the most it may have (${maxPerAccount.toLocaleString('en')}, MAX_GEOFENCES_PER_ACCOUNT): delete one first`,
            )
          }
          const groupIds = checkedGroups(by.accountId, input.groups ?? [])
          const inserted = db
            .insert(geofences)
            .values({
              id,
              accountId: by.accountId,
              name,
              area: JSON.stringify(area),
              groups: JSON.stringify(groupIds),
              speedLimit: input.speed_limit ?? null,
              createdAt: now,
              updatedAt: now,
            })
            .returning()
            .get()
          record(by, 'create', id, now)
          return inserted
        },
        { behavior: 'immediate' },
      )
      onChange?.(by.accountId)
      return toGeofenceBody(row)
    },

    /** Changes the fields given (`groups` replaces the list, `speed_limit: null` removes the limit); an empty change changes nothing. */
    update(by: Actor, id: string, input: UpdateGeofenceInput): GeofenceBody {
      requireAdmin(by)
      const name = input.name === undefined ? undefined : checkName(input.name)
      const area = input.area === undefined ? undefined : checkedArea(input.area, maxPoints)
      const now = clock.now()
      let changed = false
      const row = db.transaction(
        () => {
          const current = requireGeofence(by.accountId, id)
          const groupIds = input.groups === undefined ? undefined : checkedGroups(by.accountId, input.groups)
          const changes: Partial<GeofenceRow> = {
            ...(name === undefined ? {} : { name }),
            ...(area === undefined ? {} : { area: JSON.stringify(area) }),
            ...(groupIds === undefined ? {} : { groups: JSON.stringify(groupIds) }),
            ...(input.speed_limit === undefined ? {} : { speedLimit: input.speed_limit }),
          }
          if (Object.keys(changes).length === 0) return current
          changed = true
          // on by a millisecond at least: the rules' cache tells a changed area by it (alerts/cache.ts)
          const updated = db
            .update(geofences)
            .set({ ...changes, updatedAt: Math.max(now, current.updatedAt + 1) })
            .where(eq(geofences.id, current.id))
            .returning()
            .get()!
          record(by, 'update', current.id, now)
          return updated
        },
        { behavior: 'immediate' },
      )
      if (changed) onChange?.(by.accountId)
      return toGeofenceBody(row)
    },

    /** Deletes the geofence: devices inside it get no exit event (it no longer exists to leave). */
    remove(by: Actor, id: string): void {
      requireAdmin(by)
      const now = clock.now()
      db.transaction(
        () => {
          const current = requireGeofence(by.accountId, id)
          db.delete(geofences).where(eq(geofences.id, current.id)).run()
          record(by, 'delete', current.id, now)
        },
        { behavior: 'immediate' },
      )
      onChange?.(by.accountId)
    },
  }
}

export type GeofenceService = ReturnType<typeof createGeofenceService>
