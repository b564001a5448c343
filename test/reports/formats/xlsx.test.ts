import { describe, expect, test } from 'bun:test'
import ExcelJS from 'exceljs'
import { renderReport } from '../../../src/reports/formats'
import { asyncRows, bytesOf, column, document, utc } from './support'

async function workbookOf(body: ReadableStream<Uint8Array>): Promise<ExcelJS.Workbook> {
  const workbook = new ExcelJS.Workbook()
  await workbook.xlsx.load(Buffer.from(await bytesOf(body)) as unknown as ArrayBuffer)
  return workbook
}

// A spreadsheet has no zones: a date cell holds the wall time, which exceljs reads back as that time in UTC.
const wall = (year: number, month: number, day: number, hour = 0, minute = 0) => new Date(Date.UTC(year, month - 1, day, hour, minute))

describe('XLSX report files', () => {
  const trips = document({
    kind: 'trips',
    tz: 'Europe/Paris',
    columns: [
      column('device', 'text', 'Device'),
      column('alias', 'text', 'Vehicle'),
      column('start', 'time', 'Start'),
      column('end', 'time', 'End'),
      column('duration_s', 'integer', 'Duration (s)'),
      column('distance_m', 'number', 'Distance (m)'),
      column('start_address', 'text', 'From'),
      column('start_location', 'location', 'Start location'),
    ],
    // async, as the service may give them; across the end of summer time (25 October, 03:00 CEST)
    rows: asyncRows([
      { device: 'd1', alias: 'Van', start: utc(2026, 10, 25, 0, 30), end: utc(2026, 10, 25, 1, 30), duration_s: 3600, distance_m: 1234.5, start_address: '=1+1', start_location: [53.3498, -6.2603] },
      { device: 'd2', alias: 'Bus', start: utc(2026, 11, 2, 7, 15), end: null, duration_s: 60, distance_m: 0.25, start_address: null, start_location: null },
    ]),
    totals: { device: null, alias: null, start: null, end: null, duration_s: 3660, distance_m: 1234.75, start_address: null, start_location: null },
  })

  test('one sheet named by the kind, a frozen bold header of titles, typed cells in local time, a totals row', async () => {
    const file = renderReport(trips, 'xlsx')
    expect(file.contentType).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet')
    const workbook = await workbookOf(file.body)
    expect(workbook.worksheets.map((sheet) => sheet.name)).toEqual(['trips'])
    const sheet = workbook.getWorksheet('trips')!
    expect(sheet.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 })
    expect(sheet.getRow(1).values).toEqual([
      undefined, // exceljs's rows are 1-based
      'Device', 'Vehicle', 'Start', 'End', 'Duration (s)', 'Distance (m)', 'From', 'Start location latitude', 'Start location longitude',
    ])
    expect(sheet.getCell('A1').font?.bold).toBe(true)
    expect(sheet.rowCount).toBe(4)

    const first = sheet.getRow(2)
    expect(first.getCell(1).value).toBe('d1')
    expect(first.getCell(3).type).toBe(ExcelJS.ValueType.Date)
    expect(first.getCell(3).value).toEqual(wall(2026, 10, 25, 2, 30)) // 02:30 CEST
    expect(first.getCell(3).numFmt).toBe('yyyy-mm-dd hh:mm:ss')
    expect(first.getCell(4).value).toEqual(wall(2026, 10, 25, 2, 30)) // 02:30 CET, an hour later
    expect(first.getCell(5).type).toBe(ExcelJS.ValueType.Number)
    expect(first.getCell(5).value).toBe(3600)
    expect(first.getCell(6).value).toBe(1234.5)
    // a string stays a string: never a formula
    expect(first.getCell(7).type).toBe(ExcelJS.ValueType.String)
    expect(first.getCell(7).value).toBe('=1+1')
    expect([first.getCell(8).value, first.getCell(9).value]).toEqual([53.3498, -6.2603])
    expect(first.getCell(8).type).toBe(ExcelJS.ValueType.Number)

    const second = sheet.getRow(3)
    expect(second.getCell(3).value).toEqual(wall(2026, 11, 2, 8, 15)) // CET
    expect(second.getCell(4).type).toBe(ExcelJS.ValueType.Null)
    expect(second.getCell(6).value).toBe(0.25)
    expect(second.getCell(8).type).toBe(ExcelJS.ValueType.Null)

    const totals = sheet.getRow(4)
    expect(totals.getCell(1).value).toBe('Total')
    expect(totals.getCell(1).font?.bold).toBe(true)
    expect(totals.getCell(5).value).toBe(3660)
    expect(totals.getCell(6).value).toBe(1234.75)
    expect(totals.getCell(3).type).toBe(ExcelJS.ValueType.Null)
  })

  test('days are date cells, JSON is text, long text cut at Excel\'s limit, no totals row when the kind has none', async () => {
    const summary = document({
      kind: 'summary',
      tz: 'UTC',
      columns: [column('device', 'text', 'Device'), column('day', 'day', 'Day'), column('context', 'json', 'Context')],
      rows: [
        { device: 'd1', day: '2026-11-02', context: { a: [1, 'b'] } },
        { device: `${'x'.repeat(32_766)}😀tail`, day: null, context: null },
      ],
    })
    const sheet = (await workbookOf(renderReport(summary, 'xlsx').body)).getWorksheet('summary')!
    expect(sheet.rowCount).toBe(3)
    expect(sheet.getCell('B2').type).toBe(ExcelJS.ValueType.Date)
    expect(sheet.getCell('B2').value).toEqual(wall(2026, 11, 2))
    expect(sheet.getCell('B2').numFmt).toBe('yyyy-mm-dd')
    expect(sheet.getCell('C2').value).toBe('{"a":[1,"b"]}')
    // Excel's limit is 32,767 characters a cell: longer text is cut there, never inside a surrogate pair
    expect(sheet.getCell('A3').value).toBe('x'.repeat(32_766))
    expect(sheet.getCell('B3').type).toBe(ExcelJS.ValueType.Null)
  })
})
