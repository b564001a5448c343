/**
 * Live positions as Server-Sent Events: the fixes of the devices a principal reaches (a user:
 * through their groups; a share link: its own devices, with the location permission), as they
 * are committed. A stream starts with the newest fix of each device (held in memory, else the
 * newest stored one: after a restart, or history that was imported), so a page is current at
 * once, and sends a comment as heartbeat so that proxies and idle timers keep it open.
 *
 * Device alarms (events the ingest pipeline committed) go as `event: alarm` to the same streams a
 * fix of that device goes to; a share link's stream gets them only when its acl grants events.
 * Alarms are not replayed: a stream tells the ones committed while it is open. What a device's
 * status or information packets say of it (battery, power, signal, ignition…) goes as `event:
 * status` to the same streams as its fixes, also not replayed (GET /devices/{id}/status has it).
 *
 * A stream follows access while it is open: when the access version moves (any group or device
 * change, by any process) it reads its devices again before the next fix, so a user taken out of
 * a group stops getting that group's devices and a user put in one starts getting them. A share
 * link's stream ends at the link's expires_at, to the millisecond, and when the link changes.
 */
import type { Clock } from '../clock'
import type { DeviceAccess } from '../devices/access'
import { TooManyRequests, Unavailable } from '../errors'
import type { LiveAlarm, LiveFix, LivePositions, LiveStatus } from '../ingest/live'
import { budgetHolder, type Principal } from '../principal'
import { PERMISSION, requirePermission } from '../share/permissions'
import type { PositionStore } from '../store/positions'

export interface LiveStreamDeps {
  /**
   * the newest stored fix, what a stream starts a device with when none is held in memory: read
   * synchronously as the stream's first frames are written (the one read of this module)
   */
  positions: Pick<PositionStore, 'newestValid'>
  access: DeviceAccess
  live: LivePositions
  clock: Clock
  /** whether a share link is still usable; checked at each heartbeat (a revocation by another process) */
  linkActive(linkId: string): boolean
  /** when a share link expires (Unix ms), null when there is no such link */
  linkExpiresAt(linkId: string): number | null
  /** calls back with the id of each share link that is patched or revoked */
  onLinkChange(listener: (linkId: string) => void): () => void
  heartbeatMs?: number
  /** open streams the whole process may hold (MAX_STREAMS, default DEFAULT_MAX_STREAMS); the next one is 503 */
  maxStreams?: number
}

/** The body of an `event: fix`. */
export interface FixEvent {
  id: string
  latitude: number
  longitude: number
  /** km/h, null when the device sent none */
  speed: number | null
  /** degrees clockwise from north, null when the device sent none (the console turns its marker by it) */
  course: number | null
  /** Unix seconds */
  timestamp: number
}

/** The body of an `event: alarm`: a device event as it was committed. */
export interface AlarmEvent {
  /** the device's id */
  id: string
  alarm_code: string
  /** Unix seconds: when the device says it happened */
  timestamp: number
  /** null when the event came without a usable position */
  latitude: number | null
  longitude: number | null
  /** km/h, null when the device sent none */
  speed: number | null
  /** as the events API shows it: a geofence's `name`, an overspeed's `limit` and `speed`… (`{}` when none) */
  context: Record<string, unknown>
}

/** The body of an `event: status`: what a device's status or information packet said of it, once stored. */
export interface StatusEvent {
  /** the device's id */
  id: string
  /** only the attributes this report changed; GET /devices/{id}/status has them all */
  attributes: Record<string, unknown>
  /** when it was stored, ISO 8601 */
  updated_at: string
}

/**
 * Open streams one user may hold at once, through their keys, sessions and share links together
 * (a link spends its creator's budget: links do not multiply it); the next one is 429.
 */
export const MAX_STREAMS_PER_PRINCIPAL = 16
/** Open streams of the whole process: each holds a socket (a file descriptor) and a subscription. */
export const DEFAULT_MAX_STREAMS = 2000
/** Far more devices than any principal reaches; the stream follows all of them. */
const ALL_DEVICES = 1_000_000
/** A client this far behind is cut off; it reconnects and starts from a fresh snapshot. */
const MAX_QUEUED = 1000
/** setTimeout fires at once for a longer delay (links live up to a year): longer waits go in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1

const encoder = new TextEncoder()

export function createLiveStreams({
  positions,
  access,
  live,
  clock,
  linkActive,
  linkExpiresAt,
  onLinkChange,
  heartbeatMs = 15_000,
  maxStreams = DEFAULT_MAX_STREAMS,
}: LiveStreamDeps) {
  const openByHolder = new Map<string, number>()
  let openInProcess = 0
  /** what a stream starts a device with: the fix held in memory, else the newest stored one */
  function newestFix(deviceKey: number): LiveFix | undefined {
    const held = live.get(deviceKey)
    if (held) return held
    const stored = positions.newestValid(deviceKey)
    return stored ? { deviceKey, ...stored } : undefined
  }

  // The pipeline publishes a committed batch in one synchronous loop: the access version is read
  // once for the whole burst and shared by every open stream, not once per fix per stream.
  let versionThisTurn: number | null = null
  function listVersion(): number {
    if (versionThisTurn === null) {
      versionThisTurn = access.listVersion()
      queueMicrotask(() => {
        versionThisTurn = null
      })
    }
    return versionThisTurn
  }

  return {
    /** the event stream for `principal`; it ends when `signal` aborts, or when the share link changes or ends */
    open(principal: Principal, signal: AbortSignal): ReadableStream<Uint8Array> {
      requirePermission(principal, PERMISSION.location)
      const holder = budgetHolder(principal)
      const held = openByHolder.get(holder) ?? 0
      // a closed connection frees its slot at once (Bun aborts the request); the waits are polite guesses
      if (held >= MAX_STREAMS_PER_PRINCIPAL) {
        throw new TooManyRequests(
          principal.kind === 'user'
            ? `At most ${MAX_STREAMS_PER_PRINCIPAL} live streams may be open at once for one user (their keys, sessions and share links together); close one first`
            : `At most ${MAX_STREAMS_PER_PRINCIPAL} live streams may be open at once through the share links and keys of the user who made this link; close one first`,
          heartbeatMs / 1000,
        )
      }
      if (openInProcess >= maxStreams) {
        throw new Unavailable(`The server holds as many live streams as it may (${maxStreams}); try again later`, heartbeatMs / 1000)
      }

      const reachable = () => new Map(access.list(principal, { groups: null, limit: ALL_DEVICES, offset: 0 }).map((d) => [d.key, d.id]))
      // read before the list: a change landing between the two only makes the next fix read it again
      let scopeVersion = access.listVersion()
      let idByKey = reachable()
      const linkId = principal.kind === 'share' ? principal.linkId : null
      // a link gone since the token resolved has ended: the stream closes at once
      const expiresAt = linkId === null ? null : (linkExpiresAt(linkId) ?? 0)
      openByHolder.set(holder, held + 1)
      openInProcess++
      let stop = () => {}

      return new ReadableStream<Uint8Array>(
        {
          start(controller) {
            let open = true
            const send = (text: string) => {
              if (!open) return
              // the expiry timer may fire a little late; nothing goes out at or after expires_at
              if (expiresAt !== null && clock.now() >= expiresAt) return close()
              if ((controller.desiredSize ?? 0) < -MAX_QUEUED) return close()
              controller.enqueue(encoder.encode(text))
            }
            const fixText = (id: string, fix: LiveFix) => {
              const event: FixEvent = { id, latitude: fix.latitude, longitude: fix.longitude, speed: fix.speed, course: fix.course, timestamp: fix.timestamp }
              return `event: fix\ndata: ${JSON.stringify(event)}\n\n`
            }
            const sendEvent = (id: string, fix: LiveFix) => send(fixText(id, fix))
            /** reads the devices again; one that came into reach starts with its newest fix, as at the start */
            const rescope = (version: number, publishedKey: number) => {
              // a link revoked by another process (its creator deleted, by any process) bumps the version too: end now, not at the heartbeat
              if (linkId !== null && !linkActive(linkId)) return close()
              const before = idByKey
              idByKey = reachable()
              scopeVersion = version
              // one chunk, as the snapshot at the start
              let arrived = ''
              for (const [key, id] of idByKey) {
                const newest = before.has(key) || key === publishedKey ? undefined : newestFix(key)
                if (newest) arrived += fixText(id, newest)
              }
              if (arrived) send(arrived)
            }
            /**
             * the id of a device this stream may tell of, after following any change of access; undefined: none.
             * `fixKey`: the device whose fix is about to go (a device just reached then starts with that fix, not its newest).
             */
            const reachedId = (deviceKey: number, fixKey: number): string | undefined => {
              try {
                const version = listVersion()
                if (version !== scopeVersion) rescope(version, fixKey)
                if (!open) return undefined
              } catch {
                // access cannot be checked (database busy): end rather than send on stale access; the client reconnects
                close()
                return undefined
              }
              return idByKey.get(deviceKey)
            }
            const sendFix = (fix: LiveFix) => {
              if (!open) return
              const id = reachedId(fix.deviceKey, fix.deviceKey)
              if (id !== undefined) sendEvent(id, fix)
            }
            const sendAlarm = (alarm: LiveAlarm) => {
              if (!open) return
              const id = reachedId(alarm.deviceKey, -1)
              if (id === undefined) return
              const event: AlarmEvent = {
                id,
                alarm_code: alarm.alarmCode,
                timestamp: alarm.timestamp,
                latitude: alarm.latitude,
                longitude: alarm.longitude,
                speed: alarm.speed,
                context: alarm.context,
              }
              send(`event: alarm\ndata: ${JSON.stringify(event)}\n\n`)
            }
            const sendStatus = (status: LiveStatus) => {
              if (!open) return
              const id = reachedId(status.deviceKey, -1)
              if (id === undefined) return
              const event: StatusEvent = { id, attributes: status.attributes, updated_at: new Date(status.updatedAt).toISOString() }
              send(`event: status\ndata: ${JSON.stringify(event)}\n\n`)
            }

            const unsubscribe = live.subscribe(sendFix)
            // a share link's acl is fixed for its token's life (a patch ends the stream): decided once
            const unsubscribeAlarms = principal.kind === 'share' && !principal.acl.has(PERMISSION.events) ? () => {} : live.subscribeAlarms(sendAlarm)
            // a device's status goes where its fixes go: the location permission, which every stream has
            const unsubscribeStatus = live.subscribeStatus(sendStatus)
            const stopWatchingLink = onLinkChange((changed) => changed === linkId && close())
            const heartbeat = setInterval(() => (linkId !== null && !linkActive(linkId) ? close() : send(': heartbeat\n\n')), heartbeatMs)
            let expiryTimer: ReturnType<typeof setTimeout> | undefined
            // The clock says how long is left; a real timer waits it out (a test's clock does not move by itself).
            const armExpiry = (at: number) => {
              const remainingMs = at - clock.now()
              if (remainingMs <= 0) return close()
              expiryTimer = remainingMs > MAX_TIMER_MS ? setTimeout(() => armExpiry(at), MAX_TIMER_MS) : setTimeout(close, remainingMs)
            }
            const onAbort = () => close()
            signal.addEventListener('abort', onAbort)

            function close() {
              if (!open) return
              open = false
              openInProcess--
              const left = (openByHolder.get(holder) ?? 1) - 1
              if (left > 0) openByHolder.set(holder, left)
              else openByHolder.delete(holder)
              unsubscribe()
              unsubscribeAlarms()
              unsubscribeStatus()
              stopWatchingLink()
              clearInterval(heartbeat)
              clearTimeout(expiryTimer)
              signal.removeEventListener('abort', onAbort)
              try {
                controller.close()
              } catch {
                // already closed by the client going away
              }
            }
            stop = close

            if (expiresAt !== null) armExpiry(expiresAt)
            send('retry: 3000\n\n')
            // the snapshot goes as one chunk: a fleet of more than MAX_QUEUED devices, sent fix by fix, would
            // look like a client that fell behind and be cut off before it had read its first fix
            let snapshot = ''
            for (const [key, id] of idByKey) {
              const fix = newestFix(key)
              if (fix) snapshot += fixText(id, fix)
            }
            if (snapshot) send(snapshot)
            if (signal.aborted) close()
          },
          cancel() {
            stop()
          },
        },
        { highWaterMark: 1 },
      )
    },
  }
}

export type LiveStreams = ReturnType<typeof createLiveStreams>
