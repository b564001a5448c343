/**
 * GPX 1.1 of a route: one `trk` per device (named by its alias, the device id in `src`), one
 * `trkseg` of its fixes in time order: `trkpt lat lon`, `ele` (metres) when known, `time` in
 * UTC, `sat` when known. Rows come ordered by device, so each track is written as its rows
 * arrive. Speed and course have no GPX 1.1 element and are left out.
 */

import type { ReportDocument } from '../types'
import { isoUtc } from './local-time'
import { rowsOf, textStream } from './stream'
import { routePoint, xmlText } from './xml'

export function gpxBody(document: ReportDocument): ReadableStream<Uint8Array> {
  return textStream(async function* () {
    yield '<?xml version="1.0" encoding="UTF-8"?>\n' +
      '<gpx version="1.1" creator="fleet-tracker" xmlns="http://www.topografix.com/GPX/1/1" ' +
      'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ' +
      'xsi:schemaLocation="http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd">\n' +
      `<metadata><time>${isoUtc(document.generatedAt)}</time></metadata>\n`
    let device: string | null = null
    for await (const row of rowsOf(document.rows)) {
      const point = routePoint(row)
      if (!point) continue
      if (point.device !== device) {
        if (device !== null) yield '</trkseg></trk>\n'
        device = point.device
        yield `<trk><name>${xmlText(point.name)}</name><src>${xmlText(point.device)}</src><trkseg>\n`
      }
      let text = `<trkpt lat="${point.latitude}" lon="${point.longitude}">`
      if (point.altitudeM !== null) text += `<ele>${point.altitudeM}</ele>`
      if (point.timestamp !== null) text += `<time>${isoUtc(point.timestamp)}</time>`
      if (point.satellites !== null && Number.isInteger(point.satellites) && point.satellites >= 0) {
        text += `<sat>${point.satellites}</sat>`
      }
      yield `${text}</trkpt>\n`
    }
    if (device !== null) yield '</trkseg></trk>\n'
    yield '</gpx>\n'
  })
}
