/**
 * A report as a file: `renderReport(document, format)` picks the writer, names the file and gives
 * its content type; the body is a stream produced as the reader pulls (rows are pulled from the
 * document as they are needed). JSON is the route's own answer, not a file written here.
 * The decisions of each format are in its module and in the README's "Report files".
 */

import { Invalid } from '../../errors'
import type { ReportDocument, ReportFile, ReportKind } from '../types'
import { csvBody } from './csv'
import { gpxBody } from './gpx'
import { kmlBody } from './kml'
import { localClock } from './local-time'
import { xlsxBody } from './xlsx'

export const FILE_FORMATS = ['csv', 'xlsx', 'gpx', 'kml'] as const
export type FileFormat = (typeof FILE_FORMATS)[number]

const WRITERS: Record<FileFormat, { extension: string; contentType: string; body(document: ReportDocument): ReadableStream<Uint8Array> }> = {
  csv: { extension: 'csv', contentType: 'text/csv; charset=utf-8', body: csvBody },
  xlsx: {
    extension: 'xlsx',
    contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    body: xlsxBody,
  },
  gpx: { extension: 'gpx', contentType: 'application/gpx+xml', body: gpxBody },
  kml: { extension: 'kml', contentType: 'application/vnd.google-earth.kml+xml', body: kmlBody },
}

/** The file formats a kind can be written in (GPX and KML are tracks: routes only). */
export function formatsOf(kind: ReportKind): readonly FileFormat[] {
  return kind === 'route' ? FILE_FORMATS : ['csv', 'xlsx']
}

/**
 * `<kind>-<first local day>-<last local day>.<ext>`: the local days (in the report's zone) of
 * `from` and of the last second before `to`, so a week asked as [Monday 00:00, next Monday
 * 00:00) is named Monday to Sunday.
 */
export function reportFilename(document: ReportDocument, format: FileFormat): string {
  const clock = localClock(document.tz)
  const { from, to } = document.period
  const last = to > from ? to - 1 : from
  return `${document.kind}-${clock.localDay(from)}-${clock.localDay(last)}.${WRITERS[format].extension}`
}

/** Throws `Invalid` (400) for a format the kind has no file for (`gpx`/`kml` of trips, …). */
export function renderReport(document: ReportDocument, format: FileFormat): ReportFile {
  const allowed = formatsOf(document.kind)
  if (!allowed.includes(format)) {
    const why = (FILE_FORMATS as readonly string[]).includes(format) ? `; ${format} is for routes only` : ''
    throw Invalid.field('/format', `a ${document.kind} report is written as json, ${allowed.join(', ')}${why}`)
  }
  const writer = WRITERS[format]
  return { filename: reportFilename(document, format), contentType: writer.contentType, body: writer.body(document) }
}
