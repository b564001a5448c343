/**
 * The route's JSON body, written from columns a chunk of points at a time. A 7-day route at 1 Hz
 * is 46 MB of JSON: built as one value it was an array of objects, the string, and its bytes, all
 * at once, for every request in flight. Here only the columns and one chunk exist, and other
 * requests are served between chunks.
 */
import type { TrackColumns } from '../track'
import type { GapBody, RoutePointBody, StopBody } from './model'

/** ~78 bytes each: chunks of about 320 kB, each 5–20 ms of work */
export const POINTS_PER_CHUNK = 4096

/** Resolves on a later turn of the event loop, after the I/O waiting in this one. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

export interface RouteColumns {
  /** every listed point, speeds filled */
  points: TrackColumns
  stops: StopBody[]
  total_distance: number
  total_duration: number
  /** left out of the body when empty (the spec's four fields, as they were) */
  gaps: GapBody[]
}

/**
 * Points from..to-1 as a JSON array. Objects for one chunk and JSON.stringify: measured 1.7×
 * faster than writing the text by hand (JSC's number formatting inside stringify is quicker).
 */
function pointsJson(points: TrackColumns, from: number, to: number): string {
  const { latitude, longitude, speed, timestamp } = points
  const chunk: RoutePointBody[] = new Array(to - from)
  for (let i = from; i < to; i++) chunk[i - from] = { latitude: latitude[i], longitude: longitude[i], speed: speed[i], timestamp: timestamp[i] }
  return JSON.stringify(chunk)
}

function tail(route: RouteColumns): string {
  return (
    `],"stops":${JSON.stringify(route.stops)},"total_distance":${JSON.stringify(route.total_distance)},` +
    `"total_duration":${JSON.stringify(route.total_duration)}` +
    (route.gaps.length > 0 ? `,"gaps":${JSON.stringify(route.gaps)}}` : '}')
  )
}

/**
 * `{"points":[…],"stops":[…],"total_distance":…,"total_duration":…}` (and `"gaps":[…]` when
 * there are any), byte for byte what
 * JSON.stringify gives for the same object: one string when it is a single chunk (a stream
 * costs a few milliseconds more over HTTP), else a stream, each chunk written when `turn`
 * resolves (turns.ts). `onEnd` runs once, when the body has been read to its end or abandoned
 * (at once for a string).
 */
export function routeBody(route: RouteColumns, onEnd: () => void, turn: () => Promise<void> = nextTurn): string | ReadableStream<Uint8Array> {
  const count = route.points.length
  if (count <= POINTS_PER_CHUNK) {
    onEnd()
    return `{"points":${pointsJson(route.points, 0, count).slice(0, -1)}${tail(route)}`
  }
  const encoder = new TextEncoder()
  let next = 0
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          await turn()
          const end = Math.min(count, next + POINTS_PER_CHUNK)
          // the chunk's array without its brackets, after a comma unless it is the first
          const elements = pointsJson(route.points, next, end).slice(1, -1)
          let text = next === 0 ? `{"points":[${elements}` : `,${elements}`
          next = end
          if (next === count) text += tail(route)
          controller.enqueue(encoder.encode(text))
          if (next === count) {
            controller.close()
            onEnd()
          }
        } catch (error) {
          onEnd()
          controller.error(error)
        }
      },
      cancel() {
        onEnd()
      },
    },
    { highWaterMark: 0 },
  )
}
