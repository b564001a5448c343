/**
 * Every store over PostgreSQL (src/store/index.ts's `Stores`): the adapters of src/store/postgres/,
 * made on first use, with ingest's unit of work announcing each batch to the other nodes under
 * this node's name.
 */
import type { PostgresHandle } from '../../../db/postgres/client'
import { type Clock, systemClock } from '../../clock'
import { lazily, type Stores } from '../index'
import { createPostgresAuditStore } from './audit'
import { createPostgresCommandStore } from './commands'
import { createPostgresDatasetStore } from './dataset'
import { createPostgresDeviceAccessReads, createPostgresDeviceAdminStore, createPostgresDeviceIdentityReads, createPostgresUnknownIdentifierStore } from './devices'
import { createPostgresDeliveryStore, createPostgresNotificationStore } from './notifications'
import { createPostgresEventReads } from './events'
import { createPostgresGeofenceCacheReads, createPostgresGeofenceStore } from './geofences'
import { createPostgresIngestStore } from './ingest'
import { createPostgresKeyStore } from './keys'
import { createPostgresMaintenanceStore } from './maintenance'
import { createPostgresModelStore } from './models'
import { createPostgresOperatorNameStore } from './operator-names'
import { createPostgresPeopleStore } from './people'
import { createPostgresPositionReads } from './positions'
import { createPostgresReportReads } from './reports'
import { createPostgresReportScheduleStore } from './reportSchedules'
import { createPostgresRetentionStore } from './retention'
import { createPostgresShareLinkStore } from './shareLinks'
import { createPostgresStatusReads } from './status'

export interface PostgresStoreOptions {
  clock?: Clock
  /** this node's name: ingest announces its batches under it (absent: a tool, announcing nothing) */
  node?: string
}

export function createPostgresStores(database: PostgresHandle, { clock = systemClock, node }: PostgresStoreOptions = {}): Stores {
  let ingest: ReturnType<typeof createPostgresIngestStore> | null = null
  let geofenceCache: ReturnType<typeof createPostgresGeofenceCacheReads> | null = null
  const geofenceCacheReads = () => (geofenceCache ??= createPostgresGeofenceCacheReads(database))
  // the rules' geofences of a batch's accounts are read ahead with the batch: the rules run synchronously inside it
  const ingestStore = () => (ingest ??= createPostgresIngestStore(database, { node, beforeWrite: (accounts) => geofenceCacheReads().load(accounts) }))
  return lazily<Stores>({
    engine: () => 'postgres',
    audit: () => createPostgresAuditStore(database),
    commands: () => createPostgresCommandStore(database),
    dataset: () => createPostgresDatasetStore(database),
    deliveries: () => createPostgresDeliveryStore(database, { clock }),
    deviceAccess: () => createPostgresDeviceAccessReads(database),
    deviceAdmin: () => createPostgresDeviceAdminStore(database),
    deviceIdentity: () => createPostgresDeviceIdentityReads(database),
    events: () => createPostgresEventReads(database),
    geofenceCache: geofenceCacheReads,
    geofences: () => createPostgresGeofenceStore(database, { clock }),
    ingest: ingestStore,
    keys: () => createPostgresKeyStore(database, { clock }),
    maintenance: () => createPostgresMaintenanceStore(database),
    models: () => createPostgresModelStore(database),
    notifications: () => createPostgresNotificationStore(database, { clock }),
    operatorNames: () => createPostgresOperatorNameStore(database),
    people: () => createPostgresPeopleStore(database, { clock }),
    positions: () => createPostgresPositionReads(database),
    reports: () => createPostgresReportReads(database),
    reportSchedules: () => createPostgresReportScheduleStore(database),
    retention: () => createPostgresRetentionStore(database),
    // the rules' state is answered from ingest's batch being written (src/store/postgres/ingest.ts)
    ruleStates: () => ingestStore().ruleStates(),
    shareLinks: () => createPostgresShareLinkStore(database, { clock }),
    statuses: () => createPostgresStatusReads(database),
    unknownIdentifiers: () => createPostgresUnknownIdentifierStore(database),
  })
}
