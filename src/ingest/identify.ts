/**
 * The pipeline's first step: which device an identifier (IMEI or serial) names. Lookups are cached
 * in memory, an unknown identifier too (so guessing costs no query either), and the cache is
 * emptied when the identity version in access_version (row 2, kept by triggers) moves: a device
 * added, re-identified or (un)linked by any process is seen within IDENTITY_CHECK_MS, and at once
 * after `changed()` (this process's admin API).
 *
 * Identification is rationed per source (sources.ts): a source that has tried too many unknown
 * identifiers is refused before any lookup.
 */
import type { Database } from 'bun:sqlite'
import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock'
import { NotFound, TooManyRequests } from '../errors'
import type { Logger } from '../log'
import { createUnknownIdentifierLimiter, type UnknownIdentifierLimits } from './sources'

/** The device is not in the fleet (or is unlinked): its data is refused. */
export class UnknownDevice extends NotFound {
  constructor(readonly uniqueId: string) {
    super(`No device with IMEI or serial ${JSON.stringify(uniqueId.slice(0, 64))}`)
  }
}

/** The source tried too many unknown identifiers: nothing from it is looked up for a while. */
export class TooManyUnknownDevices extends TooManyRequests {
  constructor(retryAfterSeconds: number) {
    super('Too many unknown device identifiers from this address; try again later', retryAfterSeconds)
  }
}

/** Where a report came from: the client's address (sources.ts counts it by IPv4 address or IPv6 /64). */
export interface ReportOrigin {
  source: string
}

export interface DeviceRef {
  key: number
  id: string
  state: string
}

/** How stale the device cache may be after another process changed devices. */
const IDENTITY_CHECK_MS = 1000

export function createDeviceIdentifier(options: { sqlite: Database; clock: Clock; log: Logger; limits?: UnknownIdentifierLimits }) {
  const { sqlite, clock } = options
  const unknownIdentifiers = createUnknownIdentifierLimiter({ log: options.log, limits: options.limits })
  const identityVersion = sqlite.query<{ version: number }, []>('SELECT version FROM access_version WHERE id = 2')
  // An unlinked device loses to a live one with the same identifier (a re-provisioned tracker);
  // then an IMEI match beats a serial match; then the newest device.
  const findDevice = sqlite.query<DeviceRef, [string]>(
    `SELECT key, id, state FROM devices WHERE imei = ?1 OR serial = ?1
     ORDER BY state = 'unlink', imei = ?1 DESC, key DESC LIMIT 1`,
  )
  /** identifier → its device (null: none) */
  const lookups = new LRUCache<string, { device: DeviceRef | null }>({ max: 50_000 })
  /** identity version the cached lookups were made at, and when it was last read */
  let knownVersion = -1
  let checkedAt = -Infinity

  return {
    /**
     * The device behind an identifier; throws UnknownDevice (unknown, or unlinked), or
     * TooManyUnknownDevices without a lookup when the source has guessed too much. Without an
     * origin (reports inside an identified session) nothing is rationed.
     */
    identify(uniqueId: string, origin?: ReportOrigin): DeviceRef {
      const now = clock.now()
      const source = origin?.source
      if (source !== undefined) {
        const retryAfter = unknownIdentifiers.refusal(source, now)
        if (retryAfter !== null) throw new TooManyUnknownDevices(retryAfter)
      }
      // read the version at most once a second, and start over when it moved
      if (now - checkedAt >= IDENTITY_CHECK_MS || now < checkedAt) {
        checkedAt = now
        const version = identityVersion.get()?.version ?? 0
        if (version !== knownVersion) {
          lookups.clear()
          knownVersion = version
        }
      }
      let cached = lookups.get(uniqueId)
      if (!cached) {
        cached = { device: uniqueId === '' ? null : findDevice.get(uniqueId) }
        lookups.set(uniqueId, cached)
      }
      const device = cached.device
      if (!device || device.state === 'unlink') {
        unknownIdentifiers.unknown(source ?? 'session', uniqueId, device ? 'unlink' : 'unknown', now)
        throw new UnknownDevice(uniqueId)
      }
      return device
    },
    /** This process just changed devices: the next identification reads the identity version at once. */
    changed(): void {
      checkedAt = -Infinity
    },
    /** Log the summaries of the rationing windows that ended. */
    sweep(now: number): void {
      unknownIdentifiers.sweep(now)
    },
  }
}
