import { describe, expect, test } from 'bun:test'
import { formatsOf, renderReport } from '../../../src/reports/formats'
import { Invalid } from '../../../src/errors'
import { REPORT_KINDS } from '../../../src/reports/types'
import { column, document, utc } from './support'

const columns = [column('device', 'text')]

describe('report file names and formats', () => {
  test('<kind>-<first local day>-<last local day>.<ext>, days in the report zone, `to` an exclusive end', () => {
    // Monday 2 November 00:00 in Paris to the next Monday 00:00: named Monday to Sunday
    const week = document({ kind: 'trips', columns, rows: [], tz: 'Europe/Paris', period: { from: utc(2026, 11, 1, 23), to: utc(2026, 11, 8, 23) } })
    expect(renderReport(week, 'xlsx').filename).toBe('trips-2026-11-02-2026-11-08.xlsx')
    expect(renderReport(week, 'csv').filename).toBe('trips-2026-11-02-2026-11-08.csv')
    // the same instants in UTC are other days
    expect(renderReport({ ...week, tz: 'UTC' }, 'csv').filename).toBe('trips-2026-11-01-2026-11-08.csv')
    const day = document({ kind: 'route', columns, rows: [], tz: 'America/New_York', period: { from: utc(2026, 11, 3, 5), to: utc(2026, 11, 4, 5) } })
    expect(renderReport(day, 'gpx').filename).toBe('route-2026-11-03-2026-11-03.gpx')
    expect(renderReport(day, 'kml').filename).toBe('route-2026-11-03-2026-11-03.kml')
  })

  test('GPX and KML are for routes only: other kinds are refused with a 400 naming the format', () => {
    for (const kind of REPORT_KINDS) {
      expect(formatsOf(kind)).toEqual(kind === 'route' ? ['csv', 'xlsx', 'gpx', 'kml'] : ['csv', 'xlsx'])
      if (kind === 'route') continue
      for (const format of ['gpx', 'kml'] as const) {
        let thrown: unknown
        try {
          renderReport(document({ kind, columns, rows: [] }), format)
        } catch (error) {
          thrown = error
        }
        expect(thrown).toBeInstanceOf(Invalid)
        expect((thrown as Invalid).status).toBe(400)
        expect((thrown as Invalid).errors).toEqual([{ path: '/format', message: expect.stringContaining(`${format} is for routes only`) }])
      }
    }
  })
})
