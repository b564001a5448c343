import { describe, expect, test } from 'bun:test'
import { renderReport } from '../../../src/reports/formats'
import { column, document, textOf, utc } from './support'

describe('CSV report files', () => {
  test('RFC 4180 text: key header, CRLF, quoting, local times across a DST change, locations split, JSON, injection neutralised', async () => {
    const events = document({
      kind: 'events',
      tz: 'Europe/Paris',
      columns: [
        column('device', 'text', 'Device'),
        column('alias', 'text', 'Vehicle'),
        column('timestamp', 'time', 'Time'),
        column('code', 'text', 'Event'),
        column('location', 'location', 'Location'),
        column('address', 'text', 'Address'),
        column('context', 'json', 'Context'),
      ],
      rows: [
        // 02:30 local twice: summer time ends at 03:00 CEST on 25 October 2026
        { device: 'd1', alias: 'Van, "A"', timestamp: utc(2026, 10, 25, 0, 30), code: 'sos', location: [53.3498, -6.2603], address: '=HYPERLINK("http://x")', context: { speed: 12, note: 'a,b' } },
        { device: 'd1', alias: 'Van, "A"', timestamp: utc(2026, 10, 25, 1, 30), code: 'overspeed', location: null, address: 'Quay St\nCork', context: null },
        { device: 'd2', alias: '+353 bus', timestamp: utc(2026, 11, 2, 7, 15), code: '@home', location: [-33.5, 151.25], address: '-1+2', context: -5 },
        { device: 'd3', alias: 'Café ünï', timestamp: null, code: '\tx', location: [0, 0], address: 'plain', context: [1, 'two'] },
      ],
    })
    const file = renderReport(events, 'csv')
    expect(file.contentType).toBe('text/csv; charset=utf-8')
    expect(await textOf(file.body)).toBe(
      'device,alias,timestamp,code,location_latitude,location_longitude,address,context\r\n' +
        'd1,"Van, ""A""",2026-10-25T02:30:00+02:00,sos,53.3498,-6.2603,"\'=HYPERLINK(""http://x"")","{""speed"":12,""note"":""a,b""}"\r\n' +
        'd1,"Van, ""A""",2026-10-25T02:30:00+01:00,overspeed,,,"Quay St\nCork",\r\n' +
        "d2,'+353 bus,2026-11-02T08:15:00+01:00,'@home,-33.5,151.25,'-1+2,-5\r\n" +
        'd3,Café ünï,,\'\tx,0,0,plain,"[1,""two""]"\r\n',
    )
  })

  test('days, integers and the totals row last with `total` in its first field; spring forward in New York', async () => {
    const summary = document({
      kind: 'summary',
      tz: 'America/New_York',
      columns: [
        column('device', 'text'),
        column('alias', 'text'),
        column('day', 'day'),
        column('distance_m', 'number'),
        column('trips', 'integer'),
        column('first_fix', 'time'),
      ],
      rows: [
        { device: 'd1', alias: 'Van', day: '2026-03-07', distance_m: 1000.25, trips: 2, first_fix: utc(2026, 3, 8, 6, 30) },
        { device: 'd1', alias: 'Van', day: '2026-03-08', distance_m: 2000.25, trips: 1, first_fix: utc(2026, 3, 8, 7, 30) + 0.25 },
      ],
      totals: { device: null, alias: null, day: null, distance_m: 3000.5, trips: 3, first_fix: null },
    })
    expect(await textOf(renderReport(summary, 'csv').body)).toBe(
      'device,alias,day,distance_m,trips,first_fix\r\n' +
        'd1,Van,2026-03-07,1000.25,2,2026-03-08T01:30:00-05:00\r\n' +
        'd1,Van,2026-03-08,2000.25,1,2026-03-08T03:30:00.250-04:00\r\n' +
        'total,,,3000.5,3,\r\n',
    )
  })

  test('an empty report is its header alone', async () => {
    const empty = document({ kind: 'stops', columns: [column('device', 'text'), column('start', 'time')], rows: [] })
    expect(await textOf(renderReport(empty, 'csv').body)).toBe('device,start\r\n')
  })
})
