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
 *
 * The access reads answer with promises, and the pipeline publishes a committed batch in one
 * synchronous loop: so what a burst publishes is held by each stream, in order, and sent once the
 * access version read after it (one read a burst, shared by every stream) has answered and, when
 * it moved, the stream's devices have been read again. Nothing is sent on a scope older than the
 * burst: a fix never goes to a stream that lost its device before the fix was published.
 */
import type { Clock } from '../clock'
import type { DeviceAccess } from '../devices/access'
import { TooManyRequests, Unavailable } from '../errors'
import type { LiveAlarm, LiveFix, LivePositions, LiveStatus } from '../ingest/live'
import { budgetHolder, type Principal } from '../principal'
import { PERMISSION, requirePermission } from '../share/permissions'
import type { PositionReads } from '../store/positions'

export interface LiveStreamDeps {
  /**
   * the newest stored fix, what a stream starts a device with when none is held in memory: read
   * before the stream's first frames (and before a device that came into reach is told of)
   */
  positions: Pick<PositionReads, 'newestValid'>
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

/** Something the pipeline published, as a stream holds it until it may be sent. */
type Published = { kind: 'fix'; fix: LiveFix } | { kind: 'alarm'; alarm: LiveAlarm } | { kind: 'status'; status: LiveStatus }

/** What one synchronous burst of the pipeline published, held by a stream until the access version read after it answers. */
interface Burst {
  versionAfter: Promise<number>
  published: Published[]
}

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
  /**
   * The newest stored fix of each of these devices that has none held in memory: read ahead, so
   * that what a stream starts a device with (`newestFix`) is decided synchronously.
   */
  async function storedNewest(deviceKeys: Iterable<number>): Promise<Map<number, LiveFix>> {
    const unheld = [...deviceKeys].filter((key) => live.get(key) === undefined)
    const stored = await Promise.all(unheld.map((key) => positions.newestValid(key)))
    const found = new Map<number, LiveFix>()
    unheld.forEach((key, i) => {
      const fix = stored[i]
      if (fix) found.set(key, { deviceKey: key, ...fix })
    })
    return found
  }
  /** what a stream starts a device with: the fix held in memory, else the newest stored one (read ahead) */
  function newestFix(deviceKey: number, stored: ReadonlyMap<number, LiveFix>): LiveFix | undefined {
    return live.get(deviceKey) ?? stored.get(deviceKey)
  }

  // The pipeline publishes a committed batch in one synchronous loop: the access version is read
  // once for the whole burst, after its first publication, and shared by every open stream.
  let versionThisTurn: Promise<number> | null = null
  function versionAfterThisTurn(): Promise<number> {
    if (versionThisTurn === null) {
      const read = access.listVersion()
      // each stream that holds a burst awaits it; one that closed meanwhile must not leave it unhandled
      read.catch(() => {})
      versionThisTurn = read
      queueMicrotask(() => {
        versionThisTurn = null
      })
    }
    return versionThisTurn
  }

  return {
    /** the event stream for `principal`; it ends when `signal` aborts, or when the share link changes or ends */
    async open(principal: Principal, signal: AbortSignal): Promise<ReadableStream<Uint8Array>> {
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

      // the slot is taken before the reads, so that streams opening together count each other
      openByHolder.set(holder, held + 1)
      openInProcess++
      const release = () => {
        openInProcess--
        const left = (openByHolder.get(holder) ?? 1) - 1
        if (left > 0) openByHolder.set(holder, left)
        else openByHolder.delete(holder)
      }
      const reachable = async () => new Map((await access.list(principal, { groups: null, limit: ALL_DEVICES, offset: 0 })).map((d) => [d.key, d.id]))
      let scopeVersion: number
      let idByKey: Map<number, string>
      let storedAtStart: Map<number, LiveFix>
      try {
        // read before the list: a change landing between the two only makes the next burst read it again
        scopeVersion = await access.listVersion()
        idByKey = await reachable()
        storedAtStart = await storedNewest(idByKey.keys())
      } catch (error) {
        release()
        throw error
      }
      const linkId = principal.kind === 'share' ? principal.linkId : null
      // a link gone since the token resolved has ended: the stream closes at once
      const expiresAt = linkId === null ? null : (linkExpiresAt(linkId) ?? 0)
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
            /**
             * reads the devices again; one that came into reach starts with its newest fix, as at the start,
             * unless a fix of it is about to go (`publishedKeys`): then it starts with that one
             */
            const rescope = async (version: number, publishedKeys: ReadonlySet<number>) => {
              // a link revoked by another process (its creator deleted, by any process) bumps the version too: end now, not at the heartbeat
              if (linkId !== null && !linkActive(linkId)) return close()
              const before = idByKey
              const after = await reachable()
              const arrivedKeys = [...after.keys()].filter((key) => !before.has(key) && !publishedKeys.has(key))
              const stored = await storedNewest(arrivedKeys)
              if (!open) return
              idByKey = after
              scopeVersion = version
              // one chunk, as the snapshot at the start
              let arrived = ''
              for (const key of arrivedKeys) {
                const newest = newestFix(key, stored)
                if (newest) arrived += fixText(after.get(key)!, newest)
              }
              if (arrived) send(arrived)
            }

            const bursts: Burst[] = []
            let sending = false
            const hold = (published: Published) => {
              if (!open) return
              const versionAfter = versionAfterThisTurn()
              let burst = bursts[bursts.length - 1]
              if (burst === undefined || burst.versionAfter !== versionAfter) bursts.push((burst = { versionAfter, published: [] }))
              burst.published.push(published)
              if (!sending) void sendHeld()
            }
            /** sends the held bursts in order, each on the devices reached as of its version (read again when it moved) */
            async function sendHeld() {
              sending = true
              try {
                while (open && bursts.length > 0) {
                  const burst = bursts[0]!
                  try {
                    const version = await burst.versionAfter
                    if (version !== scopeVersion) {
                      const publishedKeys = new Set<number>()
                      for (const item of burst.published) if (item.kind === 'fix') publishedKeys.add(item.fix.deviceKey)
                      await rescope(version, publishedKeys)
                    }
                  } catch {
                    // access cannot be checked (database busy): end rather than send on stale access; the client reconnects
                    return close()
                  }
                  bursts.shift()
                  for (const item of burst.published) {
                    if (!open) return
                    sendPublished(item)
                  }
                }
              } finally {
                sending = false
              }
            }
            const sendPublished = (item: Published) => {
              if (item.kind === 'fix') {
                const id = idByKey.get(item.fix.deviceKey)
                if (id !== undefined) sendEvent(id, item.fix)
              } else if (item.kind === 'alarm') {
                const { alarm } = item
                const id = idByKey.get(alarm.deviceKey)
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
              } else {
                const { status } = item
                const id = idByKey.get(status.deviceKey)
                if (id === undefined) return
                const event: StatusEvent = { id, attributes: status.attributes, updated_at: new Date(status.updatedAt).toISOString() }
                send(`event: status\ndata: ${JSON.stringify(event)}\n\n`)
              }
            }
            const sendFix = (fix: LiveFix) => hold({ kind: 'fix', fix })
            const sendAlarm = (alarm: LiveAlarm) => hold({ kind: 'alarm', alarm })
            const sendStatus = (status: LiveStatus) => hold({ kind: 'status', status })

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
              bursts.length = 0
              release()
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
              const fix = newestFix(key, storedAtStart)
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
