/**
 * Administering an account's devices: create, change, delete. Plain synchronous functions of
 * (input, account id, actor, request id), for the API (which waits for another process's write
 * lock around them, store/busy.ts) and the command line (actor CLI_ACTOR) alike.
 *
 * Each change is one IMMEDIATE transaction: the checks against the database (model, groups,
 * duplicate identifiers) and the writes see the same state, whichever process writes meanwhile,
 * and the audit entry is written with the change or not at all.
 *
 * Identifiers: ingestion finds a device by `imei = x OR serial = x` (ingest/pipeline.ts), so an
 * IMEI and a serial share one namespace: an identifier already used by any device on the server,
 * as its IMEI or its serial, in any account, unlinked or not, is a Conflict.
 */
import { and, eq, inArray, isNull, ne, or } from 'drizzle-orm'
import { connectionOf, type Db } from '../../db/client'
import { deviceGroups, devices, groups, models, shareLinkDevices, shareLinks } from '../../db/schema'
import { createAuditLog } from '../admin/audit'
import { endLinksBeyondCreatorsReach } from '../share/creators'
import { createEventStore } from '../store/events'
import { createPositionStore } from '../store/positions'
import type { Clock } from '../clock'
import { Conflict, Invalid, NotFound, type FieldError } from '../errors'
import type { CreateDeviceInput, UpdateDeviceInput } from './admin-model'
import { identifierProblems } from './identifiers'
import type { DeviceState } from './model'


export interface DeviceAdminDeps {
  db: Db
  clock: Clock
  /**
   * Told after every committed change: the ingest pipeline's device cache is dropped at once (it
   * otherwise notices another process's change within a second).
   */
  onDevicesChanged?: () => void
}

/** A device as stored, for the command line's output and the API's Location (the API answers GET /devices/{id}'s shape). */
export interface AdministeredDevice {
  id: string
  account: string
  /** null until the device first reports (then the built-in model of its protocol) */
  model: string | null
  alias: string
  imei: string
  serial: string
  iccid: string
  state: DeviceState
  groups: string[]
  properties: Record<string, unknown>
}

/** What deleting a device removed besides it. */
export interface DeletedDevice {
  id: string
  positions: number
  events: number
  /** share links that lost the device */
  links: number
  /** of which revoked, left with no device */
  revokedLinks: number
}

/** The rules a body schema cannot say: shapes of identifiers, a non-blank alias. */
function checkFields(input: { alias?: string; imei?: string; serial?: string; iccid?: string }): void {
  const errors: FieldError[] = []
  if (input.alias !== undefined && input.alias.trim() === '') errors.push({ path: '/alias', message: 'must not be blank' })
  errors.push(...identifierProblems(input))
  if (errors.length > 0) throw new Invalid(errors.map((e) => `${e.path} ${e.message}`).join('; '), errors)
}

function requireIdentifier(imei: string, serial: string): void {
  if (imei !== '' || serial !== '') return
  const errors = [
    { path: '/imei', message: 'or serial is required: it is how the device is recognised when it reports' },
    { path: '/serial', message: 'or imei is required' },
  ]
  throw new Invalid('imei or serial is required: it is how the device is recognised when it reports', errors)
}

/** Ids as stored: lower case, each once, in the order given. */
function distinctIds(ids: readonly string[]): string[] {
  return [...new Set(ids.map((id) => id.toLowerCase()))]
}

export function createDeviceAdmin({ db, clock, onDevicesChanged }: DeviceAdminDeps) {
  const positionStore = createPositionStore(connectionOf(db))
  const eventStore = createEventStore(db)
  type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

  /** a model the account's devices may use: server-wide, or the account's own (another account's is 404, as an unknown one) */
  function requireModel(tx: Tx, id: string, accountId: string): string {
    const found = tx
      .select({ id: models.id })
      .from(models)
      .where(and(eq(models.id, id.toLowerCase()), or(isNull(models.accountId), eq(models.accountId, accountId))))
      .get()
    if (!found) throw new NotFound(`model: no model ${id} that your account's devices may use`)
    return found.id
  }

  /** the groups, all of the account's (else 404: another account's group is not revealed) */
  function requireGroups(tx: Tx, ids: readonly string[], accountId: string): string[] {
    const wanted = distinctIds(ids)
    if (wanted.length === 0) return []
    const found = new Set(
      tx.select({ id: groups.id }).from(groups).where(and(inArray(groups.id, wanted), eq(groups.accountId, accountId))).all().map((g) => g.id),
    )
    const missing = wanted.filter((id) => !found.has(id))
    if (missing.length > 0) throw new NotFound(`groups: no group ${missing.slice(0, 5).join(', ')} in your account`)
    return wanted
  }

  /** Conflict when another device (any account) already answers to one of these identifiers. */
  function requireUnused(tx: Tx, identifiers: { path: string; value: string }[], exceptKey: number | null): void {
    // an empty value is "none": it is no identifier, so it neither collides nor is named
    const given = identifiers.filter((i) => i.value !== '')
    const values = [...new Set(given.map((i) => i.value))]
    if (values.length === 0) return
    const clash = or(inArray(devices.imei, values), inArray(devices.serial, values))
    const rows = tx
      .select({ imei: devices.imei, serial: devices.serial })
      .from(devices)
      .where(exceptKey === null ? clash : and(clash, ne(devices.key, exceptKey)))
      .limit(1)
      .all()
    if (rows.length === 0) return
    const used = new Set([rows[0]!.imei, rows[0]!.serial])
    const taken = given.find((i) => used.has(i.value))!
    // which device holds it is not said: it may be another account's
    const message = `${taken.value} is already the IMEI or serial of another device on this server`
    throw new Conflict(`${taken.path.slice(1)}: ${message}`, [{ path: taken.path, message }])
  }

  function storedDevice(tx: Tx, id: string, accountId: string) {
    return tx.select().from(devices).where(and(eq(devices.id, id.toLowerCase()), eq(devices.accountId, accountId))).get()
  }

  function groupsOf(tx: Tx, key: number): string[] {
    return tx
      .select({ id: deviceGroups.groupId })
      .from(deviceGroups)
      .where(eq(deviceGroups.deviceKey, key))
      .all()
      .map((g) => g.id)
  }

  function shape(tx: Tx, row: typeof devices.$inferSelect): AdministeredDevice {
    return {
      id: row.id,
      account: row.accountId,
      model: row.modelId,
      alias: row.alias,
      imei: row.imei,
      serial: row.serial,
      iccid: row.iccid,
      state: row.state as DeviceState,
      groups: groupsOf(tx, row.key),
      properties: JSON.parse(row.properties),
    }
  }

  /** the change is committed: the ingest pipeline reads devices afresh from its next report */
  function changed<T>(result: T): T {
    onDevicesChanged?.()
    return result
  }

  return {
    /**
     * A new device of `accountId`. Invalid (400) for a bad field, NotFound (404) for an unknown
     * model (or another account's: a device may use a server-wide model or one of its own
     * account's) or a group not of the account, Conflict (409) for an identifier already in use.
     */
    createDevice(input: CreateDeviceInput, accountId: string, actor: string, requestId: string | null = null): AdministeredDevice {
      checkFields(input)
      const imei = input.imei ?? ''
      const serial = input.serial ?? ''
      requireIdentifier(imei, serial)
      const now = clock.now()
      const id = crypto.randomUUID()
      return changed(
        db.transaction(
          (tx) => {
            const model = input.model === undefined ? null : requireModel(tx, input.model, accountId)
            const groupIds = requireGroups(tx, input.groups ?? [], accountId)
            requireUnused(tx, [{ path: '/imei', value: imei }, { path: '/serial', value: serial }], null)
            const row = tx
              .insert(devices)
              .values({
                id,
                accountId,
                modelId: model,
                alias: input.alias.trim(),
                properties: JSON.stringify(input.properties ?? {}),
                imei,
                serial,
                iccid: input.iccid ?? '',
                state: input.state ?? 'new',
                createdAt: now,
                updatedAt: now,
              })
              .returning()
              .get()
            if (groupIds.length > 0) tx.insert(deviceGroups).values(groupIds.map((groupId) => ({ groupId, deviceKey: row.key }))).run()
            createAuditLog(tx).record({ accountId, actor, action: 'create', objectType: 'device', objectId: id, requestId }, now)
            return shape(tx, row)
          },
          { behavior: 'immediate' },
        ),
      )
    },

    /**
     * Changes the fields given (`groups` and `properties` replace). A new IMEI or serial is
     * checked against every other device; one kept as it is is not (an import may have left
     * duplicates). NotFound when the device is not of the account.
     */
    updateDevice(id: string, input: UpdateDeviceInput, accountId: string, actor: string, requestId: string | null = null): AdministeredDevice {
      checkFields(input)
      const now = clock.now()
      return changed(
        db.transaction(
          (tx) => {
            const row = storedDevice(tx, id, accountId)
            if (!row) throw new NotFound(`No device ${id}`)
            const imei = input.imei ?? row.imei
            const serial = input.serial ?? row.serial
            requireIdentifier(imei, serial)
            const model = input.model === undefined ? row.modelId : requireModel(tx, input.model, accountId)
            const groupIds = input.groups === undefined ? null : requireGroups(tx, input.groups, accountId)
            const renamed = [
              ...(imei !== row.imei ? [{ path: '/imei', value: imei }] : []),
              ...(serial !== row.serial ? [{ path: '/serial', value: serial }] : []),
            ]
            requireUnused(tx, renamed, row.key)
            const updated = tx
              .update(devices)
              .set({
                modelId: model,
                alias: input.alias === undefined ? row.alias : input.alias.trim(),
                properties: input.properties === undefined ? row.properties : JSON.stringify(input.properties),
                imei,
                serial,
                iccid: input.iccid ?? row.iccid,
                state: input.state ?? row.state,
                updatedAt: now,
              })
              .where(eq(devices.key, row.key))
              .returning()
              .get()!
            if (groupIds !== null) {
              tx.delete(deviceGroups).where(eq(deviceGroups.deviceKey, row.key)).run()
              if (groupIds.length > 0) tx.insert(deviceGroups).values(groupIds.map((groupId) => ({ groupId, deviceKey: row.key }))).run()
              // share links keep the device only where their creator still reaches it
              endLinksBeyondCreatorsReach(tx, accountId, now)
            }
            createAuditLog(tx).record({ accountId, actor, action: 'update', objectType: 'device', objectId: row.id, requestId }, now)
            return shape(tx, updated)
          },
          { behavior: 'immediate' },
        ),
      )
    },

    /**
     * Deletes the device with its positions and events; it leaves its groups and share links,
     * and a link left with no device is revoked. Deleting the share-link rows moves the version
     * the share token cache follows (migration 0003), so a cached token stops serving the
     * device on its next request. NotFound when the device is not of the account.
     */
    deleteDevice(id: string, accountId: string, actor: string, requestId: string | null = null): DeletedDevice {
      const now = clock.now()
      return changed(
        db.transaction(
          (tx) => {
            const row = storedDevice(tx, id, accountId)
            if (!row) throw new NotFound(`No device ${id}`)
            // the big tables' own deletes (src/store): on the same connection, inside this transaction
            const removedPositions = positionStore.deleteAll(row.key)
            const removedEvents = eventStore.deleteAll(row.key)
            const links = tx
              .delete(shareLinkDevices)
              .where(eq(shareLinkDevices.deviceKey, row.key))
              .returning({ linkId: shareLinkDevices.linkId })
              .all()
              .map((l) => l.linkId)
            let revokedLinks = 0
            for (const linkId of links) {
              const left = tx.select({ linkId: shareLinkDevices.linkId }).from(shareLinkDevices).where(eq(shareLinkDevices.linkId, linkId)).limit(1).all()
              if (left.length > 0) continue
              revokedLinks += tx
                .update(shareLinks)
                .set({ revoked: true, updatedAt: now })
                .where(and(eq(shareLinks.id, linkId), eq(shareLinks.revoked, false)))
                .returning({ id: shareLinks.id })
                .all().length
            }
            tx.delete(deviceGroups).where(eq(deviceGroups.deviceKey, row.key)).run()
            tx.delete(devices).where(eq(devices.key, row.key)).run()
            createAuditLog(tx).record({ accountId, actor, action: 'delete', objectType: 'device', objectId: row.id, requestId }, now)
            return { id: row.id, positions: removedPositions, events: removedEvents, links: links.length, revokedLinks }
          },
          { behavior: 'immediate' },
        ),
      )
    },
  }
}

export type DeviceAdmin = ReturnType<typeof createDeviceAdmin>
