/**
 * What a report is, between the service that computes it (src/reports/service.ts: the rows of a
 * kind for many devices, by the same track/ analysis as the history API) and the writers that
 * turn it into a file (src/reports/formats/: CSV, XLSX, GPX, KML; JSON is the route's own).
 * contracts/reports.md is the law: its field names are the columns' keys.
 */

export const REPORT_KINDS = ['trips', 'stops', 'summary', 'events', 'route'] as const
export type ReportKind = (typeof REPORT_KINDS)[number]

export const REPORT_FORMATS = ['json', 'csv', 'xlsx', 'gpx', 'kml'] as const
export type ReportFormat = (typeof REPORT_FORMATS)[number]

/**
 * How a column's values are written:
 * - `text`: a string (or null);
 * - `integer`, `number`: a number (or null), in the unit its key names (`_m`, `_s`, `_kmh`);
 * - `time`: Unix seconds (or null), written as the local time in the report's zone with its
 *   offset (CSV: `2026-11-02T08:15:00+01:00`; XLSX: a date cell in local time);
 * - `day`: a local calendar day `YYYY-MM-DD` (summary with `daily=true`);
 * - `location`: `[latitude, longitude]` in degrees (or null);
 * - `json`: any JSON value (event context, a fix's attributes), written as JSON text.
 */
export type ReportCellType = 'text' | 'integer' | 'number' | 'time' | 'day' | 'location' | 'json'

export interface ReportColumn {
  /** the field's JSON name, as contracts/reports.md names it */
  readonly key: string
  readonly type: ReportCellType
  /** the header a person reads in a file (CSV keeps the key: machines read CSV) */
  readonly title: string
}

/** One row: values by column key, as ReportCellType says. */
export type ReportRow = Readonly<Record<string, unknown>>

export interface ReportDocument {
  readonly kind: ReportKind
  readonly columns: readonly ReportColumn[]
  /**
   * in order (device alias, then time); may be produced lazily, as they are read (route: up to
   * 100,000 rows; trips, stops and summary: device by device). Lazy rows hold what reading them
   * takes (trips, stops, summary: one of the user's history slots) until they have been read to
   * the end or closed (`return` on their iterator): a writer that stops early closes them.
   */
  readonly rows: Iterable<ReportRow> | AsyncIterable<ReportRow>
  /**
   * the totals row (same keys; null where a total means nothing), or null when the kind has none;
   * of lazy rows, added up as they are produced: read it after the rows (as a totals row is last)
   */
  readonly totals: ReportRow | null
  /** the period asked, Unix seconds */
  readonly period: { readonly from: number; readonly to: number }
  /** the IANA zone of local times and day boundaries */
  readonly tz: string
  /** Unix seconds */
  readonly generatedAt: number
}

/** A report as a file to download or attach. */
export interface ReportFile {
  /** e.g. `trips-2026-11-01-2026-11-07.xlsx` (local days of the period in its zone) */
  readonly filename: string
  readonly contentType: string
  readonly body: ReadableStream<Uint8Array>
}
