/**
 * CSV (RFC 4180): UTF-8 without a byte-order mark, CRLF line ends, a header row of the columns'
 * keys (machines read CSV; people get XLSX), fields quoted only when they hold `"`, `,`, CR or LF.
 * - `time`: local time in the report's zone with its offset, `2026-11-02T08:15:00+01:00`;
 * - `day`: `YYYY-MM-DD`; `location`: two columns, `<key>_latitude` and `<key>_longitude`;
 * - `json`: JSON text; `integer`/`number`: as JavaScript prints them (a dot, no grouping);
 * - null or absent: an empty field;
 * - the totals row (when the kind has one) is last, its first field `total`;
 * - a text field starting with `=`, `+`, `-`, `@`, tab or CR gets a leading `'`, so a spreadsheet
 *   opening the file shows it as text instead of running it as a formula (CSV injection).
 */

import type { ReportColumn, ReportDocument, ReportRow } from '../types'
import { localClock, type LocalClock } from './local-time'
import { rowsOf, textStream } from './stream'

const FORMULA_START = /^[=+\-@\t\r]/
const NEEDS_QUOTES = /[",\r\n]/

export function csvField(text: string): string {
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

function numberText(value: unknown): string {
  return typeof value === 'number' && Number.isFinite(value) ? String(value) : ''
}

export function csvHeader(columns: readonly ReportColumn[]): string[] {
  return columns.flatMap((column) =>
    column.type === 'location' ? [`${column.key}_latitude`, `${column.key}_longitude`] : [column.key],
  )
}

function cells(columns: readonly ReportColumn[], row: ReportRow, clock: LocalClock): string[] {
  const out: string[] = []
  for (const column of columns) {
    const value = row[column.key]
    switch (column.type) {
      case 'location': {
        const pair = Array.isArray(value) ? value : null
        out.push(numberText(pair?.[0]), numberText(pair?.[1]))
        break
      }
      case 'time':
        out.push(typeof value === 'number' && Number.isFinite(value) ? clock.isoLocal(value) : '')
        break
      case 'integer':
      case 'number':
        out.push(numberText(value))
        break
      case 'json':
        out.push(value === null || value === undefined ? '' : JSON.stringify(value))
        break
      case 'day':
      case 'text': {
        const text = value === null || value === undefined ? '' : String(value)
        out.push(FORMULA_START.test(text) ? `'${text}` : text)
        break
      }
    }
  }
  return out
}

const line = (fields: string[]) => `${fields.map(csvField).join(',')}\r\n`

export function csvBody(document: ReportDocument): ReadableStream<Uint8Array> {
  const clock = localClock(document.tz)
  const { columns } = document
  const rows = rowsOf(document.rows)
  return textStream(async function* () {
    yield line(csvHeader(columns))
    for await (const row of rows) yield line(cells(columns, row, clock))
    if (document.totals) {
      const totals = cells(columns, document.totals, clock)
      totals[0] = 'total'
      yield line(totals)
    }
  }, rows)
}
