/**
 * The pipeline's first step: which device an identifier (IMEI or serial) names. Lookups are cached
 * in memory, an unknown identifier too (so guessing costs no query either), and the cache is
 * emptied when the identity version in access_version (row 2, kept by triggers) moves: a device
 * added, re-identified or (un)linked by any process is seen within IDENTITY_CHECK_MS, and at once
 * after `changed()` (this process's admin API).
 *
 * The store's reads answer with promises, so identification does too; most calls are answered
 * from the cache without a read (a settled promise). Answers come in call order, whatever each
 * one read: a device's reports are queued in the order they arrived.
 *
 * What an unknown identifier is told is rationed per source (sources.ts): past the ration it is
 * masked, answered as a known device would be. A known device is never refused for its source.
 */
import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock'
import { NotFound } from '../errors'
import type { Logger } from '../log'
import type { DeviceIdentityReads } from '../store/devices'
import type { RecentUnknowns } from './recent-unknowns'
import { createUnknownIdentifierLimiter, type UnknownIdentifierLimits } from './sources'

/** The device is not in the fleet (or is unlinked): its data is refused. */
export class UnknownDevice extends NotFound {
  constructor(readonly uniqueId: string) {
    super(`No device with IMEI or serial ${JSON.stringify(uniqueId.slice(0, 64))}`)
  }
}

/**
 * The device is not in the fleet, and its source has been told of as many unknown identifiers as
 * it may this minute: the listener answers as it would a known device (the login's ACK, an HTTP
 * 200) and stores nothing, so the answer says nothing about the identifier. Not a DomainError:
 * it must never become an error answer.
 */
export class MaskedUnknownDevice extends Error {
  constructor(readonly uniqueId: string) {
    super(`No device with IMEI or serial ${JSON.stringify(uniqueId.slice(0, 64))} (answered as known, nothing stored)`)
    this.name = 'MaskedUnknownDevice'
  }
}

/** Where a report came from: the client's address (sources.ts counts it by IPv4 address or IPv6 /64). */
export interface ReportOrigin {
  source: string
  /** the listener's protocol (`osmand`, `gt06`, …): what the list of recent unknown identifiers shows */
  protocol?: string
  /**
   * The built-in model of the protocol the report came on (its descriptor's `model.id`): a device
   * still without a model gets it when the report commits.
   */
  builtinModel?: string
}

export interface DeviceRef {
  key: number
  id: string
  state: string
  /**
   * 1 while the device has no model (added without one, not yet reported): its first committed
   * report gives it its protocol's built-in model, then the pipeline sets this to 0 (the cached
   * ref is shared, so later reports skip the write).
   */
  modelless: number
}

/** How stale the device cache may be after another process changed devices. */
const IDENTITY_CHECK_MS = 1000

export function createDeviceIdentifier(options: {
  /** the devices store's identification reads (src/store/devices.ts) */
  reads: DeviceIdentityReads
  clock: Clock
  log: Logger
  limits?: UnknownIdentifierLimits
  /** told of each unknown identifier refused (never a masked one, nor an unlinked device's) */
  recentUnknowns?: RecentUnknowns
}) {
  const { reads, clock } = options
  const unknownIdentifiers = createUnknownIdentifierLimiter({ log: options.log, limits: options.limits })
  /** identifier → its device (null: none) */
  const lookups = new LRUCache<string, { device: DeviceRef | null }>({ max: 50_000 })
  /** identity version the cached lookups were made at, and when it was last read */
  let knownVersion = -1
  let checkedAt = -Infinity

  /** the device, or the refusal of an identifier that names none (or an unlinked one) */
  function decide(uniqueId: string, device: DeviceRef | null, origin: ReportOrigin | undefined, now: number): DeviceRef {
    if (!device || device.state === 'unlink') {
      const source = origin?.source
      const outcome = unknownIdentifiers.unknown(source ?? 'session', uniqueId, device ? 'unlink' : 'unknown', now, source !== undefined)
      if (outcome === 'masked') throw new MaskedUnknownDevice(uniqueId)
      if (!device && origin) options.recentUnknowns?.refused(uniqueId, origin.protocol ?? 'unknown', origin.source, now)
      throw new UnknownDevice(uniqueId)
    }
    return device
  }
  const versionCheckDue = (now: number) => now - checkedAt >= IDENTITY_CHECK_MS || now < checkedAt

  /** with the store's reads: the version at most once a second (starting over when it moved), then the lookup if not cached */
  async function identifyReading(uniqueId: string, origin: ReportOrigin | undefined, now: number): Promise<DeviceRef> {
    if (versionCheckDue(now)) {
      checkedAt = now
      const version = await reads.identityVersion()
      if (version !== knownVersion) {
        lookups.clear()
        knownVersion = version
      }
    }
    let cached = lookups.get(uniqueId)
    if (!cached) {
      cached = { device: uniqueId === '' ? null : await reads.find(uniqueId) }
      lookups.set(uniqueId, cached)
    }
    return decide(uniqueId, cached.device, origin, now)
  }
  /** the identification that reads, last called, until it has answered: later calls answer after it */
  let reading: Promise<void> | null = null

  return {
    /**
     * The device behind an identifier; a known one is always found, whatever else its source
     * sent. Unknown (or unlinked): rejects with UnknownDevice while the source is within its
     * ration of unknown identifiers, MaskedUnknownDevice past it. Without an origin (reports
     * inside an identified session) an unknown identifier is always UnknownDevice. Answers in
     * call order (a caller continuing with `.then` continues in call order too).
     */
    identify(uniqueId: string, origin?: ReportOrigin): Promise<DeviceRef> {
      const now = clock.now()
      if (reading === null && !versionCheckDue(now)) {
        const cached = lookups.get(uniqueId)
        if (cached) {
          try {
            return Promise.resolve(decide(uniqueId, cached.device, origin, now))
          } catch (error) {
            return Promise.reject(error)
          }
        }
      }
      const answer = reading === null ? identifyReading(uniqueId, origin, now) : reading.then(() => identifyReading(uniqueId, origin, now))
      const done = answer.then(
        () => {},
        () => {},
      )
      reading = done
      // cleared a microtask after `answer`'s reactions have run: its callers continue first, in order
      void done.then(() => {
        if (reading === done) reading = null
      })
      return answer
    },
    /** A report on a connection whose identifier was masked was dropped: counted for its source's log line. */
    dropped(origin: ReportOrigin): void {
      unknownIdentifiers.dropped(origin.source, clock.now())
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
