/**
 * Administering an account's devices: create, change, delete. Functions of (input, account
 * id, actor, request id), for the API and the command line (actor CLI_ACTOR) alike.
 *
 * Each change is one unit of work of the devices store (src/store/devices.ts): the checks against
 * the database (model, groups, duplicate identifiers) and the writes see the same state,
 * whichever process writes meanwhile, and the audit entry is written with the change or not at all.
 *
 * Identifiers: ingestion finds a device by `imei = x OR serial = x` (ingest/pipeline.ts), so an
 * IMEI and a serial share one namespace: an identifier already used by any device on the server,
 * as its IMEI or its serial, in any account, unlinked or not, is a Conflict.
 */
import type { DeviceAdminStore, RemovedDevice, StoredDevice } from '../store/devices'
import type { Clock } from '../clock'
import { Invalid, type FieldError } from '../errors'
import type { CreateDeviceInput, UpdateDeviceInput } from './admin-model'
import { identifierProblems } from './identifiers'
import type { DeviceState } from './model'


export interface DeviceAdminDeps {
  /** the devices store's administration (src/store/devices.ts, or its PostgreSQL adapter) */
  store: DeviceAdminStore
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
export type DeletedDevice = RemovedDevice

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

export function createDeviceAdmin({ store, clock, onDevicesChanged }: DeviceAdminDeps) {
  function shape(row: StoredDevice): AdministeredDevice {
    return {
      id: row.id,
      account: row.accountId,
      model: row.modelId,
      alias: row.alias,
      imei: row.imei,
      serial: row.serial,
      iccid: row.iccid,
      state: row.state as DeviceState,
      groups: row.groups,
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
    async createDevice(input: CreateDeviceInput, accountId: string, actor: string, requestId: string | null = null): Promise<AdministeredDevice> {
      checkFields(input)
      const imei = input.imei ?? ''
      const serial = input.serial ?? ''
      requireIdentifier(imei, serial)
      const device = {
        id: crypto.randomUUID(),
        model: input.model ?? null,
        alias: input.alias.trim(),
        properties: JSON.stringify(input.properties ?? {}),
        imei,
        serial,
        iccid: input.iccid ?? '',
        state: input.state ?? 'new',
      }
      return changed(shape(await store.create(device, distinctIds(input.groups ?? []), { accountId, actor, requestId, atMs: clock.now() })))
    },

    /**
     * Changes the fields given (`groups` and `properties` replace). A new IMEI or serial is
     * checked against every other device; one kept as it is is not (an import may have left
     * duplicates). NotFound when the device is not of the account.
     */
    async updateDevice(id: string, input: UpdateDeviceInput, accountId: string, actor: string, requestId: string | null = null): Promise<AdministeredDevice> {
      checkFields(input)
      const change = {
        model: input.model,
        alias: input.alias === undefined ? undefined : input.alias.trim(),
        properties: input.properties === undefined ? undefined : JSON.stringify(input.properties),
        imei: input.imei,
        serial: input.serial,
        iccid: input.iccid,
        state: input.state,
        groups: input.groups === undefined ? undefined : distinctIds(input.groups),
      }
      const by = { accountId, actor, requestId, atMs: clock.now() }
      return changed(shape(await store.update(id, change, by, ({ imei, serial }) => requireIdentifier(imei, serial))))
    },

    /**
     * Deletes the device with its positions and events; it leaves its groups and share links,
     * and a link left with no device is revoked. Deleting the share-link rows moves the version
     * the share token cache follows (migration 0003), so a cached token stops serving the
     * device on its next request. NotFound when the device is not of the account.
     */
    async deleteDevice(id: string, accountId: string, actor: string, requestId: string | null = null): Promise<DeletedDevice> {
      return changed(await store.remove(id, { accountId, actor, requestId, atMs: clock.now() }))
    },
  }
}

export type DeviceAdmin = ReturnType<typeof createDeviceAdmin>
