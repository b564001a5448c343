/**
 * Every store of one database, built once: what the server, the app and the command line are
 * handed instead of a connection. `createSqliteStores` builds the SQLite adapters (src/store/*.ts);
 * the PostgreSQL adapters (src/store/postgres/) implement the same interfaces. Each store is made
 * on first use: a command that needs one store prepares no other's statements.
 */
import type { DatabaseHandle } from '../../db/client'
import { type Clock, systemClock } from '../clock'
import { type AuditStore, createAuditStore } from './audit'
import { type CommandStore, createCommandStore } from './commands'
import { createDatasetStore, type DatasetStore } from './dataset'
import {
  createDeviceAccessReads,
  createDeviceAdminStore,
  createDeviceIdentityReads,
  createUnknownIdentifierStore,
  type DeviceAccessReads,
  type DeviceAdminStore,
  type DeviceIdentityReads,
  type UnknownIdentifierStore,
} from './devices'
import { type EventReads, createEventReads } from './events'
import { createGeofenceCacheReads, createGeofenceStore, createRuleStateStore, type GeofenceCacheReads, type GeofenceStore, type RuleStateStore } from './geofences'
import { createIngestStore, type IngestStore } from './ingest'
import { createKeyStore, type KeyStore } from './keys'
import { createMaintenanceStore, type MaintenanceStore } from './maintenance'
import { createModelStore, type ModelStore } from './models'
import { createDeliveryStore, createNotificationStore, type DeliveryStore, type NotificationStore } from './notifications'
import { createOperatorNameStore, type OperatorNameStore } from './operator-names'
import { createPeopleStore, type PeopleStore } from './people'
import { createPositionReads, type PositionReads } from './positions'
import { createReportReads, type ReportReads } from './reports'
import { createReportScheduleStore, type ReportScheduleStore } from './reportSchedules'
import { createRetentionStore, type RetentionStore } from './retention'
import { createShareLinkStore, type ShareLinkStore } from './shareLinks'
import { createStatusReads, type StatusReads } from './status'

export interface Stores {
  engine: 'sqlite' | 'postgres'
  audit: AuditStore
  commands: CommandStore
  dataset: DatasetStore
  deliveries: DeliveryStore
  /** the access function's reads (src/devices/access.ts) */
  deviceAccess: DeviceAccessReads
  deviceAdmin: DeviceAdminStore
  /** ingest identification's reads (src/ingest/identify.ts) */
  deviceIdentity: DeviceIdentityReads
  events: EventReads
  geofenceCache: GeofenceCacheReads
  geofences: GeofenceStore
  ingest: IngestStore
  keys: KeyStore
  maintenance: MaintenanceStore
  models: ModelStore
  notifications: NotificationStore
  operatorNames: OperatorNameStore
  people: PeopleStore
  positions: PositionReads
  /** the reports' own reads (the route report's fixes) */
  reports: ReportReads
  /** scheduled reports and their runs */
  reportSchedules: ReportScheduleStore
  retention: RetentionStore
  ruleStates: RuleStateStore
  shareLinks: ShareLinkStore
  statuses: StatusReads
  unknownIdentifiers: UnknownIdentifierStore
}

export interface StoreOptions {
  /** the clock of write deadlines, retention's cutoffs and audit times (default: the system's) */
  clock?: Clock
  /**
   * A process alone on the database (the command line): writes run at once within SQLite's own
   * busy timeout, instead of waiting for another process's lock asynchronously.
   */
  alone?: boolean
}

/** An object whose properties are made on first read, then kept. */
export function lazily<T extends object>(makers: { [K in keyof T]: () => T[K] }): T {
  const made: Partial<T> = {}
  const target = {} as T
  for (const key of Object.keys(makers) as (keyof T)[]) {
    Object.defineProperty(target, key, {
      enumerable: true,
      get: () => (key in made ? made[key] : (made[key] = makers[key]())),
    })
  }
  return target
}

export function createSqliteStores(database: DatabaseHandle, { clock = systemClock, alone = false }: StoreOptions = {}): Stores {
  const retryWhileBusy = !alone
  return lazily<Stores>({
    engine: () => 'sqlite',
    audit: () => createAuditStore(database),
    commands: () => createCommandStore(database, { clock }),
    dataset: () => createDatasetStore(database),
    deliveries: () => createDeliveryStore(database, { clock }),
    deviceAccess: () => createDeviceAccessReads(database),
    deviceAdmin: () => createDeviceAdminStore(database, { clock, retryWhileBusy }),
    deviceIdentity: () => createDeviceIdentityReads(database),
    events: () => createEventReads(database),
    geofenceCache: () => createGeofenceCacheReads(database),
    geofences: () => createGeofenceStore(database, { clock }),
    ingest: () => createIngestStore(database),
    keys: () => createKeyStore(database, { clock }),
    maintenance: () => createMaintenanceStore(database),
    models: () => createModelStore(database, { clock, retryWhileBusy }),
    notifications: () => createNotificationStore(database, { clock }),
    operatorNames: () => createOperatorNameStore(database),
    people: () => createPeopleStore(database, { clock, retryWhileBusy }),
    positions: () => createPositionReads(database),
    reports: () => createReportReads(database),
    reportSchedules: () => createReportScheduleStore(database),
    retention: () => createRetentionStore(database, clock),
    ruleStates: () => createRuleStateStore(database),
    shareLinks: () => createShareLinkStore(database, { clock }),
    statuses: () => createStatusReads(database),
    unknownIdentifiers: () => createUnknownIdentifierStore(database),
  })
}
