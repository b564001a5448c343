/**
 * KML 2.2 of a route: one `Placemark` per device (named by its alias, the device id in its
 * `description`) holding a `LineString` of `lon,lat[,alt]` tuples in time order (a device with
 * a single fix gets a `Point`). LineString rather than gx:Track: every reader draws it, and the
 * times are in the GPX and CSV files. Written as the rows arrive (rows come ordered by device).
 */

import type { ReportDocument } from '../types'
import { rowsOf, textStream } from './stream'
import { type RoutePoint, routePoint, xmlText } from './xml'

const tuple = (point: RoutePoint) =>
  point.altitudeM === null
    ? `${point.longitude},${point.latitude}`
    : `${point.longitude},${point.latitude},${point.altitudeM}`

export function kmlBody(document: ReportDocument): ReadableStream<Uint8Array> {
  return textStream(async function* () {
    yield '<?xml version="1.0" encoding="UTF-8"?>\n' +
      '<kml xmlns="http://www.opengis.net/kml/2.2"><Document>\n' +
      `<name>${xmlText(document.kind)}</name>\n`
    // The first fix of a device waits for the second: one fix is a Point, more a LineString.
    let first: RoutePoint | null = null
    let open = false
    const placemark = (point: RoutePoint) =>
      `<Placemark><name>${xmlText(point.name)}</name><description>${xmlText(point.device)}</description>`
    const close = () => {
      if (open) return '\n</coordinates></LineString></Placemark>\n'
      if (first) return `${placemark(first)}<Point><coordinates>${tuple(first)}</coordinates></Point></Placemark>\n`
      return ''
    }
    for await (const row of rowsOf(document.rows)) {
      const point = routePoint(row)
      if (!point) continue
      if (!first || point.device !== first.device) {
        yield close()
        first = point
        open = false
        continue
      }
      if (!open) {
        open = true
        yield `${placemark(first)}<LineString><tessellate>1</tessellate><coordinates>\n${tuple(first)}`
      }
      yield ` ${tuple(point)}`
    }
    yield close()
    yield '</Document></kml>\n'
  })
}
