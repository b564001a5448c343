/**
 * GET /reports/{kind}: parses the query, asks the report service for the document, and writes it
 * in the format chosen (chooseFormat, the one place where a format is picked). JSON is this
 * module's own, streamed a batch of rows at a time; the files (CSV, XLSX, GPX, KML) are written by
 * src/reports/formats/.
 */
import { Elysia, t } from 'elysia'
import { Invalid } from '../errors'
import { MIN_GAP_THRESHOLD_SECONDS, RangeQuery } from '../history/model'
import type { authPlugin } from '../http/auth'
import { responses } from '../http/model'
import { DEFAULT_GAP_THRESHOLD_SECONDS, DEFAULT_STOP_THRESHOLD_SECONDS } from '../track'
import { formatsOf, renderReport } from './formats'
import { MAX_REPORT_DEVICES, MAX_ROUTE_ROWS, REPORT_COLUMNS, type ReportService } from './service'
import { REPORT_FORMATS, REPORT_KINDS, type ReportDocument, type ReportFormat, type ReportKind, type ReportRow } from './types'

/** The most ids one `devices`, `groups` or `codes` list may name. */
const MAX_LISTED = MAX_REPORT_DEVICES

const idList = (name: string, what: string) =>
  t.Optional(t.String({ title: name, maxLength: MAX_LISTED * 40, description: `${what}, comma-separated (at most ${MAX_LISTED})`, examples: ['0f000000-0000-4000-8000-000000000001'] }))

export const ReportQuery = t.Object(
  {
    devices: idList('devices', 'Device ids'),
    groups: idList('groups', 'Group ids: their devices you reach'),
    from: RangeQuery.properties.from,
    to: RangeQuery.properties.to,
    tz: t.Optional(t.String({ title: 'tz', maxLength: 200, description: 'An IANA time zone (default: your own, PATCH /me; else UTC): day boundaries (summary with daily) and the zone of local times in files', examples: ['Europe/Dublin'] })),
    stop_threshold_time: t.Optional(
      t.Integer({ title: 'stop_threshold_time', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: `trips, stops, summary: the shortest stop in seconds (default ${DEFAULT_STOP_THRESHOLD_SECONDS}), as the history API takes it` }),
    ),
    daily: t.Optional(t.Union([t.Literal('true'), t.Literal('false')], { title: 'daily', description: 'summary: a row per device and local day (in `tz`) instead of one per device' })),
    codes: t.Optional(t.String({ title: 'codes', maxLength: 4000, description: 'events: only these codes, comma-separated (e.g. `sos,geofence_enter`)' })),
    format: t.Optional(t.String({ title: 'format', maxLength: 20, description: `One of ${REPORT_FORMATS.join(', ')} (default json, or what Accept asks); gpx and kml for route only` })),
  },
  { additionalProperties: true },
)

export const ReportAnswer = t.Object({
  rows: t.Array(t.Record(t.String(), t.Unknown()), { description: 'One object a row, its keys the kind\'s fields; ordered by device alias, then time' }),
  totals: t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: 'The same keys, null where a total means nothing; null for events and route' }),
  generated_at: t.Integer({ description: 'Unix seconds' }),
  period: t.Object({ from: t.Integer(), to: t.Integer() }, { description: 'The period asked, Unix seconds' }),
  tz: t.String({ description: 'The IANA zone of the report' }),
})

const KindParams = t.Object({ kind: t.Union(REPORT_KINDS.map((kind) => t.Literal(kind)), { description: REPORT_KINDS.join(', ') }) })

/** Accept media types of the file formats (format= wins over Accept). */
const ACCEPTED: Record<string, ReportFormat> = {
  'application/json': 'json',
  'text/csv': 'csv',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'application/gpx+xml': 'gpx',
  'application/vnd.google-earth.kml+xml': 'kml',
}

/**
 * The format of the answer: `format=` if given, else the first media type of Accept that names
 * one, else JSON. The one place a format is chosen and refused, before any row is read: a format
 * the kind is not written in (GPX and KML are for routes) is 400.
 */
function chooseFormat(kind: ReportKind, format: string | undefined, accept: string | null): ReportFormat {
  let chosen: string = 'json'
  if (format !== undefined) chosen = format.toLowerCase()
  else if (accept) {
    for (const type of accept.split(',')) {
      const known = ACCEPTED[type.split(';')[0]!.trim().toLowerCase()]
      if (known) {
        chosen = known
        break
      }
    }
  }
  if (chosen === 'json') return 'json'
  const files: readonly string[] = formatsOf(kind)
  if (!files.includes(chosen)) {
    const known = (REPORT_FORMATS as readonly string[]).includes(chosen)
    throw Invalid.field('/format', known ? `a ${kind} report is written as json, ${files.join(', ')}; ${chosen} is for routes only` : `must be one of json, ${files.join(', ')}; got ${JSON.stringify(format ?? chosen)}`)
  }
  return chosen as ReportFormat
}

/** A report as the file it asks for: downloaded (Content-Disposition: attachment) under its name. */
function fileAnswer(document: ReportDocument, format: Exclude<ReportFormat, 'json'>): Response {
  const file = renderReport(document, format)
  return new Response(file.body, {
    headers: { 'content-type': file.contentType, 'content-disposition': `attachment; filename="${file.filename}"` },
  })
}

const list = (value: string | undefined): string[] => (value === undefined ? [] : value.split(',').map((part) => part.trim()).filter((part) => part.length > 0))

function listOf(value: string | undefined, path: string): string[] {
  const items = list(value)
  if (items.length > MAX_LISTED) throw Invalid.field(path, `names at most ${MAX_LISTED}; got ${items.length}`)
  return items
}

/** `],"totals":…,"generated_at":…,"period":…,"tz":…}`: the totals read once the rows have been. */
const jsonTail = (document: ReportDocument) =>
  `],"totals":${JSON.stringify(document.totals)},"generated_at":${document.generatedAt},"period":${JSON.stringify(document.period)},"tz":${JSON.stringify(document.tz)}}`

/**
 * `{ rows, totals, generated_at, period, tz }` with every row produced before the answer: trips,
 * stops and summaries (a row a trip, stop or device, device by device). Each row is written as it
 * comes and only the text is kept, never the rows (a week's trips of 100 devices: 5.6 MB of text).
 */
async function jsonWritten(document: ReportDocument): Promise<Response> {
  const parts: string[] = ['{"rows":[']
  let batch = ''
  let first = true
  for await (const row of document.rows) {
    batch += (first ? '' : ',') + JSON.stringify(row)
    first = false
    if (batch.length >= 64 * 1024) {
      parts.push(batch)
      batch = ''
    }
  }
  parts.push(batch + jsonTail(document))
  return new Response(new Blob(parts), { headers: { 'content-type': 'application/json;charset=utf-8' } })
}

/** `{ rows, totals, generated_at, period, tz }`, written a batch of rows at a time as they are read (a route may hold 100,000). */
function jsonAnswer(document: ReportDocument): Response {
  const encoder = new TextEncoder()
  const source = document.rows
  const rows: Iterator<ReportRow> | AsyncIterator<ReportRow> = Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]()
  let first = true
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('{"rows":['))
    },
    async pull(controller) {
      let batch = ''
      for (let n = 0; n < 1000; n++) {
        const next = await rows.next()
        if (next.done) {
          controller.enqueue(encoder.encode(batch + jsonTail(document)))
          controller.close()
          return
        }
        batch += (first ? '' : ',') + JSON.stringify(next.value)
        first = false
      }
      controller.enqueue(encoder.encode(batch))
    },
    async cancel() {
      await rows.return?.()
    },
  })
  return new Response(body, { headers: { 'content-type': 'application/json;charset=utf-8' } })
}

const fieldsOf = (kind: ReportKind) => REPORT_COLUMNS[kind].map((c) => `\`${c.key}\``).join(', ')

export function reportRoutes(auth: ReturnType<typeof authPlugin>, reports: ReportService) {
  return new Elysia({ name: 'reports' }).use(auth).get(
    '/reports/:kind',
    async ({ principal, params, query, request }) => {
      // the format is checked first: a format the kind is not written in costs nothing
      const format = chooseFormat(params.kind as ReportKind, query.format, request.headers.get('accept'))
      const document = await reports.report(principal, {
        kind: params.kind as ReportKind,
        devices: listOf(query.devices, '/devices'),
        groups: listOf(query.groups, '/groups'),
        from: query.from,
        to: query.to,
        tz: query.tz,
        stopThresholdSeconds: query.stop_threshold_time,
        daily: query.daily === 'true',
        codes: listOf(query.codes, '/codes'),
      }, request.signal)
      if (format !== 'json') return fileAnswer(document, format)
      // a route's JSON is written as its fixes are read; the other kinds' rows are all produced
      // first, so that whatever stops them (a wait for the history memory budget that runs out:
      // 503) is the answer's status rather than a cut body, and no history slot is held by an
      // answer its client leaves unread
      return document.kind === 'route' ? jsonAnswer(document) : await jsonWritten(document)
    },
    {
      auth: 'user',
      params: KindParams,
      query: ReportQuery,
      detail: {
        tags: ['Reports'],
        summary: 'A report over many devices: trips, stops, summary, events or route',
        description:
          'For users (an API key or session); a share token gets 403. `devices` and `groups` (comma-separated ids) choose the devices: those named and ' +
          'those of the groups named that you reach; a device or group you cannot reach (or that does not exist) is 404 naming it, as everywhere. ' +
          `Neither: every device you reach (devices in state \`unlink\` are left out, as in GET /devices). At most ${MAX_REPORT_DEVICES} devices, else 400. ` +
          '`from` and `to` are Unix seconds, both inclusive, `from` ≤ `to`, at most 31 days apart on the clocks of `tz` (a month in which summer time ends is one report, though an hour longer in seconds), else 400. `tz` is an IANA zone (else 400 naming `/tz`; ' +
          'default your own `timezone`, set with PATCH /me, else UTC); it decides the local days of `summary` with `daily=true`. ' +
          'Rows are ordered by device alias (then id), then time; times are Unix seconds, locations `[latitude, longitude]`. ' +
          `\`trips\` (${fieldsOf('trips')}) and \`stops\` (${fieldsOf('stops')}) are the history API's travels and stops, computed by the same reader and ` +
          `analysis (\`stop_threshold_time\` as there; gaps at the history API's default ${DEFAULT_GAP_THRESHOLD_SECONDS} s, at least ${MIN_GAP_THRESHOLD_SECONDS}), ` +
          'so distances, durations and counts equal GET /devices/{id}/history/travels and /route for the same device and period; addresses come from the same geocoder. ' +
          `\`summary\` (${fieldsOf('summary')}; \`day\` after \`alias\` with \`daily=true\`): distance_m is the route's total_distance, driving_s the travels' total_duration, ` +
          'stopped_s the stops\' durations, events the events stored in the window; with `daily=true` each local day is analysed as its own window, so a trip across midnight counts in both days. ' +
          'From the fixes\' attributes, read for these two kinds only: a stop\'s `engine_on_s` is the seconds of the stop during which the last boolean `ignition` reported ' +
          '(by any fix of the window) said on, time before the window\'s first reading not counted, null when the device reported none in the window; the summary\'s ' +
          '`odometer_start_m`/`odometer_end_m` are the first and last numeric `odometer` attribute in the window (metres, as the decoders store it), null when none (null in totals). ' +
          `\`events\` (${fieldsOf('events')}): \`codes\` keeps those codes; addresses are the offline "City, CC", as GET /events. ` +
          `\`route\` (${fieldsOf('route')}): every stored fix that may be a location (not those the device itself called invalid), at most ${MAX_ROUTE_ROWS.toLocaleString('en')} rows, ` +
          'else 400 with the count. `totals` (same keys, null where a total means nothing) for trips, stops and summary; null for events and route. ' +
          'Trips, stops and summaries are read as one of your history requests: the report takes one of your slots (2 in flight with route and travels, else 429) ' +
          'until its rows have been written (a file: until it has been downloaded, or the download cancelled), and each device\'s window its share of ' +
          'HISTORY_MEMORY_MB (a wait, then 503) while it is analysed; files are written device by device as they are downloaded. ' +
          '`format` (or Accept: text/csv, the XLSX type, application/gpx+xml, application/vnd.google-earth.kml+xml) chooses a file instead of JSON: csv or xlsx for every kind, ' +
          'gpx and kml for route only (else 400 naming `/format`), as an attachment named `<kind>-<first day>-<last day>.<ext>` in the report\'s zone, streamed ' +
          '(README, Report files: local times with their offset in CSV, date cells in local time in XLSX, a totals row last).',
        responses: responses({ 200: { schema: ReportAnswer, description: 'The report' } }, 400, 401, 403, 404, 429, 503),
      },
    },
  )
}
