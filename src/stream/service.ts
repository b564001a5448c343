/**
 * Live positions as Server-Sent Events: the fixes of the devices a principal reaches (a user:
 * through their groups; a share link: its own devices, with the location permission), as they
 * are committed. A stream starts with the newest fix held for each device, so a page is current
 * at once, and sends a comment as heartbeat so that proxies and idle timers keep it open.
 */
import type { DeviceAccess } from '../devices/access'
import type { LiveFix, LivePositions } from '../ingest/live'
import type { Principal } from '../principal'
import { PERMISSION, requirePermission } from '../share/permissions'

export interface LiveStreamDeps {
  access: DeviceAccess
  live: LivePositions
  /** whether a share link is still usable; checked at each heartbeat, for expiry */
  linkActive(linkId: string): boolean
  /** calls back with the id of each share link that is patched or revoked */
  onLinkChange(listener: (linkId: string) => void): () => void
  heartbeatMs?: number
}

/** The body of an `event: fix`. */
export interface FixEvent {
  id: string
  latitude: number
  longitude: number
  /** km/h, null when the device sent none */
  speed: number | null
  /** Unix seconds */
  timestamp: number
}

/** Far more devices than any principal reaches; the stream follows all of them. */
const ALL_DEVICES = 1_000_000
/** A client this far behind is cut off; it reconnects and starts from a fresh snapshot. */
const MAX_QUEUED = 1000

const encoder = new TextEncoder()

export function createLiveStreams({ access, live, linkActive, onLinkChange, heartbeatMs = 15_000 }: LiveStreamDeps) {
  return {
    /** the event stream for `principal`; it ends when `signal` aborts, or when the share link changes or ends */
    open(principal: Principal, signal: AbortSignal): ReadableStream<Uint8Array> {
      requirePermission(principal, PERMISSION.location)
      const idByKey = new Map(access.list(principal, { groups: null, limit: ALL_DEVICES, offset: 0 }).map((d) => [d.key, d.id]))
      const linkId = principal.kind === 'share' ? principal.linkId : null
      let stop = () => {}

      return new ReadableStream<Uint8Array>(
        {
          start(controller) {
            let open = true
            const send = (text: string) => {
              if (!open) return
              if ((controller.desiredSize ?? 0) < -MAX_QUEUED) return close()
              controller.enqueue(encoder.encode(text))
            }
            const sendFix = (fix: LiveFix) => {
              const id = idByKey.get(fix.deviceKey)
              if (id === undefined) return
              const event: FixEvent = { id, latitude: fix.latitude, longitude: fix.longitude, speed: fix.speed, timestamp: fix.timestamp }
              send(`event: fix\ndata: ${JSON.stringify(event)}\n\n`)
            }

            const unsubscribe = live.subscribe(sendFix)
            const stopWatchingLink = onLinkChange((changed) => changed === linkId && close())
            const heartbeat = setInterval(() => (linkId !== null && !linkActive(linkId) ? close() : send(': heartbeat\n\n')), heartbeatMs)
            const onAbort = () => close()
            signal.addEventListener('abort', onAbort)

            function close() {
              if (!open) return
              open = false
              unsubscribe()
              stopWatchingLink()
              clearInterval(heartbeat)
              signal.removeEventListener('abort', onAbort)
              try {
                controller.close()
              } catch {
                // already closed by the client going away
              }
            }
            stop = close

            send('retry: 3000\n\n')
            for (const key of idByKey.keys()) {
              const fix = live.get(key)
              if (fix) sendFix(fix)
            }
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
